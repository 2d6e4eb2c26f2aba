"""LCH004 deprecated-launcher: python -m torch.distributed.launch is deprecated; use torchrun."""

from __future__ import annotations

from typing import Iterable

import re

from parallint.model import versions
from parallint.model.diagnostics import Diagnostic, Related, Severity
from parallint.model.fixes import Fix, span_range, syntax_of
from parallint.model.launches import (
    LAUNCH_FILE_KINDS, launches,
)
from parallint.model.rule import Example, Rule

#: torch 2.0 passes ``--local-rank=N`` (pytorch/pytorch#94505, "Use dash instead of underscore")
DASHED_FROM = "2.0"
FIX = "use torchrun (and read LOCAL_RANK from the environment)"


def _launched_script(job):
    """The launched script's :class:`parallint.model.script.Script`, or None."""
    from parallint.model.script import Script

    la = job.launch
    if la is None or la.script_path is None:
        return None
    for f in job.files:
        if f.abspath == la.script_path and isinstance(f.data, Script):
            return f.data
    return None


def _rejects_dashed(script) -> bool:
    """The script's argparse parser is wholly visible, defines ``--local_rank`` and would stop
    at ``--local-rank=N`` (no such option, no unique prefix, no ``parse_known_args``)."""
    if script is None or not script.argparse or script.argparse_open or script.argparse_abbrev is None:
        return False
    if "--local_rank" not in script.argparse_options:
        return False
    opt, uncertain = script.option("--local-rank")
    return opt is None and not uncertain


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
    facts = frozenset({"version.torch"})
    doc = """
    ## What it does
    Reports launches through `python -m torch.distributed.launch`.

    Version-aware (torch, from the job's version facts): where every torch version that can
    reach the job is 1.x (a `torch==1.13.1` pin, an NGC 22.xx image), the launcher passes
    `--local_rank` as the script expects and the finding is only the deprecation notice, at
    `info`. Where every version is 2.0 or newer and the launched script's own `argparse` parser
    (wholly visible, as for CFG009) defines `--local_rank` but not `--local-rank`, it is an
    `error`: the start-up crash. With no torch version known, or one not pinned, it stays the
    warning.

    ## Why it matters
    The module is deprecated (it prints a FutureWarning) in favour of `torchrun`. Without
    `--use_env` it passes `--local_rank` (or `--local-rank` since PyTorch 2.0) as an argument that
    the script must parse, a frequent source of "unrecognized arguments" crashes when the PyTorch
    version changes. PyTorch 2.0's release notes (torch.distributed, "launch: use dash instead of
    underscore in `--local-rank`", pytorch/pytorch#94505) name the change; argparse then stops
    every rank with "unrecognized arguments: --local-rank=0".

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
        # torch 1.x pinned: only the deprecation notice (info)
        Example(files={
            "run.sh": "#!/bin/bash\npython -m torch.distributed.launch --nproc_per_node=8 train.py\n",
            "requirements.txt": "torch==1.13.1\n",
        }, paths=["run.sh"], line=2),
        # torch 2.x pinned and a parser that knows only --local_rank: the crash (error)
        Example(files={
            "run.sh": "#!/bin/bash\npython -m torch.distributed.launch --nproc_per_node=8 train.py\n",
            "requirements.txt": "torch>=2.1,<2.4\n",
            "train.py": """
            import argparse
            import torch.distributed as dist

            parser = argparse.ArgumentParser()
            parser.add_argument("--local_rank", type=int, default=0)
            args = parser.parse_args()
            dist.init_process_group("nccl")
            """,
        }, paths=["run.sh"], line=2),
    )

    def check_file(self, f, ctx) -> Iterable[Diagnostic]:
        torch = None
        for la in launches(f):
            if la.launcher == "torch.distributed.launch":
                edit = _torchrun(f.text or "", f.path, la.span)
                fix = None if edit is None else Fix("use torchrun" + (" (--use_env dropped)" if edit[1] else ""), safe=edit[1])
                if torch is None:
                    torch = ctx.versions(f).all("version.torch")
                if versions.below(torch, DASHED_FROM):
                    yield self.report(
                        la.span, f"python -m torch.distributed.launch is deprecated, and works here: "
                                 f"{versions.show(torch)} passes --local_rank (torch 2.0 passes --local-rank); {FIX}",
                        self._related(torch), Severity.INFO, fix=fix)
                else:
                    yield self.report(la.span, "python -m torch.distributed.launch is deprecated; use torchrun "
                                               "(and read LOCAL_RANK from the environment)", fix=fix)

    @staticmethod
    def _related(torch) -> tuple[Related, ...]:
        return tuple(Related.at(v.span, f"{v.source or v.value} stated here") for v in torch if v.span is not None)[:3]

    def check_job(self, job, ctx) -> Iterable[Diagnostic]:
        la = job.launch
        if la is None or la.launcher != "torch.distributed.launch" or "use_env" in la.options:
            return
        torch = job.facts.all("version.torch")
        if not versions.at_least(torch, DASHED_FROM):
            return
        script = _launched_script(job)
        if not _rejects_dashed(script):
            return
        what = la.script.value if la.script is not None and la.script.known else "the script"
        edit = _torchrun(job.root.text or "", la.span.path, la.span) if la.span.path == job.root.path else None
        fix = None if edit is None else Fix("use torchrun" + (" (--use_env dropped)" if edit[1] else ""), safe=edit[1])
        yield self.report(
            la.span, f"python -m torch.distributed.launch passes --local-rank=N with {versions.show(torch)}, and "
                     f"{what}'s parser defines only --local_rank: argparse stops every rank at start-up "
                     f"(unrecognized arguments); {FIX}",
            self._related(torch), Severity.ERROR, fix=fix)

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
