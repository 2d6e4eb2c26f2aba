"""MEM: memory feasibility, from parallint's estimator (``parallint estimate`` shows the numbers)."""

from __future__ import annotations

import functools
import re

from parallint.model.diagnostics import Related, Severity, Span
from parallint.model.rule import Example, Rule

TYPE_CHECKING = False  # typing is not imported at run time (start-up, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Iterable

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


def _gib(x: float) -> str:
    return f"{x / GIB:.1f}"


def _setup(job, ctx):
    """(spec, estimate, gpu name, gpu memory) for a job the MEM rules can judge, else None."""
    facts = job.facts
    if not any(facts.get(k) is not None for k in _LAYOUT_STATED):
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
        if f.kind == "python" and _offload().search(f.text or ""):
            return None
    for f in job.files:
        if f.kind != "python" and (_OTHER_ARCH.search(f.text or "") or _PARTIAL.search(f.text or "")):
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


class PureDataParallelOversized(Rule):
    code = "MEM001"
    facts = frozenset({
        "framework", "hardware.gpu", "model.layers", "model.param_count", "model.preset", "training.micro_batch",
        "training.offload",
    })
    name = "pure-data-parallel-oversized"
    severity = Severity.ERROR
    summary = ("Pure data parallelism (no TP/PP, no parameter sharding) for a model whose weights, "
               "gradients and optimizer states alone exceed one GPU.")
    doc = """
    ## What it does
    Estimates the model states every rank holds when the job uses no model parallelism
    (TP = PP = 1) and does not shard parameters (ZeRO < 3, no FSDP full shard): 16-bit weights
    and gradients plus fp32 master weights and Adam moments, 16 bytes per parameter (ZeRO paper
    accounting; ZeRO-1/2 shard the optimizer states and gradients over the data-parallel ranks).
    It reports the job when these exceed `memory-headroom` (default 0.9) × one GPU's memory. The
    GPU comes from the job (`--gres`, `--constraint`, node selectors, the job spec) or from
    `gpu` in `[tool.parallint]`; without one, the largest GPU in parallint's catalogue is used.
    Values parallint cannot resolve (environment variables, `auto`) keep the rule silent, and so
    does a model file that states no world size or parallel layout at all, a job that freezes
    parameters or trains adapters (LoRA/PEFT), a multimodal or non-transformer (Mamba, RWKV)
    model, and a job that offloads states to the CPU. A gpt-neox config whose
    `model_parallel_size` and `pipe_parallel_size` are left at 1 is not pure data parallelism:
    gpt-neox ships every config that way by convention, to be set for the cluster, so its
    layout is unknown (docs/precision-policy-configs.md).

    ## Why it matters
    Data parallelism replicates the whole model on every GPU. A 130B-parameter model needs
    ~260 GB for its fp16 weights alone and ~2 TB with gradients and Adam states: every rank dies
    with CUDA out-of-memory while building the model or at the first optimizer step, after the
    whole allocation has been queued for and started.

    ## Example

    ## How to fix
    Split the model: tensor parallelism inside a node and pipeline parallelism across nodes
    (`tp: 8, pp: 4` here), or shard parameters with ZeRO-3 / FSDP full shard. `parallint plan
    PATH --gpus N` lists the layouts that fit, best first.
    """
    valid = (
        Example(files={"job.yaml": """
        model: {layers: 72, hidden: 12288, heads: 96, vocab: 50257, seq_len: 2048}
        hardware: {gpu: A100-80GB}
        """}),
        Example(files={"job.yaml": """
        model: {layers: 72, hidden: 12288, heads: 96, vocab: 50257, seq_len: 2048}
        parallel:
          world_size: 32
          tp: 8
          pp: 4
        training: {micro_batch: 1, recompute: selective}
        hardware: {gpu: A100-80GB}
        """}),
        Example(files={"job.yaml": """
        model: {preset: llama-2-7b}
        parallel: {world_size: 8, tp: 1, pp: 1, zero_stage: 2}
        training: {micro_batch: 1}
        hardware: {gpu: A100-80GB}
        """}),
        Example(files={"job.yaml": """
        model: {preset: llama-2-70b}
        parallel: {world_size: 64, zero_stage: 3}
        hardware: {gpu: A100-80GB}
        """}),
        Example(files={"job.yaml": """
        model: {layers: 72, hidden: 12288, heads: 96, vocab: 50257, seq_len: 2048}
        parallel: {world_size: 32, tp: "${TP}", pp: 1}
        hardware: {gpu: A100-80GB}
        """}),
        _MEGATRON_130B_FITS,
    )
    invalid = (
        Example(files={"job.yaml": """
        model: {layers: 72, hidden: 12288, heads: 96, vocab: 50257, seq_len: 2048}
        parallel:
          world_size: 32
          tp: 1
          pp: 1
        training: {micro_batch: 1, precision: bf16}
        hardware: {gpu: A100-80GB}
        """}, line=4),
        Example(files={"job.yaml": """
        model: {preset: llama-2-70b}
        parallel: {world_size: 64, zero_stage: 1}
        """}, line=2),
        Example(files={"train.sbatch": """
        #!/bin/bash
        #SBATCH --nodes=4
        #SBATCH --gres=gpu:a100:8

        srun torchrun --nnodes 4 --nproc_per_node 8 pretrain_gpt.py \\
            --tensor-model-parallel-size 1 --pipeline-model-parallel-size 1 \\
            --num-layers 72 --hidden-size 12288 --num-attention-heads 96 \\
            --seq-length 2048 --max-position-embeddings 2048 \\
            --micro-batch-size 1 --global-batch-size 512 --bf16
        """}, line=6),
    )

    def check_job(self, job, ctx) -> Iterable:
        got = _setup(job, ctx)
        if got is None:
            return
        spec, est, gpu_name, mem = got
        lay = est.layout
        if not _pure_dp_oversized(est, mem, ctx):
            return
        headroom = _headroom(ctx)
        states = est.model_states
        zero = f" with ZeRO-{lay['zero_stage']}" if lay["zero_stage"] else ""
        span = _anchor(job)
        yield self.report(
            span,
            f"pure data parallelism{zero}: every GPU holds the whole {est.param_count / 1e9:.1f}B-"
            f"parameter model, {_gib(states)} GiB of weights, gradients and optimizer states "
            f"({_parts(est)}), more than {headroom:.0%} of the {gpu_name}'s "
            f"{_gib(mem)} GiB; use tensor/pipeline parallelism or ZeRO-3/FSDP "
            f"(`parallint plan` lists layouts that fit)",
            related=_related(job, span),
        )


class PredictedOom(Rule):
    code = "MEM002"
    facts = frozenset({
        "framework", "hardware.gpu", "model.layers", "model.param_count", "model.preset", "training.micro_batch",
        "training.offload",
    })
    name = "predicted-oom"
    severity = Severity.ERROR
    summary = "The estimated peak memory of the most loaded rank exceeds the GPU's memory."
    doc = """
    ## What it does
    Estimates the peak memory of the most loaded rank — model states after TP, PP and ZeRO/FSDP
    sharding (the first pipeline stage also holds the embeddings), activations after Korthikanti
    et al. 2022 for the micro batch, sequence length, tensor/sequence parallelism and recompute
    mode times the microbatches a 1F1B first stage keeps in flight, plus the CUDA context and
    buffers — and reports the job when it exceeds the GPU's memory. The message gives the
    breakdown and the best layout `parallint plan` finds for the same number of GPUs. A job that
    MEM001 reports (pure data parallelism whose model states alone do not fit) is left to MEM001. Only
    values the job states count: an unknown micro batch or sequence length means no activations,
    an unknown data-parallel size means fully sharded ZeRO states, torchtitan's selective
    activation checkpointing counts as full recomputation (its policies keep less than
    Megatron's selective recompute), and any unknown parallel degree keeps the rule silent.

    ## Why it matters
    An out-of-memory error surfaces only after the job has waited for and started on its GPUs,
    usually in the first forward or backward pass, sometimes only at the first optimizer step.

    ## Example

    ## How to fix
    Follow the layout in the message, or lower the micro batch, turn on selective or full
    recomputation, shard the optimizer states (ZeRO-1 / distributed optimizer) or the parameters
    (ZeRO-3 / FSDP). `parallint estimate PATH` prints the breakdown, `parallint plan PATH
    --gpus N` every layout that fits.
    """
    valid = (
        Example(files={"job.yaml": """
        model: {layers: 72, hidden: 12288, heads: 96, vocab: 50257, seq_len: 2048}
        parallel: {world_size: 32, tp: 8, pp: 4, sequence_parallel: true}
        training: {micro_batch: 1, global_batch: 512, recompute: selective}
        hardware: {gpu: A100-80GB}
        """}),
        Example(files={"job.yaml": """
        model: {preset: llama-2-13b, seq_len: 4096}
        parallel: {world_size: 8, tp: 2, pp: 1, zero_stage: 1}
        training: {micro_batch: "${MBS}", recompute: none}
        hardware: {gpu: A100-80GB}
        """}),
        _MEGATRON_130B_FITS,
    )
    invalid = (
        Example(files={"job.yaml": """
        model: {preset: llama-2-13b, seq_len: 4096}
        parallel:
          world_size: 8
          tp: 2
          pp: 1
        training: {micro_batch: 4, recompute: none}
        hardware: {gpu: A100-40GB}
        """}, line=4),
    )

    def check_job(self, job, ctx) -> Iterable:
        got = _setup(job, ctx)
        if got is None:
            return
        spec, est, gpu_name, mem = got
        if est.total <= mem:
            return
        if _pure_dp_oversized(est, mem, ctx):
            return  # MEM001 reports this job, with the better diagnosis
        where = "" if est.layout["pp"] == 1 else f" ({est.stage} pipeline stage)"
        acts = f"activations {_gib(est.activations)} GiB"
        if est.activations_known and est.layers_per_stage:
            acts += (f" ({est.microbatches_in_flight} microbatch"
                     f"{'es' if est.microbatches_in_flight != 1 else ''} in flight x "
                     f"{est.layers_per_stage} layers)")
        msg = (f"predicted peak {_gib(est.total)} GiB on the most loaded rank{where} exceeds the "
               f"{gpu_name}'s {_gib(mem)} GiB: {_parts(est)}, {acts}, other "
               f"{_gib(est.other)} GiB (buffers)")
        from parallint.estimator.spec import normalize

        world = normalize(spec)["parallel"].get("world_size")
        plan = getattr(ctx, "plan", None)  # the engine's planner: the real layout rules filter it
        if world and plan is not None:
            headroom = _headroom(ctx)
            layouts = plan(spec, int(world), spec["hardware"].get("gpu"), headroom)
            if layouts:
                best = layouts[0]
                msg += (f"; use a layout of {world} GPUs that fits: {best.describe()} "
                        f"({_gib(best.estimate.total)} GiB)")
            else:
                msg += (f"; use more GPUs or a larger GPU: no layout of {world} GPUs fits this model on the "
                        f"{gpu_name} (`parallint plan` finds the smallest count)")
        else:
            msg += ("; lower the micro batch, recompute activations or shard the model further "
                    "(`parallint plan` lists layouts that fit)")
        span = _anchor(job)
        yield self.report(span, msg, related=_related(job, span))
