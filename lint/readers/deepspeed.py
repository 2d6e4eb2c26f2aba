"""DeepSpeed config JSON (``ds_config.json``): batch triple, ZeRO stage and offload, fp16/bf16,
pipeline and sequence-parallel settings. ``"auto"`` (filled in by the HF Trainer / accelerate) and
template placeholders are unknown. Duplicate keys stay in the tree for CFG005."""

from __future__ import annotations

from pathlib import Path

from parallint.facts import FileFacts, Value
from parallint.readers.cfgutil import ConfigData, Emitter, as_bool, as_int, load_tree, new_facts, to_value

KIND = "deepspeed"


def read(path: str, abspath: Path, text: str) -> FileFacts:
    ff = new_facts(path, abspath, KIND, text)
    root = load_tree(ff)
    ff.data = ConfigData(root, "json" if path.lower().endswith(".json") else "yaml", "deepspeed")
    if root is None or not root.is_map:
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
