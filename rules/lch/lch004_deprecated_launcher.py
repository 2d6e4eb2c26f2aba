"""LCH004 deprecated-launcher: python -m torch.distributed.launch is deprecated; use torchrun."""

from __future__ import annotations

from typing import Iterable

import re

from parallint.model.diagnostics import Diagnostic, Severity
from parallint.model.fixes import Fix, span_range, syntax_of
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
    fix_safety = "sometimes"
    fix_doc = ("`--fix` writes `torchrun` for `python -m torch.distributed.launch` and drops `--use_env` when the "
               "line passes `--use_env` (the script already reads `LOCAL_RANK` from the environment); without it "
               "the fix is unsafe (`--unsafe-fixes`): the script stops receiving `--local_rank`.")
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
                edit = _torchrun(f.text or "", f.path, la.span)
                fix = None
                if edit is not None:
                    fix = Fix("use torchrun" + (" (--use_env dropped)" if edit[1] else ""), safe=edit[1])
                yield self.report(la.span, "python -m torch.distributed.launch is deprecated; use torchrun "
                                           "(and read LOCAL_RANK from the environment)", fix=fix)

    def apply_fix(self, diag, text):
        edit = _torchrun(text, diag.span.path, diag.span)
        return edit[0] if edit is not None and edit[1] == diag.fix.safe else None


#: the interpreter and module the fix replaces: a plain `python`/`python3[.N]` (another interpreter,
#: `$PYTHON` or a path, may be another environment than the one torchrun is installed in)
_LAUNCH = re.compile(r"python(?:3(?:\.[0-9]+)?)?(?:[ \t]+-u)?[ \t]+-m[ \t]+torch\.distributed\.launch(?=[ \t\\\n\r;&|)'\"]|$)")
_USE_ENV = re.compile(r"[ \t]+--use[_-]env(?=[ \t\\\n\r;&|)'\"]|$)")
_TOKEN = re.compile(r"[^ \t\\\n\r]+")


def _torchrun(text: str, path: str, span) -> tuple[str, bool] | None:
    """(the text with the launch at ``span`` written as torchrun, whether that is safe); None when
    the line is not `python -m torch.distributed.launch` as the fix knows it."""
    r = span_range(text, syntax_of(path), span)
    if r is None:
        return None
    m = _LAUNCH.match(text, r[0])
    if m is None:
        return None
    end = m.end()  # the command's end: its line and the lines a trailing backslash continues
    while True:
        nl = text.find("\n", end)
        line = text[end:nl if nl >= 0 else len(text)]
        if nl < 0 or not line.rstrip("\r").endswith("\\"):
            end = len(text) if nl < 0 else nl
            break
        end = nl + 1
    # --use_env among the launcher's own options: before the first token that is the script
    use_env = None
    for u in _USE_ENV.finditer(text, m.end(), end):
        between = _TOKEN.findall(text[m.end():u.start()])
        if not any(t.endswith(".py") or t in ("-m", "--no_python", "--no-python") for t in between):
            use_env = u
        break
    head = text[:r[0]] + "torchrun"
    if use_env is None:
        return head + text[m.end():], False
    return head + text[m.end():use_env.start()] + text[use_env.end():], True
