"""Whole jobs from any entry point: `check F` reports exactly what a whole-repository run reports
in F (same codes, severities, messages, notes), for every file of examples/ and of a tree whose
jobs cross files through modules, chained links and declared links."""

from __future__ import annotations

import shutil
from pathlib import Path

from parallint.discover.settings import Config
from parallint.engine.index import ReverseIndex, check_files, find_root, needles
from parallint.engine.registry import get_registry
from parallint.engine.runner import Runner

from conftest import ROOT, write_tree

TREE = {
    # multi-node launch of a module; the script picks the device by global rank (DDP002 is an
    # error only because the launch spans two nodes) and hard-codes world_size (PG003)
    "launch/multi.sh": "#!/bin/bash\ntorchrun --nnodes 2 --nproc_per_node 8 -m pkg.train\n",
    "pkg/__init__.py": "",
    "pkg/train.py": (
        "import torch\nimport torch.distributed as dist\n"
        "dist.init_process_group('nccl', world_size=8)\n"
        "rank = dist.get_rank()\ntorch.cuda.set_device(rank)\n"
    ),
    # launch -> script -> the DeepSpeed config the script names (a chain of two links)
    "run_ds.sh": "deepspeed --num_gpus 8 ds_train.py\n",
    "ds_train.py": (
        "import deepspeed\nimport torch.distributed as dist\n"
        "engine, *_ = deepspeed.initialize(model=None, config='configs/ds.json')\n"
    ),
    "configs/ds.json": '{"train_batch_size": 32, "train_micro_batch_size_per_gpu": 2, '
                       '"gradient_accumulation_steps": 4}\n',
    # a declared link the files cannot show
    "submit.sh": "torchrun --nnodes 1 --nproc_per_node 8 $SCRIPT\n",
    "declared/ds.json": '{"train_batch_size": 8, "train_micro_batch_size_per_gpu": 2, '
                        '"gradient_accumulation_steps": 4}\n',
    "pyproject.toml": '[tool.parallint]\nlinks = [{launch = "submit.sh", files = ["declared/ds.json"]}]\n',
}


def _key(d):
    return (d.code, d.severity, d.span.path, d.span.line, d.span.column, d.message,
            tuple((r.path, r.line, r.message) for r in d.related))


def _whole(root: Path, config: Config):
    rules = get_registry().enabled(None, [], [])
    return rules, check_files(["."], config, rules, cwd=root, use_cache=False)


def _assert_invariant(root: Path, config: Config, min_findings: int):
    rules, whole = _whole(root, config)
    assert not whole.errors
    assert len(whole.diagnostics) >= min_findings  # the tree really has cross-file findings
    runner = Runner(config, root)
    files = sorted(p for p in root.rglob("*") if p.is_file() and ".git" not in p.parts
                   and ".parallint_cache" not in p.parts)
    seen = 0
    every = {_key(d) for d in whole.diagnostics}
    for f in files:
        rel = f.relative_to(root).as_posix()
        one = check_files([rel], config, rules, cwd=root)
        expected = sorted(_key(d) for d in whole.diagnostics if d.span.path == rel)
        got = sorted(_key(d) for d in one.diagnostics)
        # besides its own: the findings on the launch command that starts it (index._entry_commands),
        # each one the whole run reports too
        own = [k for k in got if k[2] == rel]
        assert own == expected, rel
        for k in got:
            if k[2] != rel:
                assert k in every and f.name in (root / k[2]).read_text(), (rel, k)
        assert not one.errors
        seen += len(expected)
    assert seen == len(whole.diagnostics)
    return runner


def test_every_example_file_reports_its_whole_repository_findings(tmp_path):
    root = tmp_path / "repo"
    shutil.copytree(ROOT / "examples", root / "examples")
    (root / ".git").mkdir()
    _assert_invariant(root, Config(None, root, {}), min_findings=5)


def test_cross_file_tree_modules_chains_and_declared_links(tmp_path):
    write_tree(tmp_path, TREE)
    (tmp_path / ".git").mkdir()
    config = Config(tmp_path / "pyproject.toml", tmp_path, {"links": [{"launch": "submit.sh", "files": ["declared/ds.json"]}]})
    _assert_invariant(tmp_path, config, min_findings=4)
    rules = get_registry().enabled(None, [], [])
    # the multi-node launch is what makes DDP002 an error, and PG003 exists only with it
    one = check_files(["pkg/train.py"], config, rules, cwd=tmp_path)
    codes = {(d.code, str(d.severity)) for d in one.diagnostics}
    assert ("DDP002", "error") in codes and ("PG003", "error") in codes
    # the config two links away from the launch gets the launch's world size
    one = check_files(["configs/ds.json"], config, rules, cwd=tmp_path)
    assert [d.code for d in one.diagnostics] == ["BAT001"]
    one = check_files(["declared/ds.json"], config, rules, cwd=tmp_path)
    assert [d.code for d in one.diagnostics] == ["BAT001"]
    # --all-job-findings: the launch's jobs, wherever their findings are located
    every = check_files(["run_ds.sh"], config, rules, cwd=tmp_path, all_job_findings=True)
    assert "configs/ds.json" in {d.span.path for d in every.diagnostics}
    alone = check_files(["run_ds.sh"], config, rules, cwd=tmp_path)
    assert all(d.span.path == "run_ds.sh" for d in alone.diagnostics)


def test_stdin_buffer_is_checked_in_its_jobs(tmp_path):
    write_tree(tmp_path, TREE)
    (tmp_path / ".git").mkdir()
    rules = get_registry().enabled(None, [], [])
    fixed = '{"train_batch_size": 64, "train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 4}\n'
    res = check_files([], Config(None, tmp_path, {}), rules, stdin=("configs/ds.json", fixed), cwd=tmp_path)
    assert res.diagnostics == [] and res.files_checked == 1
    res = check_files([], Config(None, tmp_path, {}), rules,
                      stdin=("configs/ds.json", TREE["configs/ds.json"]), cwd=tmp_path)
    assert [d.code for d in res.diagnostics] == ["BAT001"]


def test_index_cache_by_content_hash(tmp_path, monkeypatch):
    monkeypatch.delenv("PARALLINT_CACHE_DIR", raising=False)
    write_tree(tmp_path, TREE)
    (tmp_path / ".git").mkdir()
    config = Config(None, tmp_path, {})
    target = (tmp_path / "configs/ds.json").resolve()
    first = ReverseIndex(Runner(config, tmp_path), tmp_path)
    assert first.referrers({target}) == {(tmp_path / "ds_train.py").resolve(), (tmp_path / "run_ds.sh").resolve()}
    assert first.parsed >= 2
    assert (tmp_path / ".parallint_cache" / "links.json").is_file()
    second = ReverseIndex(Runner(config, tmp_path), tmp_path)
    assert second.referrers({target}) == first.referrers({target}) and second.parsed == 0
    # an edit is a new hash: that file is parsed again, and its new links count
    (tmp_path / "ds_train.py").write_text("import deepspeed\n# configs/ds.json\n", encoding="utf-8")
    third = ReverseIndex(Runner(config, tmp_path), tmp_path)
    assert third.referrers({target}) == set() and third.parsed == 1
    # --no-cache neither reads nor writes
    shutil.rmtree(tmp_path / ".parallint_cache")
    ReverseIndex(Runner(config, tmp_path), tmp_path, use_cache=False).referrers({target})
    assert not (tmp_path / ".parallint_cache").exists()
    # PARALLINT_CACHE_DIR moves the cache out of the repository
    monkeypatch.setenv("PARALLINT_CACHE_DIR", str(tmp_path / "elsewhere"))
    ReverseIndex(Runner(config, tmp_path), tmp_path).referrers({target})
    assert list((tmp_path / "elsewhere").rglob("links.json")) and not (tmp_path / ".parallint_cache").exists()


def test_root_and_needles(tmp_path):
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "pyproject.toml").write_text("", encoding="utf-8")
    assert find_root(tmp_path / "a" / "b") == tmp_path / "a"
    (tmp_path / ".git").mkdir()
    assert find_root(tmp_path / "a" / "b") == tmp_path
    assert needles(Path("pkg/__main__.py")) == {b"__main__.py", b"__main__", b"pkg"}


def test_cli_hook_run_on_a_config_reports_the_cross_file_finding(tmp_path, cli):
    shutil.copytree(ROOT / "examples" / "deepspeed_batch", tmp_path / "deepspeed_batch")
    (tmp_path / ".git").mkdir()
    p = cli("check", "deepspeed_batch/ds_config.json", cwd=tmp_path)
    assert p.returncode == 1, p.stdout + p.stderr
    assert "deepspeed_batch/ds_config.json:2:23: BAT001" in p.stdout
    assert "Found 1 finding (1 error) in 1 file." in p.stdout
    p = cli("check", "--no-cache", "deepspeed_batch/launch.sh", cwd=tmp_path)
    assert p.returncode == 0 and "All checks passed" in p.stdout
    p = cli("check", "--all-job-findings", "deepspeed_batch/launch.sh", cwd=tmp_path)
    assert p.returncode == 1 and "BAT001" in p.stdout


def test_git_listing_leaves_out_ignored_launch_files(tmp_path):
    import subprocess

    if shutil.which("git") is None:
        import pytest

        pytest.skip("git not installed")
    write_tree(tmp_path, TREE)
    write_tree(tmp_path, {".gitignore": "scratch/\n",
                          "scratch/run4.sh": "deepspeed --num_gpus 4 ds_train.py --deepspeed_config configs/ds.json\n"})
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    rules = get_registry().enabled(None, [], [])
    config = Config(None, tmp_path, {})
    whole = check_files(["."], config, rules, cwd=tmp_path, use_cache=False)
    one = check_files(["configs/ds.json"], config, rules, cwd=tmp_path)
    assert sorted(map(_key, one.diagnostics)) == sorted(_key(d) for d in whole.diagnostics if d.span.path == "configs/ds.json")
    assert [d.code for d in one.diagnostics] == ["BAT001"] and "world size 8" in str(one.diagnostics[0].related)


def test_index_never_opens_special_files(tmp_path, cli):
    import os
    import sys

    if sys.platform == "win32" or not hasattr(os, "mkfifo"):
        return
    write_tree(tmp_path, TREE)
    (tmp_path / ".git").mkdir()
    os.mkfifo(tmp_path / "configs" / "pipe.json")  # a reader would block on it forever
    p = cli("check", "configs/ds.json", cwd=tmp_path)
    assert p.returncode == 1 and " BAT001 " in p.stdout, p.stdout + p.stderr
