"""DDP — data-parallel wrappers (DDP001–DDP005).

One rule a file (``ddpNNN_<name>.py``); the helpers its rules share are in ``_common``.
"""
