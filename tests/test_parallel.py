"""Python files parsed in worker processes give exactly the findings of a serial run."""

from __future__ import annotations

import json

from conftest import write_tree

SCRIPT = """\
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("nccl")
rank = dist.get_rank()
torch.cuda.set_device(rank)
model = DDP(torch.nn.Linear(4, 4).cuda(), device_ids=[rank], find_unused_parameters={flag})
if rank == 0:
    dist.barrier()
torch.save(model.state_dict(), "ckpt.pt")
"""


def test_parallel_and_serial_runs_agree(tmp_path, cli):
    files = {f"pkg/train_{i}.py": SCRIPT.format(flag=i % 2 == 0) for i in range(30)}
    # one script is taken in by a multi-node launch: its job rules need the syntax tree again
    files["run.sh"] = "torchrun --nnodes 2 --nproc_per_node 8 pkg/train_3.py\n"
    write_tree(tmp_path, files)
    serial = cli("check", "--format", "json", ".", cwd=tmp_path, env={"PARALLINT_JOBS": "1"})
    parallel = cli("check", "--format", "json", ".", cwd=tmp_path, env={"PARALLINT_JOBS": "2"})
    assert serial.returncode == parallel.returncode == 1
    assert "Traceback" not in parallel.stderr
    s, p = json.loads(serial.stdout), json.loads(parallel.stdout)
    assert s == p
    codes = {d["code"] for d in s}
    assert {"DDP001", "DDP002", "PG005"} <= codes
    # DDP002 only where a launch spans two nodes; the unlaunched copies may run on one node
    sev = {(d["path"], d["severity"]) for d in s if d["code"] == "DDP002"}
    assert sev == {("pkg/train_3.py", "error")}
