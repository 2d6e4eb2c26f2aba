"""LAY010 kv-groups-vs-tp: GQA query groups are neither a multiple nor a divisor of TP"""

from __future__ import annotations

from parallint.model.diagnostics import Severity
from parallint.model.factrule import FactRule, Finding, View
from parallint.model.rule import Example
from parallint.rules.lay._common import _divisors, _meg


class KvGroupsVsTp(FactRule):
    code = "LAY010"
    facts = frozenset({"model.kv_heads", "parallel.tp"})
    name = "kv-groups-vs-tp"
    severity = Severity.ERROR
    summary = "GQA query groups are neither a multiple nor a divisor of TP"
    doc = """
    ## What it does
    With grouped-query attention, checks that the number of KV heads (query groups) is a multiple
    of the tensor-parallel degree or divides it.

    ## Why it matters
    Each tensor-parallel rank needs whole KV groups (or an equal share of replicated ones);
    Megatron's TransformerConfig rejects any other combination at start-up.

    ## Example

    ## How to fix
    Use a TP that divides the number of KV heads (or that the KV heads divide).
    """
    valid = (Example(_meg("--group-query-attention: true\n--num-query-groups: 8\n--tensor-model-parallel-size: 4\n--num-attention-heads: 32"), filename="model_config.yaml"),)
    invalid = (Example(_meg("--group-query-attention: true\n--num-query-groups: 6\n--tensor-model-parallel-size: 4\n--num-attention-heads: 24"), filename="model_config.yaml", line=6),)

    def findings(self, view: View):
        kv, tp = view.i("model.kv_heads"), view.i("parallel.tp")
        if kv is None or tp is None or kv <= 0 or tp <= 1:
            return
        tp_v = view.v("parallel.tp")
        assert tp_v is not None  # view.i gave an int for the same key
        if kv % tp and tp % kv:
            yield Finding(tp_v, f"{kv} KV heads (query groups) are neither a multiple nor a "
                                                 f"divisor of tensor-parallel degree {tp}; set TP to {_divisors(kv, tp)}, or a "
                                                 f"multiple of {kv}",
                          [(view.v("model.kv_heads"), f"{kv} KV heads")])
