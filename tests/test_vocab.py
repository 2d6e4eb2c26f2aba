"""One fact vocabulary (parallint.model.vocab): FACT_KEYS, the estimator's spec fields and
schemas/job.schema.json are derived from it or agree with it, and readers state only declared facts."""

from __future__ import annotations

import ast
import json

import pytest

from conftest import ROOT
from parallint.model import vocab

SCHEMA = json.loads((ROOT / "schemas" / "job.schema.json").read_text("utf-8"))
_JSON_TYPES = {"int": {"integer"}, "bool": {"boolean"}, "str": {"string"}, "int|list": {"integer", "array"},
               "str|bool": {"string", "boolean"}}
#: modules that turn files into facts (the read layer)
READER_FILES = sorted((ROOT / "lint" / "readers").glob("*.py"))


def test_fact_keys_and_spec_fields_are_derived_from_the_vocabulary():
    from parallint.estimator.spec import _FACT_FIELDS, SECTIONS
    from parallint.model.facts import FACT_KEYS

    assert FACT_KEYS is vocab.FACT_KEYS
    assert _FACT_FIELDS is vocab.SPEC_FACT_FIELDS
    assert SECTIONS == vocab.SECTIONS


def test_declarations_are_well_formed():
    keys = [f.key for f in vocab.VOCABULARY]
    assert len(keys) == len(set(keys)), "a fact declared twice"
    for f in vocab.VOCABULARY:
        assert f.type in vocab.TYPES or f.type == "enum", f
        assert bool(f.values) == (f.type == "enum"), f"{f.key}: enum facts (and only they) list values"
        assert f.meaning, f.key
        assert f.fact or f.spec, f"{f.key}: neither a fact nor a spec field"
        assert f.section in vocab.SECTIONS + ("estimator", "ddp", "version", ""), f.key


def _schema_props() -> dict[str, dict]:
    out = {}
    for section, sub in SCHEMA["properties"].items():
        if isinstance(sub, dict) and "properties" in sub:
            for name, prop in sub["properties"].items():
                out[f"{section}.{name}"] = prop
        elif section == "framework":
            out[section] = sub
    return out


def test_schema_properties_are_the_declared_spec_fields():
    declared = {f.key for f in vocab.VOCABULARY if f.spec}
    props = _schema_props()
    assert set(props) == declared, (
        f"in the schema, not declared: {sorted(set(props) - declared)}; "
        f"declared as spec fields, not in the schema: {sorted(declared - set(props))}")


@pytest.mark.parametrize("f", [f for f in vocab.VOCABULARY if f.spec], ids=lambda f: f.key)
def test_schema_type_agrees_with_declaration(f):
    prop = _schema_props()[f.key]
    if f.type == "enum":
        assert [v for v in prop["enum"] if v is not None] == list(f.values)
        assert None in prop["enum"], "null (unknown) is always allowed"
    else:
        types = prop["type"] if isinstance(prop["type"], list) else [prop["type"]]
        assert set(types) - {"null"} == _JSON_TYPES[f.type]
        assert "null" in types, "null (unknown) is always allowed"


def _stated_keys(path) -> set[str]:
    """String constants of a module that are declared fact keys."""
    tree = ast.parse(path.read_text("utf-8"))
    return {n.value for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value in vocab.BY_KEY}


@pytest.mark.parametrize("path", READER_FILES, ids=lambda p: p.stem)
def test_readers_are_listed_as_producers_of_what_they_state(path):
    """A reader that names a fact is listed in the declaration's ``producers`` (the job-spec reader
    states every spec field and is exempt). Undeclared keys cannot be stated at all: FactMap.add
    refuses them (below)."""
    if path.stem == "jobspec":
        return
    stated = _stated_keys(path)
    missing = sorted(k for k in stated if vocab.BY_KEY[k].fact and path.stem not in vocab.BY_KEY[k].producers)
    assert not missing, f"add {path.stem!r} to the producers of {missing} in parallint.model.vocab"


def test_every_example_and_corpus_file_states_only_declared_facts(monkeypatch):
    """Run every reader over examples/ and the corpus, recording each key stated."""
    from parallint.model.facts import FactMap
    from parallint.engine.runner import build_jobs

    seen: set[str] = set()
    orig = FactMap.add

    def add(self, key, value):
        seen.add(key)
        return orig(self, key, value)

    monkeypatch.setattr(FactMap, "add", add)
    paths = [str(ROOT / "examples")]
    corpus = ROOT.parent / "shared" / "corpus"
    if corpus.is_dir():
        paths.append(str(corpus))
    build_jobs(paths, {})
    assert seen and seen <= vocab.FACT_KEYS, sorted(seen - vocab.FACT_KEYS)


def test_declared_producers_exist():
    stems = {p.stem for p in READER_FILES}
    for f in vocab.VOCABULARY:
        assert set(f.producers) <= stems, (f.key, sorted(set(f.producers) - stems))
        assert f.fact or not f.producers, f.key


def test_factmap_refuses_an_undeclared_fact():
    from parallint.model.facts import FactMap, Value

    fm = FactMap()
    fm.add("parallel.tp", Value(2))
    with pytest.raises(KeyError, match="parallint.model.vocab"):
        fm.add("parallel.tensor_parallel", Value(2))
    with pytest.raises(KeyError):  # a spec-only field is not something a reader states
        fm.add("training.num_microbatches", Value(2))


def test_no_side_channel_for_the_pipeline_microbatch(tmp_path):
    """torchtitan's pipeline microbatch and schedule are declared facts, not ``extra`` entries or
    config keys."""
    from parallint.readers import torchtitan

    text = ("[training]\nlocal_batch_size = 8\n\n[parallelism]\npipeline_parallel_degree = 4\n"
            "pipeline_parallel_microbatch_size = 2\npipeline_parallel_schedule = \"1F1B\"\n")
    ff = torchtitan.read("t.toml", tmp_path / "t.toml", text)
    v = ff.facts.get("training.pp_microbatch")
    assert v is not None and v.value == 2 and v.span.line == 6
    assert ff.facts.get("training.pp_schedule").value == "1F1B"
    assert not (getattr(ff.data, "extra", {}) or {})
    for path in list((ROOT / "rules").glob("*.py")) + READER_FILES:
        assert "__pp_microbatch__" not in path.read_text("utf-8"), path


def test_vocabulary_table_lists_every_fact():
    table = vocab.markdown_table()
    for f in vocab.VOCABULARY:
        assert f"`{f.key}`" in table


def test_architecture_doc_carries_the_current_vocabulary_table():
    """Regenerate with PARALLINT_UPDATE_SNAPSHOTS=1 .venv/bin/python -m pytest -q tests/test_vocab.py"""
    import os

    doc = ROOT / "docs" / "architecture.md"
    text = doc.read_text("utf-8")
    head, rest = text.split("<!-- vocab:begin -->\n", 1)
    table, tail = rest.split("<!-- vocab:end -->", 1)
    if os.environ.get("PARALLINT_UPDATE_SNAPSHOTS") == "1":
        doc.write_text(head + "<!-- vocab:begin -->\n" + vocab.markdown_table() + "<!-- vocab:end -->" + tail, "utf-8")
        return
    assert table == vocab.markdown_table(), (
        "regenerate: PARALLINT_UPDATE_SNAPSHOTS=1 .venv/bin/python -m pytest -q tests/test_vocab.py")
