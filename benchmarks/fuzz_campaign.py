"""A long fuzz campaign over every reader.

``--engine mutate`` (the default) runs ``benchmarks/fuzz_mutate.py``: a fast seed-mutation
fuzzer with a watchdog, reproducible by index, that reaches 100,000 inputs per reader in hours
on two cores. ``--engine hypothesis`` runs the Hypothesis targets: each target of tests/fuzz/test_fuzz.py runs in its own
process with random (not derandomised) inputs, up to ``--examples`` inputs or ``--budget``
seconds, with a 1 s deadline per input (an input slower than that fails like a crash). Prints,
per reader: inputs run, crashes, slow inputs (over the deadline), and the slowest input.

    python benchmarks/fuzz_campaign.py --examples 100000 --jobs 2 --nice 10 [--only shell python]
    python benchmarks/fuzz_campaign.py --engine hypothesis --examples 100000 --budget 600
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEST = "tests/fuzz/test_fuzz.py"
TARGETS = {  # pytest id -> stats key
    "test_file_readers[python]": "python", "test_file_readers[torchtitan_py]": "torchtitan_py",
    "test_file_readers[shell]": "shell", "test_file_readers[makefile]": "makefile",
    "test_file_readers[json_configs]": "json_configs", "test_file_readers[yaml_configs]": "yaml_configs",
    "test_file_readers[toml_configs]": "toml_configs", "test_file_readers[kube]": "kube",
    "test_file_readers[jobspec]": "jobspec", "test_classifier_and_sniffers": "classify+sniff",
    "test_launch_command_lines": "command lines", "test_megatron_arguments": "megatron args",
    "test_file_readers[launchers]": "launchers", "test_tool_parallint_config": "[tool.parallint]", "test_estimate_and_plan_numbers": "estimate/plan",
    "test_hydra_entry_scripts": "hydra scripts",
}


def main() -> int:
    if "--engine" not in sys.argv or "mutate" in sys.argv[sys.argv.index("--engine") + 1:][:1]:
        sys.path.insert(0, str(ROOT / "benchmarks"))
        import fuzz_mutate  # noqa: PLC0415

        argv = [a for i, a in enumerate(sys.argv[1:]) if a != "--engine" and sys.argv[i:i + 1] != ["--engine"]]
        return fuzz_mutate.main(argv)
    ap = argparse.ArgumentParser()
    ap.add_argument("--engine", choices=["hypothesis", "mutate"])
    ap.add_argument("--examples", type=int, default=100_000)
    ap.add_argument("--budget", type=float, default=600, help="seconds per reader")
    ap.add_argument("--deadline-ms", type=int, default=1000)
    ap.add_argument("--only", nargs="*", help="stats keys or test ids to run")
    ap.add_argument("--json", help="write the summary here")
    ap.add_argument("--logs", help="folder for each reader's pytest output (the failing input is there)")
    args = ap.parse_args()
    stats_file = Path(tempfile.mkdtemp()) / "stats.json"
    logs = Path(args.logs) if args.logs else stats_file.parent
    logs.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, PARALLINT_FUZZ_EXAMPLES=str(args.examples), PARALLINT_FUZZ_RANDOM="1",
               PARALLINT_FUZZ_DEADLINE_MS=str(args.deadline_ms), PARALLINT_FUZZ_STATS=str(stats_file))
    outcome: dict[str, str] = {}
    for test_id, key in TARGETS.items():
        if args.only and key not in args.only and test_id not in args.only:
            continue
        t = time.monotonic()
        try:
            p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
                                f"{TEST}::{test_id}"], cwd=ROOT, env=env, capture_output=True,
                               text=True, timeout=args.budget)
            out = p.stdout + p.stderr
            (logs / (re.sub(r"\W+", "_", key) + ".log")).write_text(out)
            if p.returncode == 0:
                outcome[key] = "ok"
            elif "DeadlineExceeded" in out or "Deadline" in out:
                outcome[key] = "SLOW: " + _failing(out)
            else:
                outcome[key] = "CRASH: " + _failing(out)
        except subprocess.TimeoutExpired:
            outcome[key] = "budget reached"
        print(f"{key:18} {outcome[key][:100]} ({time.monotonic() - t:.0f} s)", flush=True)
    stats = json.loads(stats_file.read_text()) if stats_file.exists() else {}
    print(f"\nlogs: {logs}")
    print(f"\n{'reader':18} {'inputs':>8} {'crashes':>7} {'slow>1s':>7} {'slowest s':>9}  outcome")
    summary = {}
    for key, result in outcome.items():
        s = stats.get(key, {"inputs": 0, "slowest_s": 0.0, "slowest_input": ""})
        crashes = int(result.startswith("CRASH"))
        slow = int(result.startswith("SLOW"))
        print(f"{key:18} {s['inputs']:>8} {crashes:>7} {slow:>7} {s['slowest_s']:>9.3f}  {result[:60]}")
        summary[key] = dict(s, outcome=result)
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=1))
    return 0 if all(v in ("ok", "budget reached") for v in outcome.values()) else 1


def _failing(out: str) -> str:
    m = re.search(r"(Crash: .*|E\s+\w+Error: .*|DeadlineExceeded: .*)", out)
    return m.group(1).strip() if m else out.strip().splitlines()[-1]


if __name__ == "__main__":
    sys.exit(main())
