"""Shell reader speed: reading N shell files with parallint's reader vs just reading their bytes.

    python benchmarks/bench_shell.py [FOLDER ...] [--repeat 3]

Without a folder it generates a synthetic set of sbatch/torchrun scripts (Megatron-style argument
strings, arrays, branches, functions) in a temporary folder. Both measurements run in the same
process, one after the other, and the ratio is printed, so the numbers are comparable across
machines.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

SUFFIXES = {".sh", ".bash", ".sbatch", ".slurm"}

TEMPLATE = r"""#!/bin/bash
#SBATCH --nodes={nodes}
#SBATCH --ntasks-per-node=1
#SBATCH --gres=gpu:a100:8
export CUDA_DEVICE_MAX_CONNECTIONS=1
export NCCL_DEBUG=WARN
GPUS_PER_NODE=8
NNODES=${{SLURM_NNODES:-1}}
TP={tp}
PP=${{PP:-4}}
if [ -n "$BIG" ]; then LAYERS=96; else LAYERS=96; fi
DISTRIBUTED_ARGS=(
    --nnodes "$NNODES"    # from the allocation
    --nproc_per_node "$GPUS_PER_NODE"
    --rdzv_backend c10d --rdzv_endpoint "$(hostname):29500"
)
GPT_ARGS="--tensor-model-parallel-size $TP \
    --pipeline-model-parallel-size $PP \
    --num-layers $LAYERS --hidden-size 12288 --num-attention-heads 96 \
    --seq-length 2048 --micro-batch-size 1 --global-batch-size $((8 * 64)) --bf16"
launch() {{
    srun torchrun "${{DISTRIBUTED_ARGS[@]}}" pretrain_gpt.py $GPT_ARGS --save /ckpt/{i}
}}
for i in 1 2; do echo "warmup $i"; done
launch
"""


def files_of(folders: list[str]) -> list[Path]:
    out: list[Path] = []
    for f in folders:
        for p in sorted(Path(f).rglob("*")):
            if p.is_file() and p.suffix in SUFFIXES:
                out.append(p)
    return out


def synthetic(n: int, where: Path) -> list[Path]:
    paths = []
    for i in range(n):
        p = where / f"job_{i}.sbatch"
        p.write_text(TEMPLATE.format(nodes=1 + i % 8, tp=(1, 2, 4, 8)[i % 4], i=i))
        paths.append(p)
    return paths


def bench(paths: list[Path], repeat: int) -> tuple[float, float, int]:
    from parallint.readers import shell

    best_bytes = best_read = float("inf")
    launches = 0
    for _ in range(repeat):
        t = time.perf_counter()
        for p in paths:
            p.read_bytes().decode("utf-8", "replace")
        best_bytes = min(best_bytes, time.perf_counter() - t)
        t = time.perf_counter()
        launches = 0
        for p in paths:
            text = p.read_bytes().decode("utf-8", "replace")
            launches += len(shell.read(p.name, p, text).launches)
        best_read = min(best_read, time.perf_counter() - t)
    return best_bytes, best_read, launches


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folders", nargs="*")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("-n", type=int, default=200, help="synthetic files when no folder is given")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        paths = files_of(args.folders) if args.folders else synthetic(args.n, Path(tmp))
        if not paths:
            raise SystemExit("no shell files found")
        size = sum(p.stat().st_size for p in paths)
        t_bytes, t_read, launches = bench(paths, args.repeat)
        print(f"files: {len(paths)}  bytes: {size:,}  launches found: {launches}")
        print(f"read bytes only : {t_bytes * 1000:8.1f} ms")
        print(f"shell reader    : {t_read * 1000:8.1f} ms  ({t_read / len(paths) * 1000:.2f} ms per file)")
        print(f"ratio           : {t_read / max(t_bytes, 1e-9):8.1f} x")


if __name__ == "__main__":
    main()
