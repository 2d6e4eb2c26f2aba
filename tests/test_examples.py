"""The bundled examples, checked the way the README's first command does: every example carries
exactly the mistake it was written to show, and the fixed variants are clean."""

from __future__ import annotations

import json

from conftest import ROOT

EXPECTED = {
    ("examples/autofix/ds_config.json", "CFG001"),
    ("examples/autofix/launch.sh", "ENV005"),
    ("examples/autofix/launch.sh", "LCH004"),
    ("examples/autofix/train.py", "CKP002"),
    ("examples/autofix/train.py", "DAT003"),
    ("examples/ddp_find_unused/train.py", "DDP001"),
    ("examples/deepspeed_batch/ds_config.json", "BAT001"),
    ("examples/gpt130b_pure_dp/train.sbatch", "MEM001"),
    ("examples/k8s/pytorchjob.yaml", "LCH002"),
    ("examples/nemo_tp_pp/conf/megatron_gpt_config.yaml", "LAY001"),
    ("examples/pipeline_split/train_gap.py", "PIP001"),
    ("examples/torchtitan/llama3_8b.toml", "LAY001"),
}


def test_examples_show_their_findings(cli):
    p = cli("check", "--format", "json", "examples/", cwd=ROOT)
    assert p.returncode == 1, p.stderr
    got = {(d["path"], d["code"]) for d in json.loads(p.stdout)}
    assert got == EXPECTED


def test_text_output_on_examples_reads_as_documented(cli):
    p = cli("check", "examples/", cwd=ROOT)
    lines = [ln for ln in p.stdout.splitlines() if not ln.startswith("    note: ")]
    assert lines[-1].startswith(f"Found {len(EXPECTED)} findings")
    for ln in lines[:-1]:
        path, line, col, rest = ln.split(":", 3)
        assert path.startswith("examples/") and int(line) >= 1 and int(col) >= 1
        assert rest.split()[0] in {code for _, code in EXPECTED}


def test_fixed_variants_are_clean(cli):
    for target in ("examples/clean", "examples/gpt130b_tp8_pp4", "examples/k8s/pytorchjob_fixed.yaml",
                   "examples/pipeline_split/train.py"):
        p = cli("check", target, cwd=ROOT)
        assert p.returncode == 0, (target, p.stdout)


def test_estimate_and_plan_on_the_seed_jobs(cli):
    bad = cli("estimate", "--format", "json", "examples/gpt130b_pure_dp", cwd=ROOT)
    good = cli("estimate", "--format", "json", "examples/gpt130b_tp8_pp4", cwd=ROOT)
    (b,), (g,) = json.loads(bad.stdout), json.loads(good.stdout)
    assert b["fits"] is False and g["fits"] is True
    assert 125e9 < b["param_count"] < 135e9 and b["param_count"] == g["param_count"]
    assert g["per_gpu"]["total"] < g["gpu_memory_bytes"] < b["per_gpu"]["total"]
    plan = cli("plan", "examples/gpt130b_pure_dp", "--gpus", "32", cwd=ROOT)
    assert plan.returncode == 0 and "TP=8 x PP=4" in plan.stdout
