"""Throughput of `parallint check` over a tree, next to baselines measured in the same run.

Baselines: reading every file's bytes (the floor), and `yaml.safe_load`/`json.loads` of every
config (what any config reader must pay at least). Default tree: ../shared/corpus (397 real
configs); pass another folder (e.g. a fetched Megatron-LM checkout) as the argument.

    python benchmarks/corpus_speed.py [PATH]
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import yaml


def _files(root: Path) -> list[Path]:
    return [Path(d) / f for d, _, fs in os.walk(root) for f in fs]


def main() -> None:
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[1].parent / "shared" / "corpus"
    if not root.is_dir():
        sys.exit(f"no such folder: {root}")
    files = _files(root)
    t0 = time.perf_counter()
    total = sum(len(p.read_bytes()) for p in files)
    t_read = time.perf_counter() - t0

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    t0 = time.perf_counter()
    for p in files:
        try:
            text = p.read_text("utf-8", errors="replace")
            if p.suffix == ".json":
                json.loads(text)
            elif p.suffix in (".yaml", ".yml"):
                list(yaml.load_all(text, Loader=loader))
        except Exception:
            pass
    t_parse = time.perf_counter() - t0

    exe = str(Path(sys.executable).with_name("parallint"))
    runs = []
    for label, jobs in (("parallint check, serial (PARALLINT_JOBS=1)", "1"), ("parallint check, worker processes", "")):
        env = dict(os.environ, PARALLINT_JOBS=jobs)
        t0 = time.perf_counter()
        proc = subprocess.run([exe, "check", "--format", "json", "--exit-zero", str(root)],
                              capture_output=True, text=True, env=env)
        t = time.perf_counter() - t0
        try:
            n = len(json.loads(proc.stdout))
        except ValueError:
            n = -1
        runs.append((f"{label} ({n} findings)", t))

    print(f"{len(files)} files, {total / 1e6:.1f} MB under {root}")
    print(f"{'step':<52} {'seconds':>8} {'x read':>8}")
    for label, t in [("read every file (baseline)", t_read),
                     ("safe_load/json.loads every config (baseline)", t_parse), *runs]:
        print(f"{label:<52} {t:8.3f} {t / t_read:8.1f}")
    print(f"serial / parallel: {runs[0][1] / runs[1][1]:.2f}x")


if __name__ == "__main__":
    main()
