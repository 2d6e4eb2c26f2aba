"""``parallint plan``: the layouts of N GPUs that satisfy the layout rules and fit in memory.

A layout is TP x PP x DP (x the job's CP and EP), a ZeRO stage and a recompute mode. This module
enumerates the candidates (the divisors of the GPU count, from its prime factors; no more TP
ranks than heads or than one node has, no more pipeline stages than layers, no ZeRO without ranks
to shard over) and
estimates their memory. Which candidates obey the layout rules is not decided here: the caller's
``accept`` does, and :func:`parallint.engine.layouts.plan` passes one that runs the real LAY and BAT
rules on each candidate's facts (TP divides the heads, stays in a node, matches the GQA groups;
PP divides the layers; no ZeRO >= 2 with PP; the experts divide by EP; the global batch divides by
micro x DP; and any rule added later).

Order (best first): least recomputation (none, then selective at a few % extra compute, then full
at ~33 %); then the fewest model-parallel ranks TP x PP (less communication, smaller pipeline
bubble); then fewer pipeline stages for the same product (TP inside a node is cheaper than a
bubble); then the lowest ZeRO stage (ZeRO-3 moves 1.5x the data of DP); then the lowest memory.
"""

from __future__ import annotations

from typing import Callable

from parallint.estimator.gpus import resolve_gpu
from parallint.estimator.memory import Estimate, estimate
from parallint.estimator.params import ShapeError, shape_of
from parallint.estimator.spec import _posint, normalize
from parallint.util.record import EqRecord

ORDER_REASON = ("best first: least recomputation (none < selective < full), then fewest "
                "model-parallel ranks (TP x PP), then fewer pipeline stages, then lower ZeRO "
                "stage, then lower memory")
_RECOMPUTE_RANK = {"none": 0, "selective": 1, "full": 2}


class Layout(EqRecord):
    _fields = ("tp", "pp", "dp", "cp", "ep", "zero_stage", "recompute", "sequence_parallel", "estimate")
    tp: int
    pp: int
    dp: int
    cp: int
    ep: int
    zero_stage: int
    recompute: str
    sequence_parallel: bool
    estimate: Estimate

    def __init__(
        self,
        tp: int,
        pp: int,
        dp: int,
        cp: int,
        ep: int,
        zero_stage: int,
        recompute: str,
        sequence_parallel: bool,
        estimate: Estimate,
    ) -> None:
        self.tp = tp
        self.pp = pp
        self.dp = dp
        self.cp = cp
        self.ep = ep
        self.zero_stage = zero_stage
        self.recompute = recompute
        self.sequence_parallel = sequence_parallel
        self.estimate = estimate

    def describe(self) -> str:
        parts = [f"TP={self.tp}", f"PP={self.pp}", f"DP={self.dp}"]
        if self.cp > 1:
            parts.append(f"CP={self.cp}")
        if self.ep > 1:
            parts.append(f"EP={self.ep}")
        z = f"ZeRO-{self.zero_stage}" if self.zero_stage else "no ZeRO"
        rc = {"none": "no recompute", "selective": "selective recompute",
              "full": "full recompute"}[self.recompute]
        sp = ", sequence parallel" if self.sequence_parallel else ""
        return " x ".join(parts[:3]) + (", " + ", ".join(parts[3:]) if parts[3:] else "") + \
            f", {z}, {rc}{sp}"

    def sort_key(self) -> tuple:
        return (_RECOMPUTE_RANK[self.recompute], self.tp * self.pp, self.pp, self.zero_stage,
                self.estimate.total)

    def to_json(self) -> dict:
        return {"tp": self.tp, "pp": self.pp, "dp": self.dp, "cp": self.cp, "ep": self.ep,
                "zero_stage": self.zero_stage, "recompute": self.recompute,
                "sequence_parallel": self.sequence_parallel,
                "estimate": self.estimate.to_json()}


def _factorise(n: int) -> dict[int, int]:
    """Prime -> exponent, by trial division up to sqrt(n) (n up to 2**40 in well under a second)."""
    out: dict[int, int] = {}
    for p in (2, 3):
        while n % p == 0:
            out[p] = out.get(p, 0) + 1
            n //= p
    p = 5
    while p * p <= n:
        for q in (p, p + 2):
            while n % q == 0:
                out[q] = out.get(q, 0) + 1
                n //= q
        p += 6
    if n > 1:
        out[n] = out.get(n, 0) + 1
    return out


def _divisors(n: int) -> list[int]:
    """The divisors of ``n`` in increasing order, from its prime factors (not a scan up to n)."""
    if n < 1:
        return []
    divs = [1]
    for p, e in _factorise(n).items():
        divs = [d * p**k for d in divs for k in range(e + 1)]
    return sorted(divs)


#: ZeRO stages each framework offers (Megatron/NeMo/nanotron: distributed optimizer = ZeRO-1;
#: torchtitan: FSDP2 full shard); frameworks not listed: all stages
FRAMEWORK_ZERO = {"megatron": (0, 1), "nemo": (0, 1), "nanotron": (0, 1), "neox": (0, 1, 2, 3),
                  "torchtitan": (0, 3)}


def plan(spec: dict, gpus: int, gpu: str | None = None, headroom: float = 0.9,
         gpus_per_node: int | None = None, pareto: bool = True,
         zero_stages: tuple[int, ...] | None = None, *,
         accept: Callable[[dict, int], bool]) -> list[Layout]:
    """Every layout of ``gpus`` GPUs that ``accept(candidate spec, GPUs per node)`` keeps and whose
    estimate stays within ``headroom`` x the GPU's memory, best first (see the module docstring for
    the order). ``zero_stages`` limits the ZeRO stages to those the job's framework offers."""
    if gpus < 1:
        return []
    base = normalize(spec)
    if zero_stages is None:
        zero_stages = FRAMEWORK_ZERO.get(str(base.get("framework", "")).lower(), (0, 1, 2, 3))
    if gpu:
        base["hardware"]["gpu"] = gpu
        base["hardware"].pop("gpu_memory_bytes", None)
    g = resolve_gpu(base["hardware"].get("gpu")) if base["hardware"].get("gpu") else None
    mem = base["hardware"].get("gpu_memory_bytes") or (g.memory_bytes if g else None)
    if mem is None:
        return []
    gpn = _posint(gpus_per_node) or _posint(base["parallel"].get("gpus_per_node")) or (
        g.gpus_per_node if g else 8)
    model, tr = base["model"], base["training"]
    try:
        shape = shape_of(model)
    except ShapeError:
        shape = None
    cp = base["parallel"].get("cp") or 1
    ep = base["parallel"].get("ep") or 1
    if gpus % cp:
        cp = 1
    micro = tr.get("micro_batch") or 1
    gb = tr.get("global_batch")
    out: list[Layout] = []
    for tp in _divisors(gpus // cp):
        if (shape is not None and tp > shape.heads) or tp > gpn:
            break  # more TP ranks than heads, or than a node has (never a candidate: LAY002)
        for pp in _divisors(gpus // (cp * tp)):
            if (shape is None and pp > 1) or (shape is not None and pp > shape.layers):
                break  # no more stages than layers (and none without a layer count)
            dp = gpus // (cp * tp * pp)
            for zero in zero_stages:
                if zero and dp * cp == 1:
                    continue  # nothing to shard over
                s = {k: dict(v) if isinstance(v, dict) else v for k, v in base.items()}
                s.pop("_assumptions", None)
                s["parallel"].update(tp=tp, pp=pp, dp=dp, cp=cp, ep=ep, zero_stage=zero,
                                     sequence_parallel=tp > 1, world_size=gpus,
                                     distributed_optimizer=False, fsdp=False)
                s["parallel"].pop("vpp", None)
                s["training"].update(micro_batch=micro)
                if not accept(s, gpn):
                    continue
                s["training"]["num_microbatches"] = None
                if gb:
                    s["training"]["num_microbatches"] = gb // (micro * dp)
                s["hardware"]["gpu_memory_bytes"] = mem
                if g:
                    s["hardware"]["gpu"] = g.name
                for rc in ("none", "selective", "full"):
                    s = {k: dict(v) if isinstance(v, dict) else v for k, v in s.items()}
                    s["training"]["recompute"] = rc
                    try:
                        est = estimate(s)
                    except ShapeError:
                        return []
                    if est.total <= headroom * mem:
                        out.append(Layout(tp, pp, dp, cp, ep, zero, rc, tp > 1, est))
    if not pareto:
        out.sort(key=Layout.sort_key)
        return out
    # per TP x PP, keep only layouts no other beats on both recomputation and ZeRO stage
    kept = [a for a in out if not any(
        b is not a and (b.tp, b.pp) == (a.tp, a.pp)
        and _RECOMPUTE_RANK[b.recompute] <= _RECOMPUTE_RANK[a.recompute]
        and b.zero_stage <= a.zero_stage
        and (b.recompute, b.zero_stage) != (a.recompute, a.zero_stage) for b in out)]
    kept.sort(key=Layout.sort_key)
    return kept


def framework_settings(framework: str | None, lay: Layout) -> tuple[str, list[str]] | None:
    """How the job's own framework spells ``lay``: (what the lines are, the lines), or None when
    the framework is unknown or has no spelling for part of the layout (then nothing is offered)."""
    fw = (framework or "").lower()
    rc = lay.recompute
    if fw in ("megatron", "megatron-lm", "megatron-deepspeed"):
        flags = [f"--tensor-model-parallel-size {lay.tp}", f"--pipeline-model-parallel-size {lay.pp}"]
        if lay.cp > 1:
            flags.append(f"--context-parallel-size {lay.cp}")
        if lay.ep > 1:
            flags.append(f"--expert-model-parallel-size {lay.ep}")
        if lay.sequence_parallel:
            flags.append("--sequence-parallel")
        if rc == "full":
            flags.append("--recompute-granularity full --recompute-method uniform --recompute-num-layers 1")
        elif rc == "selective":
            flags.append("--recompute-granularity selective")
        if lay.zero_stage == 1:
            flags.append("--use-distributed-optimizer")
        elif lay.zero_stage > 1:
            return None  # Megatron-LM shards optimizer states only (its distributed optimizer)
        return "Megatron flags", [" ".join(flags)]
    if fw == "nemo":
        keys = [f"model.tensor_model_parallel_size={lay.tp}", f"model.pipeline_model_parallel_size={lay.pp}"]
        if lay.cp > 1:
            keys.append(f"model.context_parallel_size={lay.cp}")
        if lay.ep > 1:
            keys.append(f"model.expert_model_parallel_size={lay.ep}")
        keys.append(f"model.sequence_parallel={lay.sequence_parallel}")
        if rc == "full":
            keys += ["model.activations_checkpoint_granularity=full", "model.activations_checkpoint_method=uniform",
                     "model.activations_checkpoint_num_layers=1"]
        elif rc == "selective":
            keys.append("model.activations_checkpoint_granularity=selective")
        if lay.zero_stage == 1:
            keys.append("model.optim.name=distributed_fused_adam")
        elif lay.zero_stage > 1:
            return None
        return "NeMo overrides", [" ".join(keys)]
    if fw == "torchtitan":
        shard = lay.dp if lay.zero_stage == 3 else 1
        replicate = lay.dp if lay.zero_stage == 0 else 1
        if lay.zero_stage in (1, 2) and lay.dp > 1:
            return None  # torchtitan shards with FSDP (ZeRO-3) or replicates
        lines = ["[parallelism]", f"data_parallel_replicate_degree = {replicate}",
                 f"data_parallel_shard_degree = {shard}", f"tensor_parallel_degree = {lay.tp}",
                 f"pipeline_parallel_degree = {lay.pp}"]
        if lay.cp > 1:
            lines.append(f"context_parallel_degree = {lay.cp}")
        if lay.ep > 1:
            lines.append(f"expert_parallel_degree = {lay.ep}")
        lines += ["[activation_checkpoint]", f'mode = "{rc}"']
        return "torchtitan TOML", lines
    if fw in ("deepspeed", "hf_trainer"):
        if lay.tp > 1 or lay.pp > 1 or lay.cp > 1 or lay.ep > 1:
            return None  # plain DeepSpeed and the HF Trainer have data parallelism with ZeRO only
        if fw == "deepspeed":
            lines = [f'"zero_optimization": {{"stage": {lay.zero_stage}}}']
            if rc != "none":
                lines.append("activation checkpointing in the model (deepspeed.checkpointing or the model's own)")
            return "DeepSpeed config", lines
        flags = []
        if lay.zero_stage == 3:
            flags.append('--fsdp "full_shard auto_wrap"')
        elif lay.zero_stage == 2:
            flags.append('--fsdp "shard_grad_op auto_wrap"')
        elif lay.zero_stage == 1:
            return None
        if rc == "full":
            flags.append("--gradient_checkpointing true")
        elif rc == "selective":
            return None
        return "TrainingArguments flags", [" ".join(flags) or "(no flag: plain data parallelism)"]
    return None
