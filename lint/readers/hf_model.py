"""Hugging Face ``config.json`` model shapes: layers, hidden, heads, KV heads, FFN, vocab, tied
embeddings, MoE keys (several spellings: Llama/Mistral, GPT-2, T5-style)."""

from __future__ import annotations

from pathlib import Path

from parallint.facts import FileFacts
from parallint.readers.cfgutil import ConfigData, Emitter, as_bool, as_int, load_tree, new_facts

KIND = "hf_model"


def read(path: str, abspath: Path, text: str) -> FileFacts:
    ff = new_facts(path, abspath, KIND, text)
    root = load_tree(ff)
    ff.data = ConfigData(root, "json", "")
    if root is None or not root.is_map:
        return ff
    emit_hf_shape(Emitter(ff, root), "")
    return ff


def _mlp(v):
    s = str(v).lower()
    if s in ("silu", "swiglu", "swish"):
        return "swiglu"
    if s.startswith("gelu"):
        return "gelu"
    raise ValueError(v)


def emit_hf_shape(em: Emitter, prefix: str) -> None:
    def ps(*ks: str) -> list[str]:
        return [f"{prefix}{k}" for k in ks]

    em.add("model.layers", ps("num_hidden_layers", "n_layer", "num_layers"), as_int)
    em.add("model.hidden", ps("hidden_size", "n_embd", "d_model"), as_int)
    em.add("model.heads", ps("num_attention_heads", "n_head", "num_heads"), as_int)
    em.add("model.kv_heads", ps("num_key_value_heads", "num_kv_heads", "multi_query_group_num"), as_int)
    em.add("model.ffn", ps("intermediate_size", "n_inner", "ffn_dim", "d_ff"), as_int)
    em.add("model.vocab", ps("vocab_size"), as_int)
    em.add("model.head_dim", ps("head_dim", "kv_channels", "attention_head_dim", "head_size", "d_kv"), as_int)
    em.add("model.tied_embeddings", ps("tie_word_embeddings"), as_bool)
    em.add("model.num_experts", ps("num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts"), as_int)
    em.add("model.top_k", ps("num_experts_per_tok", "moe_topk", "topk"), as_int)
    em.add("model.moe_ffn", ps("moe_intermediate_size"), as_int)
    em.add("model.mlp", ps("hidden_act", "activation_function"), _mlp)
