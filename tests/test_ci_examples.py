"""The CI examples (docs/ci/*, action.yml) parse and use only options `parallint check` has."""

from __future__ import annotations

import re

import yaml

from conftest import ROOT

FILES = ["docs/ci/github-actions.yml", "docs/ci/gitlab-ci.yml", "action.yml"]


def _commands(node):
    if isinstance(node, dict):
        for v in node.values():
            yield from _commands(v)
    elif isinstance(node, list):
        for v in node:
            yield from _commands(v)
    elif isinstance(node, str):
        for line in node.splitlines():
            if line.strip().startswith("parallint check"):
                yield line.strip()


def test_ci_examples_use_real_options(cli):
    help_text = cli("check", "--help").stdout
    seen = 0
    for name in FILES:
        doc = yaml.safe_load((ROOT / name).read_text())
        for cmd in _commands(doc):
            seen += 1
            for opt in re.findall(r"(?<!\S)(--[a-z][a-z-]+)", cmd):
                assert opt in help_text, f"{name}: {opt}"
            fmt = re.search(r"--format (\w+)", cmd)
            if fmt:
                assert fmt.group(1) in ("text", "json", "sarif", "github", "junit", "gitlab", "checkstyle")
    assert seen >= 6


def test_example_gate_commands_run(tmp_path, cli):
    import shutil

    shutil.copytree(ROOT / "examples" / "deepspeed_batch", tmp_path / "job")
    (tmp_path / ".git").mkdir()
    assert cli("check", "--write-baseline", ".parallint-baseline.json", ".", cwd=tmp_path).returncode == 0
    p = cli("check", "--format", "sarif", "--output-file", "parallint.sarif", "--exit-zero", ".", cwd=tmp_path)
    assert p.returncode == 0 and (tmp_path / "parallint.sarif").is_file()
    p = cli("check", "--baseline", ".parallint-baseline.json", "--format", "github", ".", cwd=tmp_path)
    assert p.returncode == 0 and p.stdout == ""
