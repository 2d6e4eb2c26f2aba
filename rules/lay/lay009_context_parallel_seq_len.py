"""LAY009 context-parallel-seq-len: The sequence length is not divisible by 2 × the context-parallel degree"""

from __future__ import annotations

from parallint.model.diagnostics import Severity
from parallint.model.factrule import FactRule, Finding, View
from parallint.model.rule import Example
from parallint.rules.lay._common import _meg


def _near_multiples(n: int, k: int) -> str:
    lo = n // k * k
    return " or ".join(str(x) for x in (lo, lo + k) if x > 0)


class ContextParallelSeqLen(FactRule):
    code = "LAY009"
    facts = frozenset({"model.seq_len", "parallel.cp"})
    name = "context-parallel-seq-len"
    severity = Severity.ERROR
    summary = "The sequence length is not divisible by 2 × the context-parallel degree"
    doc = """
    ## What it does
    With context parallelism CP > 1, checks `seq_len % (2·CP) == 0`.

    ## Why it matters
    Context parallelism splits each sequence into 2·CP chunks for load balancing; Megatron,
    Megatron-Bridge and torchtitan stop at start-up when the length does not split.

    ## Example

    ## How to fix
    Use a sequence length divisible by 2·CP.
    """
    valid = (Example(_meg("--seq-length: 4096\n--context-parallel-size: 2\n--num-attention-heads: 32"), filename="model_config.yaml"),)
    invalid = (Example(_meg("--seq-length: 4098\n--context-parallel-size: 2\n--num-attention-heads: 32"), filename="model_config.yaml", line=4),)

    def findings(self, view: View):
        cp, seq = view.i("parallel.cp"), view.i("model.seq_len")
        if cp is None or cp <= 1 or seq is None or seq <= 0:
            return
        seq_v = view.v("model.seq_len")
        assert seq_v is not None  # view.i gave an int for the same key
        if not view.fw("megatron", "nemo", "torchtitan"):
            return
        if seq % (2 * cp):
            yield Finding(seq_v, f"sequence length {seq} is not divisible by 2×CP = {2 * cp}; set it to a multiple of "
                                                   f"{2 * cp} ({_near_multiples(seq, 2 * cp)})",
                          [(view.v("parallel.cp"), f"CP {cp}")])
