"""LAY002 tensor-parallel-across-nodes: Tensor parallelism spans more GPUs than one node has"""

from __future__ import annotations

from parallint.model.diagnostics import Severity
from parallint.model.factrule import FactRule, Finding, View
from parallint.model.rule import Example
from parallint.rules.lay._common import _nemo


class TensorParallelAcrossNodes(FactRule):
    code = "LAY002"
    facts = frozenset({"parallel.nodes", "parallel.tp"})
    name = "tensor-parallel-across-nodes"
    severity = Severity.WARNING
    summary = "Tensor parallelism spans more GPUs than one node has"
    doc = """
    ## What it does
    Warns when the tensor-parallel degree is larger than the number of GPUs per node while the
    job has more than one node.

    ## Why it matters
    Tensor parallelism all-reduces activations in every layer, forward and backward. Inside a
    node that traffic runs over NVLink; across nodes it runs over the network and the step slows
    down several times.

    ## Example

    ## How to fix
    Keep TP within a node (TP ≤ GPUs per node) and use pipeline or data parallelism across nodes.
    """
    valid = (Example(_nemo(tp=8, pp=2, devices=8, nodes=2), filename="conf/gpt.yaml"),)
    invalid = (Example(_nemo(tp=16, pp=1, devices=8, nodes=2), filename="conf/gpt.yaml", line=8),)

    def findings(self, view: View):
        tp, gpn = view.i("parallel.tp"), view.gpus_per_node
        nodes = view.i("parallel.nodes")
        g = gpn.value if gpn is not None and isinstance(gpn.value, int) else None
        if tp is None or g is None or nodes is None or nodes < 2:
            return
        tp_v = view.v("parallel.tp")
        assert tp_v is not None  # view.i gave an int for the same key
        if tp > g:
            yield Finding(tp_v, f"tensor-parallel degree {tp} is larger than the {g} GPUs "
                                                 f"per node: tensor-parallel all-reduces leave NVLink; lower TP to {g} or less "
                                                 f"and use pipeline or data parallelism across nodes",
                          [(gpn, f"{g} GPUs per node")])
