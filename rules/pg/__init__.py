"""PG — process groups (PG001–PG005).

One rule a file (``pgNNN_<name>.py``); the helpers its rules share are in ``_common``.
"""
