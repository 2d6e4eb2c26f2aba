"""LCH: launchers and schedulers (sbatch, srun, torchrun, deepspeed, accelerate, Kubernetes).

One rule a file (``lchNNN_<name>.py``); the helpers its rules share are in ``_common``.
"""
