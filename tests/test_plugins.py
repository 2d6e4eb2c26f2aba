"""Third-party rules registered under the entry-point group `parallint.rules`."""

from __future__ import annotations

import json

from conftest import write_tree

PLUGIN = '''
from parallint.model.diagnostics import Severity
from parallint.model.rule import Example, Rule


class NoBarrier(Rule):
    code = "ACME001"
    name = "acme-no-hardcoded-master"
    severity = Severity.WARNING
    summary = "A house rule: no hard-coded MASTER_ADDR in scripts."
    kinds = frozenset({"python"})
    doc = """
    ## What it does
    x
    ## Why it matters
    x
    ## Example
    x
    ## How to fix
    x
    """
    valid = (Example("x = 1\\n"),)
    invalid = (Example("MASTER_ADDR = '10.0.0.1'\\n"),)

    def check_file(self, f, ctx):
        for i, line in enumerate(f.text.splitlines(), 1):
            if line.startswith("MASTER_ADDR ="):
                yield self.report(f.span(i, 1), "hard-coded MASTER_ADDR")
'''


def _site(tmp_path, plugin_text=PLUGIN, target="acme_rules"):
    site = tmp_path / "site"
    write_tree(site, {
        "acme_rules.py": plugin_text,
        "acme_rules-0.1.dist-info/METADATA": "Metadata-Version: 2.1\nName: acme-rules\nVersion: 0.1\n",
        "acme_rules-0.1.dist-info/entry_points.txt": f"[parallint.rules]\nacme = {target}\n",
    })
    return {"PYTHONPATH": str(site)}


def test_plugin_rule_is_listed_and_runs(tmp_path, cli):
    env = _site(tmp_path)
    assert "ACME001" in cli("rules", cwd=tmp_path, env=env).stdout
    write_tree(tmp_path, {"proj/train.py": "import torch.distributed as dist\nMASTER_ADDR = '10.0.0.1'\ndist.init_process_group('nccl')\n"})
    p = cli("check", "--select", "ACME", "--format", "json", "proj", cwd=tmp_path, env=env)
    assert [(d["code"], d["line"]) for d in json.loads(p.stdout)] == [("ACME001", 2)]


def test_plugin_clashing_with_builtin_code_is_an_error(tmp_path, cli):
    env = _site(tmp_path, PLUGIN.replace('"ACME001"', '"SYN001"'))
    p = cli("rules", cwd=tmp_path, env=env)
    assert p.returncode == 2 and "SYN001" in p.stderr and "Traceback" not in p.stderr


def test_broken_plugin_is_one_line_error(tmp_path, cli):
    env = _site(tmp_path, "raise ImportError('boom')\n")
    p = cli("rules", cwd=tmp_path, env=env)
    assert p.returncode == 2 and "boom" in p.stderr and "Traceback" not in p.stderr


def test_the_public_names_have_one_stable_path():
    """docs/plugins.md: the names plugins use are importable from the package itself, and are the
    same objects as inside it."""
    import parallint
    from parallint.model.rule import Context, Rule
    from parallint.model.script import script_of

    assert parallint.Rule is Rule and parallint.Context is Context and parallint.script_of is script_of
    for name in parallint.__all__:
        assert getattr(parallint, name) is not None, name
    import pytest

    with pytest.raises(AttributeError):
        parallint.no_such_name  # noqa: B018
