"""Untrusted repositories: nothing committed in a checked tree decides parallint's results or makes
it write outside the repository, and interrupts or full disks leave nothing behind (docs/security.md)."""

from __future__ import annotations

import errno
import hashlib
import json
import shutil
from pathlib import Path

import pytest

from conftest import write_tree


EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "deepspeed_batch"


def _ds_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    shutil.copytree(EXAMPLE, repo)
    (repo / ".git").mkdir()
    return repo


def _env(tmp_path: Path) -> dict:
    return {"PARALLINT_CACHE_DIR": "", "XDG_CACHE_HOME": str(tmp_path / "home"), "PARALLINT_JOBS": "1"}


def _forged_index(repo: Path) -> dict:
    """A links.json as main wrote it (plain JSON), saying every file of the tree links nothing."""
    from parallint import __version__
    from parallint.engine.index import CACHE_FORMAT

    files = {}
    for p in repo.iterdir():
        if p.is_file():
            files[hashlib.blake2b(p.read_bytes(), digest_size=16).hexdigest() + ":" + p.name] = []
    return {"tag": f"{CACHE_FORMAT}:{__version__}", "files": files}


@pytest.mark.parametrize("forged", [True, False])
def test_a_committed_link_index_does_not_hide_a_launchers_finding(tmp_path, cli, forged):
    repo = _ds_repo(tmp_path)
    if forged:
        (repo / ".parallint_cache").mkdir()
        (repo / ".parallint_cache" / "links.json").write_text(json.dumps(_forged_index(repo)), "utf-8")
    for _ in range(2):  # cold, then warm with the index this user signed
        p = cli("check", "--format", "json", "ds_config.json", cwd=repo, env=_env(tmp_path))
        assert p.returncode == 1, p.stdout + p.stderr
        assert "BAT001" in {d["code"] for d in json.loads(p.stdout)}


def test_a_full_disk_leaves_no_temporary_cache_files(tmp_path, monkeypatch):
    import os

    from parallint.discover.settings import Config
    from parallint.engine.index import check_files
    from parallint.engine.registry import get_registry

    repo = _ds_repo(tmp_path)
    monkeypatch.setenv("PARALLINT_JOBS", "1")
    monkeypatch.setenv("PARALLINT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "home"))
    from parallint.engine.cache import user_key

    assert user_key() is not None  # created before the disk is full
    real = os.fdopen

    class Full:
        def __init__(self, fd, *a, **kw):
            self.fh = real(fd, *a, **kw)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.fh.close()

        def write(self, data):
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fdopen", Full)
    for run_cache in (False, True):  # the entries and the index, then the run's manifest
        result = check_files(["."], Config(None, repo, {}), get_registry().rules, cwd=repo, run_cache=run_cache)
        assert any(d.code == "BAT001" for d in result.diagnostics)
    assert (tmp_path / "cache").is_dir()  # the cache was tried
    assert list(tmp_path.rglob("*.tmp")) == []


def test_the_checked_trees_git_configuration_runs_nothing(tmp_path, cli):
    import subprocess

    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = tmp_path / "repo"
    shutil.copytree(EXAMPLE, repo)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "add", "."], check=True)
    marker = tmp_path / "ran"
    hook = tmp_path / "monitor.sh"
    hook.write_text(f"#!/bin/sh\ntouch {marker}\n", "utf-8")
    hook.chmod(0o755)
    with open(repo / ".git" / "config", "a", encoding="utf-8") as fh:
        fh.write(f"[core]\n\tfsmonitor = {hook}\n\tpager = {hook}\n")
    p = cli("check", "--format", "json", "ds_config.json", cwd=repo, env=_env(tmp_path))
    assert p.returncode == 1, p.stdout + p.stderr
    assert "BAT001" in {d["code"] for d in json.loads(p.stdout)}  # the launcher was still found
    assert not marker.exists()


@pytest.mark.parametrize("kind", ["deep", "fifo", "good"])
def test_a_hostile_baseline_is_a_one_line_error(tmp_path, cli, kind):
    import os

    repo = _ds_repo(tmp_path)
    base = repo / "baseline.json"
    if kind == "deep":
        base.write_text("[" * 100_000 + "]" * 100_000, "utf-8")
    elif kind == "fifo":
        os.mkfifo(base)
    else:
        assert cli("check", "--write-baseline", "baseline.json", ".", cwd=repo, env=_env(tmp_path)).returncode == 0
    p = cli("check", "--baseline", "baseline.json", ".", cwd=repo, env=_env(tmp_path))
    if kind == "good":
        assert p.returncode == 0, p.stdout + p.stderr
        return
    assert p.returncode == 2, p.stdout + p.stderr
    assert "Traceback" not in p.stderr and "baseline" in p.stderr


def test_ctrl_c_exits_130_without_a_traceback(tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import time

    repo = tmp_path / "repo"
    write_tree(repo, {f"pkg{i}/train{j}.py": "import torch.distributed as dist\ndist.init_process_group('nccl')\n"
                      + "x = 1\n" * 400 for i in range(60) for j in range(40)})
    env = dict(os.environ, **_env(tmp_path))
    exe = Path(sys.executable).with_name("parallint")
    p = subprocess.Popen([str(exe), "check", "--no-cache", "."], cwd=repo, env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(1.0)  # past start-up (the handler is installed), well before the 2,400 files are done
    assert p.poll() is None, "the check ended before the interrupt; make the tree larger"
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 130, (out, err)
    assert "Traceback" not in err and "Aborted!" in err


# ------------------------------------------------------------------ writes outside the repository
def _listing(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def _two_runs(cli, repo: Path, tmp_path: Path, *args: str) -> None:
    for _ in range(2):  # the first run writes the cache, the second reads it
        proc = cli("check", *args, cwd=repo, env=_env(tmp_path))
        assert proc.returncode == 1, proc.stdout + proc.stderr
        assert "BAT001" in proc.stdout


@pytest.mark.parametrize("one_file", [False, True])
def test_a_committed_cache_folder_link_is_not_written_through(tmp_path, cli, one_file):
    repo = _ds_repo(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (repo / ".parallint_cache").symlink_to(outside, target_is_directory=True)
    _two_runs(cli, repo, tmp_path, *(["ds_config.json"] if one_file else ["."]))
    assert _listing(outside) == []


def test_a_dangling_gitignore_link_in_the_cache_creates_nothing(tmp_path, cli):
    repo = _ds_repo(tmp_path)
    target = tmp_path / "home" / ".config" / "git" / "ignore"
    target.parent.mkdir(parents=True)
    (repo / ".parallint_cache").mkdir()
    (repo / ".parallint_cache" / ".gitignore").symlink_to(target)
    _two_runs(cli, repo, tmp_path, ".")
    assert not target.exists()
    assert (repo / ".parallint_cache" / ".gitignore").is_symlink()


@pytest.mark.parametrize("sub", ["files", "runs"])
def test_a_link_inside_the_cache_folder_is_not_written_through(tmp_path, cli, sub):
    repo = _ds_repo(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (repo / ".parallint_cache").mkdir()
    (repo / ".parallint_cache" / sub).symlink_to(outside, target_is_directory=True)
    _two_runs(cli, repo, tmp_path, ".")
    _two_runs(cli, repo, tmp_path, "ds_config.json")
    assert _listing(outside) == []


def test_cache_clean_does_not_follow_a_committed_link(tmp_path, cli):
    repo = _ds_repo(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / ".gitignore").write_text("# created by parallint\n*\n")
    (outside / "links.json").write_text("{}")
    (repo / ".parallint_cache").symlink_to(outside, target_is_directory=True)
    cli("cache", "clean", ".", cwd=repo, env=_env(tmp_path))
    assert _listing(outside) == [".gitignore", "links.json"]


def test_a_cache_folder_the_user_names_may_be_a_link(tmp_path, cli):
    repo = _ds_repo(tmp_path)
    real = tmp_path / "real-cache"
    real.mkdir()
    (tmp_path / "cache-link").symlink_to(real, target_is_directory=True)
    env = {**_env(tmp_path), "PARALLINT_CACHE_DIR": str(tmp_path / "cache-link")}
    proc = cli("check", ".", cwd=repo, env=env)
    assert proc.returncode == 1 and "BAT001" in proc.stdout
    assert _listing(real) != []  # the cache was written where the user said


def test_a_fifo_committed_as_a_cache_entry_does_not_block(tmp_path, cli):
    import os

    repo = _ds_repo(tmp_path)
    cli("check", ".", cwd=repo, env=_env(tmp_path))
    entries = [p for p in (repo / ".parallint_cache").rglob("*") if p.is_file() and p.name != ".gitignore"]
    assert entries
    for p in entries:  # every entry replaced by a FIFO (or a link to one) nobody writes to
        p.unlink()
        os.mkfifo(p)
    proc = cli("check", ".", cwd=repo, env=_env(tmp_path))
    assert proc.returncode == 1 and "BAT001" in proc.stdout


# ------------------------------------------------------------------ reads outside the repository
SECRET = "AKIA0123456789SECRET"


def _outside_tree(tmp_path: Path) -> tuple[Path, Path]:
    outside, repo = tmp_path / "outside", tmp_path / "repo"
    outside.mkdir()
    repo.mkdir()
    (repo / ".git").mkdir()
    (outside / "ds.json").write_text(json.dumps({
        "train_batch_size": 64, "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 1,
        "aws_secret_access_key": SECRET}))
    (outside / "env.sh").write_text(f"export NPROC=6\nexport TOKEN={SECRET}\n")
    write_tree(repo, {"train.py": "import deepspeed\nmodel, opt, _, _ = deepspeed.initialize(args=args, model=model)\n"})
    return outside, repo


@pytest.mark.parametrize("how", ["absolute", "home", "symlink"])
def test_a_config_outside_the_repository_is_named_not_read(tmp_path, cli, how):
    outside, repo = _outside_tree(tmp_path)
    env = {**_env(tmp_path), "HOME": str(outside.parent)}
    if how == "symlink":
        (repo / "ds.json").symlink_to(outside / "ds.json")
        ref = "ds.json"
    else:
        ref = str(outside / "ds.json") if how == "absolute" else "~/outside/ds.json"
    (repo / "launch.sh").write_text(f"#!/bin/bash\ndeepspeed --num_gpus 8 train.py --deepspeed {ref}\n")
    for args in (["check", "--no-cache", "--format", "json", "."], ["show", "launch.sh"]):
        proc = cli(*args, cwd=repo, env=env)
        assert SECRET not in proc.stdout + proc.stderr
        assert "aws_secret_access_key" not in proc.stdout + proc.stderr
    proc = cli("check", "--no-cache", "--format", "json", ".", cwd=repo, env=env)
    found = json.loads(proc.stdout)
    assert "BAT001" not in {d["code"] for d in found}  # its values are not read, so not checked
    hints = [d for d in found if d["code"] == "SYN002"]
    assert hints and all(d["severity"] == "info" and "outside the repository" in d["message"] for d in hints)
    assert proc.returncode == 0  # a hint: an outside file is not the tree's fault


def test_an_outside_config_named_on_the_command_line_is_checked(tmp_path, cli):
    outside, repo = _outside_tree(tmp_path)
    (repo / "launch.sh").write_text(f"#!/bin/bash\ndeepspeed --num_gpus 8 train.py --deepspeed {outside / 'ds.json'}\n")
    proc = cli("check", "--no-cache", "--format", "json", ".", str(outside / "ds.json"), cwd=repo, env=_env(tmp_path))
    assert "BAT001" in {d["code"] for d in json.loads(proc.stdout)}


def test_a_sourced_script_outside_the_repository_is_not_read(tmp_path, cli):
    outside, repo = _outside_tree(tmp_path)
    (repo / "env_in.sh").write_text((outside / "env.sh").read_text().replace(SECRET, "inside"))
    for name, src in (("run_in.sh", "./env_in.sh"), ("run_out.sh", str(outside / "env.sh"))):
        (repo / name).write_text(f"#!/bin/bash\nsource {src}\ntorchrun --nproc_per_node $NPROC train.py\n")
    inside = cli("show", "run_in.sh", cwd=repo, env=_env(tmp_path)).stdout
    out = cli("show", "run_out.sh", cwd=repo, env=_env(tmp_path)).stdout
    assert "procs_per_node: 6" in inside  # the control: a sourced script inside is read
    assert "procs_per_node: 6" not in out and "unknown: environment variable NPROC" in out
    assert SECRET not in out


def test_a_found_configuration_may_not_extend_outside_the_repository(tmp_path, cli):
    outside, repo = _outside_tree(tmp_path)
    (outside / "base.toml").write_text(f'[tool.parallint]\n{SECRET.lower()}_key = "x"\n')
    (repo / "pyproject.toml").write_text(f'[tool.parallint]\nextend = "{outside / "base.toml"}"\n')
    proc = cli("check", "--no-cache", ".", cwd=repo, env=_env(tmp_path))
    assert proc.returncode == 2
    assert "outside the repository" in proc.stderr and SECRET.lower() not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_a_folder_link_out_of_the_repository_is_not_walked(tmp_path, cli):
    outside, repo = _outside_tree(tmp_path)
    (repo / "configs").symlink_to(outside, target_is_directory=True)
    (repo / "inner").symlink_to(repo, target_is_directory=True)  # a loop inside: walked once
    proc = cli("check", "--no-cache", "--format", "json", ".", cwd=repo, env=_env(tmp_path))
    found = json.loads(proc.stdout)
    assert SECRET not in proc.stdout
    assert [(d["path"], d["severity"]) for d in found if d["code"] == "SYN002"] == [("configs", "info")]
    assert not any(d["path"].startswith("configs/") for d in found)


def test_a_one_file_check_does_not_index_through_a_link_out_of_the_repository(tmp_path, cli):
    outside, repo = _outside_tree(tmp_path)
    shutil.copy(EXAMPLE / "ds_config.json", repo / "ds_config.json")
    launch = (EXAMPLE / "launch.sh").read_text()
    (outside / "launch.sh").write_text(launch)  # would make ds_config.json a job's config
    (repo / "data").symlink_to(outside, target_is_directory=True)
    (repo / "big.bin").symlink_to(outside / "ds.json")
    proc = cli("check", "--no-cache", "--format", "json", "ds_config.json", cwd=repo, env=_env(tmp_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads(proc.stdout) == []
    (repo / "launch.sh").write_text(launch)  # the control: the same launcher inside is found
    proc = cli("check", "--no-cache", "--format", "json", "ds_config.json", cwd=repo, env=_env(tmp_path))
    assert "BAT001" in {d["code"] for d in json.loads(proc.stdout)}


@pytest.mark.parametrize("name", ["/", "/ds_config.json"])
def test_stdin_named_at_the_file_system_root_does_not_index_the_machine(tmp_path, name):
    """A one-file check builds a reverse-link index of its repository; a file at the file
    system's top has none, and walking / (with /proc and /sys) ran for minutes (22 GB once)."""
    import subprocess
    import sys
    import time

    exe = Path(sys.executable).with_name("parallint")
    t = time.monotonic()
    p = subprocess.run([str(exe), "check", "--no-cache", "--stdin-filename", name, "-"], cwd=tmp_path,
                       input='{"train_batch_size": 8}\n', capture_output=True, text=True, timeout=60)
    assert time.monotonic() - t < 20
    assert "Traceback" not in p.stderr, p.stderr
    if name == "/":  # a folder is no file name: a one-line usage error, not "All checks passed"
        assert p.returncode == 2 and p.stderr.count("\n") == 1 and "is a folder" in p.stderr, p.stderr
        assert p.stdout == ""
    else:
        assert p.returncode in (0, 1), p.stderr
