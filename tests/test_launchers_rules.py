"""The scheduler/launcher contradictions (LCH009-LCH012) and LCH006's loopback MASTER_ADDR set in a
script, on real-world shaped files."""

from __future__ import annotations

from parallint.config import Config
from parallint.runner import check_paths

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
