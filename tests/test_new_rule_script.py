"""scripts/new_rule.py writes one rule file that registers, is documented and passes its own examples."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

from conftest import ROOT
from parallint.engine.examples import run_example
from parallint.engine.registry import Registry, check_rule_class


def test_scaffolded_rule_is_a_working_rule(tmp_path):
    (tmp_path / "rules").mkdir()
    p = subprocess.run([sys.executable, str(ROOT / "scripts" / "new_rule.py"), "ZZZ001", "gloo-backend-on-gpu",
                        "--root", str(tmp_path)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    path = tmp_path / "rules" / "zzz" / "zzz001_gloo_backend_on_gpu.py"
    assert (tmp_path / "rules" / "zzz" / "__init__.py").exists()
    spec = importlib.util.spec_from_file_location("zzz_scaffold", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    rule = mod.GlooBackendOnGpu
    Registry([rule])  # declarations valid
    assert check_rule_class(rule) == []
    (bad,) = rule.invalid
    found = run_example(rule, bad, tmp_path / "invalid")
    assert [d.span.line for d in found] == [3]
    assert run_example(rule, rule.valid[0], tmp_path / "valid") == []
    assert "dist.init_process_group(\"gloo\")" in rule.documentation()
    for name in ("gloo-backend-on-gpu", "another-name"):  # the same file, or a reused code
        again = subprocess.run([sys.executable, str(ROOT / "scripts" / "new_rule.py"), "ZZZ001", name,
                                "--root", str(tmp_path)], capture_output=True, text=True)
        assert again.returncode != 0 and "exists" in again.stderr
