"""--write-baseline / --baseline: a legacy repository fails only on new findings."""

from __future__ import annotations

import json

from conftest import write_tree
from test_cli import DDP_SCRIPT


def _codes_at(p):
    return sorted(ln.split(":")[0] for ln in p.stdout.splitlines() if " DDP001 " in ln)


def test_five_old_findings_and_one_new(tmp_path, cli):
    write_tree(tmp_path, {f"old{i}.py": DDP_SCRIPT for i in range(5)})
    (tmp_path / ".git").mkdir()
    p = cli("check", "--write-baseline", "ci/parallint-baseline.json", ".", cwd=tmp_path)
    assert p.returncode == 0 and "Wrote 5 findings" in p.stdout, p.stdout + p.stderr
    doc = json.loads((tmp_path / "ci/parallint-baseline.json").read_text())
    assert {e["path"] for e in doc["findings"]} == {f"../old{i}.py" for i in range(5)}
    p = cli("check", "--baseline", "ci/parallint-baseline.json", ".", cwd=tmp_path)
    assert p.returncode == 0 and "All checks passed" in p.stdout, p.stdout

    # old code moves (lines inserted above), one new finding appears
    old0 = tmp_path / "old0.py"
    old0.write_text("# a header\n# another\n\n" + old0.read_text())
    write_tree(tmp_path, {"new.py": DDP_SCRIPT})
    p = cli("check", "--baseline", "ci/parallint-baseline.json", ".", cwd=tmp_path)
    assert p.returncode == 1, p.stdout + p.stderr
    assert _codes_at(p) == ["new.py"]
    assert "Found 1 finding" in p.stdout

    # the baseline is found from another working directory too (paths relative to the file)
    p = cli("check", "--baseline", "../ci/parallint-baseline.json", "../old1.py", cwd=tmp_path / "ci")
    assert p.returncode == 0, p.stdout + p.stderr

    # editing the flagged line is a new finding
    old1 = tmp_path / "old1.py"
    old1.write_text(old1.read_text().replace("device_ids=[local_rank], find", "device_ids=[local_rank],  find"))
    p = cli("check", "--baseline", "ci/parallint-baseline.json", ".", cwd=tmp_path)
    assert _codes_at(p) == ["new.py", "old1.py"]


def test_counts_duplicates_and_rejects_bad_files(tmp_path, cli):
    write_tree(tmp_path, {"a.py": DDP_SCRIPT, "bad.json": "[]", ".git/x": ""})
    assert cli("check", "--write-baseline", "b.json", "a.py", cwd=tmp_path).returncode == 0
    # the same finding twice (a copy at another place of the file) exceeds the one recorded
    text = (tmp_path / "a.py").read_text()
    (tmp_path / "a.py").write_text(text + text.split("def main():\n", 1)[1].replace("    ", "", 0))
    p = cli("check", "--baseline", "b.json", "a.py", cwd=tmp_path)
    assert len([ln for ln in p.stdout.splitlines() if " DDP001 " in ln]) == 1 and p.returncode == 1
    for bad in ("missing.json", "bad.json"):
        p = cli("check", "--baseline", bad, "a.py", cwd=tmp_path)
        assert p.returncode == 2 and p.stderr.startswith("parallint: error: ") and len(p.stderr.splitlines()) == 1


def test_fingerprint_leaves_out_the_fix_clause():
    from parallint.report.baseline import normalise, split_fix

    wrong = "global batch 36 is not divisible by micro batch 2 × data-parallel size 4 = 8"
    assert split_fix(wrong + "; set the global batch size to a multiple of 8 (32 or 40)") == (
        wrong, "set the global batch size to a multiple of 8 (32 or 40)")
    # rewording the advice (or the values it suggests) keeps the fingerprint; the problem does not
    assert normalise(wrong + "; set it to 32") == normalise(wrong + "; use 40 instead") == normalise(wrong)
    assert normalise(wrong) != normalise(wrong.replace("global", "local"))
    # a "; " inside what is wrong is not a fix clause
    assert split_fix("fp16 and bf16 are both enabled; they are mutually exclusive") == (
        "fp16 and bf16 are both enabled; they are mutually exclusive", "")


def test_version_1_baseline_still_matches(tmp_path, cli):
    """A baseline written before fingerprints left out the fix clause (version 1, messages without
    one) keeps its findings baselined: matched on code, path and the start of the message."""
    write_tree(tmp_path, {"a.py": DDP_SCRIPT, "b.py": DDP_SCRIPT, ".git/x": ""})
    assert cli("check", "--write-baseline", "b1.json", "a.py", "b.py", cwd=tmp_path).returncode == 0
    doc = json.loads((tmp_path / "b1.json").read_text())
    assert doc["version"] == 2 and len(doc["findings"]) == 2
    from parallint.report.baseline import split_fix

    doc["version"] = 1
    for e in doc["findings"]:  # as version 1 wrote them: the message of the day, another fingerprint
        e["message"] = split_fix(e["message"])[0]
        e["fingerprint"] = "0" * 32
    doc["findings"] = [e for e in doc["findings"] if e["path"] == "a.py"]
    (tmp_path / "b1.json").write_text(json.dumps(doc))
    p = cli("check", "--baseline", "b1.json", "a.py", "b.py", cwd=tmp_path)
    assert p.returncode == 1 and _codes_at(p) == ["b.py"], p.stdout + p.stderr
