"""DAT — data loading (DAT001–DAT005).

One rule a file (``datNNN_<name>.py``); the helpers its rules share are in ``_common``.
"""
