"""The content cache (parallint.engine.cache): a warm run gives the same findings and reads only what
changed; an edited file or config is read again; --no-cache bypasses it; `parallint cache clean`
removes it; a corrupt or foreign entry is ignored (never unpickled, never a crash)."""

from __future__ import annotations

import hashlib
import json
import pickle
from pathlib import Path

import pytest

from conftest import PLANTED_DDP_SCRIPT, write_tree
from parallint.discover.settings import Config
from parallint.engine.index import check_files
from parallint.engine.registry import get_registry

LAUNCHED = """\
import torch.distributed as dist
dist.init_process_group("nccl", world_size=4)
"""
HELPER = """\
import torch.distributed as dist

def rank():
    return dist.get_rank()
"""
DS_SCRIPT = """\
import deepspeed
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

def main(model):
    dist.init_process_group("nccl")
    engine, *_ = deepspeed.initialize(model=model, config="ds.json")
"""
TREE = {
    "train.py": PLANTED_DDP_SCRIPT,
    "helper.py": HELPER,
    "run.sh": "torchrun --nproc_per_node 8 launched.py\n",
    "launched.py": LAUNCHED,
    "ds_train.py": DS_SCRIPT,
    "ds.json": '{"train_batch_size": 32, "train_micro_batch_size_per_gpu": 4}\n',
}


@pytest.fixture
def tree(tmp_path, monkeypatch):
    monkeypatch.setenv("PARALLINT_JOBS", "1")
    monkeypatch.setenv("PARALLINT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "home"))
    repo = tmp_path / "repo"
    write_tree(repo, TREE)
    (repo / ".git").mkdir()
    return repo


@pytest.fixture
def reads(monkeypatch):
    """The Python files the Python reader reads, by name."""
    import parallint.readers.python as py

    seen: list[str] = []
    real = py.read

    def counting(path, abspath, text, *args, **kw):
        seen.append(Path(path).name)
        return real(path, abspath, text, *args, **kw)

    monkeypatch.setattr(py, "read", counting)
    return seen


def _check(repo: Path, use_cache: bool = True) -> list[tuple]:
    rules = get_registry().rules
    res = check_files(["."], Config(None, repo, {}), rules, cwd=repo, use_cache=use_cache, run_cache=False)
    assert not res.errors
    return [(d.code, d.span.path, d.span.line, d.span.column, d.message, d.severity) for d in res.diagnostics]


def _entries(repo: Path) -> list[Path]:
    return [p for p in (repo.parent / "cache").rglob("*") if p.is_file() and p.parent.parent.name == "files"]


def test_warm_run_gives_the_same_findings_and_reads_only_linked_scripts(tree, reads):
    cold = _check(tree)
    assert {c for c, *_ in cold} >= {"DDP001", "PG003"}
    assert sorted(reads) == ["ds_train.py", "helper.py", "launched.py", "train.py"]
    assert len(_entries(tree)) == 3  # the files checked on their own; the linked script is not cached
    reads.clear()
    warm = _check(tree)
    assert warm == cold
    assert reads == ["launched.py"]  # the script a launch links is read every run (its job rules need it)
    assert _check(tree, use_cache=False) == cold


def test_an_edited_file_is_read_again(tree, reads):
    cold = _check(tree)
    (tree / "train.py").write_text(PLANTED_DDP_SCRIPT.replace(", find_unused_parameters=True", ""))
    reads.clear()
    warm = _check(tree)
    assert sorted(reads) == ["launched.py", "train.py"]
    assert [d for d in cold if d[0] != "DDP001"] == warm


def test_a_changed_config_of_the_files_job_is_a_miss(tree, reads):
    _check(tree)
    (tree / "ds.json").write_text('{"train_batch_size": 30, "train_micro_batch_size_per_gpu": 4}\n')
    reads.clear()
    _check(tree)
    assert sorted(reads) == ["ds_train.py", "launched.py"]


def test_a_corrupt_entry_is_ignored(tree, reads):
    cold = _check(tree)
    entries = _entries(tree)
    for i, p in enumerate(entries):
        data = p.read_bytes()
        p.write_bytes(b"" if i == 0 else data[: len(data) // 2] if i == 1 else b"\x00garbage" + data[40:])
    reads.clear()
    assert _check(tree) == cold
    assert sorted(reads) == ["ds_train.py", "helper.py", "launched.py", "train.py"]
    reads.clear()
    assert _check(tree) == cold  # rewritten: warm again
    assert reads == ["launched.py"]


def test_a_foreign_entry_is_never_unpickled(tree, reads, tmp_path):
    cold = _check(tree)
    marker = tmp_path / "unpickled"

    class Evil:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    payload = pickle.dumps(Evil())
    other_key = b"k" * 32
    for p in _entries(tree):  # as if written by someone else (a cache folder committed to a repository)
        p.write_bytes(hashlib.blake2b(payload, key=other_key, digest_size=32).digest() + payload)
    reads.clear()
    assert _check(tree) == cold
    assert not marker.exists()
    assert "train.py" in reads


def test_cli_no_cache_and_cache_clean(tmp_path, cli):
    repo = tmp_path / "repo"
    write_tree(repo, TREE)
    (repo / ".git").mkdir()
    env = {"PARALLINT_CACHE_DIR": "", "XDG_CACHE_HOME": str(tmp_path / "home"), "PARALLINT_JOBS": "1"}
    p = cli("check", "--format", "json", "--no-cache", ".", cwd=repo, env=env)
    assert p.returncode == 1, p.stderr
    assert not (repo / ".parallint_cache").exists()
    cold = json.loads(p.stdout)
    p = cli("check", "--format", "json", ".", cwd=repo, env=env)
    assert json.loads(p.stdout) == cold
    assert any((repo / ".parallint_cache" / "files").rglob("*"))
    assert (repo / ".parallint_cache" / ".gitignore").is_file()
    p = cli("check", "--format", "json", ".", cwd=repo, env=env)
    assert json.loads(p.stdout) == cold
    p = cli("cache", "clean", cwd=repo, env=env)
    assert p.returncode == 0 and "removed" in p.stdout, p.stderr
    assert not (repo / ".parallint_cache").exists()
    p = cli("cache", "clean", cwd=repo, env=env)
    assert p.returncode == 0 and "no cache" in p.stdout
    p = cli("cache", "purge", cwd=repo, env=env)
    assert p.returncode == 2
    p = cli("check", "--format", "json", ".", cwd=repo, env=env)
    assert json.loads(p.stdout) == cold
