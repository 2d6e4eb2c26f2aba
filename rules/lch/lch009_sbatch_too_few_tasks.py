"""LCH009 sbatch-too-few-tasks: #SBATCH --ntasks is smaller than --nodes × --ntasks-per-node."""

from __future__ import annotations

from typing import Iterable

from parallint.model.diagnostics import Diagnostic, Related, Severity
from parallint.model.rule import Example, Rule
from parallint.rules.lch._common import _int_text


class SbatchTooFewTasks(Rule):
    code = "LCH009"
    name = "sbatch-too-few-tasks"
    severity = Severity.WARNING
    summary = "#SBATCH --ntasks is smaller than --nodes × --ntasks-per-node."
    kinds = frozenset({"shell"})
    doc = """
    ## What it does
    Compares the `#SBATCH --ntasks` of a batch script with its `--nodes` × `--ntasks-per-node`,
    when all three are literal numbers.

    ## Why it matters
    With both given, Slurm lets `--ntasks` win and treats `--ntasks-per-node` as a maximum: the job
    gets fewer tasks than the script was written for, and the tasks are not spread one per GPU or
    one per node as intended. An `srun torchrun` then starts launchers on only some nodes, and the
    rendezvous waits for the missing ones until it times out.

    ## Example

    ## How to fix
    Drop `--ntasks` (Slurm derives it), or set it to nodes × tasks per node (32 here).
    """
    valid = (
        Example("""
        #!/bin/bash
        #SBATCH --nodes=4
        #SBATCH --ntasks-per-node=8
        #SBATCH --ntasks=32
        srun python train.py
        """, filename="train.sbatch"),
        Example("""
        #!/bin/bash
        #SBATCH --nodes=2
        #SBATCH --ntasks-per-node=1
        srun torchrun --nnodes 2 --nproc_per_node 8 train.py
        """, filename="train.sbatch"),
    )
    invalid = (
        Example("""
        #!/bin/bash
        #SBATCH --nodes=4
        #SBATCH --ntasks-per-node=8
        #SBATCH --ntasks=8
        srun python train.py
        """, filename="train.sbatch", line=4),
    )

    def check_file(self, f, ctx) -> Iterable[Diagnostic]:
        s = getattr(f.data, "sbatch", None)
        if not isinstance(s, dict):
            return
        nt, tpn, nodes = s.get("ntasks"), s.get("ntasks_per_node"), s.get("nodes")
        a, b, n = _int_text(nt), _int_text(tpn), _int_text(nodes)
        if a is None or b is None or n is None or a >= n * b:
            return
        yield self.report(nt.span, f"#SBATCH --ntasks={a} is fewer than --nodes={n} × --ntasks-per-node={b} = {n * b}: "
                                   f"Slurm starts {a} tasks and treats --ntasks-per-node as a maximum; set --ntasks to {n * b} "
                                   f"or drop it",
                          related=[Related.at(v.span, m) for v, m in ((nodes, f"--nodes={n}"),
                                                                      (tpn, f"--ntasks-per-node={b}")) if v.span])
