"""Issue 25: the measured set and its runner, the GPU measuring script's dry grid, the new
job-spec settings (PEFT, offload, recompute policies, loss, fp8) and MEM002 on the low end."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from parallint.estimator.memory import estimate
from parallint.estimator.spec import validate

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "benchmarks"
GIB = float(1 << 30)


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


MM = _load("memory_measured")


# --------------------------------------------------------------------------- the measured set
def test_measured_set_has_25_public_cases_each_with_source_kind_and_a_valid_spec():
    cases = MM.load()
    assert len(cases) >= 25
    assert len({c["id"] for c in cases}) == len(cases)
    for c in cases:
        assert c["source"]["url"].startswith("https://"), c["id"]
        assert c["measured"]["kind"] in ("allocated", "reserved", "nvidia-smi", "oom"), c["id"]
        if c["measured"]["kind"] != "oom":
            assert c["measured"]["unit"] in MM.UNITS and c["measured"]["value"] > 0, c["id"]
        if c.get("unsupported"):  # a setting the schema has no field for: written down, not scored
            assert validate(c["spec"]) != [], c["id"]
        else:
            assert validate(c["spec"]) == [], c["id"]


def test_measured_set_has_a_held_out_set_from_new_sources():
    held = [c for c in MM.load() if c.get("set") == "heldout-2"]
    assert len(held) >= 8
    base_urls = {c["source"]["url"].split("/blob/")[0] for c in MM.load() if "set" not in c}
    assert not base_urls & {c["source"]["url"].split("/blob/")[0] for c in held}


def _summary(set_name: str) -> dict:
    rows = [MM.run_case(c) for c in MM.load() if c.get("set", "base") == set_name]
    return MM.summary(rows)


def test_measured_set_accuracy_meets_the_issue_25_bar():
    """At least 90 % within +-10 % and none beyond +-20 %, on the 35 first cases and on the held-out
    set; every OOM report predicted by the low end."""
    for name in ("base", "heldout-2"):
        summ = _summary(name)
        assert summ["compared"] >= (20 if name == "base" else 8), name
        assert summ["within_10"] >= 0.9, name
        assert summ["within_20"] == 1.0, name
        assert summ["median_abs_error"] <= 0.05, name
        assert summ["ooms_predicted"] == summ["ooms"], name
    assert _summary("base")["expressible"] == _summary("base")["cases"]


def test_runner_prints_each_case_and_the_summary():
    r = subprocess.run([sys.executable, str(BENCH / "memory_measured.py")], capture_output=True, text=True,
                       check=True)
    assert "litgpt_llama2_7b_lora_mb1 " in r.stdout and "median |error|" in r.stdout
    assert "config incomplete: not scored" in r.stdout


def test_nearest_drops_what_the_schema_does_not_know():
    spec = {"model": {"preset": "llama-2-7b"}, "training": {"recompute": "layerwise", "bogus": 1}}
    out = MM._nearest(spec)
    assert out["training"] == {} and out["model"] == {"preset": "llama-2-7b"}


# --------------------------------------------------------------------------- measure_memory.py
def test_measure_memory_dry_builds_the_grid_without_torch(tmp_path):
    out = tmp_path / "grid.json"
    code = ("import runpy, sys; sys.argv = ['measure_memory.py', '--dry', '--out', %r]; "
            "runpy.run_path(%r, run_name='__main__')" % (str(out), str(BENCH / "measure_memory.py")))
    check = code.replace("runpy.run_path", "sys.modules.pop('torch', None); runpy.run_path")
    r = subprocess.run([sys.executable, "-c", check + "\nassert 'torch' not in sys.modules"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    rows = json.loads(out.read_text())
    assert len(rows) == 144 and "grid points (dry" in r.stdout
    for row in rows:
        assert validate(row["spec"]) == []
        low, mid, high = row["estimate"]["range"]
        assert low <= mid <= high
    by = {(r["shape"], r["seq_len"], r["micro_batch"], r["recompute"], r["recipe"], r["peft"], r["optimizer"]):
          r["estimate"]["allocated"] for r in rows}
    key = ("llama-1b", 4096, 4, "none", "bf16_mixed", "none", "adamw")
    none, op, full = (by[key[:3] + (rc,) + key[4:]] for rc in ("none", "op", "full"))
    assert full < op < none
    assert by[key[:3] + ("none", "bf16_pure", "none", "adamw")] < none
    assert by[key[:3] + ("none", "bf16_mixed", "lora", "adamw")] < none


# --------------------------------------------------------------------------- the estimator's new terms
def _spec(**training):
    return {"model": {"preset": "llama-2-7b", "seq_len": 2048}, "parallel": {"dp": 1},
            "training": {"micro_batch": 1, **training}, "hardware": {"gpu": "A100-80GB"}}


def test_lora_keeps_only_the_adapters_states_and_qlora_a_4bit_base():
    full, lora, qlora = (estimate(_spec(**t)) for t in ({}, {"peft": "lora"}, {"peft": "qlora"}))
    assert lora.trainable_params == 4_194_304  # r 8 on q and v, as LitGPT prints for Llama 2 7B
    assert lora.optimizer < 0.1 * GIB < full.optimizer
    assert qlora.weights < 0.35 * lora.weights
    assert estimate(_spec(peft="lora", lora_targets="all")).trainable_params == 19_988_480


def test_recompute_policies_and_loss_and_offload():
    none, sel, op, full = (estimate(_spec(recompute=r)).activations for r in ("none", "selective", "op", "full"))
    assert full < op < none and op < sel
    every2 = estimate(_spec(recompute="full", recompute_every=2)).activations
    assert full < every2 < none
    std, fused = (estimate(_spec(loss=m)).total for m in ("standard", "fused"))
    assert fused < std
    off = estimate(_spec(offload_optimizer=True))
    assert off.optimizer == 0 and off.gradients == 0 and off.weights > 0


def test_fp8_all_gather_lowers_the_fsdp_buffers():
    s = {"framework": "torchtitan", "model": {"preset": "llama-3.1-8b"}, "parallel": {"dp": 8, "fsdp": True},
         "training": {"micro_batch": 1, "recompute": "op"}}
    bf16 = estimate(s)
    s["training"]["fp8"] = True
    assert estimate(s).other < bf16.other


def test_range_brackets_the_expected_and_names_the_dominant_term():
    e = estimate(_spec(recompute="none"))
    low, mid, high = e.range
    assert low < e.total < mid < high
    assert e.allocated < e.reserved
    assert e.uncertainty


# --------------------------------------------------------------------------- CLI end to end
def _cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "parallint", *args], capture_output=True, text=True, cwd=cwd)


def test_estimate_cli_takes_the_new_options():
    r = _cli("estimate", "--preset", "llama-2-7b", "--gpu", "A100-40GB", "--micro-batch", "1",
             "--peft", "qlora", "--recompute", "op", "--loss", "fused", "--pure-bf16")
    assert r.returncode == 0, r.stderr
    assert "trainable parameters" in r.stdout and "range: low / expected / high" in r.stdout
    assert "op-level selective checkpointing" in r.stdout
    bad = _cli("estimate", "--preset", "llama-2-7b", "--peft", "adapters")
    assert bad.returncode == 2 and "--peft must be none, lora or qlora" in (bad.stderr + bad.stdout)


@pytest.mark.parametrize("mb, severity", [(9, "info"), (12, "error")])
def test_mem002_fires_on_the_low_end_and_a_near_miss_is_an_info(tmp_path, mb, severity):
    (tmp_path / "job.yaml").write_text(
        "model: {preset: llama-2-7b, seq_len: 4096}\n"
        "parallel: {world_size: 8, zero_stage: 3}\n"
        f"training: {{micro_batch: {mb}, recompute: full, precision: bf16}}\n"
        "hardware: {gpu: A100-40GB}\n")
    r = _cli("check", str(tmp_path), "--format", "json", "--no-cache", "--select", "MEM002")
    found = [d for d in json.loads(r.stdout) if d["code"] == "MEM002"]
    assert len(found) == 1 and found[0]["severity"] == severity
    if severity == "info":
        assert found[0]["message"].startswith("near miss:") and "a margin of" in found[0]["message"]
    else:
        assert "even at the low end of its range" in found[0]["message"]


# --------------------------------------------------------------------------- the second round's terms
def _llama(framework: str | None = None, **training):
    s = {"model": {"preset": "llama-2-7b", "seq_len": 2048}, "parallel": {"dp": 1},
         "training": {"micro_batch": 1, **training}, "hardware": {"gpu": "A100-80GB"}}
    if framework:
        s["framework"] = framework
    return s


def test_a_compiled_loss_keeps_its_input_logits_and_their_gradient():
    v, s = 32000, 2048
    std, comp = (estimate(_llama(loss=m)) for m in ("standard", "compiled"))
    # 12 bytes per logit eager, 2 x 2 with 16-bit logits entering the compiled loss
    assert std.total - comp.total == pytest.approx(8 * s * v, rel=1e-6)
    # torchtune's decoder upcasts the logits before the loss: 2 x 4 bytes
    tt_std, tt_comp = (estimate(_llama("torchtune", loss=m)) for m in ("standard", "compiled"))
    assert tt_std.total - tt_comp.total == pytest.approx(4 * s * v, rel=1e-6)


def test_frozen_linears_save_no_input_but_bitsandbytes_4bit_ones_do():
    lora = estimate(_llama(peft="lora", compile=False)).activations
    bnb = estimate(_llama(peft="qlora", compile=False)).activations
    torchao = estimate(_llama("torchtune", peft="qlora", compile=False)).activations
    sbh, layers, f = 2048 * 4096, 32, 11008 / 4096
    # bitsandbytes' MatMul4Bit keeps the inputs of gate/up and down (2 + 2f per layer), which frozen
    # 16-bit linears do not; q/v's LoRA A (no dropout) keeps the attention input either way
    assert bnb - lora == pytest.approx(sbh * layers * (2 + 2 * f), rel=1e-6)
    dropout = estimate(_llama(peft="lora", compile=False, lora_dropout=True)).activations
    bnb_dropout = estimate(_llama(peft="qlora", compile=False, lora_dropout=True)).activations
    assert bnb_dropout - dropout == pytest.approx(sbh * layers * (4 + 2 * f), rel=1e-6)
    # torchao's NF4 linear (torchtune) keeps only the weight; torchtune's fp32 logits are not at stake here
    assert torchao == pytest.approx(lora, rel=1e-6)


def test_litgpt_fused_qkv_keeps_its_projection_output_alive():
    plain = estimate(_llama(peft="lora", compile=False)).activations
    lit = estimate(_llama("litgpt", peft="lora", compile=False)).activations
    assert lit - plain == pytest.approx(2048 * 4096 * 32 * 4, rel=1e-6)  # Q and K parts of the base, MHA


def test_autocast_keeps_fp32_softmax_and_residual_stream():
    bert = {"layers": 24, "hidden": 1024, "heads": 16, "ffn": 4096, "vocab": 30522, "seq_len": 512,
            "arch": "encoder", "bias": True, "norm": "layernorm", "position_embeddings": "learned"}
    spec = {"model": bert, "parallel": {"dp": 1},
            "training": {"micro_batch": 4, "precision": "fp16", "flash_attention": False}}
    plain = estimate(spec)
    amp = estimate({**spec, "training": {**spec["training"], "autocast": True}})
    s, b, h, a, layers = 512, 4, 1024, 16, 24
    extra = layers * (s * b * h * 4 + 2 * a * s * s * b)  # LayerNorm inputs fp32, softmax output fp32
    assert amp.activations - plain.activations == pytest.approx(extra, rel=1e-6)


def test_a_job_stated_eager_has_no_fused_low_end():
    unstated = estimate(_llama(peft="lora"))
    eager = estimate(_llama(peft="lora", compile=False))
    assert eager.range[1] == pytest.approx(unstated.range[1])
    assert eager.range[0] > unstated.range[0]


def test_estimate_cli_takes_compiled_loss_and_autocast(tmp_path):
    from typer.testing import CliRunner

    from parallint.cli.app import app

    spec = tmp_path / "job.yaml"
    spec.write_text("model: {preset: llama-2-7b, seq_len: 2048}\nparallel: {dp: 1}\n"
                    "training: {micro_batch: 1}\nhardware: {gpu: A100-80GB}\n")
    outs = {}
    for args in ((), ("--loss", "compiled"), ("--autocast",)):
        r = CliRunner().invoke(app, ["estimate", str(spec), "--format", "json", *args])
        assert r.exit_code in (0, 1), r.output  # 1: the job does not fit the card
        outs[args] = json.loads(r.output)
    total = {k: v[0]["per_gpu"]["total"] if isinstance(v, list) else v["jobs"][0]["per_gpu"]["total"]
             for k, v in outs.items()}
    assert total[("--loss", "compiled")] < total[()]
