"""DeepSpeed config JSON (``ds_config.json``): batch triple, ZeRO stage and offload, fp16/bf16,
pipeline and sequence-parallel settings. ``"auto"`` (filled in by the HF Trainer / accelerate) and
template placeholders are unknown. Duplicate keys stay in the tree for CFG005."""

from __future__ import annotations

from pathlib import Path

from parallint.model.facts import FileFacts, Value
from parallint.readers.cfgutil import Emitter, as_bool, as_int, open_config, to_value
KIND = "deepspeed"


def read(path: str, abspath: Path, text: str) -> FileFacts:
    ff, root = open_config(path, abspath, text, KIND, "json" if path.lower().endswith(".json") else "yaml", "deepspeed")
    if root is None:
        return ff
    em = Emitter(ff, root)
    em.framework("deepspeed")
    emit_deepspeed(em, root, prefix="")
    return ff


def emit_deepspeed(em: Emitter, root, prefix: str = "") -> None:
    """DeepSpeed facts from a DeepSpeed-shaped mapping (also the inline section of accelerate/neox)."""

    def p(k: str) -> str:
        return f"{prefix}{k}"

    em.add("training.train_batch_size", p("train_batch_size"), as_int)
    em.add("training.micro_batch", p("train_micro_batch_size_per_gpu"), as_int)
    em.add("training.grad_accum", p("gradient_accumulation_steps"), as_int)
    em.add("parallel.zero_stage", p("zero_optimization.stage"), as_int)
    em.add("parallel.sp", [p("sequence_parallel_size"), p("ulysses_sequence_parallel_size")], as_int)
    em.add("parallel.tp", p("tensor_parallel.autotp_size"), as_int)
    off = offload_value(em.node(p("zero_optimization")), f"{em.name} {p('zero_optimization')}")
    if off is not None:
        em.ff.facts.add("training.offload", off)
    stages = em.node(p("pipeline.stages"))
    if stages is not None:
        em.add("parallel.pp", p("pipeline.stages"), as_int)
    for section, name in (("fp16", "fp16"), ("bf16", "bf16"), ("bfloat16", "bf16")):
        en = em.node(p(f"{section}.enabled"))
        if en is None:
            continue
        v = to_value(en, f"{em.name} {p(section)}.enabled")
        if v is None:
            continue
        if not v.known:
            em.ff.facts.add("training.precision", v)
            continue
        try:
            on = as_bool(v.value)
        except ValueError:
            continue
        if on:
            em.ff.facts.add("training.precision", Value(name, en.span, True, "", v.source))


_OFFLOAD_DEVICES = ("cpu", "nvme")


def offload_value(zo, source: str) -> Value | None:
    """``training.offload`` from a ``zero_optimization`` mapping, or None when it says nothing.

    ``offload_optimizer`` / ``offload_param`` with ``device: cpu|nvme`` (DeepSpeed's default device
    is ``none``) and the legacy ``cpu_offload`` / ``cpu_offload_params: true`` are True; a device
    parallint cannot resolve is unknown; stated but off is False.
    """
    if zo is None or not zo.is_map:
        return None
    found: Value | None = None
    for sec in ("offload_optimizer", "offload_param"):
        n = zo.get(sec)
        if n is None or not n.is_map:
            continue
        span = zo.key_spans.get(sec, n.span)
        dn = n.get("device")
        dev = to_value(dn, f"{source}.{sec}.device")
        if dn is not None and (dn.value is None or str(dn.value).strip().lower() == "none"):
            dev = Value("none", dn.span, True, "", f"{source}.{sec}.device")  # "none" is a device here
        if dev is None:
            if found is None:
                found = Value(False, span, True, "", f"{source}.{sec}")
            continue
        if not dev.known:
            return Value.unknown(dev.why, span, dev.source)
        if str(dev.value).strip().lower() in _OFFLOAD_DEVICES:
            return Value(True, span, True, "", f"{source}.{sec} (device {dev.value})")
        if found is None:
            found = Value(False, span, True, "", dev.source)
    for key in ("cpu_offload", "cpu_offload_params"):
        n = zo.get(key)
        v = to_value(n, f"{source}.{key}")
        if v is None:
            continue
        if not v.known:
            return Value.unknown(v.why, zo.key_spans.get(key, n.span), v.source)
        try:
            on = as_bool(v.value)
        except ValueError:
            continue
        if on:
            return Value(True, zo.key_spans.get(key, n.span), True, "", v.source)
        if found is None:
            found = Value(False, zo.key_spans.get(key, n.span), True, "", v.source)
    return found


def bool_offload(node, key_span, source: str) -> Value | None:
    """``training.offload`` from a boolean switch (``fsdp_offload_params: true``), None when absent."""
    v = to_value(node, source)
    if v is None:
        return None
    span = key_span or node.span
    if not v.known:
        return Value.unknown(v.why, span, source)
    try:
        return Value(as_bool(v.value), span, True, "", source)
    except ValueError:
        return Value.unknown(f"cannot interpret {v.value!r}", span, source)
