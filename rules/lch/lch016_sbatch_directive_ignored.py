"""LCH016 sbatch-directive-ignored: An #SBATCH line after the first command, which sbatch ignores."""

from __future__ import annotations

from typing import Iterable

from parallint.model.diagnostics import Diagnostic, Severity
from parallint.model.rule import Example, Rule


class SbatchDirectiveIgnored(Rule):
    code = "LCH016"
    name = "sbatch-directive-ignored"
    severity = Severity.WARNING
    summary = "An #SBATCH line after the first command, which sbatch ignores."
    kinds = frozenset({"shell"})
    doc = """
    ## What it does
    Reports each `#SBATCH` line that starts a line after the first command of a batch script
    (a comment at the top level or inside a block; heredoc bodies and strings do not count).
    parallint does not use the values of such a line either.

    ## Why it matters
    sbatch reads directives only up to the first line that is not a comment or blank. A directive
    below an `export`, a `module load` or a `set -e` is a plain comment: the job gets the partition's
    defaults (one node, one task) instead of the nodes, tasks or GPUs the file asks for, and a
    multi-node launch waits for nodes that were never allocated.

    ## Example

    ## How to fix
    Move every `#SBATCH` line above the first command, right after the `#!` line.
    """
    valid = (
        Example("""
        #!/bin/bash
        #SBATCH --nodes=2
        #SBATCH --ntasks-per-node=1
        set -e
        srun torchrun --nnodes 2 --nproc_per_node 8 train.py
        """, filename="train.sbatch"),
        Example("""
        #!/bin/bash
        cat > job.sbatch <<EOT
        #!/bin/bash
        #SBATCH --nodes=2
        srun python train.py
        EOT
        sbatch job.sbatch
        """, filename="submit.sh"),
    )
    invalid = (
        Example("""
        #!/bin/bash
        #SBATCH --job-name=pretrain
        set -e
        #SBATCH --nodes=2
        #SBATCH --ntasks-per-node=1
        srun torchrun --nnodes 2 --nproc_per_node 8 train.py
        """, filename="train.sbatch", line=4, count=2, doc=True),
    )

    def check_file(self, f, ctx) -> Iterable[Diagnostic]:
        late = getattr(f.data, "sbatch_ignored", None)
        if not isinstance(late, list):
            return
        for v in late:
            if v.span is None:
                continue
            yield self.report(v.span, f"`{v.value}` comes after the first command, so sbatch ignores it and the job "
                                      f"runs without it; move it above the first command")
