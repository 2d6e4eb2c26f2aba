"""Scaffold a new rule: its own file under rules/<family>/, ready to fill in.

    .venv/bin/python scripts/new_rule.py ABC001 my-rule-name [--kind python]

writes ``rules/abc/abc001_my_rule_name.py`` (the family folder is the code's letters, lower case;
a new family gets its folder and an ``__init__.py``; an existing file is never overwritten) with a
Rule class: code, name, severity, summary, the four doc sections, the declarations (kinds, calls,
facts), one VALID and one INVALID example and a check. Helpers that several rules of a family
share go to the family's ``_common.py``; knowledge that two families share, to the model layer
(``parallint.model``). Then:

1. write the check and the examples (the ``## Example`` of the docs is rendered from the first
   INVALID example, do not type it);
2. ``.venv/bin/python -m pytest -q tests/test_rule_examples.py -k ABC001``;
3. ``PARALLINT_UPDATE_SNAPSHOTS=1 .venv/bin/python -m pytest -q tests/test_messages_snapshot.py
   tests/test_startup.py`` (the message snapshots and the rule declaration table);
4. ``.venv/bin/parallint rules --write-docs docs/rules`` and paste ``.venv/bin/parallint rules
   --format markdown`` between the README's rules markers;
5. add the family's package to ``packages`` in ``pyproject.toml`` when it is new.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

TEMPLATE = '''"""{code} {name}: {summary}"""

from __future__ import annotations

from typing import Iterable

from parallint.model.diagnostics import Diagnostic, Severity
from parallint.model.rule import Example, Rule


class {cls}(Rule):
    code = "{code}"
    name = "{name}"
    severity = Severity.WARNING
    summary = "{summary}"
    kinds = frozenset({{"{kind}"}})
    #: call groups (see parallint.model.script.GROUPS) or qualified names this rule matches
    calls = frozenset({{"init_process_group"}})
    #: fact keys this rule reads (parallint.model.vocab)
    facts: frozenset[str] = frozenset()
    doc = """
    ## What it does
    TODO: what the rule looks for, in two or three sentences.

    ## Why it matters
    TODO: what goes wrong at run time (a hang, an OOM, a slower run), and when.

    ## Example

    ## How to fix
    TODO: the change that makes the finding go away.
    """
    valid = (
        Example("""
        import torch.distributed as dist

        dist.init_process_group("nccl")
        """),
    )
    invalid = (
        Example("""
        import torch.distributed as dist

        dist.init_process_group("gloo")
        """, line=3),
    )

    def check_file(self, f, ctx) -> Iterable[Diagnostic]:
        """TODO: the check. ``f`` is the file's FileFacts (``f.facts``, ``f.data``); report with
        ``self.report(span, message)``. Stay silent on anything unknown."""
        from parallint.model.script import script_of

        script = script_of(f)
        if script is None:
            return
        for call in script.by("init_process_group"):
            backend = script.arg(call, "backend", 0)
            if backend is not None and backend.known and backend.value == "gloo":
                yield self.report(call.span, "TODO: the message (what is wrong, with the values)")
'''


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Scaffold a new parallint rule file.")
    ap.add_argument("code", help="e.g. ABC001")
    ap.add_argument("name", help="kebab-case, e.g. gloo-backend-on-gpu")
    ap.add_argument("--kind", default="python", help="file kind the rule checks (parallint.discover.classify.KINDS)")
    ap.add_argument("--summary", default="TODO: one line, shown by `parallint rules`")
    ap.add_argument("--root", default=str(ROOT), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if not re.fullmatch(r"[A-Z]{2,5}[0-9]{3}", args.code):
        ap.error("code must look like ABC001")
    if not re.fullmatch(r"[a-z0-9]+(?:-[a-z0-9]+)*", args.name):
        ap.error("name must be kebab-case")
    letters = re.match(r"[A-Z]+", args.code).group(0)
    family = Path(args.root) / "rules" / letters.lower()
    path = family / f"{args.code.lower()}_{args.name.replace('-', '_')}.py"
    if path.exists():
        ap.error(f"{path} exists")
    if any(family.glob(f"{args.code.lower()}_*.py")):
        ap.error(f"a rule {args.code} exists in {family}: codes are never reused")
    family.mkdir(parents=True, exist_ok=True)
    init = family / "__init__.py"
    if not init.exists():
        init.write_text(f'"""{letters}: TODO: what the family checks.\n\nOne rule a file '
                        f'(``{letters.lower()}NNN_<name>.py``).\n"""\n', "utf-8")
    cls = "".join(part.capitalize() for part in args.name.split("-"))
    path.write_text(TEMPLATE.format(summary=args.summary, cls=cls, code=args.code, name=args.name,
                                    kind=args.kind), "utf-8")
    print(f"wrote {path}; next: fill in the TODOs, then see the steps in {Path(__file__).name}'s docstring")
    return 0


if __name__ == "__main__":
    sys.exit(main())
