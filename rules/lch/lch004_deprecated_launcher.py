"""LCH004 deprecated-launcher: python -m torch.distributed.launch is deprecated; use torchrun."""

from __future__ import annotations

from typing import Iterable

from parallint.model.diagnostics import Diagnostic, Severity
from parallint.model.launches import (
    LAUNCH_FILE_KINDS, launches,
)
from parallint.model.rule import Example, Rule


class DeprecatedLauncher(Rule):
    code = "LCH004"
    name = "deprecated-launcher"
    severity = Severity.WARNING
    summary = "python -m torch.distributed.launch is deprecated; use torchrun."
    kinds = LAUNCH_FILE_KINDS
    doc = """
    ## What it does
    Reports launches through `python -m torch.distributed.launch`.

    ## Why it matters
    The module is deprecated (it prints a FutureWarning) in favour of `torchrun`. Without
    `--use_env` it passes `--local_rank` (or `--local-rank` since PyTorch 2.0) as an argument that
    the script must parse, a frequent source of "unrecognized arguments" crashes when the PyTorch
    version changes.

    ## Example

    ## How to fix
    Use `torchrun --nproc_per_node=8 train.py` and read `LOCAL_RANK` from the environment.
    """
    valid = (
        Example("""
        #!/bin/bash
        torchrun --nproc_per_node=8 train.py
        """, filename="run.sh"),
        Example("""
        #!/bin/bash
        python -m torch.distributed.run --nproc_per_node=8 train.py
        """, filename="run.sh"),
    )
    invalid = (
        Example("""
        #!/bin/bash
        python -m torch.distributed.launch --nproc_per_node=8 train.py
        """, filename="run.sh", line=2),
    )

    def check_file(self, f, ctx) -> Iterable[Diagnostic]:
        for la in launches(f):
            if la.launcher == "torch.distributed.launch":
                yield self.report(la.span, "python -m torch.distributed.launch is deprecated; use torchrun "
                                           "(and read LOCAL_RANK from the environment)")
