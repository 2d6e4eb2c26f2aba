"""LAY005 sequence-parallel-without-tp: Sequence parallelism is enabled with tensor-parallel degree 1"""

from __future__ import annotations

from parallint.model.diagnostics import Severity
from parallint.model.factrule import FactRule, Finding, View
from parallint.model.rule import Example
from parallint.rules.lay._common import _nemo


class SequenceParallelWithoutTp(FactRule):
    code = "LAY005"
    facts = frozenset({"parallel.sequence_parallel", "parallel.tp"})
    name = "sequence-parallel-without-tp"
    severity = Severity.WARNING
    summary = "Sequence parallelism is enabled with tensor-parallel degree 1"
    doc = """
    ## What it does
    Warns when Megatron-style sequence parallelism (`--sequence-parallel`,
    `sequence_parallel: true`) is on while TP is 1.

    TP must be 1 as launched: a config whose TP a tool rewrites (NeMo `auto_configurator` base
    configs), a conversion config and gpt-neox's parallelism left at 1 by convention are silent;
    a test case or training config that runs as written with TP 1 is reported
    (docs/precision-policy-configs.md).

    ## Why it matters
    Megatron's sequence parallelism splits the activations of the tensor-parallel group; with TP 1
    there is nothing to split, and Megatron silently turns it off (Megatron-Core raises "Cannot use
    sequence parallelism without tensor parallelism"). The config does not do what it says.

    ## Example

    ## How to fix
    Remove the flag, or raise TP. For splitting long sequences across GPUs use context
    parallelism (or DeepSpeed-Ulysses `sequence_parallel_size`, which is a different feature).
    """
    valid = (Example(_nemo(tp=2, model_extra="  sequence_parallel: true\n"), filename="conf/gpt.yaml"),)
    invalid = (Example(_nemo(tp=1, model_extra="  sequence_parallel: true\n"), filename="conf/gpt.yaml", line=10),)

    def findings(self, view: View):
        if not view.fw("megatron", "nemo", "neox"):
            return
        sp = view.v("parallel.sequence_parallel")
        if sp is None or sp.value is not True:
            return
        tp = view.i("parallel.tp")
        if tp == 1:
            yield Finding(sp, "sequence parallelism needs tensor parallelism; with TP 1 Megatron turns it off; "
                              "remove sequence parallelism or raise TP above 1",
                          [(view.v("parallel.tp"), "TP 1")])
