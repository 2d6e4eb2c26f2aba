"""DDP007 horovod-optimizer-wrapped-twice: gradients averaged twice: hvd.DistributedOptimizer over itself, or over a DistributedDataParallel model"""

from __future__ import annotations

import ast
from typing import Iterable

from parallint.model.diagnostics import Diagnostic, Related, Severity
from parallint.model.rule import Example, Rule
from parallint.model.script import script_of
from parallint.rules.ddp._common import _PY, HVD_WRAPPERS

_HEAD = """
    import torch
    import horovod.torch as hvd

    hvd.init()
    torch.cuda.set_device(hvd.local_rank())
    model = Net().cuda()
"""


def _exclusive(a, b) -> bool:
    """Two calls on opposite branches of one ``if``."""
    mine = {g.if_id: g.branch for g in a.guards}
    return any(g.if_id in mine and mine[g.if_id] != g.branch for g in b.guards)


class HorovodOptimizerWrappedTwice(Rule):
    code = "DDP007"
    name = "horovod-optimizer-wrapped-twice"
    severity = Severity.ERROR
    summary = ("gradients averaged twice: hvd.DistributedOptimizer over itself, or over a "
               "DistributedDataParallel model")
    kinds = _PY
    calls = frozenset(HVD_WRAPPERS | {"ddp"})
    doc = """
    ## What it does
    Flags an optimizer wrapped by `hvd.DistributedOptimizer` twice (the wrapper applied to its
    own result, nested or `optimizer = hvd.DistributedOptimizer(optimizer)` run twice in one
    function), and a PyTorch script that wraps its model in `DistributedDataParallel` and its
    optimizer in `hvd.DistributedOptimizer` in the same function, on branches that run together.

    ## Why it matters
    Each wrapper registers its own gradient hooks: with two Horovod wrappers every gradient is
    submitted twice under one name, which Horovod refuses ("a tensor with the same name as
    another tensor that is currently being processed") or reduces twice. DDP plus Horovod sends
    every gradient over two communication stacks (NCCL process group and Horovod) and needs
    both rendezvous; the step costs twice the communication for the same average.

    ## Example

    ## How to fix
    Wrap once: keep the `hvd.DistributedOptimizer` and the plain model (Horovod's recipe), or
    DDP with a plain optimizer.
    """
    valid = [
        Example(_HEAD + """
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01 * hvd.size())
    optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
        """),
        # one or the other, chosen by a flag
        Example(_HEAD + """
    from torch.nn.parallel import DistributedDataParallel as DDP
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    if args.use_horovod:
        optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())
        hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    else:
        torch.distributed.init_process_group("nccl")
        model = DDP(model, device_ids=[hvd.local_rank()])
        """),
    ]
    invalid = [
        Example(_HEAD + """
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01 * hvd.size())
    optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())
        """, line=11, doc=True),
        Example(_HEAD + """
    from torch.nn.parallel import DistributedDataParallel as DDP
    torch.distributed.init_process_group("nccl")
    model = DDP(model, device_ids=[hvd.local_rank()])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())
        """, line=12),
    ]

    def check_file(self, f, ctx) -> Iterable[Diagnostic]:
        s = script_of(f)
        if s is None:
            return
        wraps = [c for c in s.calls if c.qnames & HVD_WRAPPERS and not c.has_star()]
        if not wraps:
            return
        for c in wraps:
            inner = c.arg_node(None, 0)
            if inner is None:
                inner = c.arg_node("optimizer")
            if inner is None:
                continue
            prev = None
            if isinstance(inner, ast.Call) and s.qname_in(inner.func, set(HVD_WRAPPERS)):
                prev = next((w for w in wraps if w.node is inner), None)
            elif isinstance(inner, ast.Name):
                earlier = [w for w in wraps if w.index < c.index and w.frame is c.frame and w.target == inner.id
                           and not w.loops and not c.loops and not _exclusive(w, c)]
                if earlier and not any(_reassigned(s, inner.id, earlier[-1], c)):
                    prev = earlier[-1]
            if prev is None:
                continue
            yield self.report(
                c.span,
                f"{s.code(c.node.func)}() wraps an optimizer that is already an hvd.DistributedOptimizer "
                f"(line {prev.span.line}): every gradient is submitted to Horovod twice under one name; "
                "remove the second wrapper",
                related=(Related.at(prev.span, "the first wrapper"),))
        if "torch" not in s.imports:
            return
        for c in wraps:
            if "horovod.torch.DistributedOptimizer" not in c.qnames or s.paths(c.frame) is None:
                continue
            for d in s.by("ddp"):
                if d.frame is not c.frame or _exclusive(d, c) or d.loops or c.loops:
                    continue
                yield self.report(
                    c.span,
                    f"the model is wrapped in {s.code(d.node.func)}() (line {d.span.line}) and the optimizer in "
                    f"{s.code(c.node.func)}(): each gradient is averaged by DDP's process group and again by "
                    "Horovod, twice the communication for the same result; remove one of the two wrappers "
                    "(Horovod's recipe keeps the plain model)",
                    severity=Severity.WARNING, related=(Related.at(d.span, "the DistributedDataParallel model"),))
                break


def _reassigned(s, name: str, first, second):
    """Assignments of ``name`` between two calls of one frame other than the calls' own."""
    for c in s.calls:
        if first.index < c.index < second.index and c.target == name and c.frame is first.frame:
            yield c
