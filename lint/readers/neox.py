"""gpt-neox YAML (JSON with comments; keys with ``_`` or ``-``): ``model_parallel_size`` = TP,
``pipe_parallel_size`` = PP (0 = no pipeline), shape, the DeepSpeed batch triple and ZeRO stage.

The MLP width is the one gpt-neox's ``ParallelMLP`` builds (``intermediate_size`` is the fused
gate + value width before the gated two-thirds scaling, see :func:`mlp_widths`); ``norm``,
``pos_emb``, ``no_weight_tying``, the ``use_bias_in_*`` switches, ``checkpoint_activations`` and
the ``zero_optimization`` offload sections become facts only when the file states them."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

from parallint.model.diagnostics import Span
from parallint.model.facts import FileFacts, Value
from parallint.readers.cfgutil import Emitter, as_bool, as_int, choice, mask_facts, open_config, precision_of, to_value
from parallint.readers.yamlpos import PNode

KIND = "neox"


def _normalize(node: PNode) -> PNode:
    """Top-level keys with '-' become '_' (neox accepts both)."""
    if not node.is_map:
        return node
    out: dict[str, PNode] = {}
    ks: dict[str, Span] = {}
    for k, v in node.items():
        nk = k.replace("-", "_")
        out.setdefault(nk, v)
        ks.setdefault(nk, node.key_spans.get(k, v.span))
    return PNode(out, node.span, ks, node.duplicates)


#: gpt-neox activations whose MLP is gated (megatron/model/activations.py ``get_activation``):
#: linear1 produces gate and value halves, i.e. three h x ffn matrices like SwiGLU
#: (the job spec's MLP kind: ``swiglu`` = gated, 3 matrices; ``gelu`` = plain, 2 matrices)
_mlp = choice({**dict.fromkeys(("swiglu", "geglu", "reglu", "bilinear", "glu"), "swiglu"),
               **dict.fromkeys(("gelu", "relu", "softsign", "swish", "mish", "silu"), "gelu")})
#: scalenorm, non_parametric_layernorm: not a shape the estimator models
_norm = choice({"rmsnorm": "rmsnorm", "te_rmsnorm": "rmsnorm", "layernorm": "layernorm", "te_layernorm": "layernorm"})


def _round_up(x: int, m: int) -> int:
    return m * ((x + m - 1) // m)


def mlp_widths(hidden: int, intermediate: int | None, expansion: float | None, gated: bool,
               multiple_of: int = 1) -> tuple[int, int]:
    """(linear1 output width, linear2 input width) of gpt-neox's ``ParallelMLP``.

    As in megatron/model/transformer.py: the width is ``intermediate_size``, else
    ``int(expansion_factor * h)``, else 4h; a gated activation takes two thirds of it for the fused
    gate+value projection and half of that for the value branch; linear1 is rounded up to a
    multiple of ``2 * mlp_multiple_of``, linear2's input to a multiple of ``mlp_multiple_of``.
    """
    if intermediate:
        ffn = intermediate
    elif expansion:
        ffn = int(expansion * hidden)
    else:
        ffn = 4 * hidden
    ffn_in = ffn
    if gated:
        ffn = int(ffn * 2 / 3)
        ffn_in = ffn // 2
    return _round_up(ffn, 2 * multiple_of), _round_up(ffn_in, multiple_of)


def read(path: str, abspath: Path, text: str) -> FileFacts:
    ff, raw = open_config(path, abspath, text, KIND, "yaml", "neox")
    if raw is None:
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
    act = em.add("model.mlp", "activation", _mlp)
    _emit_ffn(em, root, act)
    em.add("model.norm", "norm", _norm)
    pos = em.value("pos_emb")
    if pos is not None and pos.known and str(pos.value).strip().lower() in ("rotary", "learned"):
        ff.facts.add("model.position_embeddings", Value(
            "rope" if str(pos.value).strip().lower() == "rotary" else "learned", pos.span, True, "", pos.source))
    em.add("model.tied_embeddings", "no_weight_tying", lambda v: not as_bool(v))
    _emit_bias(em, root)
    em.add("training.recompute", "checkpoint_activations", lambda v: "full" if as_bool(v) else "none")
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
            assert n is not None  # to_value gives None for an absent node
            try:
                if as_bool(v.value):
                    ff.facts.add("training.precision", Value(key, n.span, True, "", v.source))
            except ValueError:
                pass
    _emit_offload(ff, root, em.name)
    prec = to_value(root.get("precision"), f"{em.name} precision")
    if prec is not None and prec.known and precision_of(prec.value):
        ff.facts.add("training.precision", Value(precision_of(prec.value), prec.span, True, "", prec.source))
    if left_at_one(root):
        mask_facts(ff, CONVENTION, ("parallel.tp", "parallel.pp"))
    return ff


#: configs/README.md of gpt-neox: "The parallelism settings are left at 1 in all configs, as the
#: settings you want will be highly dependent on your compute setup and network topology."
CONVENTION = ("model_parallel_size and pipe_parallel_size left at 1, as gpt-neox configs do by "
              "convention (to be set for the cluster at hand)")


def left_at_one(root: PNode) -> bool:
    """Both parallel degrees at exactly 1 (or one at 1 and the other not stated): gpt-neox's
    placeholder layout, not a chosen one. ``pipe_parallel_size: 0`` (no pipeline engine) is a
    choice, and so is any degree above 1."""
    vals: list[int | None] = []
    for key in ("model_parallel_size", "pipe_parallel_size"):
        n = root.get(key)
        if n is None:
            vals.append(None)
            continue
        try:
            vals.append(as_int(n.value))
        except (TypeError, ValueError):
            return False
    return vals != [None, None] and all(v in (None, 1) for v in vals)


def _emit_ffn(em: Emitter, root: PNode, act: Value | None) -> None:
    """``model.ffn`` = the value-branch width gpt-neox builds (see :func:`mlp_widths`)."""
    ff = em.ff
    inter, exp = root.get("intermediate_size"), root.get("expansion_factor")
    gated = act is not None and act.known and act.value == "swiglu"
    if inter is None and exp is None and not gated:
        return  # nothing stated: gpt-neox's plain 4h MLP is also the estimator's default
    # not None: with neither size stated, the MLP is gated, so model.mlp came from `activation`
    where = cast(PNode, inter if inter is not None else exp if exp is not None else root.get("activation"))
    key = "intermediate_size" if inter is not None else "expansion_factor" if exp is not None else "activation"
    source = f"{em.name} {key}"
    raw: dict[str, Any] = {}
    for k in ("hidden_size", "intermediate_size", "expansion_factor", "mlp_multiple_of"):
        v = to_value(root.get(k), f"{em.name} {k}")
        if v is not None and not v.known:
            ff.facts.add("model.ffn", Value.unknown(f"{k}: {v.why}", where.span, source))
            return
        raw[k] = None if v is None else v.value
    if act is not None and not act.known:
        ff.facts.add("model.ffn", Value.unknown(f"activation: {act.why}", where.span, source))
        return
    try:
        hidden = None if raw["hidden_size"] is None else as_int(raw["hidden_size"])
        inter_v = None if raw["intermediate_size"] is None else as_int(raw["intermediate_size"])
        exp_v = None if raw["expansion_factor"] is None else float(raw["expansion_factor"])
        mult = 1 if raw["mlp_multiple_of"] is None else as_int(raw["mlp_multiple_of"])  # neox default 1
    except (TypeError, ValueError):
        ff.facts.add("model.ffn", Value.unknown("cannot interpret the MLP size", where.span, source))
        return
    if mult <= 0 or (not inter_v and not hidden):
        return
    w1, w2 = mlp_widths(hidden or 0, inter_v, exp_v, gated, mult)
    how = (f"gpt-neox gated MLP: linear1 {w1} = gate + value, linear2 {w2}" if gated
           else f"gpt-neox MLP: linear1 {w1}, linear2 {w2}")
    ff.facts.add("model.ffn", Value(w2, where.span, True, "", f"{source} ({how})"))


def _emit_bias(em: Emitter, root: PNode) -> None:
    """``model.bias`` only when the attention and MLP linear-bias switches agree (both default True)."""
    vals = []
    span = None
    for k in ("use_bias_in_attn_linear", "use_bias_in_mlp"):
        n = root.get(k)
        v = to_value(n, f"{em.name} {k}")
        if v is None:
            vals.append(True)  # gpt-neox's default
            continue
        if not v.known:
            return
        try:
            vals.append(as_bool(v.value))
        except ValueError:
            return
        assert n is not None  # to_value gives None for an absent node
        span = span or n.span
    if span is None or len(set(vals)) != 1:
        return  # nothing stated, or attention without biases but the MLP with them: not one flag
    em.ff.facts.add("model.bias", Value(vals[0], span, True, "", f"{em.name} use_bias_in_attn_linear/use_bias_in_mlp"))


def _emit_offload(ff: FileFacts, root: PNode, name: str) -> None:
    from parallint.readers.deepspeed import offload_value

    zo = root.get("zero_optimization")
    if zo is not None and zo.is_map:
        v = offload_value(zo, f"{name} zero_optimization")
        if v is not None:
            ff.facts.add("training.offload", v)
