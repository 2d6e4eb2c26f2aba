"""LAY012 hidden-not-divisible-by-heads: hidden_size is not divisible by num_attention_heads and no head dimension is given"""

from __future__ import annotations

from parallint.model.diagnostics import Severity
from parallint.model.factrule import FactRule, Finding, View
from parallint.model.rule import Example
from parallint.rules.lay._common import _divisors, _meg


class HiddenNotDivisibleByHeads(FactRule):
    code = "LAY012"
    facts = frozenset({"model.head_dim", "model.heads", "model.hidden"})
    name = "hidden-not-divisible-by-heads"
    severity = Severity.ERROR
    summary = "hidden_size is not divisible by num_attention_heads and no head dimension is given"
    doc = """
    ## What it does
    Checks `hidden_size % num_attention_heads == 0` when no explicit head dimension
    (`kv_channels`, `head_dim`) is set.

    ## Why it matters
    Without an explicit head dimension the frameworks compute it as hidden / heads; Megatron's
    argument validation stops when that is not an integer.

    ## Example

    ## How to fix
    Use a hidden size divisible by the head count, or set the head dimension explicitly.
    """
    valid = (Example(_meg("--hidden-size: 4096\n--num-attention-heads: 32"), filename="model_config.yaml"),)
    invalid = (Example(_meg("--hidden-size: 1000\n--num-attention-heads: 16"), filename="model_config.yaml", line=4),)

    def findings(self, view: View):
        h, a = view.i("model.hidden"), view.i("model.heads")
        if h is None or a is None or a <= 0:
            return
        hidden_v = view.v("model.hidden")
        assert hidden_v is not None  # view.i gave an int for the same key
        if any(v.known or not v.why.startswith(("null", "unset")) for v in view.facts.all("model.head_dim")):
            return  # an explicit (or unresolvable) head dimension
        if h % a:
            yield Finding(hidden_v, f"hidden size {h} is not divisible by {a} attention heads; set the heads to "
                                                  f"{_divisors(h, a)}, or give the head dimension (kv_channels)",
                          [(view.v("model.heads"), f"{a} heads")])
