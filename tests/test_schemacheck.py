"""parallint.model.schemacheck settles a validation without jsonschema only when jsonschema would
agree: checked against jsonschema itself on every schema parallint ships, over the examples, the
real-world corpus, and many values mutated from them."""

from __future__ import annotations

import json
import random

import jsonschema
import pytest
import yaml

from conftest import CORPUS, ROOT
from parallint.model.schemacheck import _Checker, settles

SCHEMAS = {p.name: json.loads(p.read_text()) for p in (ROOT / "schemas").glob("*.schema.json")}


def _docs():
    """Instances: every JSON/YAML config of the examples and the corpus (parsed plainly)."""
    roots = [ROOT / "examples"] + ([CORPUS] if CORPUS.is_dir() else [])
    for root in roots:
        for p in sorted(root.rglob("*")):
            if p.suffix not in (".json", ".yaml", ".yml") or not p.is_file() or p.stat().st_size > 200_000:
                continue
            try:
                text = p.read_text("utf-8")
                doc = json.loads(text) if p.suffix == ".json" else yaml.safe_load(text)
            except Exception:
                continue
            if isinstance(doc, dict):
                yield doc


DOCS = list(_docs())

_SAMPLES = [0, 1, -1, 3, 2.5, 1.0, True, False, None, "auto", "", "x", "nccl", [], [1], {}, {"a": 1}, 10**12]


def _mutations(doc, rng, n):
    """``n`` copies of ``doc`` with one value somewhere replaced, removed or a key added."""
    paths = []

    def walk(x, path):
        paths.append(path)
        if isinstance(x, dict):
            for k, v in x.items():
                walk(v, path + (k,))
        elif isinstance(x, list):
            for i, v in enumerate(x):
                walk(v, path + (i,))

    walk(doc, ())
    for _ in range(n):
        new = json.loads(json.dumps(doc, default=str))
        path = rng.choice(paths)
        parent, last = None, None
        node = new
        for p in path:
            parent, last, node = node, p, node[p]
        how = rng.random()
        if how < 0.6 and parent is not None:
            parent[last] = rng.choice(_SAMPLES)
        elif how < 0.8 and isinstance(node, dict):
            node[rng.choice(["stage", "enabled", "type", "strange_key", "train_batch_siz", "zero_optimization"])] = rng.choice(_SAMPLES)
        elif isinstance(parent, dict):
            del parent[last]
        yield new


def _agrees(schema, inst):
    validator = jsonschema.Draft202012Validator(schema)
    valid = validator.is_valid(inst)
    verdict = _Checker(schema, None).check(schema, inst, True)
    if verdict is not None:
        assert verdict == valid, (verdict, valid, inst)
    assert settles(schema, inst) <= valid  # settled means valid


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_settles_agrees_with_jsonschema(name):
    schema = SCHEMAS[name]
    rng = random.Random(name)
    decided = 0
    for doc in DOCS:
        _agrees(schema, doc)
        for inst in _mutations(doc, rng, 3):
            _agrees(schema, inst)
            decided += _Checker(schema, None).check(schema, inst, True) is not None
    assert decided > 0


def test_hand_cases():
    schema = {"type": "object", "properties": {
        "n": {"anyOf": [{"type": "integer", "minimum": 1}, {"const": "auto"}]},
        "flag": {"type": "boolean"}, "e": {"enum": [0, 1, 2]}, "s": {"type": "string", "minLength": 2, "pattern": "^a"},
        "l": {"type": "array", "items": {"type": "number"}, "minItems": 1},
        "o": {"oneOf": [{"type": "integer"}, {"type": "number"}]}, "r": {"$ref": "#/$defs/pos"},
        "closed": {"type": "object", "properties": {"a": {}}, "additionalProperties": False},
    }, "$defs": {"pos": {"type": "integer", "exclusiveMinimum": 0}}, "required": ["n"]}
    for inst in ({"n": 1}, {"n": "auto"}, {"n": 0}, {"n": True}, {"n": 1.0}, {}, {"n": 1, "flag": 1}, {"n": 1, "e": True},
                 {"n": 1, "e": 1.0}, {"n": 1, "s": "ab"}, {"n": 1, "s": "ba"}, {"n": 1, "s": "a"}, {"n": 1, "l": []},
                 {"n": 1, "l": [1, 2.5]}, {"n": 1, "l": [1, "x"]}, {"n": 1, "o": 1}, {"n": 1, "o": 1.5}, {"n": 1, "r": 0},
                 {"n": 1, "r": 3}, {"n": 1, "closed": {"a": 1}}, {"n": 1, "closed": {"b": 1}}, {"n": float("nan")},
                 {"n": 1, "x": {1: 2}}):
        _agrees(schema, inst)
    assert settles(schema, {"n": 1, "closed": {"a": 1}})
    assert not settles(schema, {"n": 1, "closed": {"b": 1}})
    assert settles(schema, {"n": 1, "closed": {"b": 1}}, lambda key, known, s: key == "b")
    assert not settles({"type": "object", "unknownKeyword": 1}, {})  # outside the subset: not settled


def test_cfg_findings_unchanged_when_settled(monkeypatch):
    """CFG's schema_problems gives the same problems with and without the fast path."""
    from conftest import rule_family

    cfg = rule_family("cfg")
    from parallint.readers.jsonpos import load as load_json

    texts = ['{"train_batch_size": 16, "train_micro_batch_size_per_gpu": 2, "zero_optimization": {"stage": 2}}',
             '{"train_batch_size": "auto", "my_own_key": 3, "bf16": {"enabled": true}}',
             '{"train_micro_batch_size_per_gpus": 4}', '{"zero_optimization": {"stage": 5, "overlap_com": true}}']
    for text in texts:
        tree = load_json(text, "ds.json")
        fast = list(cfg.schema_problems(tree, "deepspeed.schema.json"))
        monkeypatch.setattr("parallint.model.schemacheck.settles", lambda *a, **k: False)
        slow = list(cfg.schema_problems(tree, "deepspeed.schema.json"))
        monkeypatch.undo()
        assert fast == slow, text
