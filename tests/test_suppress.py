"""Suppressions are real comments only; SYN003 reports unused and unknown codes; --add-noqa."""

from __future__ import annotations

import shutil

from parallint.engine.suppress import Suppressions, comments, line_in_string

from conftest import ROOT, write_tree
from test_cli import DDP_SCRIPT


def test_python_noqa_inside_a_string_is_not_a_suppression():
    text = 's = "x  # noqa: DDP001"\nt = """\n# noqa: DDP001\n"""\nu = 1  # noqa: DDP001, LAY001\n'
    sup = Suppressions.scan(text, "train.py")
    assert sup.lines == {5: ("DDP001", "LAY001")}


def test_shell_comments_respect_quotes_heredocs_and_parameter_expansion():
    text = (
        'echo "# noqa: LCH001"\n'            # 1 in double quotes
        "echo '# noqa: LCH001'\n"            # 2 in single quotes
        'X=${Y#noqa}\n'                      # 3 parameter expansion
        "cat <<EOF\n# noqa: LCH001\nEOF\n"   # 4-6 heredoc body
        "torchrun train.py # noqa: LCH002\n"  # 7 a comment
        'echo "a\n# noqa: LCH001\nb"\n'       # 8-10 multi-line string
        "srun x;# noqa: LCH003\n"            # 11 after ;
    )
    assert Suppressions.scan(text, "run.sh").lines == {7: ("LCH002",), 11: ("LCH003",)}


def test_yaml_toml_and_json():
    yaml_text = "a: '# noqa: LAY001'\nb: \"x # noqa: LAY001\"\nc: it's # noqa: LAY002\nd: x#noqa\n"
    assert Suppressions.scan(yaml_text, "c.yaml").lines == {3: ("LAY002",)}
    toml_text = 'a = "# noqa: LAY001"\nb = """\n# noqa: LAY001\n"""\nc = 1 # noqa: LAY003\n'
    assert Suppressions.scan(toml_text, "c.toml").lines == {5: ("LAY003",)}
    assert Suppressions.scan('{"a": "# noqa: BAT001"}\n', "ds.json").directives == []
    assert comments("x = 1\n", None) == {}


def test_line_in_string():
    text = 'a = """\nb\n"""\nc = 1\nd = (1 +\n  2)\n'
    assert line_in_string(text, "python", 1) and line_in_string(text, "python", 2)
    assert not line_in_string(text, "python", 4) and not line_in_string(text, "python", 5)
    assert line_in_string('echo "a\nb"\n', "shell", 1) and not line_in_string('echo "a"\n', "shell", 1)
    assert line_in_string("torchrun \\\n  x.py\n", "shell", 1)


def _lines(p):
    return [ln for ln in p.stdout.splitlines() if ": " in ln and not ln.startswith(" ")]


def test_syn003_unused_and_unknown_codes(tmp_path, cli):
    script = DDP_SCRIPT.replace("find_unused_parameters=True)", "find_unused_parameters=True)  # noqa: DDP001")
    script += "x = 1  # noqa: DDP001, E501\ny = 2  # noqa: DDP999\nz = 3  # noqa\nw = 4  # noqa: PGH003\n"
    write_tree(tmp_path, {"train.py": script, ".git/x": ""})
    p = cli("check", "train.py", cwd=tmp_path)
    got = [(ln.split(":")[1], ln.split(" ")[1]) for ln in _lines(p)]
    assert got == [("14", "SYN003"), ("15", "SYN003")], p.stdout
    assert "unused noqa code `DDP001`" in p.stdout and "unknown rule code `DDP999`" in p.stdout
    # a rule not selected is not called unused
    p = cli("check", "--select", "SYN003", "train.py", cwd=tmp_path)
    assert [ln.split(":")[1] for ln in _lines(p)] == ["15"], p.stdout


def test_syn003_in_files_without_findings(tmp_path, cli):
    """A file with no finding is told about its unknown or unused codes as before; flake8's own
    codes, and a parallint code inside a string, are not (those files are not tokenized)."""
    write_tree(tmp_path, {
        "a.py": "import torch.distributed as dist\nx = 1  # noqa: E501, F401\ny = 2  # NOQA\n",
        "b.py": "import torch.distributed as dist\ns = '# noqa: DDP999'\nt = 1  # noqa: E501\n",
        "c.py": "import torch.distributed as dist\nx = 1  # noqa: E501\ny = 2  # noqa: DDP998\n",
        "d.py": "import torch.distributed as dist\n# parallint: noqa\nx = 1\n",
        ".git/x": ""})
    p = cli("check", "--no-cache", ".", cwd=tmp_path)
    got = sorted((ln.split(":")[0], ln.split(":")[1], ln.split(" ")[1]) for ln in _lines(p))
    assert got == [("c.py", "3", "SYN003"), ("d.py", "2", "SYN003")], p.stdout
    assert "unknown rule code `DDP998`" in p.stdout and "unused file-level" in p.stdout


def test_noqa_on_a_cross_file_finding_is_used_in_a_one_file_run(tmp_path, cli):
    shutil.copytree(ROOT / "examples" / "deepspeed_batch", tmp_path / "ds")
    (tmp_path / ".git").mkdir()
    cfg = tmp_path / "ds" / "launch.sh"
    cfg.write_text(cfg.read_text().rstrip("\n") + "  # noqa: BAT001\n")
    # BAT001 is located in ds_config.json; the launch line's noqa does not suppress it there
    p = cli("check", "ds/launch.sh", cwd=tmp_path)
    assert "unused noqa code `BAT001`" in p.stdout
    p = cli("check", "ds/ds_config.json", cwd=tmp_path)
    assert " BAT001 " in p.stdout and p.returncode == 1


def test_add_noqa_writes_comments_where_they_can_go(tmp_path, cli):
    launch = "#!/bin/bash\ntorchrun --nnodes 2 --nproc_per_node 8 train.py  # noqa: E501\n"
    write_tree(tmp_path, {
        "train.py": DDP_SCRIPT + "MSG = '''\n'''\n",
        "run.sh": launch,
        "ds.json": '{"train_batch_size": 32, "train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 4}\n',
        "ds.sh": "deepspeed --num_gpus 8 x.py --deepspeed_config ds.json\n",
        ".git/x": "",
    })
    (tmp_path / "run.sh").chmod(0o755)
    before = cli("check", ".", cwd=tmp_path)
    assert before.returncode == 1 and " BAT001 " in before.stdout and " DDP001 " in before.stdout
    p = cli("check", "--add-noqa", ".", cwd=tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "ds.json:" in p.stderr  # JSON cannot take a comment
    assert "find_unused_parameters=True)  # noqa: DDP001" in (tmp_path / "train.py").read_text()
    assert (tmp_path / "run.sh").stat().st_mode & 0o777 == 0o755
    after = cli("check", ".", cwd=tmp_path)
    assert " DDP001 " not in after.stdout and " SYN003 " not in after.stdout, after.stdout
    assert " BAT001 " in after.stdout
    # idempotent: nothing more to add for what is already suppressed
    again = cli("check", "--add-noqa", "train.py", cwd=tmp_path)
    assert again.stdout.startswith("Added 0 noqa codes")
