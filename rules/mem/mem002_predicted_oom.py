"""MEM002 predicted-oom: The estimated peak memory of the most loaded rank exceeds the GPU's memory."""

from __future__ import annotations

from parallint.model.diagnostics import Severity
from parallint.model.rule import Example, Rule
from parallint.rules.mem._common import _MEGATRON_130B_FITS, _anchor, _gib, _headroom, _parts, _pure_dp_oversized, _related, _setup

TYPE_CHECKING = False  # typing is not imported at run time (start-up, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Iterable


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
    buffers — and reports the job when even the low end of the estimate's range exceeds the
    GPU's memory. When the expected peak exceeds it but the low end does not (the range
    straddles the card), an info names the margin and the term whose uncertainty decides. The message gives the
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
        low, expected, high = est.range
        if low <= mem:
            if est.total > mem and not _pure_dp_oversized(est, mem, ctx):
                # a near miss: the range straddles the card; say by how much, do not fail the job
                yield self.report(
                    _anchor(job),
                    f"near miss: estimated peak {_gib(low)}-{_gib(high)} GiB (expected {_gib(expected)}) "
                    f"on the most loaded rank against the {gpu_name}'s {_gib(mem)} GiB, a margin of "
                    f"{_gib(mem - low)} GiB over the low end; the {est.uncertainty or 'estimate'} decides; "
                    "lower the micro batch or recompute activations to leave a margin "
                    "(`parallint estimate` prints the range)",
                    severity=Severity.INFO)
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
               f"{gpu_name}'s {_gib(mem)} GiB even at the low end of its range ({_gib(low)} GiB): "
               f"{_parts(est)}, {acts}, other {_gib(est.other)} GiB (buffers)")
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
