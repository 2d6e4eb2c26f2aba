"""The kept reverse-link index (issue 27, ``engine.index.TreeIndex``): built by the first one-file
check of a repository, then kept current from the tree's listing and stat signatures. A warm
one-file check opens only its own jobs' files; an edit, a new file, a deleted linker and a changed
.gitignore give the referrers a fresh index would give, and the same findings."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from parallint.discover.settings import Config
from parallint.engine.index import ReverseIndex, check_files
from parallint.engine.registry import get_registry
from parallint.engine.runner import Runner

from conftest import age_tree as _age, write_tree

DS_BAD = '{"train_batch_size": 30, "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 1}\n'
TREE = {
    "configs/ds.json": DS_BAD,
    "ds_train.py": ("import deepspeed\nimport torch.distributed as dist\n"
                    "engine, *_ = deepspeed.initialize(model=None, config='configs/ds.json')\n"),
    "run_ds.sh": "deepspeed --num_gpus 8 ds_train.py\n",
    # files of the repository outside the job
    "other_train.py": "import torch.distributed as dist\ndist.init_process_group('nccl')\n",
    "run_other.sh": "torchrun --nproc_per_node 8 other_train.py\n",
    "conf/model.yaml": "trainer:\n  devices: 8\n  num_nodes: 1\n",
    "notes/README.md": "ds.json is the DeepSpeed config\n",
    "data/values.json": json.dumps({"loss": [1.0, 0.5]}) + "\n",
}
UNRELATED = {"other_train.py", "run_other.sh", "conf/model.yaml", "notes/README.md", "data/values.json"}


@pytest.fixture
def repo(tmp_path, monkeypatch):
    root = tmp_path / "repo"
    write_tree(root, TREE)
    (root / ".git").mkdir()  # not a work tree git can list: the index walks it
    monkeypatch.setenv("PARALLINT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PARALLINT_JOBS", "1")
    _age(root)
    return root


def _index(root: Path, use_cache: bool = True) -> ReverseIndex:
    return ReverseIndex(Runner(Config(None, root, {}), root), root, use_cache)


def _refs(root: Path, target: str, use_cache: bool = True) -> tuple[set[str], int]:
    ri = _index(root, use_cache)
    found = ri.referrers({(root / target).resolve()})
    return {str(p.relative_to(root)) for p in found}, ri.tree.read


def _same_as_fresh(root: Path, target: str) -> set[str]:
    kept, _ = _refs(root, target)
    fresh, _ = _refs(root, target, use_cache=False)
    assert kept == fresh
    return kept


def test_warm_one_file_check_opens_only_its_jobs_files(repo):
    rules = get_registry().enabled(None, [], [])
    config = Config(None, repo, {})
    cold = check_files(["configs/ds.json"], config, rules, cwd=repo)
    assert {d.code for d in cold.diagnostics} == {"BAT001"}
    opened: list[str] = []

    def hook(event: str, args: tuple) -> None:
        if event == "open" and isinstance(args[0], (str, bytes, os.PathLike)):
            opened.append(os.path.abspath(os.fsdecode(args[0])))

    sys.addaudithook(hook)  # (a hook stays for the process; it only appends to this list)
    start = len(opened)
    warm = check_files(["configs/ds.json"], config, rules, cwd=repo)
    mine = {str(Path(p).relative_to(repo)) for p in opened[start:] if p.startswith(str(repo) + os.sep)}
    opened.clear()
    assert [(d.code, d.message) for d in warm.diagnostics] == [(d.code, d.message) for d in cold.diagnostics]
    assert {"configs/ds.json", "ds_train.py", "run_ds.sh"} <= mine
    assert not mine & UNRELATED, mine & UNRELATED
    _, read = _refs(repo, "configs/ds.json")
    assert read == 0


def test_index_follows_edits_new_files_and_deletions(repo):
    assert _same_as_fresh(repo, "configs/ds.json") == {"ds_train.py", "run_ds.sh"}
    # a launch script starts naming the target (edited in place: its folder's listing is unchanged)
    with open(repo / "run_other.sh", "a", encoding="utf-8") as fh:
        fh.write("deepspeed --num_gpus 8 ds_train.py --deepspeed_config configs/ds.json\n")
    assert "run_other.sh" in _same_as_fresh(repo, "configs/ds.json")
    _, read = _refs(repo, "configs/ds.json")
    assert read <= 1  # only the edited file (again while its time stamp is too recent to trust)
    # a new script that names it, started by a new launch file (a name the index never saw)
    write_tree(repo, {"tools/new_train.py": ("import deepspeed\nimport torch.distributed as dist\n"
                                             "deepspeed.initialize(model=None, config='../configs/ds.json')\n"),
                      "tools/run_new.sh": "deepspeed --num_gpus 8 new_train.py\n"})
    assert {"tools/new_train.py", "tools/run_new.sh"} <= _same_as_fresh(repo, "configs/ds.json")
    # a deleted linker drops its link, and the launch that started it
    (repo / "ds_train.py").unlink()
    found = _same_as_fresh(repo, "configs/ds.json")
    assert "ds_train.py" not in found and "run_ds.sh" not in found and "tools/run_new.sh" in found


def test_a_changed_gitignore_is_followed(repo):
    (repo / ".gitignore").write_text("tools/\n", encoding="utf-8")
    write_tree(repo, {"tools/run_t.sh": "deepspeed --num_gpus 8 ds_train.py --deepspeed_config configs/ds.json\n"})
    _age(repo)
    assert "tools/run_t.sh" not in _same_as_fresh(repo, "configs/ds.json")
    (repo / ".gitignore").write_text("# nothing ignored\n", encoding="utf-8")
    assert "tools/run_t.sh" in _same_as_fresh(repo, "configs/ds.json")


def test_an_unsaved_buffer_stands_for_the_file_and_is_not_kept(repo):
    rules = get_registry().enabled(None, [], [])
    config = Config(None, repo, {})
    check_files(["configs/ds.json"], config, rules, cwd=repo)
    ap = (repo / "run_ds.sh").resolve()
    res = check_files(["configs/ds.json"], config, rules, cwd=repo, buffers={ap: "echo nothing\n"})
    assert res.diagnostics == [] or all(d.code != "BAT001" or "run_ds.sh" not in str(d.related) for d in res.diagnostics)
    assert "run_ds.sh" in _same_as_fresh(repo, "configs/ds.json")  # the disk's text is what is kept


def test_a_forged_index_is_not_trusted(repo, tmp_path):
    _refs(repo, "configs/ds.json")
    kept = next((tmp_path / "cache").rglob("index.bin"))
    kept.write_bytes(b"\0" * 32 + kept.read_bytes()[32:])  # someone else's signature
    refs, read = _refs(repo, "configs/ds.json")
    assert refs == {"ds_train.py", "run_ds.sh"} and read > 0  # built again


def _git(root: Path, *args: str) -> None:
    import subprocess

    subprocess.run(["git", "-c", "user.email=t@t", "-c", "user.name=t", "-C", str(root), *args],
                   check=True, capture_output=True)


def test_a_one_file_check_in_a_git_work_tree_finds_what_the_whole_tree_run_finds(tmp_path, monkeypatch):
    """The index lists the tree as discovery walks it (configured excludes and .gitignore files),
    not as git lists it: a launch file that git alone hides (.git/info/exclude) is still checked by
    the whole-tree run, so the one-file check of its config must find it too; and no git process is
    started in the checked tree."""
    import shutil
    import subprocess

    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    root = tmp_path / "repo"
    write_tree(root, {"configs/ds.json": DS_BAD, "ds_train.py": TREE["ds_train.py"],
                      "launch/run_ds.sh": "cd ..\ndeepspeed --num_gpus 8 ds_train.py\n", "README.md": "x\n"})
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "x")
    (root / ".git" / "info").mkdir(exist_ok=True)
    (root / ".git" / "info" / "exclude").write_text("launch/\n")
    monkeypatch.setenv("PARALLINT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PARALLINT_JOBS", "1")
    _age(root)
    rules = get_registry().enabled(None, [], [])
    config = Config(None, root, {})
    whole = check_files(["."], config, rules, cwd=root, run_cache=False)
    want = sorted((d.code, d.message) for d in whole.diagnostics if d.span.path == "configs/ds.json")
    assert want and {c for c, _ in want} == {"BAT001"}
    started: list = []
    real = subprocess.run
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: started.append(a) or real(*a, **k))
    one = check_files(["configs/ds.json"], config, rules, cwd=root)
    assert sorted((d.code, d.message) for d in one.diagnostics) == want
    assert not any("git" in str(a[0][:1]) for a in started), started
