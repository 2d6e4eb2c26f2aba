"""Executable docs: every rule's ``## Example`` is rendered from one of its tested INVALID examples
(so it triggers the rule), and ``parallint rule CODE`` shows it with the finding it produces."""

from __future__ import annotations

import inspect
import re

import pytest

from parallint.engine.examples import finding_lines, run_example
from parallint.engine.registry import get_registry
from parallint.model.rule import DOC_SECTIONS, Example, Rule

RULES = get_registry().rules


def _section(doc: str, title: str) -> str:
    m = re.search(rf"^## {title}\s*$(.*?)(?=^## |\Z)", doc, re.M | re.S)
    assert m, doc
    return m.group(1)


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.code)
def test_doc_example_is_a_tested_invalid_example_that_triggers_the_rule(rule, tmp_path):
    ex = rule.doc_example()
    assert ex is not None and ex in rule.invalid
    assert sum(e.doc for e in rule.invalid) <= 1, f"{rule.code}: more than one example marked doc=True"
    doc = rule.documentation()
    assert re.findall(r"^## (.+?)\s*$", doc, re.M) == list(DOC_SECTIONS)
    body = _section(doc, "Example")
    for text in ex.all_files().values():
        assert text.strip() in body
    assert len(run_example(rule, ex, tmp_path)) == ex.count


def test_doc_true_picks_the_example_and_findings_are_rendered():
    class Two(Rule):
        code = "TWO001"
        name = "two"
        summary = "s"
        doc = "## What it does\nx\n\n## Why it matters\ny\n\n## Example\ntyped twice\n\n## How to fix\nz\n"
        invalid = (Example("a = 1\n"), Example("b = 2\n", filename="run.py", doc=True))

    assert Two.doc_example() is Two.invalid[1]
    doc = Two.documentation(["run.py:1: TWO001 message"])
    body = _section(doc, "Example")
    assert "typed twice" not in doc and "b = 2" in body and "`run.py`" in body
    assert "run.py:1: TWO001 message" in body
    assert _section(doc, "How to fix").strip() == "z"


def test_rule_command_shows_the_example_with_its_finding(cli):
    p = cli("rule", "PIP004")
    assert p.returncode == 0, p.stderr
    body = _section(p.stdout, "Example")
    assert "pipeline_parallel_microbatch_size = 4" in body
    (line,) = finding_lines(get_registry().lookup("PIP004"))
    assert line.startswith("train.toml:14: PIP004 ") and line in body


@pytest.mark.parametrize("rule", [r for r in RULES if r.__module__.startswith("parallint.rules.")],
                         ids=lambda r: r.code)
def test_the_example_is_not_typed_twice(rule):
    """A built-in rule's doc leaves ``## Example`` empty: documentation() renders it from a tested
    INVALID example (mark one with ``doc=True`` to choose it)."""
    assert not _section(inspect.cleandoc(rule.doc), "Example").strip(), (
        f"{rule.code}: remove the text typed under ## Example")
