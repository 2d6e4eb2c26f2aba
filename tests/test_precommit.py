"""The README's pre-commit snippet, verbatim, with the real pre-commit framework: an installed hook
blocks a commit that breaks a cross-file identity in a config alone, and try-repo runs the
whole-repository hook. GitHub is not reachable here: git's `url.<local>.insteadOf` sends the
snippet's URL to a local copy of this working tree (branch main), so the snippet is used unchanged.

Slow (pre-commit builds a virtualenv for each hook source and installs parallint and its
dependencies into it from the package index: two here, the README's repository and try-repo's
clone, 30-60 s in all): runs with PARALLINT_SLOW=1, which CI sets for this file (.ci/run). Without
a package index the tests skip and say so.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import ROOT

slow = [
    pytest.mark.slow,
    pytest.mark.skipif(not os.environ.get("PARALLINT_SLOW"),
                       reason="slow: pre-commit installs the hook into a fresh virtualenv (~1 min); set PARALLINT_SLOW=1"),
]


def _slow(fn):
    for mark in slow:
        fn = mark(fn)
    return fn
URL = "https://github.com/parallint/parallint"
HOOK_FILES = re.compile(yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())[0]["files"])


def readme_snippet() -> str:
    text = (ROOT / "README.md").read_text("utf-8")
    section = text.split("### pre-commit", 1)[1]
    return re.search(r"```yaml\n(.*?)```", section, re.S).group(1)


def _pre_commit() -> list[str]:
    exe = Path(sys.executable).with_name("pre-commit")
    if not exe.exists():
        pytest.skip("pre-commit is not installed (pip install -e '.[test]')")
    return [str(exe)]


def _git(*args, cwd, env):
    return subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=True)


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    base = tmp_path_factory.mktemp("precommit")
    remote = base / "remote"
    # pre-commit drops most GIT_* variables from git's environment, but keeps GIT_CONFIG_COUNT/KEY/VALUE
    # PIP_NO_COMPILE: the hook's virtualenv needs no bytecode up front (saves seconds per install)
    env = dict(os.environ, PRE_COMMIT_HOME=str(base / "home"), GIT_CONFIG_COUNT="1", PIP_NO_COMPILE="1",
               GIT_CONFIG_KEY_0=f"url.{remote.as_uri()}.insteadOf", GIT_CONFIG_VALUE_0=URL,
               GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.com",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.com")
    env.pop("PARALLINT_DEBUG", None)
    # this working tree, as the branch `main` of the "GitHub" repository
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            cwd=ROOT, capture_output=True, check=True).stdout.split(b"\0")
    for rel in listed:
        if rel and (ROOT / os.fsdecode(rel)).is_file():
            dst = remote / os.fsdecode(rel)
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / os.fsdecode(rel), dst)
    _git("init", "-q", "-b", "main", cwd=remote, env=env)
    _git("add", "-A", cwd=remote, env=env)
    _git("commit", "-qm", "snapshot", cwd=remote, env=env)
    return base, env


def _user_repo(base: Path, env: dict, name: str) -> Path:
    repo = base / name
    shutil.copytree(ROOT / "examples" / "deepspeed_batch", repo / "job")
    ds = repo / "job" / "ds_config.json"
    ds.write_text(ds.read_text().replace('"train_batch_size": 32', '"train_batch_size": 64'))
    (repo / "run").write_text("#!/bin/bash\ncd job && ./launch.sh\n")
    (repo / "run").chmod(0o755)
    _git("init", "-q", cwd=repo, env=env)
    return repo


def _run(cmd, repo, env):
    p = subprocess.run(cmd, cwd=repo, env=env, capture_output=True, text=True, timeout=900)
    out = p.stdout + p.stderr
    if p.returncode not in (0, 1) or "An unexpected error has occurred" in out:
        log = Path(env["PRE_COMMIT_HOME"]) / "pre-commit.log"
        out += log.read_text() if log.exists() else ""
        if re.search(r"pip install|Could not find a version|No matching distribution|Network is unreachable", out, re.I):
            pytest.skip(f"pre-commit could not install the hook offline: {out.strip().splitlines()[-1]}")
    return p, out


@_slow
def test_readme_snippet_installed_hook_blocks_a_config_only_change(setup):
    base, env = setup
    snippet = readme_snippet()
    assert yaml.safe_load(snippet)["repos"][0]["repo"] == URL
    repo = _user_repo(base, env, "user")
    (repo / ".pre-commit-config.yaml").write_text(snippet)
    pc = _pre_commit()
    p, out = _run(pc + ["install"], repo, env)
    assert p.returncode == 0, out
    _git("add", "-A", cwd=repo, env=env)
    p, out = _run(["git", "commit", "-m", "a consistent job"], repo, env)
    assert p.returncode == 0, out
    # only the config changes; the world size it must agree with is in launch.sh
    ds = repo / "job" / "ds_config.json"
    ds.write_text(ds.read_text().replace('"train_batch_size": 64', '"train_batch_size": 32'))
    _git("add", "-A", cwd=repo, env=env)
    p, out = _run(["git", "commit", "-m", "break the batch identity"], repo, env)
    assert p.returncode != 0, out
    assert "job/ds_config.json:2:23: BAT001" in out and "launch.sh:4: world size 8" in out
    # a launch-file-only change that breaks the same identity is blocked too (--related-findings)
    _git("reset", "-q", "--hard", cwd=repo, env=env)  # back to the consistent commit
    launch = repo / "job" / "launch.sh"
    launch.write_text(launch.read_text().replace("--num_gpus 8", "--num_gpus 4"))
    _git("add", "-A", cwd=repo, env=env)
    p, out = _run(["git", "commit", "-m", "half the GPUs"], repo, env)
    assert p.returncode != 0, out
    assert "job/ds_config.json:2:23: BAT001" in out and "launch.sh:4: world size 4" in out
    _git("reset", "-q", "--hard", cwd=repo, env=env)
    # the same hook (its environment is built already) takes an extensionless launch script
    (repo / "launch").write_text("#!/bin/bash\ntorchrun --nproc_per_node 8 --nnodes 1 job/train.py\n")
    (repo / "launch").chmod(0o755)
    _git("add", "launch", cwd=repo, env=env)
    p, out = _run(pc + ["run", "parallint", "--files", "launch", "--verbose"], repo, env)
    assert "(1 file checked)" in out or "in 1 file" in out, out


@_slow
def test_try_repo_whole_repository_hook(setup):
    base, env = setup
    repo = _user_repo(base, env, "user2")
    ds = repo / "job" / "ds_config.json"
    ds.write_text(ds.read_text().replace('"train_batch_size": 64', '"train_batch_size": 32'))
    _git("add", "-A", cwd=repo, env=env)
    pc = _pre_commit()
    p, out = _run(pc + ["try-repo", URL, "parallint-repo", "--all-files", "--verbose"], repo, env)
    assert p.returncode == 1 and "BAT001" in out, out


def test_hook_files_pattern_takes_launch_scripts():
    for name in ("run", "scripts/train", "job.sbatch", "Makefile", "conf/x.yaml", "ds.json"):
        assert HOOK_FILES.search(name), name
    for name in ("README.md", "notes.txt", "model.safetensors"):
        assert not HOOK_FILES.search(name), name
