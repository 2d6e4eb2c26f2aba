"""Packaging: the pre-commit hook, package data, and the import names of DESIGN.md."""

from __future__ import annotations

import re
from importlib.resources import files

import yaml

from conftest import ROOT


def test_pre_commit_hook_definition():
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text("utf-8"))
    hook = hooks[0]  # parallint; parallint-repo is tested in test_precommit.py
    assert hook["id"] == "parallint" and hook["language"] == "python"
    assert hook["entry"].split()[:2] == ["parallint", "check"]
    rx = re.compile(hook["files"])
    for name in ("train.py", "scripts/run.sh", "job.sbatch", "a/b/ds_config.json", "conf/x.yaml",
                 "cfg.yml", "llama3_8b.toml", "Makefile", "sub/GNUmakefile", "launch.slurm"):
        assert rx.search(name), name
    for name in ("README.md", "model.safetensors", "notes.txt"):
        assert not rx.search(name), name


def test_schemas_and_data_ship_as_package_data():
    names = {p.name for p in files("parallint.schemas").iterdir()}
    assert {"config.schema.json", "job.schema.json", "deepspeed.schema.json",
            "accelerate.schema.json", "torchtitan.schema.json", "pytorchjob.schema.json"} <= names
    data = {p.name for p in files("parallint.data").iterdir()}
    assert {"gpus.yaml", "presets.yaml"} <= data


def test_no_top_level_lint_or_rules_package():
    text = (ROOT / "pyproject.toml").read_text("utf-8")
    assert '"parallint" = "lint"' in text and '"parallint.rules" = "rules"' in text
    assert not re.search(r'packages\s*=\s*\[[^\]]*"(lint|rules)"', text)
