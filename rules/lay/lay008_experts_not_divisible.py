"""LAY008 experts-not-divisible: Experts do not divide over expert parallelism, or the expert grid does not fit the world"""

from __future__ import annotations

from parallint.model.diagnostics import Severity
from parallint.model.factrule import FactRule, Finding, View
from parallint.model.rule import Example
from parallint.rules.lay._common import _divisors, _meg, _nemo


class ExpertsNotDivisible(FactRule):
    code = "LAY008"
    facts = frozenset({"model.num_experts", "parallel.ep", "parallel.etp", "parallel.pp", "parallel.tp"})
    name = "experts-not-divisible"
    severity = Severity.ERROR
    summary = "Experts do not divide over expert parallelism, or the expert grid does not fit the world"
    doc = """
    ## What it does
    Checks `num_experts % EP == 0`, that EP > 1 comes with experts (an explicit `null` expert
    count), and, for Megatron/NeMo, that the world size is divisible by ETP×EP×PP (ETP defaults
    to TP).

    ## Why it matters
    Each expert-parallel rank holds `num_experts / EP` experts. Megatron stops with "decoder
    world_size (4) is not divisible by expert_tensor_model_pipeline_parallel size (8)".

    ## Example

    ## How to fix
    Choose EP dividing the expert count, and ETP×EP×PP dividing the world size.
    """
    valid = (Example(_meg("--num-experts: 8\n--expert-model-parallel-size: 4\n--num-attention-heads: 32"), filename="model_config.yaml"),)
    invalid = (
        Example(_meg("--num-experts: 6\n--expert-model-parallel-size: 4\n--num-attention-heads: 32"), filename="model_config.yaml", line=5),
        Example(_nemo(model_extra="  num_moe_experts: null\n  expert_model_parallel_size: 2\n"), filename="conf/gpt.yaml", line=11),
        Example(_nemo(tp=2, devices=4, model_extra="  num_moe_experts: 8\n  expert_model_parallel_size: 4\n"),
                filename="conf/moe.yaml", line=11),
    )

    def findings(self, view: View):
        ep_v = view.v("parallel.ep")
        ep = view.i("parallel.ep")
        if ep is None or ep <= 1:
            return
        assert ep_v is not None  # view.i gave an int for the same key
        ne = view.i("model.num_experts")
        stated = view.facts.all("model.num_experts")
        if stated and all((not v.known) and v.why == "null" for v in stated):
            yield Finding(ep_v, f"expert-parallel degree {ep} but the model has no experts (num_experts is null); set "
                                f"the expert-parallel degree to 1 or num_experts to a multiple of {ep}",
                          [(stated[0], "num_experts: null")])
            return
        if ne is not None and ne > 0 and ne % ep:
            yield Finding(ep_v, f"{ne} experts are not divisible by expert-parallel degree {ep}; set EP to "
                                f"{_divisors(ne, ep)}",
                          [(view.v("model.num_experts"), f"{ne} experts")])
        w = view.world_int
        if w is None or not view.fw("megatron", "nemo"):
            return
        tp = view.i("parallel.tp")
        etp = view.i("parallel.etp")
        if etp is None:
            if view.stated("parallel.etp"):
                return
            etp = tp if tp is not None else (None if view.stated("parallel.tp") else 1)
        pp = view.i("parallel.pp")
        if pp is None:
            pp = None if view.stated("parallel.pp") else 1
        if etp is None or pp is None:
            return
        grid = etp * ep * pp
        if w % grid:
            yield Finding(ep_v, f"world size {w} is not divisible by expert grid ETP {etp} × EP {ep} × PP {pp} = {grid}; "
                                f"start a multiple of {grid} processes or lower the degrees to divide {w}",
                          [(view.world, f"world size {w}")])
