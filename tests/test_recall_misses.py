"""Real bug classes parallint used to miss (issue 22), end to end through the CLI, each with a clean twin."""

from __future__ import annotations

import json

from conftest import write_tree


def _codes(cli, tmp_path, files, select):
    write_tree(tmp_path, files)
    p = cli("check", "--no-cache", "--format", "json", "--exit-zero", "--select", select, ".", cwd=tmp_path)
    assert "Traceback" not in p.stderr, p.stderr
    return [(d["code"], d["line"]) for d in json.loads(p.stdout)]


LATE = """#!/bin/bash
#SBATCH --job-name=pretrain
module load cuda/12.1
#SBATCH --nodes=2
#SBATCH --ntasks=1
#SBATCH --ntasks-per-node=1
srun torchrun --nnodes 2 --nproc_per_node 8 train.py
"""


def test_sbatch_directive_after_first_command_is_reported(tmp_path, cli):
    got = _codes(cli, tmp_path, {"train.sbatch": LATE}, "LCH016")
    assert got == [("LCH016", 4), ("LCH016", 5), ("LCH016", 6)]


def test_sbatch_directives_in_header_are_clean(tmp_path, cli):
    clean = LATE.replace("module load cuda/12.1\n", "") + "module load cuda/12.1\n"
    assert _codes(cli, tmp_path, {"train.sbatch": clean}, "LCH016") == []


def test_ignored_directive_values_are_not_facts(tmp_path, cli):
    # --ntasks=1 against --nodes=2 × --ntasks-per-node=1 is LCH009 only when sbatch reads the lines
    assert _codes(cli, tmp_path, {"train.sbatch": LATE}, "LCH009") == []
    clean = LATE.replace("module load cuda/12.1\n", "")
    assert _codes(cli, tmp_path, {"train.sbatch": clean}, "LCH009") == [("LCH009", 4)]


def test_sbatch_lines_in_a_heredoc_are_not_directives(tmp_path, cli):
    gen = """#!/bin/bash
set -e
cat > job.sbatch <<EOT
#!/bin/bash
#SBATCH --nodes=2
srun python train.py
EOT
sbatch job.sbatch
"""
    assert _codes(cli, tmp_path, {"submit.sh": gen}, "LCH016") == []


BARRIER_ON_RANK0 = """import torch
import torch.distributed as dist


def save(model):
    if dist.get_rank() == 0:
        torch.save(model.state_dict(), "ckpt.pt")
        dist.barrier()
    dist.barrier()
"""


def test_barrier_in_rank0_branch_before_a_barrier_every_rank_reaches(tmp_path, cli):
    assert _codes(cli, tmp_path, {"train.py": BARRIER_ON_RANK0}, "PG005") == [("PG005", 8)]


def test_rank0_barrier_paired_with_the_other_ranks_barrier_is_clean(tmp_path, cli):
    download = """import torch.distributed as dist


def load(local_rank):
    if local_rank not in [-1, 0]:
        dist.barrier()
    download()
    if local_rank == 0:
        dist.barrier()
"""
    assert _codes(cli, tmp_path, {"train.py": download}, "PG005") == []
