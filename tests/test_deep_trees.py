"""Folders nested deeper than Python's recursion limit (security issue: hostile trees). Python
3.11's ``os.walk`` recurses once per level, so a 1,200-deep tree made ``check .`` an internal
error (exit 2) and a one-file check 16 s and an internal error. The walk is iterative and stops at
256 levels, naming the folder it cut."""

from __future__ import annotations

import os
import random
import subprocess
from pathlib import Path

import pytest

from parallint.util.fswalk import walk

MISTAKE = ("import torch\nimport torch.distributed as dist\n"
           "from torch.nn.parallel import DistributedDataParallel as DDP\n"
           "dist.init_process_group('nccl')\n"
           "model = DDP(torch.nn.Linear(2, 2).cuda(), find_unused_parameters=True)\n")


def _chain(root: Path, depth: int, name: str, text: str) -> None:
    """``depth`` nested folders ``d/d/...`` with ``name`` at the bottom (built with relative
    steps: the whole path is longer than PATH_MAX)."""
    fd = os.open(root, os.O_RDONLY)
    try:
        for _ in range(depth):
            os.mkdir("d", dir_fd=fd)
            nfd = os.open("d", os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = nfd
        wfd = os.open(name, os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
        os.write(wfd, text.encode())
        os.close(wfd)
    finally:
        os.close(fd)


@pytest.fixture
def deep_repo(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / ".git").mkdir()
    (repo / "train.py").write_text(MISTAKE)
    _chain(repo, 1200, "ds_config.json", '{"train_batch_size": 32, "train_micro_batch_size_per_gpu": 3}\n')
    yield repo
    subprocess.run(["rm", "-rf", str(repo)], check=False)  # shutil.rmtree recurses too


@pytest.mark.parametrize("target", [".", "train.py"])
def test_a_tree_deeper_than_the_recursion_limit_is_checked(deep_repo, cli, target):
    r = cli("check", target, "--no-cache", cwd=deep_repo)
    assert r.returncode == 1, r.stderr
    assert "internal error" not in r.stderr
    assert "DDP001" in r.stdout
    if target == ".":
        assert "nested more than 256 levels deep" in r.stdout


def _random_tree(root: Path, rng: random.Random, depth: int = 0) -> None:
    for i in range(rng.randint(0, 4)):
        if depth < 4 and rng.random() < 0.5:
            d = root / f"dir{i}"
            d.mkdir()
            _random_tree(d, rng, depth + 1)
        else:
            (root / f"f{i}.txt").write_text("x")
    if depth and rng.random() < 0.2:
        os.symlink("..", root / "up")  # a loop when links are followed


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("followlinks", [False, True])
def test_walk_order_and_pruning_match_os_walk(tmp_path, seed, followlinks):
    rng = random.Random(seed)
    _random_tree(tmp_path, rng)

    def collect(fn):
        out, steps = [], 0
        for path, dirs, files in fn(tmp_path, followlinks=followlinks):
            steps += 1
            if steps > 300:  # followed loops go on: compare the first 300 steps
                break
            dirs.sort()
            dirs[:] = [d for d in dirs if not d.endswith("1")]  # pruning by editing dirnames
            out.append((os.path.relpath(path, tmp_path), sorted(dirs), sorted(files)))
        return out

    assert collect(walk) == collect(os.walk)


def test_walk_stops_at_its_depth_and_names_the_folder(tmp_path):
    _chain(tmp_path, 10, "f.txt", "x")
    cut: list[str] = []
    seen = [p for p, _, _ in walk(tmp_path, max_depth=4, too_deep=cut.append)]
    assert len(seen) == 5 and cut == [seen[-1]]
