"""LAY011 virtual-pipeline-without-pp: A virtual (interleaved) pipeline is requested with PP 1"""

from __future__ import annotations

from parallint.model.diagnostics import Severity
from parallint.model.factrule import FactRule, Finding, View
from parallint.model.rule import Example
from parallint.rules.lay._common import _nemo


class VirtualPipelineWithoutPp(FactRule):
    code = "LAY011"
    facts = frozenset({"parallel.pp", "parallel.vpp"})
    name = "virtual-pipeline-without-pp"
    severity = Severity.ERROR
    summary = "A virtual (interleaved) pipeline is requested with PP 1"
    doc = """
    ## What it does
    Flags a virtual pipeline size > 1 (`virtual_pipeline_model_parallel_size`,
    `--num-virtual-stages-per-pipeline-rank`) when the pipeline-parallel degree is 1.

    ## Why it matters
    The interleaved schedule needs several pipeline ranks; Megatron stops with
    "pipeline-model-parallel size should be greater than 1 with interleaved schedule".

    ## Example

    ## How to fix
    Remove the virtual pipeline setting or use PP > 1.
    """
    valid = (Example(_nemo(pp=2, model_extra="  num_layers: 24\n  virtual_pipeline_model_parallel_size: 2\n"), filename="conf/gpt.yaml"),)
    invalid = (Example(_nemo(pp=1, model_extra="  num_layers: 24\n  virtual_pipeline_model_parallel_size: 2\n"), filename="conf/gpt.yaml", line=11),)

    def findings(self, view: View):
        vpp, pp = view.i("parallel.vpp"), view.i("parallel.pp")
        if vpp is None or vpp <= 1 or pp != 1:
            return
        vpp_v = view.v("parallel.vpp")
        assert vpp_v is not None  # view.i gave an int for the same key
        yield Finding(vpp_v, f"virtual pipeline size {vpp} needs pipeline parallelism, but PP is 1; remove the "
                                              f"virtual pipeline size or raise PP",
                      [(view.v("parallel.pp"), "PP 1")])
