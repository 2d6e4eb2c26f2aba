"""CFG009 unrecognized-script-argument: A launch line passes a flag that the script's own argparse parser rejects."""

from __future__ import annotations

from parallint.model.diagnostics import Diagnostic, Severity
from parallint.model.rule import Example, Rule

TYPE_CHECKING = False  # typing is not imported at run time (start-up, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Iterable

MAX_SUGGESTIONS = 32


def _script(job):
    """The launched script's :class:`parallint.model.script.Script`, or None."""
    from parallint.model.script import Script

    la = job.launch
    if la is None or la.script_path is None:
        return None
    for f in job.files:
        if f.abspath == la.script_path and isinstance(f.data, Script):
            return f.data
    return None


def _given_options(script, words) -> set[str]:
    """The parser options that the launch line's own known words already pass."""
    given = set()
    for w in words:
        if w.known and isinstance(w.value, str) and w.value.startswith("--"):
            opt, _uncertain = script.option(w.value.partition("=")[0])
            if opt is not None:
                given.add(opt)
    return given


class UnrecognizedScriptArgument(Rule):
    code = "CFG009"
    name = "unrecognized-script-argument"
    severity = Severity.ERROR
    summary = "A launch line passes a flag that the script's own argparse parser rejects."
    kinds = frozenset()
    calls = frozenset()
    facts = frozenset()
    doc = """
    ## What it does
    Reads the `--flags` after the entry script of a launch line (`torchrun ... train.py --lr 3e-4`)
    and looks each one up in the script's `argparse` parser: its `add_argument` option strings,
    exact or, unless `allow_abbrev=False`, as a unique prefix of a long option. Fires only when the
    parser is wholly visible: one `ArgumentParser` made in the script, every `add_argument` with
    literal names and no `**kwargs`, no parent parsers, no subparsers, no `parse_known_args`, the
    parser handed to no function the script does not define, no other parser library and no
    `sys.argv` handling. Stops at the first word it cannot read (`$EXTRA_ARGS`) or an option taking
    several values. Megatron command lines are CFG006's.

    ## Why it matters
    `argparse` exits with "unrecognized arguments" on every rank, after the job has waited for its
    allocation: a misspelt or renamed flag costs a whole queue wait.

    ## Example

    ## How to fix
    Use the spelling the message suggests, add the option to the script's parser, or drop the flag.
    """
    valid = (
        Example(files={
            "run.sh": """
            #!/bin/bash
            torchrun --nproc_per_node 8 train.py --lr 3e-4 --batch 8 --bf16
            """,
            "train.py": """
            import argparse
            import torch.distributed as dist

            parser = argparse.ArgumentParser()
            parser.add_argument("--lr", type=float, default=1e-3)
            parser.add_argument("--batch-size", type=int, default=4)
            parser.add_argument("--bf16", action="store_true")
            args = parser.parse_args()
            dist.init_process_group("nccl")
            """,
        }, paths=["run.sh"]),
        Example(files={
            "run.sh": """
            #!/bin/bash
            torchrun --nproc_per_node 8 train.py --lr 3e-4 --extra 1
            """,
            "train.py": """
            import argparse
            import torch.distributed as dist

            parser = argparse.ArgumentParser()
            parser.add_argument("--lr", type=float, default=1e-3)
            args, rest = parser.parse_known_args()
            dist.init_process_group("nccl")
            """,
        }, paths=["run.sh"]),
    )
    invalid = (
        Example(files={
            "run.sh": """
            #!/bin/bash
            torchrun --nproc_per_node 8 train.py --learning-rte 3e-4
            """,
            "train.py": """
            import argparse
            import torch.distributed as dist

            parser = argparse.ArgumentParser()
            parser.add_argument("--learning-rate", type=float, default=1e-3)
            args = parser.parse_args()
            dist.init_process_group("nccl")
            """,
        }, line=2, paths=["run.sh"]),
    )

    def check_job(self, job, ctx) -> Iterable[Diagnostic]:
        la = job.launch
        if la is None or la.megatron_flags or not la.args:
            return
        script = _script(job)
        if script is None or not script.argparse or script.argparse_open or script.argparse_abbrev is None:
            return
        if "megatron" in script.imports:
            return  # Megatron's parser is CFG006's
        opts = script.argparse_options
        suggested: dict[str, list[str]] = {}
        words = la.args
        i, n = 0, len(words)
        while i < n:
            w = words[i]
            text = w.value if w.known and isinstance(w.value, str) else None
            if text is None or text == "--":
                return  # what follows may be read differently
            i += 1
            if not text.startswith("--") or len(text) < 3 or "\x00" in text:
                continue
            flag, eq, _ = text.partition("=")
            opt, uncertain = script.option(flag)
            if uncertain:
                return
            if opt is not None:
                _dest, action, _typ, varargs, _opaque = opts[opt]
                if varargs or action not in (None, "store", "store_true", "store_false"):
                    return  # how many words it takes is not followed
                if action is None or action == "store":
                    if not eq:
                        i += 1  # its value
                continue
            if flag not in suggested and len(suggested) < MAX_SUGGESTIONS:
                import difflib

                given = _given_options(script, words)  # a flag the line already passes is no rename
                suggested[flag] = difflib.get_close_matches(
                    flag, [o for o in opts if o.startswith("--") and o not in given], n=1, cutoff=0.7)
            close = suggested.get(flag)
            what = la.script.value if la.script is not None and la.script.known else "the script"
            mean = f" (did you mean {close[0]}?)" if close else ""
            fix = f"rename it to {close[0]}" if close else "remove it or add it to the script's parser"
            yield self.report(w.span, f"{flag} is not an argument of {what}{mean}: argparse stops every rank at "
                                      f"start-up (unrecognized arguments); {fix}")
