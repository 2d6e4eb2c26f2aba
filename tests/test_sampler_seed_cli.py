"""DAT005 end to end, in the shape the bug has in real code: an ``mp.spawn`` worker that seeds
its DistributedSampler with ``args.seed + rank`` (its clean twin seeds every rank alike)."""

from __future__ import annotations

import pytest

from conftest import write_tree

TRAIN = """\
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def main(rank, world_size, args):
    dist.init_process_group("nccl", rank=rank, world_size=world_size)
    torch.cuda.set_device(rank)
    torch.manual_seed(args.seed + rank)
    sampler = DistributedSampler(dataset, num_replicas=world_size, rank=rank, shuffle=True, seed={seed})
    loader = DataLoader(dataset, sampler=sampler)
    for epoch in range(3):
        sampler.set_epoch(epoch)
        for batch in loader:
            pass


if __name__ == "__main__":
    mp.spawn(main, args=(4, None), nprocs=4)
"""


@pytest.mark.parametrize("seed,found", [("args.seed + rank", True), ("args.seed", False)])
def test_a_sampler_seeded_per_rank(cli, tmp_path, seed, found):
    (tmp_path / ".git").mkdir()
    write_tree(tmp_path, {"train.py": TRAIN.format(seed=seed)})
    res = cli("check", "--no-cache", "train.py", cwd=tmp_path)
    assert res.returncode == (1 if found else 0), res.stdout + res.stderr
    assert ("train.py:12:" in res.stdout and "DAT005" in res.stdout) is found
