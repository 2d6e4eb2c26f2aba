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


def test_pool_size_follows_the_work_and_the_free_cpus(monkeypatch):
    """Without PARALLINT_JOBS the pool is no larger than the work keeps busy nor than the CPUs
    other processes leave free; 1 (no pool) when either is short. PARALLINT_JOBS is obeyed."""
    import os

    from parallint.engine import runner

    monkeypatch.delenv("PARALLINT_JOBS", raising=False)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(4)), raising=False)
    monkeypatch.setattr(os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    mb = runner.WORKER_BYTES
    assert runner._pool_size(10 * mb) == 4
    assert runner._pool_size(2 * mb) == 2
    assert runner._pool_size(mb // 2) == 1  # too little to repay a worker
    monkeypatch.setattr(os, "getloadavg", lambda: (3.2, 3.0, 3.0))  # three CPUs held elsewhere
    assert runner._pool_size(10 * mb) == 1
    monkeypatch.setattr(os, "getloadavg", lambda: (1.0, 1.0, 1.0))
    assert runner._pool_size(10 * mb) == 3
    monkeypatch.setenv("PARALLINT_JOBS", "2")
    assert runner._pool_size(mb // 2) == 2


def test_a_tree_too_small_for_workers_is_checked_in_process(tmp_path, monkeypatch):
    """30 small scripts: below the work that repays a worker, no worker is started."""
    from parallint.engine import runner
    from parallint.discover.settings import Config

    monkeypatch.delenv("PARALLINT_JOBS", raising=False)
    for i in range(30):
        (tmp_path / f"t{i}.py").write_text(SCRIPT.format(flag=True))
    started = []
    real = runner.Runner._parse_in_workers
    monkeypatch.setattr(runner.Runner, "_parse_in_workers", lambda self, items, *a, **k: started.append(items) or real(self, items, *a, **k))
    res = runner.check_paths(["."], Config(None, tmp_path, {}), cwd=tmp_path)
    assert not started and not res.errors
    assert len([d for d in res.diagnostics if d.code == "DDP001"]) == 30
