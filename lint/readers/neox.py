"""gpt-neox YAML (JSON with comments; keys with ``_`` or ``-``): ``model_parallel_size`` = TP,
``pipe_parallel_size`` = PP (0 = no pipeline), shape, the DeepSpeed batch triple and ZeRO stage."""

from __future__ import annotations

from pathlib import Path

from parallint.facts import FileFacts, Value
from parallint.readers.cfgutil import ConfigData, Emitter, as_bool, as_int, load_tree, new_facts, precision_of, to_value
from parallint.readers.yamlpos import PNode

KIND = "neox"


def _normalize(node: PNode) -> PNode:
    """Top-level keys with '-' become '_' (neox accepts both)."""
    if not node.is_map:
        return node
    out, ks = {}, {}
    for k, v in node.items():
        nk = k.replace("-", "_")
        out.setdefault(nk, v)
        ks.setdefault(nk, node.key_spans.get(k, v.span))
    return PNode(out, node.span, ks, node.duplicates)


def _mlp(v):
    s = str(v).lower()
    if s in ("swiglu", "geglu_swish"):
        return "swiglu"
    if s.startswith("gelu"):
        return "gelu"
    raise ValueError(v)


def read(path: str, abspath: Path, text: str) -> FileFacts:
    ff = new_facts(path, abspath, KIND, text)
    raw = load_tree(ff)
    ff.data = ConfigData(raw, "yaml", "neox")
    if raw is None or not raw.is_map:
        return ff
    root = _normalize(raw)
    em = Emitter(ff, root)
    em.framework("neox")
    em.add("parallel.tp", "model_parallel_size", as_int)
    pp = em.add("parallel.pp", "pipe_parallel_size", lambda v: max(1, as_int(v)))
    em.add("model.layers", "num_layers", as_int)
    em.add("model.hidden", "hidden_size", as_int)
    att = root.get("attention_config")
    att_text = str(att.plain()).lower() if att is not None else ""
    if not any(w in att_text for w in ("mamba", "rwkv", "gmlp", "amlp")):
        em.add("model.heads", "num_attention_heads", as_int)  # attention-free blocks have no heads
    em.add("model.kv_heads", "num_kv_heads", as_int)
    em.add("model.mlp", "activation", _mlp)
    em.add("model.seq_len", "seq_length", as_int)
    em.add("model.num_experts", "moe_num_experts", as_int)
    em.add("parallel.sequence_parallel", "sequence_parallel", as_bool)
    em.add("training.train_batch_size", "train_batch_size", as_int)
    em.add("training.micro_batch", "train_micro_batch_size_per_gpu", as_int)
    em.add("training.grad_accum", "gradient_accumulation_steps", as_int)
    em.add("parallel.zero_stage", "zero_optimization.stage", as_int)
    em.add("parallel.world_size", "global_num_gpus", as_int)
    for key in ("fp16", "bf16"):
        n = root.path(f"{key}.enabled")
        v = to_value(n, f"{em.name} {key}.enabled")
        if v is not None and v.known:
            try:
                if as_bool(v.value):
                    ff.facts.add("training.precision", Value(key, n.span, True, "", v.source))
            except ValueError:
                pass
    prec = to_value(root.get("precision"), f"{em.name} precision")
    if prec is not None and prec.known and precision_of(prec.value):
        ff.facts.add("training.precision", Value(precision_of(prec.value), prec.span, True, "", prec.source))
    return ff
