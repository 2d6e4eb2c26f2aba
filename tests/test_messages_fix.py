"""Every message says what to change, in one clause: "<what is wrong>; <verb> ...".

Checks the findings of every rule's INVALID examples (tests/data/messages.json, which
tests/test_messages_snapshot.py keeps equal to what the engine reports): each message ends with a
fix clause that starts with an imperative verb from parallint.report.baseline.FIX_VERBS, so a new rule
keeps the convention. The fix clause is what the baseline fingerprint leaves out
(tests/test_baseline.py)."""

from __future__ import annotations

import json
import re

import pytest

from conftest import ROOT
from parallint.report.baseline import FIX_VERBS, split_fix
from parallint.engine.registry import get_registry

#: SYN001 is the parser's own message (what is wrong and where); its fix is the syntax itself.
EXEMPT = {"SYN001"}
SNAPSHOT = json.loads((ROOT / "tests" / "data" / "messages.json").read_text("utf-8"))
CODES = [r.code for r in get_registry().rules if r.invalid and r.code not in EXEMPT]
_LINE = re.compile(r"^\d+ [^:]+:\d+: (.*)$", re.S)


@pytest.mark.parametrize("code", CODES)
def test_messages_say_what_to_change(code):
    lines = SNAPSHOT.get(code)
    assert lines, f"{code}: no message snapshot (regenerate tests/data/messages.json)"
    for line in lines:
        m = _LINE.match(line)
        assert m, line
        message = m.group(1)
        wrong, fix = split_fix(message)
        assert fix, f"{code}: no '; <verb> ...' fix clause (verbs: {' '.join(sorted(FIX_VERBS))}): {message}"
        assert wrong.strip() and fix.split()[0] in FIX_VERBS
        assert len(fix.split()) >= 2, f"{code}: the fix clause says too little: {message}"


def test_split_fix_needs_a_verb_after_the_semicolon():
    assert split_fix("a; b") == ("a; b", "")
    assert split_fix("x is 2; it must be 1; set it to 1") == ("x is 2; it must be 1", "set it to 1")
    assert split_fix("offsets; settle it") == ("offsets; settle it", "")  # a word boundary, not a prefix
