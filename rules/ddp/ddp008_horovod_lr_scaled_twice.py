"""DDP008 horovod-lr-scaled-twice: an optimizer's learning rate multiplied by hvd.size() twice on its way in"""

from __future__ import annotations

import ast
from typing import Iterable

from parallint.model.diagnostics import Diagnostic, Related, Severity
from parallint.model.rule import Example, Rule
from parallint.model.script import script_of
from parallint.rules.ddp._common import _PY, HVD_SIZE

#: the optimizer constructors whose first positional argument (or lr=/learning_rate=) is the rate
_OPT_PREFIXES = ("torch.optim.", "tensorflow.keras.optimizers.", "keras.optimizers.", "tensorflow.optimizers.",
                 "tf_keras.optimizers.")
_LR_KEYWORDS = ("lr", "learning_rate")


def _size_factors(s, node, frame, depth=0, seen=None):
    """The ``* hvd.size()`` factors on the way to ``node``'s value, following plain single
    assignments of the names it reads: [(the size call node, its frame)]."""
    seen = set() if seen is None else seen
    out = []
    if depth > 5:
        return out
    for n in ast.walk(node):
        if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mult):
            for side in (n.left, n.right):
                if _is_size(s, side):
                    out.append(side)
                elif isinstance(side, ast.Name):  # world = hvd.size(); lr * world
                    b = s.binding(side.id, frame)
                    if b is not None and _is_size(s, b[0]):
                        out.append(b[0])
        elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id not in seen:
            b = s.binding(n.id, frame)
            if b is not None:
                seen.add(n.id)
                out.extend(_size_factors(s, b[0], b[1], depth + 1, seen))
    return out


def _is_size(s, node) -> bool:
    return isinstance(node, ast.Call) and not node.args and s.qname_in(node.func, set(HVD_SIZE))


class HorovodLrScaledTwice(Rule):
    code = "DDP008"
    name = "horovod-lr-scaled-twice"
    severity = Severity.WARNING
    summary = "an optimizer's learning rate multiplied by hvd.size() twice on its way in"
    kinds = _PY
    calls = frozenset(HVD_SIZE)
    doc = """
    ## What it does
    Follows the learning rate an optimizer is built with (`lr=`, `learning_rate=`, or the first
    argument of a `torch.optim` / Keras optimizer) back through the plain assignments it comes
    from, and flags one that is multiplied by `hvd.size()` twice: `lr = args.lr * hvd.size()`
    then `SGD(model.parameters(), lr=lr * hvd.size())`.

    ## Why it matters
    Horovod's recipe scales the learning rate once by the number of workers (the global batch
    grows with them). Scaled twice, the rate grows with the square of the worker count: on 16
    workers it is 16 times the intended one and training diverges or underperforms, with nothing
    to say why.

    ## Example

    ## How to fix
    Multiply by `hvd.size()` once, where the rate is defined or where the optimizer is built.
    """
    valid = [
        Example("""
            import torch
            import horovod.torch as hvd
            hvd.init()
            lr = args.base_lr * hvd.size()
            optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
            optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())
            hvd.broadcast_parameters(model.state_dict(), root_rank=0)
        """),
        Example("""
            import tensorflow as tf
            import horovod.tensorflow.keras as hvd
            hvd.init()
            scaled_lr = 0.001 * hvd.size()
            opt = hvd.DistributedOptimizer(tf.keras.optimizers.Adam(scaled_lr))
            callbacks = [hvd.callbacks.BroadcastGlobalVariablesCallback(0),
                         hvd.callbacks.LearningRateWarmupCallback(initial_lr=scaled_lr, warmup_epochs=3)]
        """),
    ]
    invalid = [
        Example("""
            import torch
            import horovod.torch as hvd
            hvd.init()
            lr = args.base_lr * hvd.size()
            optimizer = torch.optim.SGD(model.parameters(), lr=lr * hvd.size(), momentum=0.9)
            optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())
            hvd.broadcast_parameters(model.state_dict(), root_rank=0)
        """, line=5, doc=True),
        Example("""
            import tensorflow as tf
            import horovod.tensorflow.keras as hvd
            hvd.init()
            scaled_lr = 0.001 * hvd.size()
            opt = hvd.DistributedOptimizer(tf.keras.optimizers.Adam(scaled_lr * hvd.size()))
        """, line=5),
    ]

    def check_file(self, f, ctx) -> Iterable[Diagnostic]:
        s = script_of(f)
        if s is None or "horovod" not in s.imports:
            return
        for c in s.calls:
            node = next((c.arg_node(k) for k in _LR_KEYWORDS if c.arg_node(k) is not None), None)
            if node is None and any(q.startswith(_OPT_PREFIXES) for q in c.qnames):
                node = c.arg_node(None, 1 if any(q.startswith("torch.optim.") for q in c.qnames) else 0)
            if node is None:
                continue
            if not (any(q.startswith(_OPT_PREFIXES) for q in c.qnames)
                    or (c.method or "").endswith(("SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "LAMB", "Lamb"))):
                continue
            got = _size_factors(s, node, c.frame)
            if len(got) < 2:
                continue
            first = got[-1]
            yield self.report(
                s.span_of(node),
                f"the learning rate {s.code(node)} is multiplied by hvd.size() twice (lines "
                f"{s.span_of(first).line} and {s.span_of(got[0]).line}): it grows with the square of the worker "
                "count; remove one of the two * hvd.size()",
                related=tuple(Related.at(s.span_of(g), "* hvd.size()") for g in got[:2]))
