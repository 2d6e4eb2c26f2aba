"""Megatron command-line flags -> normalized facts: recomputation defaults and old spellings."""

from __future__ import annotations

from parallint.diagnostics import Span
from parallint.facts import Value
from parallint.megatron_args import args_facts


def _words(*ws):
    return [Value(w, Span("run.sh", 1, i + 1)) if w is not None else Value.unknown("environment variable ARGS")
            for i, w in enumerate(ws)]


BASE = ("--tensor-model-parallel-size", "2", "--num-layers", "24")


def test_no_recompute_flag_on_a_complete_command_line_is_megatrons_default():
    v = args_facts(_words(*BASE)).get("training.recompute")
    assert v is not None and v.value == "none" and "default" in v.source


def test_unknown_words_or_config_files_leave_recompute_unknown():
    assert args_facts(_words(*BASE, None)).get("training.recompute") is None
    assert args_facts(_words(*BASE, "--yaml-cfg", "x.yaml")).get("training.recompute") is None
    assert args_facts(_words(*BASE, "--recompute-method", "uniform")).get("training.recompute") is None


def test_explicit_recompute_spellings():
    assert args_facts(_words(*BASE, "--recompute-granularity", "full")).get("training.recompute").value == "full"
    assert args_facts(_words(*BASE, "--recompute-activations")).get("training.recompute").value == "selective"
    assert args_facts(_words(*BASE, "--checkpoint-activations")).get("training.recompute").value == "full"


def test_shape_flags():
    f = args_facts(_words(*BASE, "--swiglu", "--normalization", "RMSNorm", "--disable-bias-linear",
                          "--position-embedding-type", "rope", "--group-query-attention", "--num-query-groups", "8"))
    assert f.get("model.mlp").value == "swiglu" and f.get("model.norm").value == "rmsnorm"
    assert f.get("model.bias").value is False and f.get("model.position_embeddings").value == "rope"
    assert f.get("model.kv_heads").value == 8


def test_cpu_offload_flags():
    assert args_facts(_words(*BASE, "--optimizer-cpu-offload")).get("training.offload").value is True
    assert args_facts(_words(*BASE, "--cpu-offloading")).get("training.offload").value is True
    assert args_facts(_words(*BASE)).get("training.offload") is None
