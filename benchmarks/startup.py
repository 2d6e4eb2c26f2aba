"""Start-up cost of the CLI: what a pre-commit run on one file pays before any work.

Prints, side by side in the same run: bare `python -c pass` (the floor), `python -c "import typer"`,
`parallint --version`, and `parallint check` on one file that cannot matter (never parsed) and on
one training script (parsed by LibCST). Ratios are against bare Python.

    python benchmarks/startup.py [--repeat 10]
    python benchmarks/startup.py --modules ds_config.json   # what `parallint check FILE` imports

``--modules`` lists every module the run adds to a bare interpreter's, with the rule families
among them: ``-X importtime`` does not show modules imported through ``importlib.import_module``
(the registry's rule families, the readers).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SCRIPT = """import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
dist.init_process_group("nccl")
"""


def _time(cmd: list[str], cwd: str, repeat: int) -> float:
    runs = []
    for _ in range(repeat):
        t = time.perf_counter()
        subprocess.run(cmd, cwd=cwd, capture_output=True)
        runs.append(time.perf_counter() - t)
    return statistics.median(runs)


_MODULES = """import atexit, sys
base = set(sys.modules)
atexit.register(lambda: print("\\n".join(sorted(set(sys.modules) - base)), file=sys.stderr))
sys.argv = ["parallint", "check", "--exit-zero"] + sys.argv[1:]
from parallint.cli.main import main
main()
"""


def modules(paths: list[str]) -> None:
    proc = subprocess.run([sys.executable, "-c", _MODULES, *paths], capture_output=True, text=True)
    mods = [m for m in proc.stderr.splitlines() if m and " " not in m]
    rules = [m.rsplit(".", 1)[1] for m in mods if m.startswith("parallint.rules.") and not m.startswith("parallint.rules._")]
    print(proc.stdout, end="")
    print(f"{len(mods)} modules imported; rule families: {', '.join(rules) or 'none'}")
    print(" ".join(mods))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--modules", nargs="+", metavar="FILE", help="list what `parallint check FILE...` imports")
    args = ap.parse_args()
    if args.modules:
        modules(args.modules)
        return
    exe = str(Path(sys.executable).with_name("parallint"))
    with tempfile.TemporaryDirectory() as d:
        Path(d, "utils.py").write_text("def add(a, b):\n    return a + b\n")
        Path(d, "train.py").write_text(SCRIPT)
        cases = [
            ("python -c pass", [sys.executable, "-c", "pass"]),
            ("python -c 'import typer'", [sys.executable, "-c", "import typer"]),
            ("parallint --version", [exe, "--version"]),
            ("parallint check utils.py (not ours)", [exe, "check", "utils.py"]),
            ("parallint check train.py (LibCST)", [exe, "check", "train.py"]),
        ]
        base = None
        print(f"{'command':<40} {'median s':>9} {'x python':>9}")
        for label, cmd in cases:
            t = _time(cmd, d, args.repeat)
            base = base or t
            print(f"{label:<40} {t:9.3f} {t / base:9.1f}")


if __name__ == "__main__":
    main()
