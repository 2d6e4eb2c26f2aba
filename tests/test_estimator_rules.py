"""MEM001/MEM002 beyond their examples: what keeps them silent, and what their messages say."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from parallint.model.diagnostics import Span
from parallint.model.facts import FactMap, FileFacts, Value
from parallint.model.job import Job
from parallint.rules.mem.mem001_pure_data_parallel_oversized import PureDataParallelOversized
from parallint.rules.mem.mem002_predicted_oom import PredictedOom

SEED = {"model.layers": 72, "model.hidden": 12288, "model.heads": 96, "model.vocab": 50257,
        "model.seq_len": 2048}


def _job(facts: dict, kind: str = "shell", text: str = "", extra_files=()) -> Job:
    fm = FactMap()
    for i, (k, v) in enumerate(facts.items(), 1):
        fm.add(k, v if isinstance(v, Value) else Value(v, Span("train.sh", i, 1), source=k))
    root = FileFacts("train.sh", Path("train.sh"), kind, text)
    return Job("train.sh", root, files=[root, *extra_files], facts=fm)


def _ctx(**config):
    from parallint.engine.layouts import plan  # what the engine's Context.plan runs

    return SimpleNamespace(config=config, plan=plan)


def _run(rule, job, **config):
    return list(rule.check_job(job, _ctx(**config)))


PURE_DP = {**SEED, "parallel.nodes": 4, "parallel.procs_per_node": 8, "parallel.tp": 1,
           "parallel.pp": 1, "training.micro_batch": 1, "hardware.gpu": "a100"}


def test_pure_dp_fires_mem001_not_mem002():
    job = _job(PURE_DP)
    found = _run(PureDataParallelOversized(), job)
    assert len(found) == 1
    d = found[0]
    assert d.code == "MEM001" and d.span.line == 8  # at the TP fact (8th fact)
    assert "131.1B" in d.message and "A100-80GB" in d.message and "90%" in d.message
    assert not _run(PredictedOom(), job)  # left to MEM001


def test_model_parallel_layout_passes_both():
    job = _job({**PURE_DP, "parallel.tp": 8, "parallel.pp": 4,
                "parallel.sequence_parallel": True, "training.recompute": "selective"})
    assert not _run(PureDataParallelOversized(), job)
    assert not _run(PredictedOom(), job)


@pytest.mark.parametrize("key", ["parallel.tp", "parallel.pp", "parallel.zero_stage",
                                 "training.recompute", "hardware.gpu"])
def test_an_unknown_layout_value_keeps_both_silent(key):
    facts = {**PURE_DP, key: Value.unknown("environment variable X", Span("train.sh", 1, 1))}
    job = _job(facts)
    assert not _run(PureDataParallelOversized(), job)
    assert not _run(PredictedOom(), job)


@pytest.mark.parametrize("key,value", [("parallel.tp", "eight"), ("parallel.zero_stage", "three")])
def test_a_value_that_is_not_a_number_keeps_both_silent(key, value):
    job = _job({**PURE_DP, key: value})
    assert not _run(PureDataParallelOversized(), job)
    assert not _run(PredictedOom(), job)


def test_numbers_written_as_strings_are_numbers():
    assert _run(PureDataParallelOversized(), _job({**PURE_DP, "parallel.tp": "1"}))
    assert not _run(PureDataParallelOversized(), _job({**PURE_DP, "parallel.zero_stage": "3"}))


def test_files_that_disagree_on_tp_keep_both_silent():
    job = _job(PURE_DP)
    job.facts.add("parallel.tp", Value(8, Span("other.yaml", 3, 1)))
    assert not _run(PureDataParallelOversized(), job)


def test_a_model_file_alone_is_not_a_job_layout():
    assert not _run(PureDataParallelOversized(), _job(SEED, kind="hf_model"))


@pytest.mark.parametrize("text", [
    "model:\n  freeze_language_model: true\n",
    "peft:\n  peft_scheme: lora\n",
    "model:\n  mamba_ssm: true\n",
])
def test_frozen_adapters_and_other_architectures_keep_silent(text):
    cfg = FileFacts("cfg.json", Path("cfg.json"), "deepspeed", text)
    job = _job(PURE_DP, extra_files=[cfg])
    assert not _run(PureDataParallelOversized(), job)


def test_no_gpu_means_the_largest_catalogued_one():
    facts = {k: v for k, v in PURE_DP.items() if k != "hardware.gpu"}
    found = _run(PureDataParallelOversized(), _job(facts))
    assert found and "largest catalogued GPU" in found[0].message
    small = {**facts, "model.layers": 12, "model.hidden": 768, "model.heads": 12}
    assert not _run(PureDataParallelOversized(), _job(small))


def test_headroom_setting_moves_the_mem001_threshold():
    # gpt2-xl-sized model: 1.56B x 16 B = 23.2 GiB of states on a 24 GiB L4 (97 %)
    facts = {"model.layers": 48, "model.hidden": 1600, "model.heads": 25, "model.vocab": 50257,
             "model.seq_len": 1024, "parallel.world_size": 8, "parallel.tp": 1, "parallel.pp": 1,
             "hardware.gpu": "L4"}
    assert _run(PureDataParallelOversized(), _job(facts))
    assert not _run(PureDataParallelOversized(), _job(facts), **{"memory-headroom": 1.0})


def test_mem002_message_has_breakdown_and_a_layout_that_fits():
    facts = {"model.preset": "llama-2-13b", "model.seq_len": 4096, "parallel.world_size": 8,
             "parallel.tp": 2, "parallel.pp": 1, "training.micro_batch": 4,
             "training.recompute": "none", "hardware.gpu": "A100-40GB"}
    found = _run(PredictedOom(), _job(facts))
    assert len(found) == 1
    msg = found[0].message
    for word in ("weights", "gradients", "optimizer", "activations", "other", "A100-40GB",
                 "a layout of 8 GPUs that fits: TP="):
        assert word in msg, word
    # unstated recompute is taken as full recomputation: the lower bound
    facts.pop("training.recompute")
    found = _run(PredictedOom(), _job(facts))
    assert found and "layers)" in found[0].message


def test_torchtitan_selective_ac_is_a_lower_bound():
    facts = {"model.preset": "llama-3-8b", "parallel.world_size": 8, "parallel.dp_shard": 8,
             "training.micro_batch": 2, "training.recompute": "selective",
             "hardware.gpu": "H100-80GB", "framework": "torchtitan"}
    assert not _run(PredictedOom(), _job(facts, kind="torchtitan"))
    facts["framework"] = "megatron"  # Megatron's selective recompute keeps 34sbh per layer
    found = _run(PredictedOom(), _job(facts, kind="shell"))
    assert found


@pytest.mark.parametrize("offload,silent", [
    (Value(True, Span("ds.json", 5, 5), source="ds.json zero_optimization.offload_optimizer"), True),
    (Value.unknown("environment variable in $DEV", Span("ds.json", 5, 5)), True),
    (Value(False, Span("ds.json", 5, 5), source="ds.json zero_optimization.offload_optimizer"), False),
])
def test_offload_fact_keeps_both_silent(offload, silent):
    job = _job({**PURE_DP, "training.offload": offload})
    assert (not _run(PureDataParallelOversized(), job)) is silent


def test_offload_word_in_a_config_text_without_the_fact_does_not_silence():
    # the readers state offload as a fact; "offload" in a comment or a false switch is no offload
    ds = FileFacts("ds.json", Path("ds.json"), "deepspeed", '{"zero_optimization": {"cpu_offload": false}}')
    job = _job(PURE_DP, extra_files=[ds])
    assert len(_run(PureDataParallelOversized(), job)) == 1


def test_offload_read_from_a_deepspeed_config_keeps_both_silent():
    from parallint.readers import deepspeed

    text = '{"zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}}}'
    ds = deepspeed.read("ds.json", Path("ds.json"), text)
    job = _job(PURE_DP, extra_files=[ds])
    job.facts.extend(ds.facts)
    assert not _run(PureDataParallelOversized(), job) and not _run(PredictedOom(), job)
