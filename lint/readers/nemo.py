"""NeMo (1.x, Hydra/OmegaConf) training YAML: ``trainer.devices × trainer.num_nodes`` is the
file's own world size; ``model.*_parallel_size``, batch and shape keys. ``${...}`` interpolations
are followed when they point inside the file; resolvers (``${multiply:..}``, ``${oc.env:..}``) and
references outside it (``${training.model...}`` of the launcher) stay unknown; so does Hydra's
``???``."""

from __future__ import annotations

from pathlib import Path

from parallint.facts import FileFacts, Value
from parallint.readers.cfgutil import (
    ConfigData, Emitter, ResolvingEmitter, as_bool, as_int, load_tree, new_facts, precision_of, to_value,
)

KIND = "nemo"


def read(path: str, abspath: Path, text: str) -> FileFacts:
    ff = new_facts(path, abspath, KIND, text)
    root = load_tree(ff)
    ff.data = ConfigData(root, "yaml", "nemo")
    if root is None or not root.is_map:
        return ff
    em = ResolvingEmitter(ff, root)
    em.framework("nemo")
    emit_trainer(em, "trainer.")
    emit_megatron_model(em, "model.")
    return ff


def emit_trainer(em: Emitter, prefix: str) -> None:
    """Lightning ``trainer`` section: devices, num_nodes, precision, strategy."""
    ff = em.ff
    dev = em.add("parallel.procs_per_node", f"{prefix}devices", _positive_int)
    nodes = em.add("parallel.nodes", f"{prefix}num_nodes", _positive_int)
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


def _positive_int(v):
    i = as_int(v)
    if i <= 0:
        raise ValueError(v)  # -1 = all visible devices: unknown statically
    return i


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
    em.add("model.vocab", k("vocab_size"), as_int)
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
