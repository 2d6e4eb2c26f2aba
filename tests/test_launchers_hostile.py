"""Hostile input for the launcher readers: broken YAML, alias bombs, deep nesting, odd types, binary
bytes, deep Python. Each gives a SYN001 or nothing; never a traceback, never a hang."""

from __future__ import annotations

import pytest

from parallint.discover.settings import Config
from parallint.link.pylaunch import scan
from parallint.engine.runner import check_paths

from conftest import write_tree

BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{c}: &{c} [{', '.join(['*' + p] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi"))

HOSTILE = {
    "sky_broken.yaml": "resources:\n  accelerators: A100:8\nnum_nodes: 2\nrun: |\n  torchrun --nnodes=\n  [oops\n: :\n",
    "sky_types.yaml": "resources:\n  accelerators: [[A100, 8], {x: [1]}]\nnum_nodes: [2]\nenvs: [1, 2]\nrun: 42\n",
    "sky_bomb.yaml": "num_nodes: 2\nresources:\n  accelerators: A100:8\nrun: echo\n" + BOMB,
    "sky_deep.yaml": "num_nodes: 2\nresources:\n  accelerators: " + "[" * 300 + "]" * 300 + "\nrun: x\n",
    "sky_frac.yaml": "num_nodes: 0\nresources:\n  accelerators: A100:0.5\nrun: torchrun --nproc_per_node $SKYPILOT_NUM_GPUS_PER_NODE t.py\n",
    "tune_cfg.yaml": "model:\n  _component_: torchtune.models.x\ntensor_parallel_dim: [1]\ndata_parallel_shard_dim: -7\nbatch_size: {a: 1}\n",
    "cli.yaml": "trainer:\n  devices: {a: 1}\n  num_nodes: -3\n  strategy:\n    class_path: lightning.pytorch.strategies.ModelParallelStrategy\n"
                "    init_args: [1, 2]\nmodel:\n  class_path: x\n",
    "ray.yaml": "apiVersion: ray.io/v1\nkind: RayJob\nspec:\n  entrypoint: [python, x.py]\n  runtimeEnvYAML: '!!python/object/apply:os.system [\"echo\"]'\n"
                "  rayClusterSpec:\n    workerGroupSpecs: {a: 1}\n",
    "ray3.yaml": "apiVersion: ray.io/v1\nkind: RayJob\nspec:\n  entrypoint: python x.py\n  rayClusterSpec:\n"
                 "    enableInTreeAutoscaling: yes-ish\n    headGroupSpec: [1]\n    workerGroupSpecs:\n"
                 "      - {numOfHosts: [2], maxReplicas: -1, rayStartParams: {num-gpus: {a: 1}}}\n      - 7\n",
    "ray2.yaml": "apiVersion: ray.io/v1\nkind: RayCluster\nspec:\n  workerGroupSpecs:\n    - replicas: x\n      template: 5\n",
    "run.sh": "tune run --nproc_per_node\ntorchx run dist.ddp -j\ntorchx run dist.ddp -j 0x0 --script\nfabric run --devices\n"
              "torchx run -s\ntune run\n./run.sh\nbash run.sh\nNGPU=2 ./missing.sh\n",
    "bin.sh": "#!/bin/bash\ntorchrun train.py\n\x00\x01\x02",
    ".torchxconfig": "[component:dist.ddp\nj = = 2x\n",
    "component.py": "import torchx.specs as specs\nfrom torchx.components import dist\n"
                    "dist.ddp(**{'j': '2x2'}, script=None)\ndist.ddp(*[1], j=2, script=3)\ndist.spmd(j='x', m=[])\n"
                    "specs.Role(entrypoint=1, args='torchrun', num_replicas=-1, resource=specs.Resource(gpu='a'))\n"
                    "specs.Role(entrypoint='torchrun', args=[None, b'x', 1.5], num_replicas=True)\n"
                    "dist.ddp(" + "(" * 150 + "1" + ")" * 150 + ", j='99999999999999999999x1')\n",
}


def test_hostile_files_never_crash(tmp_path):
    write_tree(tmp_path, HOSTILE)
    res = check_paths(["."], Config(None, tmp_path, {}), cwd=tmp_path)
    assert not res.errors, res.errors
    assert {d.code for d in res.diagnostics} <= {"SYN001", "SYN002", "LCH002", "LCH010", "LCH011", "CFG001", "CFG002"}


@pytest.mark.parametrize("text", [
    "import ray.train\n" + "x = (" * 200 + "1" + ")" * 200 + "\nScalingConfig(num_workers=2)\n",
    "from ray.train import ScalingConfig\nfrom ray.train.torch import TorchTrainer\nScalingConfig(num_workers=True)\nTorchTrainer(f)\n",
    "import os\nos.environ[1] = 2\nos.environ['WORLD_SIZE'] = None\nos.environ['MASTER_ADDR'] = 127\n",
    "import submitit\nsubmitit.helpers.CommandFunction(1)\nsubmitit.helpers.CommandFunction([{}, [1], None])\nx.update_parameters(nodes='a')\n",
    "def f(:\n  spawn",
    "\x00\x01 spawn",
])
def test_pylaunch_scan_survives(text):
    scan("x.py", text)
