"""The GitHub Action (``action.yml``) run the way GitHub runs a composite action: each step's
``${{ }}`` expressions and ``if:`` conditions evaluated against a GitHub-shaped context, its
``run`` script executed by ``bash -eo pipefail`` with the ``GITHUB_*`` files and variables,
``GITHUB_PATH`` lines prepended to later steps' ``PATH`` and ``GITHUB_OUTPUT`` read back as the
step's outputs. ``uses:`` steps are stood in for: ``actions/setup-python`` gives a Python, and
``upload-sarif`` records the file it would upload.

By default the Python given to the install step creates its virtual environment on top of the
test's own installation (the install itself is not repeated: it needs the package index); with
``PARALLINT_SLOW=1`` it is the real interpreter and the real ``pip install`` of the checkout.

Cases: a push (SARIF uploaded, the gate fails on findings, no baseline yet: a notice, not an
error), a pull request from a fork (no upload, a notice), a committed baseline (the gate passes),
and ``args`` reaching both the SARIF step and the gate."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import ROOT

SLOW = os.environ.get("PARALLINT_SLOW") == "1"
_EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


class Context:
    def __init__(self, inputs: dict, github: dict, runner_temp: Path) -> None:
        self.inputs, self.github, self.temp = inputs, github, runner_temp
        self.steps: dict[str, dict[str, str]] = {}

    def value(self, expr: str) -> str:
        parts = expr.split(".")
        if parts[0] == "inputs":
            return str(self.inputs[parts[1]])
        if parts[0] == "runner" and parts[1:] == ["temp"]:
            return str(self.temp)
        if parts[0] == "steps" and parts[2] == "outputs":
            return self.steps.get(parts[1], {}).get(parts[3], "")
        if parts[0] == "github":
            node = self.github
            for p in parts[1:]:
                node = node.get(p, "") if isinstance(node, dict) else ""
            return "" if node is None or node == "" else (str(node).lower() if isinstance(node, bool) else str(node))
        raise AssertionError(f"the test does not know the expression {expr!r}: keep the action simple")

    def sub(self, text: str) -> str:
        return _EXPR.sub(lambda m: self.value(m.group(1)), text)

    def condition(self, cond: str) -> bool:
        m = re.fullmatch(r"\s*([\w.\-]+)\s*==\s*'([^']*)'\s*", cond)
        assert m, f"the test evaluates only `name == 'value'` conditions, not {cond!r}"
        return self.value(m.group(1)) == m.group(2)


def _fake_python(tmp: Path) -> Path:
    """A `python` whose `-m venv DIR` makes a DIR/bin/python that records `-m pip ...` (the
    package index is not needed, and nothing is installed anywhere) and otherwise runs this
    installation's Python, and a DIR/bin/parallint that runs this installation's."""
    log = tmp / "pip.log"
    inner = f"""#!/bin/sh
if [ "$1" = "-m" ] && [ "$2" = "pip" ]; then echo "$@" >> '{log}'; exit 0; fi
exec '{sys.executable}' "$@"
"""
    script = tmp / "fake-python"
    script.write_text(f"""#!/bin/sh
if [ "$1" = "-m" ] && [ "$2" = "venv" ]; then
  mkdir -p "$3/bin"
  cat > "$3/bin/python" <<'EOF'
{inner}EOF
  printf '#!/bin/sh\nexec %s "$@"\n' '{Path(sys.executable).parent / 'parallint'}' > "$3/bin/parallint"
  chmod +x "$3/bin/python" "$3/bin/parallint"
  exit 0
fi
echo "unexpected: $*" >&2
exit 3
""")
    script.chmod(0o755)
    return script


def _run_action(repo: Path, tmp: Path, inputs: dict, github: dict) -> dict:
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    assert action["runs"]["using"] == "composite"
    given = {k: v.get("default", "") for k, v in action["inputs"].items()}
    given.update(inputs)
    temp = tmp / "runner-temp"
    temp.mkdir()
    ctx = Context(given, {"action_path": str(ROOT), **github}, temp)
    gh_path = tmp / "github_path"
    gh_path.write_text("")
    base_path = os.environ["PATH"]
    out = {"steps": [], "uploads": [], "annotations": ""}
    python = Path(shutil.which("python3") or sys.executable) if SLOW else _fake_python(tmp)
    for i, step in enumerate(action["runs"]["steps"]):
        if "if" in step and not ctx.condition(step["if"]):
            out["steps"].append((step.get("id") or step.get("name") or step.get("uses"), "skipped"))
            continue
        sid = step.get("id", f"step{i}")
        label = step.get("name") or sid
        if "uses" in step:
            with_ = {k: ctx.sub(str(v).lower() if isinstance(v, bool) else str(v)) for k, v in (step.get("with") or {}).items()}
            if step["uses"].startswith("actions/setup-python@"):
                assert with_.get("update-environment") == "false"  # the action's Python stays its own
                ctx.steps[sid] = {"python-path": str(python)}
            elif step["uses"].startswith("github/codeql-action/upload-sarif@"):
                out["uploads"].append(json.loads(Path(with_["sarif_file"]).read_text()))
            else:
                raise AssertionError(f"unexpected action {step['uses']}")
            out["steps"].append((sid, "ran"))
            continue
        assert step.get("shell") == "bash"
        output_file = tmp / f"output-{i}"
        output_file.write_text("")
        env = {**os.environ, **{k: ctx.sub(str(v)) for k, v in (step.get("env") or {}).items()},
               "GITHUB_PATH": str(gh_path), "GITHUB_OUTPUT": str(output_file), "GITHUB_WORKSPACE": str(repo),
               "GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": github.get("event_name", "push")}
        extra = [ln for ln in gh_path.read_text().splitlines() if ln]
        env["PATH"] = os.pathsep.join(list(reversed(extra)) + [base_path])
        script = ctx.sub(step["run"])
        res = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script], cwd=repo, env=env,
                             capture_output=True, text=True, timeout=600)
        out["annotations"] += res.stdout + res.stderr
        ctx.steps[sid] = dict(ln.split("=", 1) for ln in output_file.read_text().splitlines() if "=" in ln)
        out["steps"].append((label, res.returncode))
        if res.returncode != 0:
            out["failed"] = (label, res.returncode, res.stdout, res.stderr)
            break
    return out


@pytest.fixture()
def repo(tmp_path):
    r = tmp_path / "repo"
    shutil.copytree(ROOT / "examples" / "deepspeed_batch", r / "job")
    shutil.copytree(ROOT / "examples" / "ddp_find_unused", r / "ddp")
    (r / ".git").mkdir()
    return r


def test_scripts_read_inputs_from_the_environment_only():
    """No `${{ }}` inside a `run` script (a value with a quote or `$(...)` would run as shell):
    inputs reach scripts through `env:`."""
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    for step in action["runs"]["steps"]:
        assert "${{" not in step.get("run", ""), step


def test_push_uploads_sarif_and_gates_without_a_baseline(repo, tmp_path):
    out = _run_action(repo, tmp_path, {}, {"event_name": "push", "event": {}})
    assert out["steps"][-1] == ("Gate", 1), out  # the gate fails on the findings
    (sarif,) = out["uploads"]
    codes = {r["ruleId"] for r in sarif["runs"][0]["results"]}
    assert {"BAT001", "DDP001"} <= codes
    assert "no baseline at .parallint-baseline.json" in out["annotations"]
    assert "::error file=job/ds_config.json" in out["annotations"]  # the gate's annotations
    if not SLOW:
        assert str(ROOT) in (tmp_path / "pip.log").read_text()  # the checkout is what gets installed


def test_fork_pull_request_skips_the_upload_with_a_notice(repo, tmp_path):
    out = _run_action(repo, tmp_path, {}, {"event_name": "pull_request",
                                            "event": {"pull_request": {"head": {"repo": {"fork": True}}}}})
    assert out["uploads"] == []
    assert "SARIF upload skipped" in out["annotations"]
    assert out["steps"][-1] == ("Gate", 1)  # the gate still runs and reports


def test_baseline_makes_the_gate_pass_and_args_reach_every_step(repo, tmp_path):
    env = {**os.environ}
    subprocess.run([str(Path(sys.executable).parent / "parallint"), "check", "--write-baseline",
                    ".parallint-baseline.json", "."], cwd=repo, env=env, check=True, capture_output=True)
    out = _run_action(repo, tmp_path, {"args": ". --select BAT"}, {"event_name": "push", "event": {}})
    assert "failed" not in out, out.get("failed")
    assert out["steps"][-1] == ("Gate", 0)  # every finding is in the baseline
    (sarif,) = out["uploads"]
    assert {r["ruleId"] for r in sarif["runs"][0]["results"]} == {"BAT001"}  # args reached the SARIF step
    assert "no baseline" not in out["annotations"]


def test_the_readme_snippet_uses_the_action_with_its_inputs():
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"```yaml\n(# \.github/workflows/parallint\.yml.*?)```", readme, re.S)
    assert block, "the README's GitHub workflow snippet"
    workflow = yaml.safe_load(block.group(1))
    steps = workflow["jobs"]["parallint"]["steps"]
    (use,) = [s for s in steps if str(s.get("uses", "")).startswith("parallint/parallint@")]
    action_inputs = yaml.safe_load((ROOT / "action.yml").read_text())["inputs"]
    assert set(use.get("with", {})) <= set(action_inputs)
    assert workflow["permissions"]["security-events"] == "write"
