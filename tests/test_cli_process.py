"""Every command end to end in a process of its own, as a user runs it, and the in-process runner
the rest of the suite uses (``tests/conftest.py``: ``run_cli`` / the ``cli`` fixture) held to it.

Most CLI tests call the console script's entry point in the test process (no interpreter start-up
and imports per call); these tests keep the process boundary itself tested: the exit statuses a
shell sees, each command's output from the installed ``parallint`` executable, and that the
in-process runner gives the same returncode, stdout and stderr byte for byte and leaves nothing
behind in the test process. Tests of what only a process has live next to what they test:
start-up and lazy imports (test_startup.py), Ctrl-C (test_security.py), a terminal
(test_outputs.py, test_progress.py), killed and crashing workers (test_reliability.py,
test_workers_parent_death.py), the Language Server over stdio (test_lsp_transport.py), ``preflight``
on a node (test_preflight.py), the encodings of PYTHONIOENCODING (tests/hostile), plugins on
PYTHONPATH (test_plugins.py), pre-commit and the GitHub Action.
"""

from __future__ import annotations

import gc
import os
import shutil
import signal
import sys
import time
from pathlib import Path

import pytest

from conftest import PLANTED_DDP_SCRIPT, ROOT, run_cli, run_cli_in_process, run_cli_process, write_tree

CLEAN = "import torch.distributed as dist\n\n\ndef main():\n    dist.init_process_group('nccl')\n"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository with a finding (DDP001), a clean script and a Megatron job (estimate, plan)."""
    shutil.copytree(ROOT / "examples" / "gpt130b_pure_dp", tmp_path / "gpt")
    write_tree(tmp_path, {"train.py": PLANTED_DDP_SCRIPT, "clean/train.py": CLEAN})
    return tmp_path


#: (argv, the exit status): each command once, and each status of the contract (0 clean, 1
#: findings, 2 a usage or configuration error)
COMMANDS = [
    (("--version",), 0),
    (("--help",), 0),
    (("check", "--no-cache", "clean"), 0),
    (("check", "--no-cache", "train.py"), 1),
    (("check", "--no-cache", "--format", "json", "."), 1),
    (("check", "--no-cache", "--exit-zero", "train.py"), 0),
    (("check", "--select", "NOPE1", "."), 2),
    (("check", "--help"), 0),
    (("check", "--no-such-option", "."), 2),
    (("rules",), 0),
    (("rule", "DDP001"), 0),
    (("rule", "XYZ999"), 2),
    (("show", "gpt/train.sbatch"), 0),
    (("presets",), 0),
    (("estimate", "--format", "json", "gpt"), 1),
    (("plan", "gpt", "--gpus", "32"), 0),
    (("cache", "clean"), 0),
    (("preflight", "--show", "--", "torchrun", "--nproc_per_node", "2", "train.py"), 0),
    (("nosuchcommand",), 2),
]


@pytest.mark.parametrize(("argv", "status"), COMMANDS, ids=[" ".join(a) for a, _ in COMMANDS])
def test_each_command_in_a_process_and_in_process_alike(repo, argv, status):
    proc = run_cli_process(*argv, cwd=repo)
    assert proc.returncode == status, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    assert proc.stdout or proc.stderr
    inner = run_cli_in_process(*argv, cwd=repo)
    assert (inner.returncode, inner.stdout, inner.stderr) == (proc.returncode, proc.stdout, proc.stderr)


def test_standard_input_and_output_file_alike(repo):
    args = ("check", "--no-cache", "--format", "json", "-", "--stdin-filename", "train.py")
    proc = run_cli_process(*args, cwd=repo, stdin=PLANTED_DDP_SCRIPT)
    inner = run_cli_in_process(*args, cwd=repo, stdin=PLANTED_DDP_SCRIPT)
    assert proc.returncode == inner.returncode == 1 and '"DDP001"' in proc.stdout
    assert (inner.stdout, inner.stderr) == (proc.stdout, proc.stderr)
    for runner, name in ((run_cli_process, "a.json"), (run_cli_in_process, "b.json")):
        assert runner("check", "--no-cache", "--format", "json", "--output-file", name, "train.py",
                      cwd=repo).returncode == 1
    assert (repo / "a.json").read_bytes() == (repo / "b.json").read_bytes()


def test_in_process_runs_leave_the_test_process_as_they_found_it(repo, monkeypatch):
    """A run sets SIGINT's handler, freezes and pauses the garbage collector, replaces the streams,
    changes folder; the environment it is given and ``PARALLINT_DEBUG`` are its own."""
    monkeypatch.setenv("PARALLINT_DEBUG", "1")
    before = (dict(os.environ), os.getcwd(), sys.argv, sys.executable, sys.modules["__main__"], sys.stdin, sys.stdout,
              sys.stderr, signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGALRM), gc.isenabled(), gc.get_freeze_count())
    for argv in (("check", "--no-cache", "train.py"), ("check", "--no-cache", "."), ("rules",), ("--help",),
                 ("check", "--select", "NOPE1", ".")):
        run_cli_in_process(*argv, cwd=repo / "clean", env={"PARALLINT_HOST_ROOT": str(repo)})
    after = (dict(os.environ), os.getcwd(), sys.argv, sys.executable, sys.modules["__main__"], sys.stdin, sys.stdout,
             sys.stderr, signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGALRM), gc.isenabled(), gc.get_freeze_count())
    assert after == before


def test_a_run_stored_in_process_is_a_hit_for_a_process_and_back(repo):
    """The run cache's key holds the interpreter (``sys.executable``): an in-process run is keyed
    as the console script's process is, so both find the other's runs."""
    env = {"PARALLINT_CACHE_DIR": str(repo / "cache"), "XDG_CACHE_HOME": str(repo / "home"),
           "PARALLINT_JOBS": "1", "PARALLINT_CACHE_TRACE": "1"}
    past = time.time() - 30
    for p in (repo / "clean", repo / "clean" / "train.py"):
        os.utime(p, (past, past))
    traces = []
    for runner in (run_cli_in_process, run_cli_process, run_cli_in_process):
        p = runner("check", "--format", "json", "clean", cwd=repo, env=env)
        assert p.returncode == 0, p.stderr
        traces.append([ln.split("run cache: ", 1)[1] for ln in p.stderr.splitlines() if "run cache: " in ln])
    assert traces == [["miss, stored"], ["hit"], ["hit"]]


def test_the_environment_given_is_the_runs_own(repo, monkeypatch):
    monkeypatch.setenv("PARALLINT_DEBUG", "1")  # unset for the run, as for a process
    monkeypatch.setenv("NO_COLOR", "1")
    coloured = run_cli_in_process("check", "--no-cache", "train.py", cwd=repo, env={"FORCE_COLOR": "1"})
    assert "\x1b[" not in coloured.stdout  # NO_COLOR of the test process still holds
    monkeypatch.delenv("NO_COLOR")
    coloured = run_cli_in_process("check", "--no-cache", "train.py", cwd=repo, env={"FORCE_COLOR": "1"})
    assert "\x1b[" in coloured.stdout
    assert "\x1b[" not in run_cli_in_process("check", "--no-cache", "train.py", cwd=repo).stdout
    assert os.environ.get("PARALLINT_DEBUG") == "1" and "FORCE_COLOR" not in os.environ


def test_runs_the_interpreter_must_start_for_go_to_a_process(repo, monkeypatch):
    """PYTHON* and the locale take effect when an interpreter starts; worker processes are forked
    from a parallint process, never from the test process."""
    import conftest

    monkeypatch.delenv("PARALLINT_TEST_SUBPROCESS", raising=False)
    monkeypatch.delenv("PARALLINT_TEST_COMPARE", raising=False)
    calls: list[str] = []
    monkeypatch.setattr(conftest, "run_cli_process", lambda *a, **k: calls.append("process"))
    monkeypatch.setattr(conftest, "run_cli_in_process", lambda *a, **k: calls.append("in"))
    run_cli("rules", cwd=repo)
    run_cli("rules", cwd=repo, env={"PYTHONIOENCODING": "ascii"})
    run_cli("rules", cwd=repo, env={"LC_ALL": "C"})
    run_cli("rules", cwd=repo, env={"PARALLINT_JOBS": "2"})
    run_cli("rules", cwd=repo, env={"PARALLINT_JOBS": "1", "XDG_CACHE_HOME": str(repo)})
    assert calls == ["in", "process", "process", "process", "in"]
