"""NeMo (1.x, Hydra/OmegaConf) training YAML: ``trainer.devices × trainer.num_nodes`` is the
file's own world size; ``model.*_parallel_size``, batch and shape keys. ``${...}`` interpolations
are followed when they point inside the file; resolvers (``${multiply:..}``, ``${oc.env:..}``) and
references outside it (``${training.model...}`` of the launcher) stay unknown; so does Hydra's
``???``."""

from __future__ import annotations

import functools
import re
from pathlib import Path

from parallint.model.facts import FileFacts, Value
from parallint.readers.cfgutil import (
    Emitter, ResolvingEmitter, as_bool, as_int, choice, mask_facts, not_launched_reason, open_config,
    positive_int, precision_of, to_value,
)

KIND = "nemo"


def read(path: str, abspath: Path, text: str) -> FileFacts:
    ff, root = open_config(path, abspath, text, KIND, "yaml", "nemo")
    if root is None:
        return ff
    em = ResolvingEmitter(ff, root)
    em.framework("nemo")
    emit_trainer(em, "trainer.")
    emit_megatron_model(em, "model.")
    why = not_launched_reason(path)
    if why:
        mask_facts(ff, why)
    else:
        _restored_model(em)
    return ff


#: what a model restored from a checkpoint takes from the checkpoint rather than from this file
RESTORED_KEYS = ("parallel.tp", "parallel.pp", "parallel.vpp", "parallel.cp", "parallel.ep", "parallel.etp",
                 "parallel.sequence_parallel", "parallel.pp_layout", "training.recompute",
                 "model.layers", "model.hidden", "model.ffn", "model.heads", "model.kv_heads", "model.head_dim",
                 "model.vocab", "model.seq_len", "model.num_experts", "model.top_k", "model.mlp", "model.norm",
                 "model.bias", "model.position_embeddings", "model.tied_embeddings")


#: keys naming the checkpoint a fine-tuning run restores its model from, with this file's ``model``
#: section merged over the checkpoint's config, and whether the key restores even when it is null
#: here: NeMo SFT's ``model.restore_from_path`` (null: pretraining from scratch, as the launcher's
#: training configs leave it) and NeMo-Aligner's ``pretrained_checkpoint.restore_from_path`` (null
#: here, always given on the command line: every Aligner trainer restores from it)
MERGED_RESTORE_KEYS = (("model.restore_from_path", False), ("pretrained_checkpoint.restore_from_path", True))

#: the parallel degrees a merged restore takes from the checkpoint when this file does not state them
MERGED_DEGREES = ("parallel.tp", "parallel.pp", "parallel.vpp", "parallel.cp", "parallel.ep", "parallel.etp")


def _restored_model(em: Emitter) -> None:
    """``model.pretrained_model_path`` (NeMo's T5 LM-adaptation and similar fine-tuning scripts):
    the script builds the model from the checkpoint's own config and copies over only batch sizes,
    precision, data and optimizer from this file; its parallel degrees and shape are not used.

    ``model.restore_from_path`` / ``pretrained_checkpoint.restore_from_path``: this file's model
    section is merged over the checkpoint's config, so a degree it states is used, and one it does
    not state is the checkpoint's (unknown here), not NeMo's default of 1."""
    n = em.node("model.pretrained_model_path")
    if n is not None:
        mask_facts(em.ff, "model restored from model.pretrained_model_path: layout and shape come from the checkpoint",
                   RESTORED_KEYS)
        return
    for key, even_null in MERGED_RESTORE_KEYS:
        n = em.node(key)
        if n is None or (n.value is None and not even_null):
            continue
        for fact in MERGED_DEGREES:
            if not em.ff.facts.all(fact):
                em.ff.facts.add(fact, Value.unknown(
                    f"not stated here: the model restored from {key} takes it from the checkpoint",
                    n.span, f"{em.name} {key}"))
        return


def emit_trainer(em: Emitter, prefix: str) -> None:
    """Lightning ``trainer`` section: devices, num_nodes, precision, strategy."""
    ff = em.ff
    dev = em.add("parallel.procs_per_node", f"{prefix}devices", positive_int)
    nodes = em.add("parallel.nodes", f"{prefix}num_nodes", positive_int)
    if dev is not None and nodes is not None and dev.known and nodes.known:
        ff.facts.add("parallel.world_size", Value(
            dev.value * nodes.value, dev.span, True, "",
            f"{em.name} trainer.devices × trainer.num_nodes ({dev.value} × {nodes.value})"))
        ff.standalone_job = True
    em.add("training.precision", f"{prefix}precision", _precision)
    strat = em.node(f"{prefix}strategy")
    if strat is not None:
        if isinstance(strat.value, str):
            s = strat.value.strip().lower()
            if s.startswith("ddp_find_unused_parameters_"):
                on = s.endswith("_true")
                ff.facts.add("ddp.find_unused_parameters", Value(on, strat.span, True, "", f"{em.name} {prefix}strategy"))
        elif strat.is_map:
            em.add("ddp.find_unused_parameters", f"{prefix}strategy.find_unused_parameters", as_bool)


def _precision(v):
    p = precision_of(v)
    if p is None:
        raise ValueError(v)
    return p


def emit_megatron_model(em: Emitter, prefix: str) -> None:
    """A Megatron-style model section with snake_case keys (NeMo ``model:``, NeMo-2 ``config``)."""
    def k(*names: str) -> list[str]:
        return [f"{prefix}{n}" for n in names]

    em.add("parallel.tp", k("tensor_model_parallel_size"), as_int)
    em.add("parallel.pp", k("pipeline_model_parallel_size"), as_int)
    em.add("parallel.vpp", k("virtual_pipeline_model_parallel_size"), as_int)
    em.add("parallel.cp", k("context_parallel_size"), as_int)
    em.add("parallel.ep", k("expert_model_parallel_size"), as_int)
    em.add("parallel.etp", k("expert_tensor_parallel_size"), as_int)
    em.add("parallel.sequence_parallel", k("sequence_parallel"), as_bool)
    em.add("training.micro_batch", k("micro_batch_size"), as_int)
    em.add("training.global_batch", k("global_batch_size"), as_int)
    em.add("model.layers", k("num_layers"), as_int)
    em.add("model.hidden", k("hidden_size"), as_int)
    em.add("model.ffn", k("ffn_hidden_size"), as_int)
    em.add("model.heads", k("num_attention_heads"), as_int)
    em.add("model.kv_heads", k("num_query_groups"), as_int)
    em.add("model.head_dim", k("kv_channels"), as_int)
    em.add("model.seq_len", k("encoder_seq_length", "seq_length"), as_int)
    em.add("model.num_experts", k("num_moe_experts"), as_int)
    em.add("model.top_k", k("moe_router_topk"), as_int)
    vocab = em.add("model.vocab", k("vocab_size"), as_int)
    if vocab is None:
        _tokenizer_vocab(em, prefix)
    em.add("model.norm", k("normalization"), _norm)
    em.add("model.mlp", k("activation"), _mlp)
    em.add("model.bias", k("bias"), as_bool)
    em.add("model.position_embeddings", k("position_embedding_type"), _pos)
    em.add("model.tied_embeddings", k("share_embeddings_and_output_weights"), as_bool)
    _recompute(em, prefix)
    _offload(em, prefix)
    # anything that makes the pipeline split uneven or not a plain decoder stack
    for key in ("pipeline_model_parallel_split_rank", "pipeline_model_parallel_layout",
                "first_pipeline_num_layers", "last_pipeline_num_layers",
                "num_layers_in_first_pipeline_stage", "num_layers_in_last_pipeline_stage",
                "account_for_embedding_in_pipeline_split", "account_for_loss_in_pipeline_split",
                "hybrid_override_pattern", "encoder", "decoder"):
        n = em.node(f"{prefix}{key}")
        if n is None or n.value in (None, False, 0) or (isinstance(n.value, (dict, list)) and not n.value):
            continue
        v = to_value(n, f"{em.name} {prefix}{key}")
        if v is not None and v.known and isinstance(v.value, dict) and key in ("encoder", "decoder"):
            v = Value(f"{key} section", n.span, True, "", v.source)
        em.ff.facts.add("parallel.pp_layout", v if v is not None else Value.unknown("uneven", n.span))
        break
    opt = em.node(f"{prefix}optim.name")
    if opt is not None and isinstance(opt.value, str) and "distributed" in opt.value:
        em.ff.facts.add("parallel.distributed_optimizer", Value(True, opt.span, True, "", f"{em.name} {prefix}optim.name"))


#: layernorm1p: weight (as 1 + w) and bias
_norm = choice({"rmsnorm": "rmsnorm", "rms_norm": "rmsnorm",
                "layernorm": "layernorm", "layernorm1p": "layernorm", "layer_norm": "layernorm"})
#: NeMo/Megatron activations (``model.activation``): the gated ones have two input projections
#: of ``ffn_hidden_size`` each (fc1 = 2 x ffn), i.e. three h x ffn matrices like SwiGLU
_mlp = choice({**dict.fromkeys(("swiglu", "fast-swiglu", "geglu", "fast-geglu", "reglu", "fast-reglu"), "swiglu"),
               **dict.fromkeys(("gelu", "squared-relu", "relu", "silu"), "gelu")})
#: alibi, kerple, xpos, none...: not a shape the estimator models
_pos = choice({"learned_absolute": "learned", "learned": "learned", "rope": "rope"})


def _recompute(em: Emitter, prefix: str) -> None:
    """``activations_checkpoint_granularity``: selective / full; an explicit null = no recompute."""
    key = f"{prefix}activations_checkpoint_granularity"
    n = em.node(key)
    if n is None:
        return
    source = f"{em.name} {key}"
    if n.value is None or (isinstance(n.value, str) and n.value.strip().lower() in ("null", "none", "~")):
        em.ff.facts.add("training.recompute", Value("none", n.span, True, "", source))
        return
    v = to_value(n, source)
    if v is None:
        return
    if v.known:  # any other word ("uniform" and "block" are methods, not granularities) is unknown
        v = v.map(_granularity)
    em.ff.facts.add("training.recompute", v)


_granularity = choice({"selective": "selective", "full": "full"})


def _offload(em: Emitter, prefix: str) -> None:
    """``model.cpu_offloading`` (Transformer Engine offloads activations/weights of layers) and
    Lightning's offloading strategies (``deepspeed_stage_2_offload``, ``cpu_offload``)."""
    from parallint.readers.deepspeed import bool_offload

    for key in (f"{prefix}cpu_offloading", f"{prefix}optim.cpu_offload"):
        n = em.node(key)
        if n is not None:
            v = bool_offload(n, n.span, f"{em.name} {key}")
            if v is not None:
                em.ff.facts.add("training.offload", v)
    strat = em.node("trainer.strategy") if prefix == "model." else None
    if strat is None:
        return
    if isinstance(strat.value, str) and "offload" in strat.value.lower():
        em.ff.facts.add("training.offload", Value(True, strat.span, True, "", f"{em.name} trainer.strategy"))
    elif strat.is_map:
        for k in ("cpu_offload", "offload_optimizer", "offload_parameters", "offload_params"):
            n = strat.get(k)
            if n is not None:
                v = bool_offload(n, strat.key_spans.get(k, n.span), f"{em.name} trainer.strategy.{k}")
                if v is not None and not (v.known and not isinstance(v.value, bool)):
                    em.ff.facts.add("training.offload", v)


#: Hugging Face tokenizers whose vocabulary size is published (the ``vocab_size`` of their config)
@functools.cache  # compiled at the first use, not at import (start-up)
def _tokenizer_vocab_table() -> tuple[tuple[re.Pattern[str], int], ...]:
    return (
        (re.compile(r"^meta-llama/(meta-)?llama-3(\.[0-9])?-", re.I), 128256),
        (re.compile(r"^meta-llama/llama-2-", re.I), 32000),
        (re.compile(r"^(mistralai|mistral-community)/mixtral-8x(7|22)b(-instruct)?-v0\.1$", re.I), 32000),
    )


def _tokenizer_vocab(em: Emitter, prefix: str) -> None:
    """``model.vocab`` from a Hugging Face tokenizer named in ``tokenizer.type``, padded as Megatron
    pads it: up to a multiple of ``make_vocab_size_divisible_by`` (NeMo default 128) x TP."""
    tok = em.node(f"{prefix}tokenizer.type")
    lib = em.node(f"{prefix}tokenizer.library")
    if tok is None or not isinstance(tok.value, str):
        return
    if lib is not None and str(lib.value).strip().lower() != "huggingface":
        return
    name = tok.value.strip()
    vocab = next((n for rx, n in _tokenizer_vocab_table() if rx.search(name)), None)
    if vocab is None:
        return
    div = em.node(f"{prefix}make_vocab_size_divisible_by")
    tp = em.ff.facts.all("parallel.tp")
    try:
        d = 128 if div is None else as_int(div.value)
    except (TypeError, ValueError):
        d = None
    t = tp[0].value if len(tp) == 1 and tp[0].known and isinstance(tp[0].value, int) else (1 if not tp else None)
    if not d or not t or d <= 0 or t <= 0:
        em.ff.facts.add("model.vocab", Value.unknown("padding of the tokenizer vocabulary unknown", tok.span))
        return
    m = d * t
    padded = -(-vocab // m) * m
    em.ff.facts.add("model.vocab", Value(padded, tok.span, True, "",
                                         f"{em.name} {prefix}tokenizer.type {name} ({vocab} tokens, "
                                         f"padded to a multiple of {d} x TP {t})"))
