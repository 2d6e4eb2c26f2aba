"""DDP — data-parallel wrappers (DDP001–DDP004).

One rule a file (``ddpNNN_<name>.py``); the helpers its rules share are in ``_common``.
"""
