"""BAT002 global-batch-not-divisible: The global batch is not divisible by micro batch × data-parallel size"""

from __future__ import annotations

from parallint.model.diagnostics import Severity
from parallint.model.factrule import FactRule, Finding, View
from parallint.model.facts import known_int
from parallint.model.rule import Example
from parallint.model.world import dp_size
from parallint.rules.bat._common import _multiple


def _torchtitan_dp(view: View) -> tuple[int | None, list]:
    w = view.world_int
    rep = view.i("parallel.dp_replicate") or 1
    shard = view.i("parallel.dp_shard")
    if shard is None:
        if w is None:
            return None, []
        others = rep
        for k in ("parallel.cp", "parallel.tp", "parallel.pp"):
            i = view.i(k)
            if i is None and view.stated(k):
                return None, []
            others *= i or 1
        if w % others:
            return None, []
        shard = w // others // rep
        return rep * shard, [(view.world, f"world size {w}")]
    return rep * shard, [(view.v("parallel.dp_shard"), f"dp_shard {shard}")]


class GlobalBatchNotDivisible(FactRule):
    code = "BAT002"
    facts = frozenset({
        "parallel.cp", "parallel.dp_replicate", "parallel.dp_shard", "parallel.pp", "parallel.sp", "parallel.tp",
        "training.global_batch", "training.micro_batch",
    })
    name = "global-batch-not-divisible"
    severity = Severity.ERROR
    summary = "The global batch is not divisible by micro batch × data-parallel size"
    doc = """
    ## What it does
    For Megatron, NeMo and torchtitan, checks `global_batch % (micro_batch × DP) == 0`, with DP =
    world / (TP×PP×CP) (torchtitan: dp_replicate × dp_shard). Without a known world size it fires
    only when the global batch is not even divisible by the micro batch.

    ## Why it matters
    The number of micro-batches per step must be an integer; Megatron's microbatch calculator
    stops at start-up ("global batch size (30) is not divisible by micro batch size (4) times data
    parallel size (2)").

    ## Example

    ## How to fix
    Choose a global batch that is a multiple of micro batch × DP.
    """
    valid = (Example("trainer:\n  devices: 8\n  num_nodes: 1\nmodel:\n  micro_batch_size: 2\n  global_batch_size: 64\n"
                     "  tensor_model_parallel_size: 2\n  pipeline_model_parallel_size: 1\n", filename="conf/gpt.yaml"),)
    invalid = (
        Example("trainer:\n  devices: 8\n  num_nodes: 1\nmodel:\n  micro_batch_size: 2\n  global_batch_size: 36\n"
                "  tensor_model_parallel_size: 2\n  pipeline_model_parallel_size: 1\n", filename="conf/gpt.yaml", line=6),
        Example("ENV_VARS:\n  NCCL_DEBUG: WARN\nMODEL_ARGS:\n  --micro-batch-size: 4\n  --global-batch-size: 30\n"
                "  --num-attention-heads: 8\n", filename="model_config.yaml", line=5),
    )

    def findings(self, view: View):
        if not view.fw("megatron", "nemo", "torchtitan") or view.fw("deepspeed", "neox"):
            return
        gb_v, mb_v = view.v("training.global_batch"), view.v("training.micro_batch")
        gb, mb = known_int(gb_v), known_int(mb_v)
        if gb is None or mb is None or gb <= 0 or mb <= 0:
            return
        assert gb_v is not None  # known_int(None) is None
        if view.fw("torchtitan"):
            dp, dp_rel = _torchtitan_dp(view)
        else:
            dp, dp_rel = dp_size(view.facts, view.world, sp=False)
        if dp is not None:
            if gb % (mb * dp):
                yield Finding(gb_v, f"global batch {gb} is not divisible by micro batch {mb} × data-parallel "
                                    f"size {dp} = {mb * dp}; set the global batch size to {_multiple(mb * dp, gb)}",
                              [(mb_v, f"micro batch {mb}")] + dp_rel)
            return
        if gb % mb:
            yield Finding(gb_v, f"global batch {gb} is not divisible by micro batch {mb}; set the global batch size "
                                f"to {_multiple(mb, gb)}",
                          [(mb_v, f"micro batch {mb}")])
