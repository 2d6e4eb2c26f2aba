"""What the MEM rules share."""

from __future__ import annotations

import functools
import re

from parallint.model.diagnostics import Related, Span
from parallint.model.rule import Example


GIB = float(1 << 30)


#: facts whose unknown value could lower the estimate: when any is unknown the rules stay silent
_LAYOUT_KEYS = ("parallel.tp", "parallel.pp", "parallel.cp", "parallel.ep", "parallel.etp",
                "parallel.vpp", "parallel.zero_stage", "parallel.fsdp", "parallel.dp_shard",
                "parallel.distributed_optimizer", "parallel.sequence_parallel",
                "training.recompute", "model.param_count", "model.layers", "model.hidden",
                "model.preset", "hardware.gpu", "hardware.gpu_memory_bytes")


_INT_LAYOUT_KEYS = ("parallel.tp", "parallel.pp", "parallel.cp", "parallel.ep", "parallel.etp",
                    "parallel.vpp", "parallel.zero_stage", "parallel.dp", "parallel.dp_shard",
                    "parallel.world_size", "parallel.nodes", "parallel.procs_per_node")


_ANCHORS = ("parallel.tp", "parallel.pp", "parallel.zero_stage", "parallel.world_size",
            "parallel.dp", "parallel.nodes", "training.micro_batch", "model.param_count",
            "model.preset", "model.layers")


#: at least one of these must be known: a model file alone says nothing about how it is trained
_LAYOUT_STATED = ("parallel.world_size", "parallel.nodes", "parallel.procs_per_node",
                  "parallel.gpus_per_node", "parallel.tp", "parallel.pp", "parallel.dp",
                  "parallel.zero_stage", "parallel.fsdp", "parallel.dp_shard")


#: architectures the transformer estimator does not model (state-space, recurrent, hybrid)
_OTHER_ARCH = re.compile(r"mamba|griffin|rwkv|hyena|recurrent_?gemma|\bssm\b|hybrid_override", re.I)


#: partial training (frozen towers, adapters) or multimodal models: states the estimator cannot size
_PARTIAL = re.compile(r"\b(freeze\w*|frozen|lora\w*|peft|adapters?|llava|vlm|vision|multimodal|mimo)\b",
                      re.I)


_PARTIAL_NOT_LORA = re.compile(r"\b(freeze\w*|llava|vlm|vision|multimodal|mimo)\b", re.I)


@functools.cache  # compiled at the first use, not at import (start-up)
def _offload() -> re.Pattern[str]:
    return re.compile(r"offload_(optimizer|param)|cpu_offload|offload_params", re.I)


#: a 130B-parameter GPT (72 layers, hidden 12288) on 32 A100-80GB with TP 8 × PP 4, sequence
#: parallelism and selective recompute: it fits, a valid example of both MEM rules
_MEGATRON_130B_FITS = Example(files={"train.sbatch": """
    #!/bin/bash
    #SBATCH --nodes=4
    #SBATCH --gres=gpu:a100:8

    srun torchrun --nnodes 4 --nproc_per_node 8 pretrain_gpt.py \\
        --tensor-model-parallel-size 8 --sequence-parallel \\
        --pipeline-model-parallel-size 4 --recompute-granularity selective \\
        --num-layers 72 --hidden-size 12288 --num-attention-heads 96 \\
        --seq-length 2048 --max-position-embeddings 2048 \\
        --micro-batch-size 1 --global-batch-size 512 --bf16
    """})


#: whether a pattern of this module finds something in a file's text, by (pattern, text): MEM001
#: and MEM002 ask it of every file of every job, and the jobs of a tree share files
_FOUND: dict[tuple[re.Pattern[str], str], bool] = {}


def _finds(pattern: re.Pattern[str], text: str) -> bool:
    key = (pattern, text)
    got = _FOUND.get(key)
    if got is None:
        if len(_FOUND) >= 4096:  # the texts of one run at most, not of every run of a server
            _FOUND.clear()
        got = _FOUND[key] = pattern.search(text) is not None
    return got


def _gib(x: float) -> str:
    return f"{x / GIB:.1f}"


def _setup(job, ctx, unsized_lora: bool = False):
    """(spec, estimate, gpu name, gpu memory) for a job the MEM rules can judge, else None.

    A LoRA whose size is not provable (``training.peft`` unknown) keeps it None; with
    ``unsized_lora`` such a job is estimated as full fine-tuning instead (the upper side, for
    :func:`_unsized_lora`'s hint), and a job without one is None."""
    facts = job.facts
    if not any(facts.get(k) is not None for k in _LAYOUT_STATED):
        return None
    if any(not v.known for v in facts.all("training.peft")) is not unsized_lora:
        return None
    for key in _LAYOUT_KEYS:
        if any(not v.known for v in facts.all(key)):
            return None
    from parallint.estimator.spec import _int

    for key in _INT_LAYOUT_KEYS:  # a value that is not a number, or files that disagree: silent
        values = [v.value for v in facts.known(key)]
        if any(_int(x) is None for x in values) or len({_int(x) for x in values}) > 1:
            return None
    # CPU/NVMe offload moves states off the GPU: not modelled, stay silent (also when unknown)
    if any(not v.known or v.value is not False for v in facts.all("training.offload")):
        return None
    for f in job.files:  # the Python reader states no offload fact: an inline config's keys
        if f.kind == "python" and _finds(_offload(), f.text or ""):
            return None
    # a LoRA whose rank and targets are stated: its words are sized, freezing or a vision tower is not
    partial = _PARTIAL_NOT_LORA if facts.all("training.peft") else _PARTIAL
    for f in job.files:
        if f.kind != "python" and (_finds(_OTHER_ARCH, f.text or "") or _finds(partial, f.text or "")):
            return None
    config = getattr(ctx, "config", None) or {}
    from parallint.estimator.spec import spec_for_job

    spec = spec_for_job(job, config)
    if spec is None:
        return None
    from parallint.estimator.gpus import largest_gpu, resolve_gpu
    from parallint.estimator.memory import estimate
    from parallint.estimator.params import ShapeError

    fw = facts.get("framework")
    tr = spec.setdefault("training", {})
    if not tr.get("recompute"):
        # not stated (or a reader does not map it): the cheapest mode is the safe lower bound
        tr["recompute"] = "full"
    if fw is not None and str(fw.value).lower().startswith("torchtitan") and \
            tr.get("recompute") == "selective":
        # torchtitan's selective AC ("op" policy or every n-th layer) keeps far less than
        # Korthikanti's selective recompute; only full recomputation is a safe lower bound
        tr["recompute"] = "full"
    hw = spec.setdefault("hardware", {})
    if hw.get("gpu_memory_bytes"):
        name, mem = str(hw.get("gpu") or "GPU"), int(hw["gpu_memory_bytes"])
    else:
        g = resolve_gpu(hw.get("gpu")) if hw.get("gpu") else None
        if g is None:
            g = largest_gpu()
            name = f"largest catalogued GPU ({g.name})"
        else:
            name = g.name
        hw["gpu"], mem = g.name, g.memory_bytes
    try:
        est = estimate(spec, lower_bound=True)
    except (ShapeError, ValueError, ZeroDivisionError):
        return None
    return spec, est, name, mem


def _headroom(ctx) -> float:
    try:
        h = float((getattr(ctx, "config", None) or {}).get("memory-headroom", 0.9))
    except (TypeError, ValueError):
        return 0.9
    return h if 0 < h <= 1 else 0.9


def _pure_dp_oversized(est, mem: int, ctx) -> bool:
    """MEM001's condition: no TP/PP, no parameter sharding, model states over headroom x GPU."""
    lay = est.layout
    if lay["tp"] != 1 or lay["pp"] != 1 or lay["zero_stage"] >= 3:
        return False
    return est.model_states > _headroom(ctx) * mem


def _parts(est) -> str:
    """'weights a, gradients b, optimizer c' with sharded-over-unknown parts said in words."""
    lay = est.layout
    unknown_dp = lay["dp"] is None
    z = lay["zero_stage"]
    out = []
    for label, value, sharded_from in (("weights", est.weights, 3), ("gradients", est.gradients, 2),
                                       ("optimizer", est.optimizer, 1)):
        if unknown_dp and z >= sharded_from:
            out.append(f"{label} not counted (ZeRO-{z} shards them over an unknown number of "
                       f"data-parallel ranks)")
        else:
            out.append(f"{label} {_gib(value)} GiB")
    return ", ".join(out)


def _anchor(job) -> Span:
    for key in _ANCHORS:
        v = job.facts.get(key)
        if v is not None and v.span is not None:
            return v.span
    return Span.whole_file(job.root.path)


def _related(job, span: Span) -> list[Related]:
    out = []
    for key, what in (("hardware.gpu", "GPU type"), ("model.param_count", "model size"),
                      ("model.preset", "model"), ("model.layers", "layers"),
                      ("training.micro_batch", "micro batch")):
        v = job.facts.get(key)
        if v is not None and v.span is not None and v.span != span:
            out.append(Related.at(v.span, f"{what}: {v.value}"))
    return out


def _unsized_lora(job, ctx):
    """(estimate as full fine-tuning, gpu name, gpu memory, the unknown ``training.peft``) for a
    LoRA job whose adapters' size is not provable, under pure data parallelism (no TP/PP, no
    parameter sharding: every GPU holds the whole frozen base), when the base's weights could
    overflow the GPU: in fp32 (4 bytes a parameter, transformers' load without a dtype) they take
    more than ``memory-headroom`` x its memory. Else None (a base that fits even in fp32 leaves
    only the adapters, which LoRA keeps small)."""
    peft = [v for v in job.facts.all("training.peft") if not v.known]
    if not peft:
        return None
    got = _setup(job, ctx, unsized_lora=True)
    if got is None:
        return None
    _spec, est, gpu_name, mem = got
    lay = est.layout
    if lay["tp"] != 1 or lay["pp"] != 1 or lay["zero_stage"] >= 3 or 4.0 * est.param_count <= _headroom(ctx) * mem:
        return None
    return est, gpu_name, mem, peft[0]
