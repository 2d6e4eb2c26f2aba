"""Running a rule's examples through the real engine (``parallint rule CODE`` shows the finding
its documented example produces; the test suite runs every example the same way)."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from parallint.model.diagnostics import Diagnostic
    from parallint.model.rule import Example, Rule


def run_example(rule: "type[Rule]", ex: "Example", where: Path | None = None) -> "list[Diagnostic]":
    """The findings of ``rule`` on example ``ex``, its files written to ``where`` (a fresh
    temporary folder when None)."""
    from parallint.discover.settings import Config
    from parallint.engine.runner import check_paths

    if where is None:
        with tempfile.TemporaryDirectory(prefix="parallint-example-") as tmp:
            return run_example(rule, ex, Path(tmp))
    for name, text in ex.all_files().items():
        p = where / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    result = check_paths(list(ex.paths) or ["."], Config(None, where, dict(ex.config)), rules=[rule], cwd=where)
    if result.errors:
        raise RuntimeError("; ".join(str(e) for e in result.errors))
    return [d for d in result.diagnostics if d.code == rule.code]


def finding_lines(rule: "type[Rule]", ex: "Example | None" = None) -> list[str]:
    """``path:line: CODE message`` for each finding of ``rule`` on ``ex`` (default: its doc example)."""
    ex = ex if ex is not None else rule.doc_example()
    if ex is None:
        return []
    return [f"{d.path}:{d.span.line}: {d.code} {d.message}" for d in run_example(rule, ex)]
