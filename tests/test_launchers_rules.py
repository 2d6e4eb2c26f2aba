"""The scheduler/launcher contradictions (LCH009-LCH012) and LCH006's loopback MASTER_ADDR set in a
script, on real-world shaped files."""

from __future__ import annotations

from parallint.discover.settings import Config
from parallint.engine.runner import check_paths

from conftest import write_tree

SCRIPT_LOOPBACK = """\
import os

import torch.distributed as dist


def setup(rank, world_size):
    os.environ["MASTER_ADDR"] = "localhost"
    os.environ["MASTER_PORT"] = "12355"
    dist.init_process_group("nccl", rank=rank, world_size=world_size)
"""


def _diags(tmp_path, files, paths, select):
    write_tree(tmp_path, files)
    res = check_paths(list(paths), Config(None, tmp_path, {"select": list(select)}), cwd=tmp_path)
    assert not res.errors, res.errors
    return sorted((d.code, d.span.path, d.span.line) for d in res.diagnostics)


def test_lch006_loopback_master_addr_in_script_of_multi_node_job(tmp_path):
    files = {"train.py": SCRIPT_LOOPBACK,
             "job.sbatch": "#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=1\n"
                           "srun torchrun --nnodes 2 --nproc_per_node 8 --rdzv_backend c10d "
                           "--rdzv_endpoint $HEAD:29500 train.py\n"}
    assert _diags(tmp_path, files, ["job.sbatch"], ["LCH006"]) == [("LCH006", "train.py", 7)]
    # one node: localhost is right; a conditional or setdefault assignment says nothing
    files["job.sbatch"] = "#!/bin/bash\ntorchrun --nproc_per_node 8 train.py\n"
    assert _diags(tmp_path, files, ["job.sbatch"], ["LCH006"]) == []
    files["job.sbatch"] = "#!/bin/bash\n#SBATCH --nodes=2\nsrun torchrun --nnodes 2 --nproc_per_node 8 --rdzv_endpoint $H train.py\n"
    files["train.py"] = SCRIPT_LOOPBACK.replace('    os.environ["MASTER_ADDR"] = "localhost"',
                                                '    if world_size == 1:\n        os.environ["MASTER_ADDR"] = "localhost"')
    assert _diags(tmp_path, files, ["job.sbatch"], ["LCH006"]) == []
    files["train.py"] = SCRIPT_LOOPBACK.replace('os.environ["MASTER_ADDR"] = "localhost"',
                                                'os.environ.setdefault("MASTER_ADDR", "localhost")')
    assert _diags(tmp_path, files, ["job.sbatch"], ["LCH006"]) == []


def test_lch009_to_lch012_on_launch_files(tmp_path):
    files = {
        "a.sbatch": "#!/bin/bash\n#SBATCH -N 2\n#SBATCH --ntasks-per-node=8\n#SBATCH -n 8\nsrun python train.py\n",
        "b.sh": "torchrun --nnodes=2 --node_rank=2 --nproc_per_node=8 --master_addr=10.0.0.1 train.py\n",
        "c.sh": "torchrun --nproc_per_node=8 --rdzv_endpoint=localhost:70000 train.py\n",
        "d.sh": "case $NODE in\n  0) deepspeed --num_nodes 2 --node_rank 0 --master_addr 10.1.1.1 train.py ;;\n"
                "  1) deepspeed --num_nodes 2 --node_rank 1 --master_addr 10.1.1.2 train.py ;;\nesac\n",
    }
    assert _diags(tmp_path, files, list(files), ["LCH009", "LCH010", "LCH011", "LCH012"]) == [
        ("LCH009", "a.sbatch", 4), ("LCH010", "b.sh", 1), ("LCH011", "c.sh", 1), ("LCH012", "d.sh", 3)]


def test_contradiction_rules_stay_silent_on_unknowns(tmp_path):
    files = {
        "a.sbatch": "#!/bin/bash\n#SBATCH --nodes=$N\n#SBATCH --ntasks-per-node=8\n#SBATCH --ntasks=8\nsrun python train.py\n",
        "b.sh": "torchrun --nnodes=$NNODES --node_rank=2 --nproc_per_node=8 --master_addr=$H train.py\n",
        "c.sh": "torchrun --nproc_per_node=8 --master_port=$((20000 + RANDOM)) train.py\n",
        "d.sh": "torchrun --nnodes 2 --node_rank 0 --master_addr $MASTER train.py\n"
                "torchrun --nnodes 2 --node_rank 1 --master_addr 10.0.0.1 train.py\n",
    }
    assert _diags(tmp_path, files, list(files), ["LCH009", "LCH010", "LCH011", "LCH012"]) == []


PYTORCHJOB = """\
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: ddp
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        spec:
          containers:
            - name: pytorch
              image: pytorch
              env:
                - name: MASTER_ADDR
                  value: localhost
              command: {cmd}
    Worker:
      replicas: 1
      template:
        spec:
          containers:
            - name: pytorch
              image: pytorch
              env:
                - name: MASTER_ADDR
                  value: localhost
              command: {cmd}
"""
INDEXED_JOB = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: ddp
spec:
  completions: 2
  parallelism: 2
  completionMode: Indexed
  template:
    spec:
      containers:
        - name: trainer
          image: pytorch
          env:
            - name: MASTER_ADDR
              value: localhost
          command: ["torchrun", "--nnodes", "2", "--nproc_per_node", "8", "--master_addr", "$(MASTER_ADDR)",
                    "--node_rank", "$(JOB_COMPLETION_INDEX)", "train.py"]
"""


def test_lch006_loopback_master_wherever_it_is_set(tmp_path):
    files = {
        # an exported MASTER_ADDR handed to --master_addr
        "export.sbatch": "#!/bin/bash\n#SBATCH --nodes=2\nexport MASTER_ADDR=localhost\n"
                         "srun torchrun --nnodes 2 --nproc_per_node 8 --master_addr $MASTER_ADDR --node_rank $SLURM_NODEID "
                         "train.py\n",
        # env:// under srun
        "envprefix.sbatch": "#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=8\n"
                            "MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 srun python train.py\n",
        # torchrun reads PET_MASTER_ADDR for --master_addr
        "pet.sh": "#!/bin/bash\nPET_MASTER_ADDR=localhost torchrun --nnodes 2 --nproc_per_node 8 --node_rank $1 train.py\n",
        # a plain Kubernetes Job: nothing overrides the container's env
        "job.yaml": INDEXED_JOB,
        # SkyPilot envs reach the run script
        "sky.yaml": "resources:\n  accelerators: A100:8\nnum_nodes: 2\nenvs:\n  MASTER_ADDR: localhost\nrun: |\n"
                    "  torchrun --nnodes=$SKYPILOT_NUM_NODES --nproc_per_node=8 --master_addr=$MASTER_ADDR "
                    "--node_rank=$SKYPILOT_NODE_RANK train.py\n",
        "train.py": SCRIPT_LOOPBACK.replace('    os.environ["MASTER_ADDR"] = "localhost"\n', ""),
    }
    assert _diags(tmp_path, files, [p for p in files if p != "train.py"], ["LCH006"]) == [
        ("LCH006", "envprefix.sbatch", 4), ("LCH006", "export.sbatch", 3), ("LCH006", "job.yaml", 15),
        ("LCH006", "pet.sh", 2), ("LCH006", "sky.yaml", 7)]


def test_lch006_operator_overrides_the_container_env(tmp_path):
    # the PyTorchJob operator appends MASTER_ADDR after the container's env: its value wins
    for cmd in ('["python", "train.py"]', '["torchrun", "--nnodes", "2", "--master_addr", "$(MASTER_ADDR)", "train.py"]'):
        files = {"pytorchjob.yaml": PYTORCHJOB.format(cmd=cmd), "train.py": "import torch.distributed as dist\n"}
        assert _diags(tmp_path, files, ["pytorchjob.yaml"], ["LCH006", "LCH013"]) == [], cmd
    # one node: loopback is right
    files = {"pet.sh": "#!/bin/bash\nPET_MASTER_ADDR=localhost torchrun --nproc_per_node 8 train.py\n"}
    assert _diags(tmp_path, files, ["pet.sh"], ["LCH006"]) == []


def test_lch013_multi_node_torchrun_without_master(tmp_path):
    head = "#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=1\n"
    fires = {
        "a.sbatch": head + "export MASTER_ADDR=$(scontrol show hostnames $SLURM_JOB_NODELIST | head -n1)\n"
                           "srun torchrun --nnodes 2 --nproc_per_node 8 --node_rank $SLURM_NODEID train.py\n",
        "b.sbatch": head + "srun python -m torch.distributed.run --nnodes=2 --nproc_per_node=8 --rdzv_backend=c10d train.py\n",
        "sky.yaml": "resources:\n  accelerators: A100:8\nnum_nodes: 2\nrun: |\n"
                    "  torchrun --nnodes=2 --nproc_per_node=8 --node_rank=$SKYPILOT_NODE_RANK train.py\n",
    }
    silent = {
        "rdzv.sbatch": head + "srun torchrun --nnodes 2 --nproc_per_node 8 --rdzv_backend c10d --rdzv_endpoint $H:29500 train.py\n",
        "addr.sbatch": head + "srun torchrun --nnodes 2 --nproc_per_node 8 --master_addr $H --node_rank $SLURM_NODEID train.py\n",
        "opaque.sbatch": head + "srun torchrun --nnodes 2 --nproc_per_node 8 $DIST_ARGS train.py\n",
        "pet.sbatch": head + "source env.sh  # exports PET_MASTER_ADDR\nsrun torchrun --nnodes 2 --nproc_per_node 8 train.py\n",
        "one.sbatch": head + "srun --ntasks=1 torchrun --nnodes 2 --nproc_per_node 8 train.py\n",
        "plain.sh": "#!/bin/bash\ntorchrun --nnodes 2 --nproc_per_node 8 --node_rank $NODE_RANK train.py\n",
        "single.sbatch": head + "srun torchrun --nnodes 1 --nproc_per_node 8 train.py\n",
        "standalone.sbatch": head + "srun torchrun --standalone --nnodes 2 --nproc_per_node 8 train.py\n",
    }
    files = {**fires, **silent, "train.py": "import torch.distributed as dist\n"}
    assert _diags(tmp_path, files, list(fires) + list(silent), ["LCH013"]) == [
        ("LCH013", "a.sbatch", 5), ("LCH013", "b.sbatch", 4), ("LCH013", "sky.yaml", 5)]
