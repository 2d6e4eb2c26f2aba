"""ENV: environment variables at a training launch (NCCL transports, visible devices, Megatron's
CUDA_DEVICE_MAX_CONNECTIONS, NCCL variable typos).

One rule a file (``envNNN_<name>.py``); the helpers its rules share are in ``_common``.
"""
