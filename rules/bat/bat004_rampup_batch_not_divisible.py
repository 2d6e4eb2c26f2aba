"""BAT004 rampup-batch-not-divisible: A global batch size along Megatron's --rampup-batch-size ramp is not divisible by micro batch × DP"""

from __future__ import annotations

from parallint.model.diagnostics import Severity
from parallint.model.facts import known_int
from parallint.model.rule import Example, Rule
from parallint.model.world import dp_size
from parallint.rules.bat._common import rampup_batch_sizes


def _rampup(la):
    """``--rampup-batch-size START INCR SAMPLES`` of a launch: (values, flag word) or None."""
    args = list(getattr(la, "args", None) or ())
    for i, a in enumerate(args):
        if not (a.known and isinstance(a.value, str)):
            continue
        flag, eq, rest = a.value.partition("=")
        if flag != "--rampup-batch-size":
            continue
        words = rest.split() if eq else [w.value if w.known else None for w in args[i + 1:i + 4]]
        if len(words) != 3 or any(w is None or not str(w).isdigit() for w in words):
            return None
        return [int(w) for w in words], a
    return None


def _on_ramp(start: int, incr: int, gb: int) -> str:
    lo = start + (gb - start) // incr * incr
    return " or ".join(str(x) for x in (lo, lo + incr) if x > 0)


class RampupBatchNotDivisible(Rule):
    code = "BAT004"
    facts = frozenset({
        "parallel.cp", "parallel.pp", "parallel.sp", "parallel.tp", "training.global_batch", "training.micro_batch",
    })
    name = "rampup-batch-not-divisible"
    severity = Severity.ERROR
    summary = "A global batch size along Megatron's --rampup-batch-size ramp is not divisible by micro batch × DP"
    kinds = frozenset()
    facts = frozenset({"parallel.cp", "parallel.pp", "parallel.sp", "parallel.tp", "training.global_batch",
                       "training.micro_batch", "framework"})
    doc = """
    ## What it does
    For a Megatron command line with `--rampup-batch-size START INCR SAMPLES`, replays Megatron's
    batch-size ramp (`RampupBatchsizeNumMicroBatches`: the batch grows by INCR every
    `SAMPLES / ((GLOBAL - START) / INCR)` consumed samples, and consumed samples grow by the batch of
    each step) and checks every global batch size the run goes through below `--global-batch-size`
    against `--micro-batch-size` × DP, DP = world / (TP×PP×CP). Also reports a ramp whose span
    `GLOBAL - START` is not a multiple of INCR. Without a known world size it checks divisibility by
    the micro batch alone. The final global batch is BAT002's.

    ## Why it matters
    Megatron asserts at every step of the ramp: "current global batch size (24) is not divisible by
    micro-batch-size (2) times data parallel size (8)" — partway into training, after the job has
    already run for hours (Megatron-LM releases since late 2025 ignore the flag with a deprecation
    warning and use `--step-batch-size-schedule`; Megatron-DeepSpeed and earlier Megatron-LM run it).

    ## Example

    ## How to fix
    Choose START and INCR as multiples of micro batch × DP (here 32 32), or drop the ramp.
    """
    valid = (
        Example("""
        #!/bin/bash
        torchrun --nnodes 1 --nproc_per_node 8 pretrain_gpt.py \\
            --tensor-model-parallel-size 2 --micro-batch-size 2 \\
            --global-batch-size 256 --rampup-batch-size 32 16 100000
        """, filename="run.sh"),
    )
    invalid = (
        Example("""
        #!/bin/bash
        torchrun --nnodes 2 --nproc_per_node 8 pretrain_gpt.py \\
            --tensor-model-parallel-size 1 --micro-batch-size 2 \\
            --global-batch-size 1536 --rampup-batch-size 24 24 1000000
        """, filename="run.sh", line=4),
        Example("""
        #!/bin/bash
        torchrun --nnodes 1 --nproc_per_node 8 pretrain_gpt.py \\
            --tensor-model-parallel-size 2 --micro-batch-size 4 \\
            --global-batch-size 512 --rampup-batch-size 32 50 100000
        """, filename="run.sh", line=4),
    )

    def check_job(self, job, ctx):
        from parallint.model.factrule import job_view

        la = getattr(job, "launch", None)
        if la is None or getattr(job.root, "kind", "") not in ("shell", "makefile", "kube"):
            return
        found = _rampup(la)
        if found is None:
            return
        (start, incr, samples), word = found
        view = job_view(job, getattr(ctx, "config", {}) or {})
        if not view.fw("megatron") or view.fw("neox"):
            return
        gb_v, mb_v = view.v("training.global_batch"), view.v("training.micro_batch")
        gb, mb = known_int(gb_v), known_int(mb_v)
        if gb is None or mb is None or gb <= 0 or mb <= 0:
            return
        if gb >= start and (gb - start) % incr:
            yield self.report(word.span, f"--rampup-batch-size goes from {start} in steps of {incr} but the "
                                         f"global batch {gb} is not on that ramp ({gb} - {start} is not a "
                                         f"multiple of {incr}): Megatron asserts at start-up; set the global batch size to "
                                         f"{start} plus a multiple of {incr} ({_on_ramp(start, incr, gb)})")
            return
        sizes = rampup_batch_sizes(start, incr, samples, gb)
        if not sizes:
            return
        dp, _ = dp_size(view.facts, view.world, sp=False)
        div = mb * dp if dp is not None else mb
        what = f"micro batch {mb} × data-parallel size {dp} = {div}" if dp is not None else f"micro batch {mb}"
        bad = next((b for b in sizes if b % div), None)
        if bad is None:
            return
        yield self.report(word.span, f"the batch-size ramp reaches a global batch of {bad}, which is not "
                                     f"divisible by {what}: Megatron asserts when the ramp gets there; make the ramp's start "
                                     f"and increment multiples of {div}")
