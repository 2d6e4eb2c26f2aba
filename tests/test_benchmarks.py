"""benchmarks/perf.py (issue 12's figures side by side with their floors) runs and prints every
table. Speed is measured there, not asserted here: this checks the suite's shape on a tiny tree."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import ROOT


def test_perf_quick_prints_every_figure(tmp_path):
    out = tmp_path / "perf.json"
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "perf.py"), "--quick", "--repeat", "1",
                           "--scale", "0.03", "--json", str(out)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    assert "| tree | ast.parse | parallint, default workers | parallint, 1 worker |" in text
    assert "| run | time | floor | floor time | ratio | target |" in text
    data = json.loads(out.read_text())
    (tree,) = data["trees"]
    assert tree["tree"] == "synthetic" and tree["py_files"] > 3
    figures = tree["figures"]
    for label in ("ast.parse", "parallint", "parallint 1 worker", "LibCST parse"):
        fig = figures[label]
        assert fig["failed"] is None, (label, fig)
        assert len(fig["runs_s"]) == 1 and fig["median_s"] > 0
    assert figures["ast.parse"]["ratio"] == 1.0
    assert figures["parallint"]["peak_rss_mb"] > 0
    runs = {r["run"]: r for r in data["one_file"]}
    assert len(runs) == 5 and all(r["failed"] is None and r["ratio"] > 0 for r in runs.values())
    assert "check a NeMo-style YAML, cache on, edited" in runs  # as a pre-commit hook runs by default
    assert {r["floor"] for r in runs.values()} == {'python -c "import libcst"', 'python -c "import yaml"', "python -c pass"}
    assert data["big_file"] is None  # not in --quick
    for r in data["one_file"]:
        assert f"| {r['run']} |" in text


def test_synthetic_tree_is_deterministic(tmp_path):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import perf
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    a, b = tmp_path / "a", tmp_path / "b"
    perf.build_synthetic(a, 0.05)
    perf.build_synthetic(b, 0.05)
    files = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file())
    assert all((a / f).read_bytes() == (b / f).read_bytes() for f in files)
    kinds = {f.suffix for f in files}
    assert {".py", ".sh", ".json", ".yaml"} <= kinds
    for f in files:
        if f.suffix == ".py":
            compile((a / f).read_text(), str(f), "exec")
        elif f.suffix == ".json":
            json.loads((a / f).read_text())
    assert 280 <= perf.script_of_lines(300).count("\n") <= 340
