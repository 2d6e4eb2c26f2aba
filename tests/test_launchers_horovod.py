"""Horovod (issue 28, first step): ``horovodrun`` is read as a launcher, linked to the script it
runs, and its facts follow Horovod's placement (``-np`` processes fill the ``-H`` slots in order).
The most common Horovod mistake, ``torch.cuda.set_device(hvd.rank())`` on two nodes, is DDP002.
End to end through the CLI."""

from __future__ import annotations

import json

import pytest

from conftest import write_tree

TRAIN = """\
import torch
import horovod.torch as hvd

hvd.init()
torch.cuda.set_device(hvd.{which}())
model = build().cuda()
optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.01),
                                     named_parameters=model.named_parameters())
hvd.broadcast_parameters(model.state_dict(), root_rank=0)
"""


def _job(cli, tmp_path, line: str, which: str = "rank"):
    (tmp_path / ".git").mkdir(exist_ok=True)
    write_tree(tmp_path, {"run.sh": f"#!/bin/bash\n{line}\n", "train.py": TRAIN.format(which=which)})
    shown = cli("show", "run.sh", cwd=tmp_path).stdout
    res = cli("check", "--no-cache", "--format", "json", ".", cwd=tmp_path)
    found = json.loads(res.stdout)
    found = found["diagnostics"] if isinstance(found, dict) else found
    return shown, sorted((d["code"], d["path"], d["line"]) for d in found)


@pytest.mark.parametrize("line,nodes,ppn", [
    ("horovodrun -np 16 -H node1:8,node2:8 python train.py", "2", "8"),
    ("horovodrun -np 4 -H node1:4,node2:4 python train.py", "1", "4"),  # fits the first host
    ("horovodrun --num-proc 8 --hosts a:4,b:4 --gloo python3 train.py --epochs 3", "2", "4"),
])
def test_horovodrun_states_the_world_the_nodes_and_the_processes_per_node(cli, tmp_path, line, nodes, ppn):
    shown, _ = _job(cli, tmp_path, line, "local_rank")
    assert "# files: run.sh, train.py" in shown
    assert f"nodes: {nodes}  # run.sh:2 horovodrun -H" in shown
    assert f"gpus_per_node: {ppn}" in shown


@pytest.mark.parametrize("line,expected", [
    ("horovodrun -np 16 --hostfile hosts.txt python train.py", []),
    ("horovodrun -np $NP -H $HOSTS python train.py", []),
    # more than the slots: no placement stated (DDP002 silent), and LCH021 says horovodrun refuses it
    ("horovodrun -np 32 -H node1:8,node2:8 python train.py", [("LCH021", "run.sh", 2)]),
])
def test_unknown_placements_state_no_node_count(cli, tmp_path, line, expected):
    shown, found = _job(cli, tmp_path, line)
    assert "nodes: 2" not in shown and "nodes: 1" not in shown
    assert found == expected  # DDP002 needs a known node count


@pytest.mark.parametrize("line,which,expected", [
    ("horovodrun -np 16 -H node1:8,node2:8 python train.py", "rank", [("DDP002", "train.py", 5)]),
    ("horovodrun -np 16 -H node1:8,node2:8 python train.py", "local_rank", []),
    ("horovodrun -np 8 -H localhost:8 python train.py", "rank", []),
])
def test_the_global_rank_as_the_device_on_two_horovod_nodes(cli, tmp_path, line, which, expected):
    _, found = _job(cli, tmp_path, line, which)
    assert found == expected
    if expected:
        text = cli("check", "--no-cache", ".", cwd=tmp_path).stdout
        assert "use the local rank (hvd.local_rank())" in text


NO_BROADCAST = """\
import torch
import horovod.torch as hvd
{imp}
hvd.init()
torch.cuda.set_device(hvd.local_rank())
model = Net().cuda()
optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.01 * hvd.size()),
                                     named_parameters=model.named_parameters())
{sync}
for epoch in range(3):
    for data, target in loader:
        optimizer.zero_grad()
        loss_fn(model(data.cuda()), target.cuda()).backward()
        optimizer.step()
"""


@pytest.mark.parametrize("imp,sync,helper,expected", [
    ("", "", None, "warning"),
    ("", "hvd.broadcast_parameters(model.state_dict(), root_rank=0)", None, None),
    ("from utils import sync_start", "sync_start(model, optimizer)",
     "import horovod.torch as hvd\n\ndef sync_start(model, opt):\n"
     "    hvd.broadcast_parameters(model.state_dict(), root_rank=0)\n"
     "    hvd.broadcast_optimizer_state(opt, root_rank=0)\n", None),
    ("", "torch.manual_seed(1234)", None, "info"),
    ("", "torch.manual_seed(1234 + hvd.rank())", None, "warning"),
])
def test_horovod_training_without_the_initial_broadcast(cli, tmp_path, imp, sync, helper, expected):
    (tmp_path / ".git").mkdir()
    files = {"train.py": NO_BROADCAST.format(imp=imp, sync=sync)}
    if helper:
        files["utils.py"] = helper
    write_tree(tmp_path, files)
    res = cli("check", "--no-cache", "--format", "json", "train.py", cwd=tmp_path)
    found = json.loads(res.stdout)
    found = found["diagnostics"] if isinstance(found, dict) else found
    got = [(d["code"], d["line"], d["severity"]) for d in found]
    assert got == ([("DDP005", 7, expected)] if expected else []), got
