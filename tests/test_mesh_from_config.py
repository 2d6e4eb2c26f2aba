"""Device-mesh shapes whose dims come from a config dataclass's literal defaults (issue 22): the
config handed to the training function at its one call site, ``main(ParallelConfig())``, gives
``init_device_mesh("cuda", (cfg.replicate, cfg.shard))`` its shape (LAY007), with clean twins."""

from __future__ import annotations

import pytest

from conftest import write_tree

TRAIN = """\
from dataclasses import dataclass

import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard


@dataclass
class ParallelConfig:
    replicate: int = 2
    shard: int = 8
    lr: float = 3e-4


def train(cfg: ParallelConfig, model):
    dist.init_process_group("nccl")
    mesh = init_device_mesh("cuda", (cfg.replicate, cfg.shard), mesh_dim_names=("replicate", "shard"))
    fully_shard(model, mesh=mesh)


if __name__ == "__main__":
    model = build()
{call}
"""
RUN = "#!/bin/bash\ntorchrun --nnodes=1 --nproc_per_node=8 train.py\n"


def _check(cli, tmp_path, call: str):
    (tmp_path / ".git").mkdir()
    write_tree(tmp_path, {"train.py": TRAIN.format(call=call), "run.sh": RUN})
    return cli("check", "--no-cache", "--select", "LAY007", ".", cwd=tmp_path)


@pytest.mark.parametrize("call", [
    "    train(ParallelConfig(), model)",
    "    train(cfg=ParallelConfig(lr=1e-4), model=model)",
    "    train(ParallelConfig(replicate=4, shard=4), model)",
])
def test_mesh_from_the_config_passed_at_the_one_call(cli, tmp_path, call):
    res = _check(cli, tmp_path, call)
    assert res.returncode == 1, res.stdout + res.stderr
    assert "train.py:17:" in res.stdout and "covers 16 ranks" in res.stdout, res.stdout


@pytest.mark.parametrize("call", [
    "    train(ParallelConfig(replicate=1), model)",               # 1 × 8 = 8: right
    "    train(ParallelConfig(shard=4), model)",                   # 2 × 4 = 8
    "    train(parse_config(), model)",                            # the command line may set it
    "    train(ParallelConfig(), model)\n    train(ParallelConfig(replicate=1), model)",  # two calls
    "    cfg = tyro.cli(ParallelConfig)\n    train(cfg, model)",   # a CLI parser fills the fields
])
def test_mesh_silent_when_right_or_not_shown(cli, tmp_path, call):
    res = _check(cli, tmp_path, call)
    assert res.returncode == 0, res.stdout + res.stderr


NESTED = """\
from dataclasses import dataclass, field

import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh


@dataclass
class ParallelConfig:
    replicate: int = 2
    shard: int = 8


@dataclass
class TrainConfig:
    lr: float = 1e-3
    parallel: ParallelConfig = field(default_factory=ParallelConfig)


def main(cfg: TrainConfig):
    dist.init_process_group("nccl")
    mesh = init_device_mesh("cuda", (cfg.parallel.replicate, cfg.parallel.shard),
                            mesh_dim_names=("replicate", "shard"))


if __name__ == "__main__":
{call}
"""


@pytest.mark.parametrize("call,found", [
    ("    main(TrainConfig())", True),                                          # 2 × 8 from the nested defaults
    ("    main(TrainConfig(parallel=ParallelConfig(replicate=4, shard=4)))", True),
    ("    main(TrainConfig(parallel=ParallelConfig(replicate=1)))", False),    # 1 × 8
    ("    cfg = TrainConfig()\n    cfg.parallel.replicate = 1\n    main(cfg)", False),  # assigned: not the default
    ("    main(load_config())", False),
])
def test_mesh_from_a_nested_config_dataclass(cli, tmp_path, call, found):
    (tmp_path / ".git").mkdir()
    write_tree(tmp_path, {"train.py": NESTED.format(call=call), "run.sh": RUN})
    res = cli("check", "--no-cache", "--select", "LAY007", ".", cwd=tmp_path)
    assert res.returncode == (1 if found else 0), res.stdout + res.stderr
