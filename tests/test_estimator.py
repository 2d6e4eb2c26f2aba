"""Unit tests of the estimator: parameter counts, presets, GPU catalogue, model states, activations,
the job-spec reader and facts -> spec. (Published reference figures: test_estimator_cases.py.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from parallint.model.diagnostics import Span
from parallint.estimator.gpus import GIB, catalogue, largest_gpu, resolve_gpu
from parallint.estimator.memory import activation_per_layer, estimate, model_state_bytes_per_param
from parallint.estimator.params import ShapeError, breakdown, count_params
from parallint.estimator.spec import normalize, preset, presets, spec_from_facts, validate
from parallint.model.facts import FactMap, Value
from parallint.readers import jobspec

SEED_130B = {"layers": 72, "hidden": 12288, "heads": 96, "vocab": 50257, "seq_len": 2048}


# --------------------------------------------------------------------------- parameters
@pytest.mark.parametrize("name,count", [
    ("gpt2", 124_439_808), ("gpt2-medium", 354_823_168), ("gpt2-large", 774_030_080),
    ("gpt2-xl", 1_557_611_200), ("llama-2-7b", 6_738_415_616), ("llama-2-13b", 13_015_864_320),
    ("llama-2-70b", 68_976_648_192), ("llama-3-8b", 8_030_261_248),
    ("llama-3.1-70b", 70_553_706_496), ("llama-3.1-405b", 405_853_388_800),
    ("mistral-7b", 7_241_732_096), ("mixtral-8x7b", 46_702_792_704),
    ("gpt3-175b", 174_604_259_328),
])
def test_preset_counts_are_the_published_ones(name, count):
    assert count_params(preset(name)) == count


def test_preset_names_are_forgiving_and_unknown_is_none():
    assert preset("Llama2_7B") == preset("llama-2-7b")
    assert preset("no-such-model") is None
    assert "mixtral-8x7b" in presets()


def test_param_count_overrides_shape():
    assert count_params({**preset("gpt2"), "param_count": 123}) == 123


def test_gqa_swiglu_and_tied_head_change_the_count():
    base = preset("llama-2-7b")
    gqa = {**base, "kv_heads": 8}
    assert count_params(base) - count_params(gqa) == 32 * 2 * 4096 * (4096 - 1024)
    tied = {**base, "tied_embeddings": True}
    assert count_params(base) - count_params(tied) == 32000 * 4096
    gelu = {**base, "mlp": "gelu"}
    assert count_params(base) - count_params(gelu) == 32 * 4096 * 11008


def test_megatron_style_defaults():
    m = {"layers": 2, "hidden": 4096, "heads": 32, "vocab": 0, "mlp": "swiglu", "norm": "rmsnorm"}
    b = breakdown(m)
    assert b.tp_sharded[0] == 4 * 4096 * 4096 + 3 * 4096 * 10880  # ffn = 64 * floor(8h/3/64)
    no_seq = {"layers": 2, "hidden": 64, "heads": 4, "vocab": 10, "position_embeddings": "learned"}
    assert breakdown(no_seq).position == 0  # unknown table size is not guessed


def test_moe_active_params_and_layer_pattern():
    m = preset("mixtral-8x7b")
    b = breakdown(m)
    assert b.active == 12_879_925_248
    half = {**m, "moe_layer_freq": 2}  # every second layer MoE, the others dense
    assert count_params(half) < count_params(m)


@pytest.mark.parametrize("bad", [
    {"hidden": 768, "heads": 12, "vocab": 10},  # no layers
    {"layers": "x", "hidden": 64, "heads": 4, "vocab": 10},
    {"layers": 3, "hidden": 64, "heads": 4, "vocab": 10, "arch": "encoder-decoder", "ffn": 8},
])
def test_incomplete_shapes_raise_shape_error(bad):
    with pytest.raises(ShapeError):
        count_params(bad)


# --------------------------------------------------------------------------- GPUs
@pytest.mark.parametrize("text,name", [
    ("a100", "A100-80GB"),  # an ambiguous alias resolves to the larger size
    ("A100-40GB", "A100-40GB"), ("NVIDIA-A100-SXM4-40GB", "A100-40GB"),
    ("nvidia-a100-sxm4-80gb", "A100-80GB"), ("h100", "H100-80GB"),
    ("NVIDIA-H100-80GB-HBM3", "H100-80GB"), ("tesla-v100-sxm2-16gb", "V100-16GB"),
    ("h200", "H200"), ("mi300x", "MI300X"), ("gh200", "GH200"), ("l40s", "L40S"),
])
def test_gpu_aliases(text, name):
    assert resolve_gpu(text).name == name


@pytest.mark.parametrize("text", ["", "gpu", "80", "rtx-9999", "NVIDIA-A100-SXM4-80GB-MIG-1g.10gb", None, True])
def test_unknown_gpus_resolve_to_none(text):
    assert resolve_gpu(text) is None


def test_catalogue_has_the_issue_list_with_memory_in_bytes():
    names = {g.name for g in catalogue()}
    for want in ("V100-16GB", "V100-32GB", "A10", "A100-40GB", "A100-80GB", "L4", "L40S",
                 "H100-80GB", "H100-94GB", "H200", "GH200", "B200", "B300", "MI250X", "MI300X",
                 "MI325X"):
        assert want in names
    assert resolve_gpu("A100-80GB").memory_bytes == 80 * GIB
    assert largest_gpu().memory_bytes == max(g.memory_bytes for g in catalogue())


# --------------------------------------------------------------------------- model states
def test_zero_stages_shard_what_the_paper_says():
    dp = 64
    assert sum(model_state_bytes_per_param()) == 16
    assert sum(model_state_bytes_per_param(zero_stage=1, shard=dp)) == pytest.approx(4 + 12 / dp)
    assert sum(model_state_bytes_per_param(zero_stage=2, shard=dp)) == pytest.approx(2 + 14 / dp)
    assert sum(model_state_bytes_per_param(zero_stage=3, shard=dp)) == pytest.approx(16 / dp)
    assert sum(model_state_bytes_per_param(grad_dtype="fp32")) == 18
    assert sum(model_state_bytes_per_param("fp32")) == 16


def test_seed_pure_dp_needs_terabytes_and_tp8_pp4_fits_a100_80gb():
    dp = estimate({"model": SEED_130B, "parallel": {"world_size": 32},
                   "training": {"micro_batch": 1}, "hardware": {"gpu": "A100-80GB"}})
    assert dp.param_count == pytest.approx(131e9, rel=0.01)
    assert dp.weights == pytest.approx(2 * dp.param_count)  # ~260 GB of 16-bit weights
    assert dp.model_states > 2e12 and dp.fits is False
    mp = estimate({"model": SEED_130B,
                   "parallel": {"world_size": 32, "tp": 8, "pp": 4, "sequence_parallel": True},
                   "training": {"micro_batch": 1, "recompute": "selective"},
                   "hardware": {"gpu": "A100-80GB"}})
    assert mp.fits is True
    assert 60e9 < mp.total < 80e9  # the issue's "~68 GB per GPU with activations"
    assert mp.layers_per_stage == 18 and mp.microbatches_in_flight == 4 and mp.stage == "first"


def test_tp_and_pp_divide_the_states_and_first_stage_carries_the_embedding():
    m = preset("llama-2-7b")
    one = estimate({"model": m, "parallel": {"dp": 1}})
    tp2 = estimate({"model": m, "parallel": {"dp": 1, "tp": 2}})
    pp4 = estimate({"model": m, "parallel": {"dp": 1, "pp": 4}})
    assert tp2.params_on_rank == pytest.approx(one.params_on_rank / 2, rel=0.001)
    emb = 32000 * 4096
    assert pp4.params_on_rank == pytest.approx((one.param_count - 2 * emb) / 4 + emb, rel=0.001)


def test_lower_bound_does_not_guess_unknowns():
    spec = {"model": preset("llama-2-7b"), "parallel": {"zero_stage": 1}}
    lb = estimate(spec, lower_bound=True)
    assert lb.optimizer == 0 and lb.activations == 0 and not lb.activations_known
    guess = estimate(spec)
    assert guess.optimizer > 0 and any("data-parallel" in a for a in guess.assumptions)


def test_estimate_json_has_exactly_the_issue_fields():
    e = estimate({"model": {"preset": "gpt2"}, "parallel": {"dp": 2},
                  "training": {"micro_batch": 8}, "hardware": {"gpu": "V100-16GB"}})
    j = e.to_json()
    assert set(j) == {"param_count", "gpu", "gpu_memory_bytes", "per_gpu",
                      "activation_per_layer_bytes", "layers_per_stage", "microbatches_in_flight",
                      "fits", "allocated_bytes", "reserved_bytes", "range"}
    assert set(j["per_gpu"]) == {"weights", "gradients", "optimizer", "activations", "other", "total"}
    assert j["per_gpu"]["total"] == sum(v for k, v in j["per_gpu"].items() if k != "total") or \
        abs(j["per_gpu"]["total"] - sum(v for k, v in j["per_gpu"].items() if k != "total")) <= 3
    json.dumps(j)


# --------------------------------------------------------------------------- activations
def test_korthikanti_rows():
    s, b, h, a, t = 2048, 1, 12288, 96, 8
    sbh = s * b * h
    assert activation_per_layer(s, b, h, a) == pytest.approx(sbh * (34 + 5 * a * s / h))
    assert activation_per_layer(s, b, h, a, t) == pytest.approx(sbh * (10 + 24 / t + 5 * a * s / (h * t)))
    assert activation_per_layer(s, b, h, a, t, sp=True) == pytest.approx(sbh / t * (34 + 5 * a * s / h))
    assert activation_per_layer(s, b, h, a, t, recompute="selective") == pytest.approx(sbh * (10 + 24 / t))
    assert activation_per_layer(s, b, h, a, t, True, "selective") == pytest.approx(34 * sbh / t)
    assert activation_per_layer(s, b, h, a, t, False, "full") == pytest.approx(2 * sbh)
    assert activation_per_layer(s, b, h, a, flash=True) == activation_per_layer(s, b, h, a, recompute="selective")


def test_fewer_microbatches_than_stages_hold_fewer_in_flight():
    base = {"model": SEED_130B, "parallel": {"tp": 8, "pp": 4, "dp": 1},
            "training": {"micro_batch": 1}}
    many = estimate({**base, "training": {"micro_batch": 1, "global_batch": 64}})
    two = estimate({**base, "training": {"micro_batch": 1, "global_batch": 2}})
    assert many.microbatches_in_flight == 4 and two.microbatches_in_flight == 2
    assert two.activations < many.activations


def test_context_parallel_keeps_memory_when_seq_over_cp_is_constant():
    m = preset("llama-3-8b")
    a = estimate({"model": {**m, "seq_len": 32768}, "parallel": {"dp": 8, "zero_stage": 3},
                  "training": {"micro_batch": 1, "recompute": "full"}})
    b = estimate({"model": {**m, "seq_len": 65536}, "parallel": {"dp": 4, "cp": 2, "zero_stage": 3},
                  "training": {"micro_batch": 1, "recompute": "full"}})
    assert a.total == pytest.approx(b.total, rel=1e-9)


# --------------------------------------------------------------------------- spec
def test_normalize_derives_dp_and_microbatches():
    n = normalize({"model": {"preset": "gpt2"}, "parallel": {"nodes": 2, "gpus_per_node": 8, "tp": 2},
                   "training": {"micro_batch": 2, "global_batch": 64}})
    assert n["parallel"]["dp"] == 8 and n["parallel"]["world_size"] == 16
    assert n["training"]["num_microbatches"] == 4
    assert n["model"]["layers"] == 12  # preset expanded


def test_schema_accepts_a_full_spec_and_rejects_typos():
    good = {"model": {"preset": "llama-2-7b", "seq_len": 4096},
            "parallel": {"world_size": 16, "tp": 2, "zero_stage": 1},
            "training": {"micro_batch": 1, "recompute": "selective", "precision": "bf16"},
            "hardware": {"gpu": "A100-80GB"}}
    assert validate(good) == []
    assert validate({"model": {"hiden": 1}})
    assert validate({"model": {}, "parallel": {"zero_stage": 4}})


def test_spec_from_facts_uses_only_known_values():
    fm = FactMap()
    span = Span("x.sh", 1, 1)
    fm.add("model.layers", Value(24, span))
    fm.add("model.hidden", Value(1024, span))
    fm.add("model.heads", Value(16, span))
    fm.add("model.vocab", Value(50257, span))
    fm.add("parallel.tp", Value.unknown("environment variable TP", span))
    fm.add("parallel.nodes", Value(2, span))
    fm.add("parallel.procs_per_node", Value(8, span))
    spec = spec_from_facts(fm, {"gpu": "H100-80GB"})
    assert spec["model"]["layers"] == 24 and "tp" not in spec["parallel"]
    assert spec["parallel"]["gpus_per_node"] == 8 and spec["hardware"]["gpu"] == "H100-80GB"
    empty = FactMap()
    empty.add("parallel.tp", Value(2, span))
    assert spec_from_facts(empty) is None


# --------------------------------------------------------------------------- job-spec reader
def _read(tmp_path: Path, name: str, text: str):
    p = tmp_path / name
    p.write_text(text)
    return jobspec.read(name, p, text)


def test_jobspec_reader_facts_and_placeholders(tmp_path):
    ff = _read(tmp_path, "job.yaml", "model: {preset: llama-2-7b}\nparallel:\n  world_size: 16\n"
               "  tp: <TP>\ntraining: {recompute: none}\n")
    assert ff.standalone_job and not ff.diagnostics
    assert ff.facts.get("parallel.world_size").value == 16
    assert ff.facts.get("parallel.world_size").span.line == 3
    assert ff.facts.get("parallel.tp") is None and not ff.facts.all("parallel.tp")[0].known
    assert ff.facts.get("training.recompute").value == "none"
    assert ff.data.valid and ff.data.spec["parallel"]["tp"] is None


@pytest.mark.parametrize("name,text,line", [
    ("job.yaml", "model:\n  layers: 12\n  hiden: 768\n", 3),
    ("job.yaml", "model: {layers: 12}\nparallel:\n  tp: two\n", 3),
    ("job.yaml", "model: {preset: gpt5}\n", 1),
    ("job.json", '{"model": {"layers": 12,}', 1),
    ("job.yaml", "model: [1, 2\n", 2),
    ("job.yaml", "- just\n- a list\n", 1),
])
def test_jobspec_reader_reports_syn001_instead_of_raising(tmp_path, name, text, line):
    ff = _read(tmp_path, name, text)
    assert ff.diagnostics and all(d.code == "SYN001" for d in ff.diagnostics)
    assert ff.diagnostics[0].span.line == line
    assert "line" in ff.diagnostics[0].message


def test_jobspec_reader_survives_binary_and_bombs(tmp_path):
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n"
        for p, c in zip("abcdefgh", "bcdefghi"))
    for text in ("\x00\x01\x02", bomb, "model:\n" + "  " * 3 + "[" * 5000):
        ff = _read(tmp_path, "job.yaml", text)
        assert ff.kind == "jobspec"
