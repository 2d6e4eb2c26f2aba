"""The GPU catalogue, generated from gpus.yaml: edit that file, then regenerate this one
(PARALLINT_UPDATE_SNAPSHOTS=1 python -m pytest tests/test_startup.py)."""

GPUS: list[dict] = [
    {'name': 'V100-16GB', 'memory_gib': 16, 'gpus_per_node': 8, 'aliases': ['v100-16gb', 'v100_16g', 'v100-sxm2-16gb', 'tesla-v100-sxm2-16gb', 'tesla-v100-pcie-16gb', 'v10016g']},
    {'name': 'V100-32GB', 'memory_gib': 32, 'gpus_per_node': 8, 'aliases': ['v100', 'v100-32gb', 'v100_32g', 'v10032g', 'v100s', 'tesla-v100-sxm2-32gb', 'tesla-v100-pcie-32gb', 'tesla-v100s-pcie-32gb', 'tesla-v100']},
    {'name': 'A10', 'memory_gib': 24, 'gpus_per_node': 4, 'aliases': ['a10', 'a10g', 'nvidia-a10', 'nvidia-a10g', 'a10-24gb']},
    {'name': 'A100-40GB', 'memory_gib': 40, 'gpus_per_node': 8, 'aliases': ['a100-40gb', 'a100_40g', 'a10040g', 'a100-sxm4-40gb', 'a100-pcie-40gb', 'nvidia-a100-sxm4-40gb', 'nvidia-a100-pcie-40gb']},
    {'name': 'A100-80GB', 'memory_gib': 80, 'gpus_per_node': 8, 'aliases': ['a100', 'a100-80gb', 'a100_80g', 'a10080g', 'a100-sxm4-80gb', 'a100-pcie-80gb', 'a100-sxm-80gb', 'nvidia-a100-sxm4-80gb', 'nvidia-a100-80gb-pcie', 'nvidia-a100-sxm-80gb']},
    {'name': 'L4', 'memory_gib': 24, 'gpus_per_node': 8, 'aliases': ['l4', 'nvidia-l4']},
    {'name': 'L40S', 'memory_gib': 48, 'gpus_per_node': 8, 'aliases': ['l40s', 'nvidia-l40s', 'l40']},
    {'name': 'H100-80GB', 'memory_gib': 80, 'gpus_per_node': 8, 'aliases': ['h100', 'h100-80gb', 'h100_80g', 'h10080g', 'h100-sxm5-80gb', 'h100-sxm', 'h100-pcie', 'nvidia-h100-80gb-hbm3', 'nvidia-h100-sxm5-80gb', 'nvidia-h100-pcie', 'h800']},
    {'name': 'H100-94GB', 'memory_gib': 94, 'gpus_per_node': 8, 'aliases': ['h100-94gb', 'h100nvl', 'h100-nvl', 'nvidia-h100-nvl', 'h10094g', 'h100-96gb', 'nvidia-h100-96gb-hbm3']},
    {'name': 'H200', 'memory_gib': 141, 'gpus_per_node': 8, 'aliases': ['h200', 'h200-141gb', 'nvidia-h200', 'h200-sxm', 'nvidia-h200-nvl', 'h200nvl']},
    {'name': 'GH200', 'memory_gib': 96, 'gpus_per_node': 4, 'aliases': ['gh200', 'nvidia-gh200-480gb', 'gh200-96gb', 'grace-hopper']},
    {'name': 'B200', 'memory_gib': 180, 'gpus_per_node': 8, 'aliases': ['b200', 'nvidia-b200', 'b200-180gb', 'gb200']},
    {'name': 'B300', 'memory_gib': 288, 'gpus_per_node': 8, 'aliases': ['b300', 'nvidia-b300', 'b300-288gb', 'gb300']},
    {'name': 'MI250X', 'memory_gib': 64, 'gpus_per_node': 8, 'aliases': ['mi250x', 'mi250', 'amd-instinct-mi250x', 'instinct-mi250x']},
    {'name': 'MI300X', 'memory_gib': 192, 'gpus_per_node': 8, 'aliases': ['mi300x', 'mi300', 'amd-instinct-mi300x', 'instinct-mi300x']},
    {'name': 'MI325X', 'memory_gib': 256, 'gpus_per_node': 8, 'aliases': ['mi325x', 'amd-instinct-mi325x', 'instinct-mi325x']},
]
