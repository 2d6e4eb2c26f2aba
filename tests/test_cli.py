"""The command line, end to end, as a user runs it (a subprocess of the installed `parallint`)."""

from __future__ import annotations

import json
import os

import pytest

from conftest import PLANTED_DDP_SCRIPT, ROOT, write_tree

DDP_SCRIPT = PLANTED_DDP_SCRIPT
CLEAN_SCRIPT = DDP_SCRIPT.replace(", find_unused_parameters=True", "")


def _no_traceback(proc):
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout, proc.stderr


def test_finding_text_and_exit_codes(tmp_path, cli):
    write_tree(tmp_path, {"train.py": DDP_SCRIPT})
    p = cli("check", "--select", "DDP001", "train.py", cwd=tmp_path)
    _no_traceback(p)
    assert p.returncode == 1
    first = p.stdout.splitlines()[0]
    assert first.startswith("train.py:13:") and " DDP001 " in first
    assert p.stdout.splitlines()[-1].startswith("Found 1 finding (1 warning)")
    assert cli("check", "--select", "DDP001", "--exit-zero", "train.py", cwd=tmp_path).returncode == 0
    assert cli("check", "--select", "DDP001", "--fail-level", "error", "train.py", cwd=tmp_path).returncode == 0


def test_clean_file_exits_zero(tmp_path, cli):
    write_tree(tmp_path, {"train.py": CLEAN_SCRIPT})
    p = cli("check", "train.py", cwd=tmp_path)
    _no_traceback(p)
    assert p.returncode == 0, p.stdout
    assert p.stdout.strip() == "All checks passed (1 file checked)."


def test_json_contract(tmp_path, cli):
    write_tree(tmp_path, {"src/train.py": DDP_SCRIPT})
    p = cli("check", "--select", "DDP001", "--format", "json", ".", cwd=tmp_path)
    assert p.returncode == 1
    items = json.loads(p.stdout)
    assert len(items) == 1
    d = items[0]
    assert d["code"] == "DDP001" and d["name"] == "find-unused-parameters" and d["severity"] == "warning"
    assert d["path"] == "src/train.py" and d["line"] == 13 and d["column"] >= 1
    assert d["end_line"] >= d["line"] and isinstance(d["related"], list) and d["message"]


def test_sarif_and_github_formats(tmp_path, cli):
    write_tree(tmp_path, {"train.py": DDP_SCRIPT})
    s = json.loads(cli("check", "--select", "DDP001", "--format", "sarif", ".", cwd=tmp_path).stdout)
    assert s["version"] == "2.1.0"
    assert [r["ruleId"] for r in s["runs"][0]["results"]] == ["DDP001"]
    g = cli("check", "--select", "DDP001", "--format", "github", ".", cwd=tmp_path).stdout
    assert g.startswith("::warning file=train.py,line=13,")


def test_noqa_line_and_file_level(tmp_path, cli):
    line = DDP_SCRIPT.replace("find_unused_parameters=True)", "find_unused_parameters=True)  # noqa: DDP001")
    by_name = DDP_SCRIPT.replace("find_unused_parameters=True)", "find_unused_parameters=True)  # noqa: find-unused-parameters")
    other = DDP_SCRIPT.replace("find_unused_parameters=True)", "find_unused_parameters=True)  # noqa: PG001")
    whole = "# parallint: noqa: DDP\n" + DDP_SCRIPT
    write_tree(tmp_path, {"a.py": line, "b.py": by_name, "c.py": other, "d.py": whole})
    out = json.loads(cli("check", "--select", "DDP001", "--format", "json", ".", cwd=tmp_path).stdout)
    assert [d["path"] for d in out] == ["c.py"]


def test_config_select_ignore_and_per_file_ignores(tmp_path, cli):
    write_tree(tmp_path, {
        "pyproject.toml": '[tool.parallint]\nselect = ["DDP"]\n[tool.parallint.per-file-ignores]\n"legacy/*" = ["DDP001"]\n',
        "train.py": DDP_SCRIPT, "legacy/old.py": DDP_SCRIPT,
    })
    out = json.loads(cli("check", "--format", "json", ".", cwd=tmp_path).stdout)
    assert {d["path"] for d in out} == {"train.py"} and {d["code"] for d in out} <= {"DDP001", "DDP002", "DDP003", "DDP004"}
    out = json.loads(cli("check", "--format", "json", "--ignore", "find-unused-parameters", ".", cwd=tmp_path).stdout)
    assert "DDP001" not in {d["code"] for d in out}


def test_bad_config_is_one_line_exit_2(tmp_path, cli):
    write_tree(tmp_path, {"pyproject.toml": '[tool.parallint]\nfail_level = "error"\n', "train.py": DDP_SCRIPT})
    p = cli("check", ".", cwd=tmp_path)
    _no_traceback(p)
    assert p.returncode == 2
    assert p.stderr.strip().count("\n") == 0
    assert "fail_level" in p.stderr and "pyproject.toml" in p.stderr and "fail-level" in p.stderr


def test_unknown_selector_and_format(tmp_path, cli):
    assert cli("check", "--select", "NOPE1", ".", cwd=tmp_path).returncode == 2
    assert cli("check", "--format", "xml", ".", cwd=tmp_path).returncode == 2


def test_stdin_with_filename(tmp_path, cli):
    write_tree(tmp_path, {"train.py": CLEAN_SCRIPT})
    p = cli("check", "--select", "DDP001", "--format", "json", "-", "--stdin-filename", "train.py",
            cwd=tmp_path, stdin=DDP_SCRIPT)
    items = json.loads(p.stdout)
    assert p.returncode == 1 and [(d["path"], d["code"]) for d in items] == [("train.py", "DDP001")]
    p = cli("check", "-", cwd=tmp_path, stdin=DDP_SCRIPT)
    assert p.returncode == 2 and "--stdin-filename" in p.stderr


def test_bad_files_are_syn001_and_others_still_checked(tmp_path, cli):
    write_tree(tmp_path, {
        "broken.py": "import torch.distributed as dist\ndef f(:\n    dist.init_process_group('nccl')\n",
        "train.py": DDP_SCRIPT,
    })
    (tmp_path / "binary.py").write_bytes(b"import torch\x00\x01\x02 init_process_group")
    (tmp_path / "latin1.py").write_bytes(b"# caf\xe9\nimport torch.distributed as dist\ndist.init_process_group('nccl')\n")
    (tmp_path / "dangling.py").symlink_to(tmp_path / "missing-target.py")
    p = cli("check", "--format", "json", "--select", "SYN001,SYN002,DDP001",
            "broken.py", "binary.py", "latin1.py", "dangling.py", "train.py", cwd=tmp_path)
    _no_traceback(p)
    items = json.loads(p.stdout)
    got = {(d["path"], d["code"]) for d in items}
    # a syntax or encoding error is SYN001; a file that cannot be analysed at all is SYN002
    assert got == {("broken.py", "SYN001"), ("binary.py", "SYN002"), ("latin1.py", "SYN001"),
                   ("dangling.py", "SYN002"), ("train.py", "DDP001")}
    broken = next(d for d in items if d["path"] == "broken.py")
    assert broken["line"] == 2
    latin = next(d for d in items if d["path"] == "latin1.py")
    assert "UTF-8" in latin["message"] and latin["line"] == 1


def test_missing_path_reports_and_continues(tmp_path, cli):
    write_tree(tmp_path, {"train.py": DDP_SCRIPT})
    p = cli("check", "--select", "DDP001", "nope.py", "train.py", cwd=tmp_path)
    _no_traceback(p)
    assert p.returncode == 2 and "nope.py" in p.stderr and "DDP001" in p.stdout


def test_rules_and_rule_docs(cli, tmp_path):
    p = cli("rules", cwd=tmp_path)
    assert p.returncode == 0
    codes = [line.split()[0] for line in p.stdout.splitlines()]
    assert "SYN001" in codes and "DDP001" in codes and codes == sorted(codes)
    doc = cli("rule", "DDP001", cwd=tmp_path)
    assert doc.returncode == 0
    for section in ("## What it does", "## Why it matters", "## Example", "## How to fix"):
        assert section in doc.stdout
    assert cli("rule", "find-unused-parameters", cwd=tmp_path).stdout == doc.stdout
    bad = cli("rule", "XYZ999", cwd=tmp_path)
    assert bad.returncode == 2 and "unknown rule" in bad.stderr


def test_readme_rule_table_is_generated_from_the_rules(cli, tmp_path):
    table = cli("rules", "--format", "markdown", cwd=tmp_path).stdout
    readme = (ROOT / "README.md").read_text("utf-8")
    assert table in readme, "README.md's rule table is stale: paste `parallint rules --format markdown`"


def test_version(cli, tmp_path):
    from parallint import __version__

    assert cli("--version", cwd=tmp_path).stdout.strip() == f"parallint {__version__}"


@pytest.mark.skipif(os.geteuid() == 0 if hasattr(os, "geteuid") else True, reason="root reads unreadable files")
def test_unreadable_file(tmp_path, cli):  # pragma: no cover - only as non-root
    write_tree(tmp_path, {"secret.py": DDP_SCRIPT})
    (tmp_path / "secret.py").chmod(0)
    p = cli("check", "--format", "json", "secret.py", cwd=tmp_path)
    assert [d["code"] for d in json.loads(p.stdout)] == ["SYN001"]
