"""Recall of parallint on real bugs reconstructed from public reports.

    python benchmarks/recall.py                      # benchmarks/recall_cases.yaml
    python benchmarks/recall.py CASES.yaml --json out.json
    python benchmarks/recall.py --case verl-rollout-tp-one-gpu -v

Each case of the cases file (see its header) is written into an empty temporary folder, and the
installed parallint runs there as a user would: ``parallint check . --format json --no-cache
--exit-zero``. A case is *caught* when a finding of one of its ``expect`` codes appears; its
*clean twin* (the case's files with ``clean`` replacing some of them) must give none of those
codes, else the twin counts as a false finding. The table lists each case with the codes found,
and the totals: caught / cases, and false findings on the twins.

Exit status 0 whatever the results; 2 when the cases file cannot be read. Nothing is executed but
parallint itself.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _write(root: Path, files: dict) -> None:
    for rel, text in files.items():
        p = root / rel
        if root.resolve() not in p.resolve().parents:
            raise ValueError(f"case file outside its folder: {rel}")
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(str(text))


def _codes(files: dict, timeout: float) -> tuple[list[dict], str | None]:
    with tempfile.TemporaryDirectory(prefix="recall-") as d:
        root = Path(d)
        _write(root, files)
        (root / ".git").mkdir()  # the repository boundary, as in a clone
        try:
            r = subprocess.run([sys.executable, "-m", "parallint", "check", ".", "--format", "json",
                                "--no-cache", "--exit-zero"], cwd=root, capture_output=True, text=True,
                               timeout=timeout, env={**os.environ, "NO_COLOR": "1"})
        except subprocess.TimeoutExpired:
            return [], "timed out"
        if r.returncode not in (0, 1):
            return [], (r.stderr.strip().splitlines() or ["exit %d" % r.returncode])[-1]
        data = json.loads(r.stdout or "[]")
        return (data["diagnostics"] if isinstance(data, dict) else data), None


def run_case(case: dict, timeout: float = 120.0) -> dict:
    expect = set(case.get("expect") or [])
    files = dict(case.get("files") or {})
    found, err = _codes(files, timeout)
    got = sorted({d["code"] for d in found})
    out = {"id": case["id"], "source": case.get("source", ""), "expect": sorted(expect), "found": got,
           "caught": bool(expect & set(got)), "error": err, "twin": None, "twin_false": []}
    if case.get("clean"):
        twin, terr = _codes({**files, **case["clean"]}, timeout)
        out["twin"] = sorted({d["code"] for d in twin})
        out["twin_false"] = sorted({d["code"] for d in twin} & expect)
        out["error"] = out["error"] or terr
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cases", nargs="?", default=str(HERE / "recall_cases.yaml"))
    ap.add_argument("--case", action="append", default=[], help="only this case id (repeatable)")
    ap.add_argument("--json", help="write the per-case results here")
    ap.add_argument("-v", "--verbose", action="store_true", help="print the codes each twin gave")
    a = ap.parse_args(argv)
    import yaml

    try:
        cases = yaml.safe_load(Path(a.cases).read_text())["cases"]
    except Exception as exc:  # noqa: BLE001 - any unreadable cases file is a usage error
        print(f"recall: cannot read {a.cases}: {exc}", file=sys.stderr)
        return 2
    if a.case:
        cases = [c for c in cases if c["id"] in a.case]
    results = [run_case(c) for c in cases]
    w = max([len(r["id"]) for r in results] + [4])
    print(f"{'case':<{w}}  caught  expect            found" + ("   twin" if a.verbose else ""))
    for r in results:
        mark = "yes" if r["caught"] else ("ERROR" if r["error"] else "no")
        line = f"{r['id']:<{w}}  {mark:<6}  {','.join(r['expect']):<16}  {','.join(r['found']) or '-'}"
        if r["twin_false"]:
            line += f"   twin still gives {','.join(r['twin_false'])}"
        elif a.verbose and r["twin"] is not None:
            line += f"   twin: {','.join(r['twin']) or '-'}"
        if r["error"]:
            line += f"   ({r['error']})"
        print(line)
    caught = sum(r["caught"] for r in results)
    twins = [r for r in results if r["twin"] is not None]
    false = sum(bool(r["twin_false"]) for r in twins)
    print(f"\ncaught {caught} of {len(results)}; clean twins with a finding of the expected code: {false} of {len(twins)}")
    if a.json:
        Path(a.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
