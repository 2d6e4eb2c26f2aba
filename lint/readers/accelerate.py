"""accelerate config YAML (``accelerate config`` output): ``num_processes`` is the total over all
machines, ``num_machines`` the node count; ``distributed_type``, ``mixed_precision``,
``fsdp_config``, ``deepspeed_config`` (inline or ``deepspeed_config_file``), ``parallelism_config``."""

from __future__ import annotations

from pathlib import Path

from parallint.model.facts import FileFacts, Value
from parallint.readers.cfgutil import Emitter, as_int, open_config, positive_int, precision_of, to_value

KIND = "accelerate"


def read(path: str, abspath: Path, text: str) -> FileFacts:
    ff, root = open_config(path, abspath, text, KIND, "yaml", "accelerate")
    if root is None:
        return ff
    em = Emitter(ff, root)
    em.framework("accelerate")
    dtype = to_value(root.get("distributed_type"), f"{em.name} distributed_type")
    # YAML 1.1 reads an unquoted NO as false
    single = dtype is not None and dtype.known and (dtype.value is False or str(dtype.value).upper() == "NO")
    if not single:
        nproc = em.add("parallel.world_size", "num_processes", positive_int)
        nmach = em.add("parallel.nodes", "num_machines", positive_int)
        if nproc is not None and nproc.known:
            ff.standalone_job = True
            if nmach is not None and nmach.known and nproc.value % nmach.value == 0:
                ff.facts.add("parallel.procs_per_node", Value(
                    nproc.value // nmach.value, nproc.span, True, "",
                    f"{em.name} num_processes / num_machines"))
        gids = to_value(root.get("gpu_ids"), f"{em.name} gpu_ids")
        if gids is not None and gids.known and not isinstance(gids.value, bool) and \
                str(gids.value).strip().lower() not in ("all", ""):
            # accelerate launch exports gpu_ids as CUDA_VISIBLE_DEVICES for the processes it starts
            ff.facts.add("hardware.visible_devices", Value(str(gids.value), gids.span, True, "", gids.source))
    mp = to_value(root.get("mixed_precision"), f"{em.name} mixed_precision")
    if mp is not None and mp.known and precision_of(mp.value):
        ff.facts.add("training.precision", Value(precision_of(mp.value), mp.span, True, "", mp.source))
    elif mp is not None and not mp.known:
        ff.facts.add("training.precision", mp)
    # FSDP
    if dtype is not None and dtype.known and str(dtype.value).upper() == "FSDP":
        strat = root.path("fsdp_config.fsdp_sharding_strategy")
        v = to_value(strat, f"{em.name} fsdp_config.fsdp_sharding_strategy")
        if v is not None:
            ff.facts.add("parallel.fsdp", v)
            if v.known and str(v.value).upper() in ("FULL_SHARD", "1", "HYBRID_SHARD"):
                ff.facts.add("parallel.zero_stage", Value(3, v.span, True, "", v.source))
    _offload(ff, root, em.name)
    # DeepSpeed plugin
    ds = root.get("deepspeed_config")
    if ds is not None and ds.is_map:
        em.add("parallel.zero_stage", "deepspeed_config.zero_stage", as_int)
        em.add("training.grad_accum", "deepspeed_config.gradient_accumulation_steps", as_int)
        f = to_value(ds.get("deepspeed_config_file"), f"{em.name} deepspeed_config.deepspeed_config_file")
        if f is not None and f.known and isinstance(f.value, str) and f.value.strip():
            ff.links.append(f)
    # ParallelismConfig (accelerate >= 1.10)
    pc = root.get("parallelism_config")
    if pc is not None and pc.is_map:
        for key, fact in (("parallelism_config_dp_replicate_size", "parallel.dp_replicate"),
                          ("parallelism_config_dp_shard_size", "parallel.dp_shard"),
                          ("parallelism_config_tp_size", "parallel.tp"),
                          ("parallelism_config_cp_size", "parallel.cp"),
                          ("parallelism_config_sp_size", "parallel.sp")):
            em.add(fact, [f"parallelism_config.{key}", f"parallelism_config.{key.replace('parallelism_config_', '')}"], as_int)
    return ff


def _offload(ff: FileFacts, root, name: str) -> None:
    """FSDP ``fsdp_offload_params`` (CPUOffload of parameters, gradients and optimizer states) and
    the DeepSpeed plugin's ``offload_optimizer_device`` / ``offload_param_device`` (none/cpu/nvme)."""
    from parallint.readers.deepspeed import bool_offload

    fsdp = root.get("fsdp_config")
    if fsdp is not None and fsdp.is_map:
        for key in ("fsdp_offload_params",):
            n = fsdp.get(key)
            if n is not None:
                v = bool_offload(n, fsdp.key_spans.get(key, n.span), f"{name} fsdp_config.{key}")
                if v is not None:
                    ff.facts.add("training.offload", v)
    ds = root.get("deepspeed_config")
    if ds is not None and ds.is_map:
        for key in ("offload_optimizer_device", "offload_param_device"):
            n = ds.get(key)
            v = to_value(n, f"{name} deepspeed_config.{key}")
            if v is None:
                continue
            if n.value is None or str(n.value).strip().lower() == "none":
                v = Value("none", n.span, True, "", v.source)  # accelerate's "no offload" device
            span = ds.key_spans.get(key, n.span)
            if not v.known:
                ff.facts.add("training.offload", Value.unknown(v.why, span, v.source))
            else:
                dev = "none" if v.value is False else str(v.value).strip().lower()
                ff.facts.add("training.offload", Value(dev in ("cpu", "nvme"), span, True, "", v.source))
