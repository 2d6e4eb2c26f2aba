"""CKP — checkpoints (CKP001, CKP002).

One rule a file (``ckpNNN_<name>.py``); the helpers its rules share are in ``_common``.
"""
