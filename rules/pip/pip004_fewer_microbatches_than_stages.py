"""PIP004 fewer-microbatches-than-stages: Fewer microbatches per step than pipeline stages: most of the step is bubble"""

from __future__ import annotations

from parallint.model.diagnostics import Severity
from parallint.model.factrule import FactRule, Finding, View
from parallint.model.facts import known_int
from parallint.model.rule import Example
from parallint.model.world import dp_size


def _titan(pp: int, local: int, mbs: int) -> str:
    return (f"[job]\ndescription = \"pp\"\n\n[model]\nname = \"llama3\"\nflavor = \"8B\"\n\n[training]\n"
            f"local_batch_size = {local}\nseq_len = 2048\n\n[parallelism]\npipeline_parallel_degree = {pp}\n"
            f"pipeline_parallel_microbatch_size = {mbs}\n")


class FewerMicrobatchesThanStages(FactRule):
    code = "PIP004"
    facts = frozenset({
        "parallel.pp", "training.global_batch", "training.grad_accum", "training.micro_batch",
        "training.pp_microbatch",
    })
    name = "fewer-microbatches-than-stages"
    severity = Severity.WARNING
    summary = "Fewer microbatches per step than pipeline stages: most of the step is bubble"
    doc = """
    ## What it does
    Counts the microbatches a pipeline gets per step — Megatron/NeMo: global / (micro × DP);
    torchtitan: local batch / `pipeline_parallel_microbatch_size`; DeepSpeed: gradient
    accumulation steps — and warns when there are fewer than pipeline stages.

    ## Why it matters
    A pipeline of P stages needs at least P microbatches in flight to keep every stage busy; with
    fewer, most GPUs idle for most of every step (torchtitan only logs a warning).

    ## Example

    ## How to fix
    Raise the global (or local) batch or lower the micro batch so that microbatches ≥ stages
    (ideally several times more).
    """
    valid = (Example(_titan(4, 16, 2), filename="train.toml"),)
    invalid = (
        Example(_titan(4, 8, 4), filename="train.toml", line=14),
        Example(files={
            "run.sh": "torchrun --nnodes 1 --nproc_per_node 8 pretrain_gpt.py --pipeline-model-parallel-size 4 \\\n"
                      "    --num-layers 32 --micro-batch-size 4 --global-batch-size 16 --num-attention-heads 32\n",
            "pretrain_gpt.py": "import sys\nprint(sys.argv)\n",
        }, line=2),
    )

    def findings(self, view: View):
        pp_v = view.v("parallel.pp")
        pp = known_int(pp_v)
        if pp is None or pp <= 1:
            return
        if view.fw("torchtitan"):
            yield from self._torchtitan(view, pp)
            return
        if view.fw("deepspeed", "neox"):
            ga_v = view.v("training.grad_accum")
            ga = known_int(ga_v)
            if ga is not None and 0 < ga < pp:
                assert ga_v is not None  # known_int(None) is None
                yield Finding(ga_v, f"{ga} microbatches (gradient accumulation steps) per step for {pp} "
                                    f"pipeline stages: most of every step is pipeline bubble; raise gradient_accumulation_steps "
                                    f"to {pp} or more",
                              [(pp_v, f"PP {pp}")])
            return
        if view.fw("megatron", "nemo"):
            gb_v, mb_v = view.v("training.global_batch"), view.v("training.micro_batch")
            gb, mb = known_int(gb_v), known_int(mb_v)
            dp, rel = dp_size(view.facts, view.world, sp=False)
            if gb is None or mb is None or dp is None or mb <= 0 or gb % (mb * dp):
                return
            assert gb_v is not None  # known_int(None) is None
            n = gb // (mb * dp)
            if n < pp:
                yield Finding(gb_v, f"{n} microbatches per step (global {gb} / (micro {mb} × DP {dp})) for {pp} "
                                    f"pipeline stages: most of every step is pipeline bubble; raise the global batch to "
                                    f"{pp * mb * dp} or more (or lower the micro batch)",
                              [(pp_v, f"PP {pp}"), (mb_v, f"micro batch {mb}")] + rel)

    def _torchtitan(self, view: View, pp: int):
        mbs_v = view.v("training.pp_microbatch")
        if mbs_v is None:
            return
        local_v = view.v("training.micro_batch")
        local, mbs = known_int(local_v), known_int(mbs_v)
        if local is None or mbs is None or mbs <= 0 or local % mbs:
            return
        n = local // mbs
        if n < pp:
            yield Finding(mbs_v, f"{n} microbatches per step (local batch {local} / microbatch size {mbs}) for "
                                 f"{pp} pipeline stages: most of every step is pipeline bubble; lower the microbatch size "
                                 f"so the local batch gives {pp} or more microbatches",
                          [(view.v("parallel.pp"), f"PP {pp}"), (local_v, f"local batch {local}")])
