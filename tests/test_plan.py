"""The layout planner and the ``estimate`` / ``plan`` commands."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
from pathlib import Path


from parallint.cli.estimate import apply_overrides, estimate_main, plan_main
from parallint.estimator.gpus import resolve_gpu
from parallint.engine.layouts import plan

SEED = {"layers": 72, "hidden": 12288, "heads": 96, "vocab": 50257, "seq_len": 2048}
SEED_YAML = """\
model: {layers: 72, hidden: 12288, heads: 96, vocab: 50257, seq_len: 2048}
parallel: {world_size: 32, tp: 8, pp: 4, sequence_parallel: true}
training: {micro_batch: 1, global_batch: 512, recompute: selective, precision: bf16}
hardware: {gpu: A100-80GB}
"""


def test_plan_layouts_obey_the_layout_rules_and_fit():
    spec = {"model": {**SEED, "kv_heads": 8}, "training": {"micro_batch": 1, "global_batch": 512}}
    layouts = plan(spec, 32, "A100-80GB")
    assert layouts
    mem = resolve_gpu("A100-80GB").memory_bytes
    for lay in layouts:
        assert lay.tp * lay.pp * lay.dp * lay.cp == 32
        assert 96 % lay.tp == 0 and 72 % lay.pp == 0  # LAY003, LAY004
        assert lay.tp <= 8  # LAY002: inside an 8-GPU node
        assert 8 % lay.tp == 0 or lay.tp % 8 == 0  # LAY010
        assert not (lay.zero_stage >= 2 and lay.pp > 1)  # LAY006
        assert 512 % lay.dp == 0  # BAT002
        assert lay.estimate.total <= 0.9 * mem
    keys = [lay.sort_key() for lay in layouts]
    assert keys == sorted(keys)
    assert any((l.tp, l.pp, l.dp) == (8, 4, 1) for l in layouts)  # the seed's fitting layout


def test_plan_pure_dp_never_fits_the_130b_model_and_more_gpus_help():
    spec = {"model": SEED, "training": {"micro_batch": 1}}
    assert plan(spec, 8, "A100-80GB") == []
    assert plan(spec, 32, "A100-80GB")
    assert all(l.tp * l.pp > 1 or l.zero_stage == 3 for l in plan(spec, 32, "A100-80GB"))


def test_plan_respects_framework_zero_stages_and_unknown_gpu():
    spec = {"model": {"preset": "llama-2-7b"}, "training": {"micro_batch": 1}}
    only01 = plan(spec, 8, "A100-40GB", zero_stages=(0, 1))
    assert only01 and all(l.zero_stage in (0, 1) for l in only01)
    assert plan(spec, 8, "no-such-gpu") == []


def _write(tmp_path: Path, name: str, text: str) -> str:
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def test_estimate_text_reads_well_and_exit_code(tmp_path, capsys):
    path = _write(tmp_path, "job.yaml", SEED_YAML)
    out = io.StringIO()
    assert estimate_main([path], {}, "text", {}, out=out) == 0
    text = out.getvalue()
    for word in ("weights", "gradients", "optimizer", "activations", "other", "total",
                 "GPU memory", "headroom", "A100-80GB", "80.0 GiB", "fits:"):
        assert word in text, word
    rows = [l for l in text.splitlines() if l.strip().split(" ")[0] in
            ("weights", "gradients", "optimizer", "activations", "other", "total")]
    ends = {re.search(r"\d+\.\d", l).end() for l in rows}  # numbers right-aligned in one column
    assert len(rows) == 6 and len(ends) == 1
    out = io.StringIO()
    assert estimate_main([path], {"tp": 1, "pp": 1}, "text", {}, out=out) == 1
    assert "does NOT fit" in out.getvalue()


def test_estimate_json_fields(tmp_path):
    path = _write(tmp_path, "job.yaml", SEED_YAML)
    out = io.StringIO()
    estimate_main([path], {"gpu": "H100-80GB", "micro_batch": 2}, "json", {}, out=out)
    data = json.loads(out.getvalue())
    assert isinstance(data, list) and len(data) == 1
    item = data[0]
    assert item["gpu"] == "H100-80GB" and item["gpu_memory_bytes"] == 80 * 2**30
    assert set(item["per_gpu"]) == {"weights", "gradients", "optimizer", "activations", "other", "total"}
    assert item["layers_per_stage"] == 18 and item["microbatches_in_flight"] == 4
    assert isinstance(item["fits"], bool)


def test_estimate_without_a_model_is_exit_2(tmp_path, capsys):
    path = _write(tmp_path, "job.yaml", "model: {}\nparallel: {tp: 2}\n")
    assert estimate_main([path], {}, "text", {}, out=io.StringIO()) == 2


def test_overrides_rederive_dp_from_world_size():
    spec = {"model": SEED, "parallel": {"world_size": 32, "dp": 32}}
    s = apply_overrides(spec, {"tp": 8, "pp": 4})
    assert "dp" not in s["parallel"] and s["parallel"]["tp"] == 8
    s = apply_overrides(spec, {"gpu": "H100-80GB"})
    assert s["hardware"]["gpu"] == "H100-80GB"


def test_plan_text_and_none_fits(tmp_path):
    path = _write(tmp_path, "job.yaml", SEED_YAML)
    out = io.StringIO()
    assert plan_main([path], 32, None, "text", {}, out=out) == 0
    text = out.getvalue()
    assert "best first" in text and "best: TP=" in text
    header = next(l for l in text.splitlines() if l.strip().startswith("#"))
    assert header.split()[:4] == ["#", "TP", "PP", "DP"]
    out = io.StringIO()
    assert plan_main([path], 8, "A100-80GB", "text", {}, out=out) == 1
    assert "No layout of 8 GPUs fits" in out.getvalue()
    assert "smallest estimate" in out.getvalue()
    out = io.StringIO()
    plan_main([path], 32, None, "json", {}, out=out)
    data = json.loads(out.getvalue())
    assert data[0]["layouts"] and data[0]["order"].startswith("best first")


def test_plan_needs_a_gpu(tmp_path, capsys):
    path = _write(tmp_path, "job.yaml", "model: {preset: gpt2}\nparallel: {world_size: 2}\n")
    assert plan_main([path], 2, None, "text", {}, out=io.StringIO()) == 2
    assert "--gpu" in capsys.readouterr().err
    assert plan_main([path], 2, None, "text", {"gpu": "V100-16GB"}, out=io.StringIO()) == 0


def test_cli_end_to_end(tmp_path):
    path = _write(tmp_path, "job.yaml", SEED_YAML)
    r = subprocess.run([sys.executable, "-m", "parallint", "estimate", path, "--format", "json"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)[0]["fits"] is True
    r = subprocess.run([sys.executable, "-m", "parallint", "plan", path, "--gpus", "32"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "best:" in r.stdout


# ----------------------------------------------------------------------------- the real rules filter
def test_plan_runs_the_real_layout_rules_so_a_new_rule_applies_without_an_edit(monkeypatch):
    """plan keeps a candidate only when the registered LAY/BAT rules stay silent on it: a rule added
    to the registry (here one refusing TP 2) removes its layouts from plan's answer."""
    import parallint.engine.layouts as layouts
    from parallint.model.diagnostics import Severity
    from parallint.model.factrule import FactRule, Finding

    class NoTpTwo(FactRule):
        code = "LAY999"
        name = "no-tp-two"
        severity = Severity.ERROR
        summary = "test rule"

        def findings(self, view):
            if view.i("parallel.tp") == 2:
                yield Finding(view.v("parallel.tp"), "TP 2 refused")

    spec = {"model": {"preset": "llama-2-7b"}}
    before = {lay.tp for lay in plan(spec, 16, "A100-40GB")}
    assert 2 in before
    registered = layouts.layout_rules()
    monkeypatch.setattr(layouts, "layout_rules", lambda: registered + (NoTpTwo(),))
    after = plan(spec, 16, "A100-40GB")
    assert after and all(lay.tp != 2 for lay in after)


def test_plan_uses_the_named_frameworks_rules_and_every_framework_otherwise():
    """12 layers do not split over 8 Megatron stages (LAY004) and DeepSpeed refuses ZeRO-2/3 with a
    pipeline (LAY006); a job that names DeepSpeed may split 12 layers unevenly, one that names no
    framework gets only layouts that every framework accepts."""
    gpt2 = {"model": {"preset": "gpt2"}}
    anyfw = plan(gpt2, 8, "A100-40GB", pareto=False)
    assert all(12 % lay.pp == 0 for lay in anyfw)
    assert not any(lay.zero_stage >= 2 and lay.pp > 1 for lay in anyfw)
    ds = plan(dict(gpt2, framework="deepspeed"), 8, "A100-40GB", pareto=False)
    assert any(lay.pp == 8 for lay in ds)  # DeepSpeed partitions 12 layers over 8 stages
    assert not any(lay.zero_stage >= 2 and lay.pp > 1 for lay in ds)


def test_a_finding_on_the_model_alone_rejects_no_layout():
    """A model whose own shape breaks a rule (hidden 1000 over 12 heads, LAY012) still gets layouts:
    that is the job's finding, reported by check, not a property of a layout."""
    spec = {"model": {"layers": 12, "hidden": 1000, "heads": 12, "vocab": 50257, "seq_len": 1024}}
    assert plan(spec, 8, "A100-40GB")
