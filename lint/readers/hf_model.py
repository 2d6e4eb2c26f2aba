"""Hugging Face ``config.json`` model shapes: layers, hidden, heads, KV heads, FFN, vocab, tied
embeddings, MoE keys (several spellings: Llama/Mistral, GPT-2, T5-style)."""

from __future__ import annotations

from pathlib import Path

from parallint.model.facts import FileFacts, Value
from parallint.readers.cfgutil import Emitter, as_bool, as_int, open_config
KIND = "hf_model"


def read(path: str, abspath: Path, text: str) -> FileFacts:
    ff, root = open_config(path, abspath, text, KIND, "json")
    if root is None:
        return ff
    emit_hf_shape(Emitter(ff, root), "")
    return ff


#: model types whose MLP is gated whatever its activation (GeGLU: three matrices, as SwiGLU)
GATED_GELU = ("gemma", "gemma2", "gemma3_text")
#: model types whose config names no activation and whose MLP is SwiGLU (ChatGLM2/3, GLM-4)
GATED_NO_ACT = ("chatglm",)


def _rank_or_none(v):
    """``q_lora_rank``: null (DeepSeek-V2-Lite) means the queries are not compressed: 0."""
    return 0 if v is None else as_int(v)


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
    em.add("model.ffn", ps("intermediate_size", "n_inner", "ffn_dim", "d_ff", "ffn_hidden_size"), as_int)
    em.add("model.vocab", ps("padded_vocab_size", "vocab_size"), as_int)  # ChatGLM: the padded table
    em.add("model.head_dim", ps("head_dim", "kv_channels", "attention_head_dim", "head_size", "d_kv"), as_int)
    em.add("model.tied_embeddings", ps("tie_word_embeddings"), as_bool)
    em.add("model.num_experts", ps("num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts"), as_int)
    em.add("model.top_k", ps("num_experts_per_tok", "moe_topk", "topk"), as_int)
    em.add("model.moe_ffn", ps("moe_intermediate_size"), as_int)
    if em.node(prefix + "kv_lora_rank") is not None:  # DeepSeek V2/V3 multi-head latent attention
        em.add("model.kv_lora_rank", ps("kv_lora_rank"), as_int)
        em.add("model.q_lora_rank", ps("q_lora_rank"), _rank_or_none)
        em.add("model.qk_nope_head_dim", ps("qk_nope_head_dim"), as_int)
        em.add("model.qk_rope_head_dim", ps("qk_rope_head_dim"), as_int)
        em.add("model.v_head_dim", ps("v_head_dim"), as_int)
    mtype = em.value(prefix + "model_type")
    mt = str(mtype.value).lower() if mtype is not None and mtype.known else ""
    if mt in GATED_GELU:
        # Gemma's MLP is gated (gate_proj, up_proj, down_proj): GeGLU, sized as SwiGLU is
        em.add("model.mlp", ps("hidden_activation", "hidden_act"), lambda v: "swiglu")
    elif mt in GATED_NO_ACT and em.node(prefix + "hidden_act") is None:
        # ChatGLM2/3 and GLM-4 (model_type chatglm) name no activation: their MLP is SwiGLU
        em.add("model.mlp", ps("model_type"), lambda v: "swiglu")
    else:
        em.add("model.mlp", ps("hidden_act", "activation_function"), _mlp)
    _emit_moe_layout(em, prefix)


def _first(*values):
    return next((v for v in values if v is not None), None)


def _emit_moe_layout(em: Emitter, prefix: str) -> None:
    """Which layers are MoE (``model.moe_layer_freq``, a 0/1 list per layer) and the always-on dense
    MLP beside the experts (``model.shared_expert_ffn``), in each family's own convention:

    * Mixtral (``num_local_experts``): every layer;
    * Qwen2-MoE / Qwen3-MoE: layer i is sparse when ``(i + 1) % decoder_sparse_step == 0`` and i is
      not in ``mlp_only_layers`` (defaults 1 and [] for those model types); shared expert
      ``shared_expert_intermediate_size``;
    * DeepSeek-V2/V3: layer i is MoE when ``i >= first_k_dense_replace`` and ``i % moe_layer_freq
      == 0``; ``n_shared_experts`` x ``moe_intermediate_size`` shared;
    * OpenMoE (ColossalAI): layer i is MoE when ``(i + 1) % moe_layer_interval == 0``; each MoE
      layer also runs a dense ``extra_mlp`` of ``intermediate_size``.
    """
    ff = em.ff

    def val(key: str):
        v = em.value(prefix + key)
        return v

    def ival(key: str, default=None):
        v = val(key)
        if v is None:
            return default, None
        if not v.known:
            return "unknown", v
        try:
            return as_int(v.value), v
        except (TypeError, ValueError):
            return "unknown", v

    mtype = val("model_type")
    mt = str(mtype.value).lower() if mtype is not None and mtype.known else ""
    layers, _ = ival("num_hidden_layers")
    if layers == "unknown":
        layers = None

    def put_pattern(pattern_of, anchor, source):
        if anchor is None:
            return
        if layers is None or layers <= 0:
            ff.facts.add("model.moe_layer_freq", Value.unknown("number of layers unknown", anchor.span, source))
            return
        pat = [1 if pattern_of(i) else 0 for i in range(layers)]
        ff.facts.add("model.moe_layer_freq", Value(pat, anchor.span, True, "", source))

    def unknown(anchor, why):
        ff.facts.add("model.moe_layer_freq", Value.unknown(why, anchor.span, anchor.source))

    if em.node(prefix + "moe_layer_interval") is not None:  # OpenMoE
        every, v = ival("moe_layer_interval")
        if every == "unknown" or not every or every <= 0:
            unknown(v, "moe_layer_interval not a positive integer")
        else:
            put_pattern(lambda i: (i + 1) % every == 0, v, f"{em.name} moe_layer_interval {every}")
            ffn, fv = ival("intermediate_size")
            if isinstance(ffn, int):
                ff.facts.add("model.shared_expert_ffn", Value(ffn, fv.span, True, "",
                                                              f"{em.name} intermediate_size (OpenMoE extra_mlp)"))
        return
    routed, rv = ival("n_routed_experts")
    if rv is not None:  # DeepSeek-V2/V3
        first, fv = ival("first_k_dense_replace", 0)
        freq, qv = ival("moe_layer_freq", 1)
        if "unknown" in (first, freq) or not freq or freq <= 0:
            unknown(_first(fv, qv, rv), "first_k_dense_replace / moe_layer_freq unknown")
        elif routed not in ("unknown", None, 0):
            put_pattern(lambda i: i >= first and i % freq == 0, _first(fv, qv, rv),
                        f"{em.name} first_k_dense_replace {first}, moe_layer_freq {freq}")
        shared, sv = ival("n_shared_experts")
        mffn, _ = ival("moe_intermediate_size")
        if isinstance(shared, int) and isinstance(mffn, int) and shared > 0:
            ff.facts.add("model.shared_expert_ffn", Value(shared * mffn, sv.span, True, "",
                                                          f"{em.name} n_shared_experts x moe_intermediate_size"))
        return
    qwen = mt in ("qwen2_moe", "qwen3_moe")
    if qwen or em.node(prefix + "decoder_sparse_step") is not None:
        experts, ev = ival("num_experts")
        step, sv = ival("decoder_sparse_step", 1 if qwen else None)
        only = val("mlp_only_layers")
        anchor = _first(sv, ev, only, mtype)
        only_list = [] if (only is None and qwen) else (only.value if only is not None and only.known else None)
        if step in ("unknown", None) or not isinstance(only_list, list) or not (isinstance(step, int) and step > 0):
            if anchor is not None:
                unknown(anchor, "decoder_sparse_step / mlp_only_layers unknown")
        elif isinstance(experts, int) and experts > 0:
            skip = {x for x in only_list if isinstance(x, int)}
            put_pattern(lambda i: i not in skip and (i + 1) % step == 0, anchor,
                        f"{em.name} decoder_sparse_step {step}, mlp_only_layers {sorted(skip)}")
        em.add("model.shared_expert_ffn", prefix + "shared_expert_intermediate_size", as_int)
        return
    n, nv = ival("num_local_experts")
    if nv is not None and isinstance(n, int) and n > 0:  # Mixtral: a sparse MoE block in every layer
        ff.facts.add("model.moe_layer_freq", Value(1, nv.span, True, "", f"{em.name} num_local_experts (every layer)"))
