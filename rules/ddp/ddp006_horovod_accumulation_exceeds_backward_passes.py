"""DDP006 horovod-accumulation-exceeds-backward-passes: a loop accumulates more backward passes per step than hvd.DistributedOptimizer's backward_passes_per_step"""

from __future__ import annotations

import ast
from typing import Iterable

from parallint.model.diagnostics import Diagnostic, Related, Severity
from parallint.model.rule import Example, Rule
from parallint.model.script import script_of
from parallint.rules.ddp._common import _PY, within

_RECIPE = """
    import torch
    import horovod.torch as hvd

    hvd.init()
    torch.cuda.set_device(hvd.local_rank())
    model = Net().cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01 * hvd.size())
    optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters(){bpps})
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(optimizer, root_rank=0)
    accumulation_steps = {n}
    for i, (data, target) in enumerate(train_loader):
        loss = F.nll_loss(model(data.cuda()), target.cuda()) / accumulation_steps
        loss.backward()
        if (i + 1) % accumulation_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
"""


def _mod_test(test):
    """N of an ``x % N == 0`` test (``not x % N`` too), else None."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test = test.operand
        return test.right if isinstance(test, ast.BinOp) and isinstance(test.op, ast.Mod) else None
    if (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)
            and isinstance(test.left, ast.BinOp) and isinstance(test.left.op, ast.Mod)
            and isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value == 0):
        return test.left.right
    if isinstance(test, ast.BoolOp):  # `... == 0 or i == last`: the modulo still gates most steps
        for v in test.values:
            got = _mod_test(v)
            if got is not None:
                return got
    return None


class HorovodAccumulationExceedsBackwardPasses(Rule):
    code = "DDP006"
    name = "horovod-accumulation-exceeds-backward-passes"
    severity = Severity.ERROR
    summary = ("a loop accumulates more backward passes per step than hvd.DistributedOptimizer's "
               "backward_passes_per_step")
    kinds = _PY
    calls = frozenset({"hvd_optimizer"})
    doc = """
    ## What it does
    Finds a PyTorch training loop that accumulates gradients itself (`loss.backward()` on every
    iteration, `optimizer.step()` only under `if (i + 1) % N == 0`) with an optimizer wrapped by
    `hvd.DistributedOptimizer`, and compares `N` with the wrapper's `backward_passes_per_step`
    (1 when not passed). Flags `N` above it; an `N` the code does not show gets an `info` hint
    when `backward_passes_per_step` is left at 1. Silent when the script synchronizes by hand
    (`optimizer.synchronize()`, `skip_synchronize()`) or changes the count later
    (`set_backward_passes_per_step`).

    ## Why it matters
    Horovod's wrapper counts the backward passes of each gradient and starts its allreduce after
    `backward_passes_per_step` of them; another backward before `step()` fails with
    `AssertionError: Gradients were computed more than backward_passes_per_step times before
    call to step(). Increase backward_passes_per_step to accumulate gradients locally.` The run
    stops at the second micro-batch of the first step.

    ## Example

    ## How to fix
    Pass the accumulation count: `hvd.DistributedOptimizer(optimizer,
    named_parameters=model.named_parameters(), backward_passes_per_step=accumulation_steps)`.
    """
    valid = [
        Example(_RECIPE.format(n=4, bpps=", backward_passes_per_step=accumulation_steps")),
        Example(_RECIPE.format(n=1, bpps="")),
    ]
    invalid = [
        Example(_RECIPE.format(n=4, bpps=""), line=16, doc=True),
        Example(_RECIPE.format(n=8, bpps=", backward_passes_per_step=4"), line=16),
        Example(_RECIPE.format(n="args.accumulation_steps", bpps=""), line=16),  # info: N unknown
    ]

    def check_file(self, f, ctx) -> Iterable[Diagnostic]:
        s = script_of(f)
        if s is None:
            return
        if s.methods("synchronize") or s.methods("set_backward_passes_per_step") or "skip_synchronize" in (s.text or ""):
            return
        for wrap in s.by("hvd_optimizer"):
            if wrap.target is None or wrap.has_star():
                continue
            k_node = wrap.arg_node("backward_passes_per_step", 3)
            if k_node is None:
                k, k_text = 1, None
            else:
                kv = s.value(k_node, wrap.frame, with_span=False)
                if not kv.known or not isinstance(kv.value, int) or isinstance(kv.value, bool):
                    continue
                k, k_text = kv.value, s.code(k_node)
            for c in s.methods("step"):
                if not (isinstance(c.receiver, ast.Name) and c.receiver.id == wrap.target and c.loops
                        and (c.frame is wrap.frame or wrap.frame is s.module_frame)):
                    continue
                got = self._gated(s, c)
                if got is None:
                    continue
                n_node, loop = got
                nv = s.value(n_node, c.frame, with_span=False)
                n_text = s.code(n_node)
                if k_text is not None and k_text == n_text:
                    continue
                rel = (Related.at(wrap.span, "the wrapper: backward_passes_per_step="
                                  + (k_text if k_text is not None else "1 (the default)")),)
                said = f"backward_passes_per_step={k_text}" if k_text is not None else "backward_passes_per_step is 1"
                if nv.known and isinstance(nv.value, int) and not isinstance(nv.value, bool):
                    if nv.value <= k:
                        continue
                    yield self.report(
                        c.span,
                        f"{s.code(c.node.func)}() runs once every {n_text} = {nv.value} backward passes but "
                        f"the hvd.DistributedOptimizer's {said}: backward pass {k + 1} raises AssertionError "
                        "\"Gradients were computed more than backward_passes_per_step times before call to "
                        f"step()\"; pass backward_passes_per_step={n_text} to hvd.DistributedOptimizer",
                        related=rel)
                elif k == 1 and k_text is None:
                    yield self.report(
                        c.span,
                        f"{s.code(c.node.func)}() runs once every {n_text} backward passes but the "
                        f"hvd.DistributedOptimizer's {said}: when {n_text} is above 1 the second backward "
                        "raises AssertionError \"Gradients were computed more than backward_passes_per_step "
                        f"times\"; pass backward_passes_per_step={n_text} to hvd.DistributedOptimizer",
                        severity=Severity.INFO, related=rel)

    @staticmethod
    def _gated(s, c):
        """(N, loop) when ``c`` runs under ``if ... % N == 0`` inside its innermost loop, and that
        loop also calls ``.backward()`` outside the ``if``."""
        loop = c.loops[-1]._node
        gate = None
        for n in ast.walk(loop):
            if isinstance(n, ast.If) and within(c.node, n) and any(within(c.node, b) for b in n.body):
                got = _mod_test(n.test)
                if got is not None:
                    gate = (got, n)
        if gate is None:
            return None
        n_node, if_node = gate
        for b in s.methods("backward"):
            if b.loops and b.loops[-1]._node is loop and not within(b.node, if_node):
                return n_node, loop
        return None
