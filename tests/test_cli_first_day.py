"""Small things a new user meets on day one (issue 26), end to end through the CLI."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import write_tree


def test_a_missing_path_is_an_error_not_all_checks_passed(cli, tmp_path):
    (tmp_path / ".git").mkdir()
    res = cli("check", "--no-cache", "nonexist.py", cwd=tmp_path)
    assert res.returncode == 2
    assert "All checks passed" not in res.stdout
    assert "nonexist.py: no such file or directory" in res.stderr


def test_an_unknown_command_gets_one_did_you_mean(cli, tmp_path):
    res = cli("chek", cwd=tmp_path)
    assert res.returncode == 2
    assert res.stderr.lower().count("did you mean") == 1, res.stderr


def test_junit_says_one_file(cli, tmp_path):
    (tmp_path / ".git").mkdir()
    write_tree(tmp_path, {"train.py": "import torch.distributed as dist\ndist.init_process_group('gloo')\n"})
    res = cli("check", "--no-cache", "--format", "junit", "train.py", cwd=tmp_path)
    assert 'name="1 file checked"' in res.stdout, res.stdout


def test_one_degree_is_not_written_as_a_product(cli, tmp_path):
    (tmp_path / ".git").mkdir()
    write_tree(tmp_path, {
        "run.sh": "torchrun --nproc_per_node 8 --nnodes 1 pretrain.py --tp 3\n",
        "pretrain.py": "import argparse\nfrom megatron.core import parallel_state\np = argparse.ArgumentParser()\n"
                       "p.add_argument('--tp', type=int, default=1)\nargs = p.parse_args()\n"
                       "parallel_state.initialize_model_parallel(args.tp)\n",
    })
    out = cli("check", "--no-cache", ".", cwd=tmp_path).stdout
    assert "is not divisible by TP 3:" in out and "TP 3 = 3" not in out, out


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX modes")
@pytest.mark.parametrize("umask,mode", [(0o022, 0o644), (0o077, 0o600)])
def test_a_report_gets_the_mode_the_umask_gives(tmp_path, umask, mode):
    (tmp_path / ".git").mkdir()
    write_tree(tmp_path, {"train.py": "import torch.distributed as dist\ndist.init_process_group('nccl')\n"})
    exe = Path(sys.executable).with_name("parallint")
    env = {k: v for k, v in os.environ.items() if k != "PARALLINT_DEBUG"}
    subprocess.run(f"umask {umask:03o} && '{exe}' check --no-cache -o out/report.txt train.py", shell=True,
                   cwd=tmp_path, env=env, timeout=120, capture_output=True)
    assert stat.S_IMODE((tmp_path / "out" / "report.txt").stat().st_mode) == mode


def test_every_config_typo_is_reported_with_its_line(tmp_path):
    """Issue 26: a typo in [tool.parallint] was reported without its line, and only the first."""
    from conftest import run_cli, write_tree

    write_tree(tmp_path, {".git/x": "", "a.py": "x = 1\n",
                          "pyproject.toml": '[project]\nname = "x"\n\n[tool.parallint]\nselect = ["DDP"]\n'
                                            'ignroe = ["X"]\nfail-levle = "error"\n'})
    res = run_cli("check", "a.py", cwd=tmp_path)
    assert res.returncode == 2
    lines = res.stderr.strip().splitlines()
    assert lines == [
        f"parallint: error: {tmp_path / 'pyproject.toml'}:6: unknown key 'ignroe' in [tool.parallint] (did you mean 'ignore'?)",
        f"parallint: error: {tmp_path / 'pyproject.toml'}:7: unknown key 'fail-levle' in [tool.parallint] (did you mean 'fail-level'?)",
    ], res.stderr
    (tmp_path / "pyproject.toml").write_text('[tool.parallint]\nselect = "DDP"\nmax-file-size = -3\n')
    res = run_cli("check", "a.py", cwd=tmp_path)
    assert [ln.split(": invalid value for ")[0].rsplit(":", 1)[1] for ln in res.stderr.strip().splitlines()] == ["3", "2"]
