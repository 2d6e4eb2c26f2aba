"""SYN003 unused-noqa: A `# noqa` code that suppresses no finding, or names no parallint rule."""

from __future__ import annotations

from parallint.model.diagnostics import Severity
from parallint.model.rule import Example, Rule


class UnusedNoqa(Rule):
    code = "SYN003"
    name = "unused-noqa"
    severity = Severity.WARNING
    summary = "A `# noqa` code that suppresses no finding, or names no parallint rule."
    doc = """
    ## What it does
    Reports each code in a `# noqa: CODE` comment (or a file-level `# parallint: noqa: CODE`)
    that suppressed no finding in this run, and each code that looks like a parallint code
    (`DDP999`) but names no rule. Like Ruff's RUF100. Codes of other tools (`E501`, `F401`) and a
    bare `# noqa` (flake8's too) are left alone; a code whose rule is not selected in the run is
    not called unused. `# noqa` inside a string is not a suppression at all.

    ## Why it matters
    A stale suppression hides the next real finding on that line: the config was fixed, the
    comment stayed, and a later change that breaks the batch identity again passes silently. A
    mistyped code suppresses nothing while looking as if it did.

    ## Example

    ## How to fix
    Remove the code (or the whole comment), or correct a mistyped code. `parallint check
    --add-noqa` writes codes for the findings that exist now.
    """
    valid = (
        Example("""
        import torch.distributed as dist

        dist.init_process_group("nccl")
        BANNER = "a string mentioning # noqa: DDP999 is not a comment"
        """),
    )
    invalid = (
        Example("""
        import torch.distributed as dist

        dist.init_process_group("nccl")  # noqa: DDP999
        """, line=3),
        Example("""
        #!/bin/bash
        # parallint: noqa: LCH998
        torchrun --nproc_per_node 8 train.py
        """, filename="run.sh", line=2),
    )
