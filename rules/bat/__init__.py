"""BAT — batch arithmetic: DeepSpeed's batch identity, global batch divisibility, and DeepSpeed
values that contradict the HF Trainer / accelerate values they are checked against.

One rule a file (``batNNN_<name>.py``); the helpers its rules share are in ``_common``.
"""
