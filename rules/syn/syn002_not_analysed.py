"""SYN002 not-analysed: A file parallint would check was not analysed (too large, too complex, timed out, unreadable ...)."""

from __future__ import annotations

from parallint.model.diagnostics import Severity
from parallint.model.rule import Example, Rule


class NotAnalysed(Rule):
    code = "SYN002"
    name = "not-analysed"
    severity = Severity.WARNING
    summary = "A file parallint would check was not analysed (too large, too complex, timed out, unreadable ...)."
    doc = """
    ## What it does
    Reports a file that parallint would check but did not analyse, and says why: too large (over
    `max-file-size`), too complex (nesting, an operator chain or a line past the limits that keep
    parsers from exhausting their stack or memory), timed out (over `file-timeout`), a reader or
    parser crashed on it, unreadable (permissions, a dangling or looping link), binary, or not a
    regular file (a FIFO, socket or device). Every other file is still checked.

    A file that the checked tree links to outside the repository boundary is also reported here,
    at `info`: "outside the repository (linked, not read)". Examples are `--deepspeed /abs/ds.json`
    on a launch line, a `~/...` path, or a symbolic link that leaves the tree. Its content is never
    read, so none of it reaches findings or CI logs (docs/security.md).

    ## Why it matters
    A file that is not analysed is not checked by any rule. Saying so keeps a clean result honest:
    without it, a training script that parallint skipped would look like one that passed.

    ## Example

    ## How to fix
    Usually nothing is wrong with the file itself (a syntax error is SYN001, not this). Exclude
    generated or vendored files (`extend-exclude`), raise `max-file-size` or `file-timeout` in
    `[tool.parallint]` when the file is a real training file, or fix the permissions. The severity
    is warning, not error: the file is not known to be wrong, but a skipped file still fails the
    default gate (`fail-level = "warning"`), so nothing passes unseen. A file outside the
    repository is not the tree's fault, so its hint does not fail the gate. Name it on the command
    line to check it.
    """
    # SYN002 findings come from the runner; the rule class carries the code, the docs and examples.
    valid = (
        Example("""
        import torch.distributed as dist

        ready = a and b and c
        """),
    )
    invalid = (
        Example("import torch.distributed as dist\n\nready = " + " and ".join(["a"] * 400) + "\n", line=1),
    )
