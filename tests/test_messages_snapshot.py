"""Message snapshots: the exact findings (example, path, line, message) of every rule's
INVALID examples, stored in tests/data/messages.json (one line per finding), so a wording change is
a visible diff.

After changing a message on purpose, regenerate the file and review the diff:

    PARALLINT_UPDATE_SNAPSHOTS=1 .venv/bin/python -m pytest -q tests/test_messages_snapshot.py
"""

from __future__ import annotations

import json
import os

import pytest

from conftest import ROOT
from parallint.engine.examples import run_example
from parallint.engine.registry import get_registry

SNAPSHOT = ROOT / "tests" / "data" / "messages.json"
UPDATE = os.environ.get("PARALLINT_UPDATE_SNAPSHOTS") == "1"
RULES = get_registry().rules


def _messages(rule, tmp_path) -> list[str]:
    """``"<example index> <path>:<line>: <message>"`` per finding, one JSON line each."""
    out = []
    for i, ex in enumerate(rule.invalid):
        where = tmp_path / f"ex{i}"
        where.mkdir()
        for d in run_example(rule, ex, where):
            out.append(f"{i} {d.path}:{d.span.line}: {d.message}")
    return out


def _stored() -> dict:
    return json.loads(SNAPSHOT.read_text("utf-8")) if SNAPSHOT.is_file() else {}


@pytest.fixture(scope="module")
def collected():
    got: dict = {}
    yield got
    if UPDATE:
        merged = {**_stored(), **got}
        merged = {k: merged[k] for k in sorted(merged) if get_registry().lookup(k) is not None}
        SNAPSHOT.parent.mkdir(parents=True, exist_ok=True)
        SNAPSHOT.write_text(json.dumps(merged, indent=1, ensure_ascii=False) + "\n", "utf-8")


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.code)
def test_messages_match_the_snapshot(rule, tmp_path, collected):
    got = _messages(rule, tmp_path)
    collected[rule.code] = got
    if UPDATE:
        return
    stored = _stored()
    assert rule.code in stored, (f"{rule.code} has no message snapshot: run "
                                 "PARALLINT_UPDATE_SNAPSHOTS=1 .venv/bin/python -m pytest tests/test_messages_snapshot.py")
    assert got == stored[rule.code], ("messages changed; if on purpose, regenerate: "
                                      "PARALLINT_UPDATE_SNAPSHOTS=1 .venv/bin/python -m pytest tests/test_messages_snapshot.py")


def test_snapshot_has_no_stale_rules():
    stale = sorted(set(_stored()) - {r.code for r in RULES})
    assert not stale, f"snapshots of rules that no longer exist: {stale} (regenerate)"
