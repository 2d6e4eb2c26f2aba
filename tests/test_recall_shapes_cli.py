"""Real bugs in the shapes they have in real code, end to end through the CLI, each with its clean
twin: an ``mp.spawn`` worker that seeds its DistributedSampler with ``args.seed + rank`` (DAT005),
and a script that computes its local device as ``rank % torch.cuda.device_count()`` but hands
DDP the global rank (DDP002 with no launch, as in DiT's train.py)."""

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


DIT = """\
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main(args):
    dist.init_process_group("nccl")
    rank = dist.get_rank()
    device = rank % torch.cuda.device_count()
    torch.cuda.set_device(device)
    model = build(args)
    model = DDP(model.to(device), device_ids=[{ids}])
"""


@pytest.mark.parametrize("ids,launch,found", [
    ("rank", None, True),
    ("device", None, False),
    ("rank", "torchrun --nnodes 1 --nproc_per_node 8 train.py\n", False),  # one node: right there
    ("rank", "torchrun --nnodes 2 --nproc_per_node 8 train.py\n", True),
])
def test_the_global_rank_beside_the_scripts_own_local_device(cli, tmp_path, ids, launch, found):
    (tmp_path / ".git").mkdir()
    files = {"train.py": DIT.format(ids=ids)}
    if launch:
        files["run.sh"] = launch
    write_tree(tmp_path, files)
    res = cli("check", "--no-cache", ".", cwd=tmp_path)
    assert ("train.py:12:" in res.stdout and "DDP002" in res.stdout) is found, res.stdout


SAVE = """\
import os
import torch
import torch.distributed as dist
from safetensors.torch import save_file


def main():
    dist.init_process_group("nccl")
    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    model = build()
    for epoch in range(3):
        train(model)
{guard}        save_file(model.state_dict(), f"ckpt/epoch{{epoch}}.safetensors")


if __name__ == "__main__":
    main()
"""


@pytest.mark.parametrize("guard,found", [("", True), ("        if dist.get_rank() == 0:\n    ", False)])
def test_every_rank_writing_one_safetensors_file(cli, tmp_path, guard, found):
    (tmp_path / ".git").mkdir()
    write_tree(tmp_path, {"train.py": SAVE.format(guard=guard)})
    res = cli("check", "--no-cache", "train.py", cwd=tmp_path)
    assert ("CKP001 safetensors.torch.save_file() runs on every rank" in res.stdout) is found, res.stdout


ACCEL_NODE2 = """\
compute_environment: LOCAL_MACHINE
distributed_type: MULTI_GPU
gpu_ids: {gpu_ids}
machine_rank: 1
main_process_ip: 10.0.0.1
main_process_port: 5000
main_training_function: main
mixed_precision: fp16
num_machines: 2
num_processes: {nproc}
rdzv_backend: static
same_network: true
"""


@pytest.mark.parametrize("gpu_ids, nproc, found", [
    ("0,1", 10, [("node2.yaml", 3)]),   # accelerate#3894: 5 processes per machine, 2 GPUs listed
    ("0,1", 4, []),                     # the twin: 2 per machine
    ("all", 10, []),                    # every GPU of the machine: not known statically
    ("0,1,2,3,4", 10, []),
])
def test_accelerate_gpu_ids_fewer_than_the_processes_per_machine(cli, tmp_path, gpu_ids, nproc, found):
    write_tree(tmp_path, {"node2.yaml": ACCEL_NODE2.format(gpu_ids=gpu_ids, nproc=nproc),
                          "run.sh": "#!/bin/bash\naccelerate launch --config_file node2.yaml train.py\n",
                          "train.py": "from accelerate import Accelerator\naccelerator = Accelerator()\n"})
    (tmp_path / ".git").mkdir()
    r = cli("check", ".", "--no-cache", "--format", "json", cwd=tmp_path)
    import json
    assert [(d["path"], d["line"]) for d in json.loads(r.stdout) if d["code"] == "ENV002"] == found
