"""benchmarks/real_repos.py end to end, over a tiny hand-written repos folder (no network, no real repos)."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import subprocess
import sys

from conftest import PLANTED_DDP_SCRIPT, ROOT, run_cli, write_tree

HARNESS = ROOT / "benchmarks" / "real_repos.py"

TRAIN = PLANTED_DDP_SCRIPT
TRAIN_LINE = 13  # the DDP(...) line above


def _hash(message: str) -> str:
    return hashlib.sha1(message.encode()).hexdigest()[:10]


def _tsv(*rows: tuple) -> str:
    head = "repository\tcommit\tpath\tcode\tline\tverdict\treason\tmessage_hash\n"
    return head + "".join("\t".join(map(str, r)) + "\n" for r in rows)


def _run(*args: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(HARNESS), *args], capture_output=True, text=True, timeout=300, cwd=cwd
    )


def _rule_row(out: str, code: str) -> list[str]:
    for line in out.splitlines():
        cells = line.split()
        if cells and cells[0] == code:
            return cells
    raise AssertionError(f"no row for {code} in:\n{out}")


def _section(out: str, letter: str) -> list[str]:
    """Lines of one --diff section, '(a) ...' up to the next '(' header."""
    lines, inside = [], False
    for line in out.splitlines():
        if line.startswith("("):
            inside = line.startswith(f"({letter})")
            if inside:
                lines.append(line)
            continue
        if inside:
            lines.append(line)
    return lines


def _repos(tmp_path, train: str = TRAIN):
    repos = tmp_path / "repos"
    write_tree(
        repos / "acme+trainer",
        {"train.py": train, "tools/gan.py": TRAIN, "eval/finetune.py": TRAIN, "README.md": "# not code\n"},
    )
    (repos / "COMMITS.txt").write_text("acme+trainer 0123456789abcdef\n", encoding="utf-8")
    write_tree(repos / "plain+repo", {"notes.txt": "nothing to lint\n"})
    return repos


def _message(repos) -> str:
    p = run_cli("check", "--format", "json", "--exit-zero", "--select", "DDP001", "train.py", cwd=repos / "acme+trainer")
    return json.loads(p.stdout)[0]["message"]


def _triage(tmp_path, repos):
    msg = _message(repos)
    tri = tmp_path / "triage.tsv"
    tri.write_text(
        _tsv(
            ("acme+trainer", "0123456789abcdef", "train.py", "DDP001", TRAIN_LINE, "true", "planted", _hash(msg)),
            ("acme+trainer", "0123456789abcdef", "tools/gan.py", "DDP001", TRAIN_LINE, "false", "flag needed: GAN", _hash(msg)),
            ("acme+trainer", "0123456789abcdef", "old.py", "DDP001", 5, "true", "was caught once", "0000000000"),
            ("other+repo", "abc", "x.py", "DDP001", 1, "true", "repo not scanned", "0000000000"),
        ),
        encoding="utf-8",
    )
    return tri


def test_tables_join_findings_with_triage(tmp_path):
    repos = _repos(tmp_path)
    tri = _triage(tmp_path, repos)
    raw = tmp_path / "raw.json"
    p = _run(str(repos), "--triage", str(tri), "--json", str(raw), "--", "--select", "DDP001")
    assert p.returncode == 0, p.stderr
    assert "Traceback" not in p.stderr
    # 3 findings: train.py true, tools/gan.py false, eval/finetune.py untriaged.
    assert _rule_row(p.stdout, "DDP001")[1:8] == ["3", "1", "1", "0", "1", "50%", "33%"]
    assert _rule_row(p.stdout, "TOTAL")[1] == "3"
    acme = _rule_row(p.stdout, "acme+trainer")
    assert acme[1] == "3" and acme[8] == "0123456789" and acme[-1] == "ok"
    plain = _rule_row(p.stdout, "plain+repo")
    assert plain[1] == "0" and plain[8] == "unknown"
    saved = json.loads(raw.read_text())
    assert sorted(f["path"] for f in saved["acme+trainer"]) == ["eval/finetune.py", "tools/gan.py", "train.py"]
    assert saved["plain+repo"] == []


def test_diff_lists_new_lost_and_still_false(tmp_path):
    repos = _repos(tmp_path)
    tri = _triage(tmp_path, repos)
    p = _run(str(repos), "--triage", str(tri), "--diff", "--select", "DDP001")  # unknown options pass through
    assert p.returncode == 0, p.stderr
    new, lost, still = _section(p.stdout, "a"), _section(p.stdout, "b"), _section(p.stdout, "c")
    assert new[0].endswith(": 1")
    # the new finding comes out as a triage line ready to fill in
    cells = new[1].strip().split("\t")
    assert cells[:6] == ["acme+trainer", "0123456789abcdef", "eval/finetune.py", "DDP001", str(TRAIN_LINE), "?"]
    assert lost[0].endswith(": 1") and "old.py:5" in lost[1]
    assert not any("other+repo" in x for x in lost)  # a repository not scanned loses nothing
    assert still[0].endswith(": 1") and "tools/gan.py" in still[1] and "flag needed: GAN" in still[1]


def test_moved_finding_keeps_its_verdict_by_message(tmp_path):
    repos = _repos(tmp_path)
    tri = _triage(tmp_path, repos)
    (repos / "acme+trainer" / "train.py").write_text('"""Docstring added above."""\n\n\n' + TRAIN, encoding="utf-8")
    p = _run(str(repos), "--triage", str(tri), "--repo", "acme+trainer", "--diff", "--", "--select", "DDP001")
    assert p.returncode == 0, p.stderr
    assert _rule_row(p.stdout, "DDP001")[1:6] == ["3", "1", "1", "0", "1"]
    assert "train.py" not in "\n".join(_section(p.stdout, "a"))
    assert "plain+repo" not in p.stdout


def test_saved_findings_and_harness_errors(tmp_path):
    repos = _repos(tmp_path)
    tri = _triage(tmp_path, repos)
    saved = tmp_path / "saved"
    saved.mkdir()
    msg = _message(repos)
    finding = {"code": "DDP001", "path": "train.py", "line": TRAIN_LINE, "message": msg}
    (saved / "acme+trainer.json").write_text(json.dumps([finding]), encoding="utf-8")
    p = _run(str(repos), "--triage", str(tri), "--findings", str(saved))
    assert p.returncode == 0, p.stderr
    assert _rule_row(p.stdout, "DDP001")[1:8] == ["1", "1", "0", "0", "0", "100%", "100%"]
    assert "no saved findings" in " ".join(_rule_row(p.stdout, "plain+repo"))

    assert _run(str(tmp_path / "missing"), "--triage", str(tri)).returncode == 2
    bad = tmp_path / "bad.tsv"
    bad.write_text(_tsv(("acme+trainer", "c", "train.py", "DDP001", 13, "maybe", "?", "")), encoding="utf-8")
    p = _run(str(repos), "--triage", str(bad), "--findings", str(saved))
    assert p.returncode == 2 and "verdict" in p.stderr and "Traceback" not in p.stderr
    assert _run(str(repos), "--repo", "nope+nope", "--findings", str(saved)).returncode == 2


def test_timeout_is_reported_and_the_run_goes_on(tmp_path):
    repos = _repos(tmp_path)
    p = _run(str(repos), "--triage", str(tmp_path / "none.tsv"), "--timeout", "0.001")
    assert p.returncode == 0, p.stderr
    assert "timeout" in " ".join(_rule_row(p.stdout, "acme+trainer"))
    assert "timeout" in " ".join(_rule_row(p.stdout, "plain+repo"))


def test_project_triage_file_is_well_formed():
    spec = importlib.util.spec_from_file_location("real_repos", HARNESS)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up there
    try:
        spec.loader.exec_module(mod)
    finally:
        sys.modules.pop(spec.name, None)
    assert len(mod.read_triage(mod.DEFAULT_TRIAGE)) > 0  # raises HarnessError on a malformed line
    text = (ROOT / "benchmarks" / "triage.tsv").read_text(encoding="utf-8")
    rows = [r.split("\t") for r in text.splitlines() if r and not r.startswith("#")][1:]
    assert rows and all(len(r) == 8 for r in rows)
    assert {r[5] for r in rows} <= {"true", "false", "debatable"}
    assert all(r[6].strip() for r in rows), "every verdict carries a reason"
    # one line per finding: two findings of one rule on one line (two unknown flags) differ in message
    keys = [(r[0], r[2], r[3], r[4], r[7]) for r in rows]
    assert len(keys) == len(set(keys)), "one line per finding"
