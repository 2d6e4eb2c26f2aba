"""SYN001 parse-error: A script, launch file or config that parallint reads cannot be parsed."""

from __future__ import annotations

from parallint.model.diagnostics import Severity
from parallint.model.rule import Example, Rule


class ParseError(Rule):
    code = "SYN001"
    name = "parse-error"
    severity = Severity.ERROR
    summary = "A script, launch file or config that parallint reads cannot be parsed."
    doc = """
    ## What it does
    Reports a file that parallint would check — a training script, a launch script, a Kubernetes
    manifest or a framework config — but cannot parse: a syntax error, invalid UTF-8, a binary or
    unreadable file. The message names the position of the problem. The other files are still checked.
    A template is not a syntax error: placeholders a script or tool fills in (`${zero_stage}`,
    `{{ .Values.x }}`, `<NUM_GPUS>`, `%BATCH%`, a bare `ZERO_STAGE`) are unknown values, and a file
    whose parse fails on template syntax (Jinja `{% if %}` blocks) is left alone. Python that a
    newer interpreter accepts (PEP 701 f-strings on a Python 3.11 run) is not reported either.

    ## Why it matters
    A file that does not parse is not checked at all, so every other rule is silent on it. Most
    frameworks only find out when the job starts: a DeepSpeed JSON with a trailing comma fails in
    every worker after the GPUs have been allocated.

    ## Example

    ## How to fix
    Fix the syntax at the reported position. If the file is not meant to be read by parallint,
    exclude it (`extend-exclude` in `[tool.parallint]`) or list it under `per-file-ignores`.
    """
    # SYN001 findings come from the readers; the rule class carries the code, the docs and examples.
    valid = (
        Example("""
        import torch.distributed as dist

        dist.init_process_group("nccl")
        """),
    )
    invalid = (
        Example("""
        import torch.distributed as dist

        def main(:
            dist.init_process_group("nccl")
        """, line=3),
    )
