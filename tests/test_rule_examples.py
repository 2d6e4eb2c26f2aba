"""Every rule's VALID and INVALID examples, run through the real engine.

An INVALID example must produce exactly its finding(s) of that rule (on its line when given);
a VALID one none. Rules are discovered from the registry, so a new rule is tested by existing.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from parallint.discover.settings import Config
from parallint.engine.registry import check_rule_class, get_registry
from parallint.engine.runner import check_paths

from conftest import write_tree

RULES = get_registry().rules


def _cases():
    for rule in RULES:
        for i, ex in enumerate(rule.valid):
            yield pytest.param(rule, ex, False, id=f"{rule.code}-valid-{i}")
        for i, ex in enumerate(rule.invalid):
            yield pytest.param(rule, ex, True, id=f"{rule.code}-invalid-{i}")


def _run(rule, ex, tmp_path: Path):
    write_tree(tmp_path, ex.all_files())
    config = Config(None, tmp_path, dict(ex.config))
    paths = list(ex.paths) or ["."]
    result = check_paths(paths, config, rules=[rule], cwd=tmp_path)
    assert not result.errors, result.errors
    return [d for d in result.diagnostics if d.code == rule.code]


@pytest.mark.parametrize("rule,ex,invalid", list(_cases()))
def test_example(rule, ex, invalid, tmp_path):
    found = _run(rule, ex, tmp_path)
    shown = "\n".join(f"{d.path}:{d.span.line}: {d.message}" for d in found)
    if invalid:
        assert len(found) == ex.count, f"expected {ex.count} {rule.code} finding(s), got:\n{shown}"
        if ex.line is not None:
            assert found[0].span.line == ex.line, shown
        for d in found:
            assert d.severity is not None and d.message and d.span.line >= 1 and d.span.column >= 1
    else:
        assert not found, f"VALID example produced:\n{shown}"


@pytest.mark.parametrize("rule", RULES, ids=[r.code for r in RULES])
def test_rule_declaration(rule):
    assert check_rule_class(rule) == []
    assert rule.valid, f"{rule.code} has no VALID example"
    assert rule.invalid, f"{rule.code} has no INVALID example"


def test_codes_and_names_unique():
    codes = [r.code for r in RULES]
    names = [r.name for r in RULES]
    assert len(codes) == len(set(codes))
    assert len(names) == len(set(names))
