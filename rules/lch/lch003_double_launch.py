"""LCH003 double-launch: srun/mpirun starts several tasks per node and each task is a launcher that forks workers."""

from __future__ import annotations

from typing import Iterable

from parallint.model.diagnostics import Diagnostic, Severity
from parallint.model.facts import known_int
from parallint.model.launches import (
    LAUNCH_FILE_KINDS, launches, layer,
    procs_per_node, related_at,
)
from parallint.model.rule import Example, Rule
from parallint.rules.lch._common import desc


FORKING = frozenset({"torchrun", "torch.distributed.run", "torch.distributed.launch", "deepspeed", "accelerate",
                     "composer", "colossalai"})


class DoubleLaunch(Rule):
    code = "LCH003"
    facts = frozenset({"parallel.nodes", "parallel.procs_per_node", "parallel.world_size"})
    name = "double-launch"
    severity = Severity.ERROR
    summary = "srun/mpirun starts several tasks per node and each task is a launcher that forks workers."
    kinds = LAUNCH_FILE_KINDS
    doc = """
    ## What it does
    Finds `srun` (or `mpirun`) starting more than one task per node (its own `--ntasks-per-node`, or
    the one it inherits from `#SBATCH`) where each task is `torchrun`, `deepspeed`, `accelerate
    launch` or `torch.distributed.launch` with more than one process per node.

    ## Why it matters
    Every task runs a complete launcher: 8 tasks × `--nproc_per_node=8` is 64 processes per node
    on 8 GPUs, and 8 separate rendezvous that collide on one port. The job hangs or fails with
    address-in-use or duplicate-GPU errors.

    ## Example

    ## How to fix
    Start one launcher per node (`srun --ntasks-per-node=1 torchrun ...`), or let srun start the
    workers itself and run the script with plain `python`.
    """
    valid = (
        Example("""
        #!/bin/bash
        #SBATCH --nodes=2
        #SBATCH --ntasks-per-node=8
        srun --ntasks-per-node=1 torchrun --nnodes=2 --nproc_per_node=8 train.py
        """, filename="train.sbatch"),
        Example("""
        #!/bin/bash
        #SBATCH --nodes=2
        #SBATCH --ntasks-per-node=8
        srun python train.py
        """, filename="train.sbatch"),
    )
    invalid = (
        Example("""
        #!/bin/bash
        #SBATCH --nodes=2
        #SBATCH --ntasks-per-node=8
        #SBATCH --gpus-per-node=8
        srun torchrun --nnodes=2 --nproc_per_node=8 train.py
        """, filename="train.sbatch", line=3),
        Example("""
        #!/bin/bash
        srun -N 2 --ntasks-per-node=4 python -m torch.distributed.run --nproc_per_node 4 train.py
        """, filename="run.sh", line=2),
    )

    def check_file(self, f, ctx) -> Iterable[Diagnostic]:
        for la in launches(f):
            w = la.wrapper
            if la.launcher not in FORKING or w is None or w.launcher not in ("srun", "mpirun"):
                continue
            tpn = w.options.get("ntasks_per_node_effective")
            t = known_int(tpn)
            p = procs_per_node(la)
            pi = known_int(p)
            if t is None or pi is None or t <= 1 or pi <= 1 or layer(p) != "launcher":
                continue
            yield self.report(
                tpn.span or la.span,
                f"{w.launcher} starts {t} tasks per node ({desc(tpn)}) and each runs {la.launcher} with "
                f"{pi} processes: {t * pi} processes per node in {t} separate rendezvous; start one task per "
                f"node (--ntasks-per-node=1) or drop the launcher and let {w.launcher} start the ranks",
                related=related_at(p, f"{desc(p)} = {pi}"),
            )
