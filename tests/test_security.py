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
                      + "x = 1\n" * 400 for i in range(30) for j in range(30)})
    env = dict(os.environ, **_env(tmp_path))
    exe = Path(sys.executable).with_name("parallint")
    p = subprocess.Popen([str(exe), "check", "--no-cache", "."], cwd=repo, env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(2.0)
    assert p.poll() is None, "the check ended before the interrupt; make the tree larger"
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 130, (out, err)
    assert "Traceback" not in err and "Aborted!" in err
