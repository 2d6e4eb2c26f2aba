"""torchtitan TOML job configs, every field generation seen in the wild:

* current: ``[parallelism] data_parallel_replicate_degree / data_parallel_shard_degree (-1 =
  inferred) / tensor_parallel_degree / pipeline_parallel_degree / context_parallel_degree /
  expert_parallel_degree / pipeline_parallel_microbatch_size / module_fqns_per_model_part`` and
  ``[training] local_batch_size / global_batch_size / seq_len``;
* older: degrees under ``[training]`` (``data_parallel_degree``, ``tensor_parallel_degree``) and
  ``[experimental]`` (``pipeline_parallel_degree``, ``context_parallel_degree``), ``batch_size``.

The world size comes from the launcher (``NGPU`` of run_train.sh, torchrun), never from the file.
"""

from __future__ import annotations

from pathlib import Path

from parallint.model.facts import FileFacts, Value
from parallint.readers.cfgutil import Emitter, Partition, as_int, open_config
from parallint.readers.yamlpos import PNode

KIND = "torchtitan"


def read(path: str, abspath: Path, text: str) -> FileFacts:
    ff, root = open_config(path, abspath, text, KIND, "toml", "torchtitan", parse_as="toml")
    if root is None:
        return ff
    em = Emitter(ff, root)
    em.framework("torchtitan")
    ff.data.partitions = emit_torchtitan(em, root)
    return ff


def _degree(v):
    i = as_int(v)
    if i == 0:
        raise ValueError(v)
    return i


def emit_torchtitan(em: Emitter, root: PNode, config_name: str = "") -> list[Partition]:
    ff = em.ff
    sec = [s for s in ("parallelism", "training", "experimental") if (node := root.get(s)) is not None and node.is_map]

    def first(*keys: str) -> str | None:
        for s in sec:
            for k in keys:
                if root.path(f"{s}.{k}") is not None:
                    return f"{s}.{k}"
        return None

    def add_degree(fact: str, *keys: str) -> Value | None:
        p = first(*keys)
        if p is None:
            return None
        v = em.value(p)
        if v is None:
            return None
        if v.known:
            iv = v.map(_degree)
            if iv.known and iv.value < 0:
                v = Value.unknown("inferred (-1)", v.span, v.source)
            else:
                v = iv
        ff.facts.add(fact, v)
        return v

    add_degree("parallel.dp_replicate", "data_parallel_replicate_degree")
    add_degree("parallel.dp_shard", "data_parallel_shard_degree", "data_parallel_degree")
    tp = add_degree("parallel.tp", "tensor_parallel_degree")
    if tp is not None and tp.known and tp.value > 1:
        # torchtitan's TP plan shards the norms' sequence dimension (SequenceParallel) whenever TP > 1
        ff.facts.add("parallel.sequence_parallel", Value(True, tp.span, True, "",
                                                         f"{tp.source} > 1 (torchtitan shards norms by sequence)"))
    pp = add_degree("parallel.pp", "pipeline_parallel_degree")
    add_degree("parallel.cp", "context_parallel_degree")
    add_degree("parallel.ep", "expert_parallel_degree")
    add_degree("parallel.etp", "expert_tensor_parallel_degree")
    em.add("training.micro_batch", ["training.local_batch_size", "training.batch_size"], as_int)
    gb = em.node("training.global_batch_size")
    if gb is not None:
        v = em.value("training.global_batch_size")
        if v is not None and v.known:
            iv = v.map(as_int)
            v = Value.unknown("derived (-1)", v.span, v.source) if iv.known and iv.value < 0 else iv
        if v is not None:
            ff.facts.add("training.global_batch", v)
    em.add("model.seq_len", "training.seq_len", as_int)
    _emit_model(em, root)
    mb = first("pipeline_parallel_microbatch_size")
    mb_v = em.value(mb) if mb else None
    if mb_v is not None:
        ff.facts.add("training.pp_microbatch", mb_v.map(as_int))
    sched = first("pipeline_parallel_schedule")
    if sched:
        sched_v = em.value(sched)
        if sched_v is not None:
            ff.facts.add("training.pp_schedule", sched_v)
    parts: list[Partition] = []
    fq = first("module_fqns_per_model_part")
    if fq:
        node = root.path(fq)
        if node is not None and node.is_seq and all(n.is_seq for n in node.value):
            stages = [[str(x.value) for x in n.value] for n in node.value]
            parts.append(Partition(stages, node.span, [n.span for n in node.value],
                                   f"{em.name} {fq}", pp=pp, config=config_name))
    return parts


#: torchtitan model names whose flavors are published models under another preset name
_PRESET_ALIASES = {"llama3": "llama-3.1"}
_AC_MODES = ("none", "selective", "full")


def _ac_mode(v) -> str:
    s = str(v).strip().lower()
    if s not in _AC_MODES:
        raise ValueError(v)  # memory_budget and later modes: not a recompute kind the estimator models
    return s


def _emit_model(em: Emitter, root: PNode) -> None:
    """``model.preset`` from ``[model] name`` + ``flavor`` when that is one of parallint's presets;
    ``training.recompute`` from ``[activation_checkpoint] mode``; CPU offload."""
    from parallint.estimator.spec import preset_name

    ff = em.ff
    name, flavor = em.value("model.name"), em.value("model.flavor")
    if name is not None and flavor is not None and name.known and flavor.known \
            and isinstance(name.value, str) and isinstance(flavor.value, str):
        n, fl = name.value.strip(), flavor.value.strip()
        for cand in (f"{n}-{fl}", f"{_PRESET_ALIASES.get(n.lower(), '')}-{fl}"):
            canon = None if cand.startswith("-") else preset_name(cand)
            if canon is not None:
                ff.facts.add("model.preset", Value(canon, flavor.span, True, "",
                                                   f"{em.name} model.name {n!r} + model.flavor {fl!r}"))
                break
    mode = em.value("activation_checkpoint.mode")
    if mode is not None:
        if mode.known:
            mode = mode.map(_ac_mode)
        ff.facts.add("training.recompute", mode)
    from parallint.readers.deepspeed import bool_offload

    for key in ("training.enable_cpu_offload",):
        off = root.path(key)
        if off is not None:
            v = bool_offload(off, off.span, f"{em.name} {key}")
            if v is not None:
                ff.facts.add("training.offload", v)
