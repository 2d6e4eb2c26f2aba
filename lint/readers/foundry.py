"""llm-foundry YAML: ``global_train_batch_size``, ``device_train_microbatch_size`` (``auto`` =
unknown), ``max_seq_len``, ``fsdp_config``, ``precision`` and the MPT-style model shape.
``${variables.x}`` interpolations are followed inside the file."""

from __future__ import annotations

from pathlib import Path

from parallint.model.facts import FileFacts, Value
from parallint.readers.cfgutil import ResolvingEmitter, as_int, open_config, precision_of, to_value
KIND = "foundry"


def read(path: str, abspath: Path, text: str) -> FileFacts:
    ff, root = open_config(path, abspath, text, KIND, "yaml", "foundry")
    if root is None:
        return ff
    em = ResolvingEmitter(ff, root)
    em.framework("foundry")
    em.add("training.global_batch", "global_train_batch_size", as_int)
    em.add("training.micro_batch", "device_train_microbatch_size", as_int)
    em.add("model.seq_len", ["max_seq_len", "variables.max_seq_len"], as_int)
    em.add("model.layers", "model.n_layers", as_int)
    em.add("model.hidden", "model.d_model", as_int)
    em.add("model.heads", "model.n_heads", as_int)
    p = em.node("precision")
    v = to_value(p, f"{em.name} precision")
    if v is not None and v.known and precision_of(v.value):
        assert p is not None  # to_value gives None for an absent node
        ff.facts.add("training.precision", Value(precision_of(v.value), p.span, True, "", v.source))
    from parallint.readers.deepspeed import bool_offload

    for key in ("fsdp_config.cpu_offload", "fsdp_config.activation_cpu_offload",
                "parallelism_config.fsdp.cpu_offload", "parallelism_config.fsdp.activation_cpu_offload"):
        n = em.node(key)
        if n is not None:
            v = bool_offload(n, n.span, f"{em.name} {key}")
            if v is not None:
                ff.facts.add("training.offload", v)
    s = em.node("fsdp_config.sharding_strategy")
    sv = to_value(s, f"{em.name} fsdp_config.sharding_strategy")
    if sv is not None:
        ff.facts.add("parallel.fsdp", sv)
        if sv.known and str(sv.value).upper() in ("FULL_SHARD", "HYBRID_SHARD"):
            assert s is not None  # to_value gives None for an absent node
            ff.facts.add("parallel.zero_stage", Value(3, s.span, True, "", sv.source))
    return ff
