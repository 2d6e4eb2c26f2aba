"""DDP001 find-unused-parameters: find_unused_parameters=True on a model whose forward provably uses every parameter"""

from __future__ import annotations

import re
from typing import Iterable

from parallint.model.diagnostics import Diagnostic, Severity
from parallint.model.rule import Example, Rule
from parallint.model.script import Script, script_of
from parallint.rules.ddp._common import _PY


#: torch.nn classes that hold no forward of their own (or hold parameters a forward may skip)
_NOT_A_LAYER = frozenset({"Module", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict", "Parameter",
                          "DataParallel", "DistributedDataParallel", "parallel", "functional", "init", "utils"})


#: methods that return the same module (moved or cast)
_SAME_MODULE = frozenset({"to", "cuda", "cpu", "float", "half", "bfloat16", "double", "train", "to_empty",
                          "requires_grad_"})


_NEEDED_COMMENT = re.compile(r"unused|not all|required|needed|necessary|must|otherwise|skip|frozen|freez|expert"
                             r"|branch|conditional", re.I)


def _all_layers(s: Script, node, frame, depth: int = 0) -> str | None:
    """A description when ``node`` is a model built here whose forward uses every parameter: an
    ``nn.Sequential`` of torch.nn layers (or one torch.nn layer), possibly moved with ``.cuda()``
    / ``.to()``. None when that cannot be shown."""
    import ast

    from parallint.model.script import call_args

    if depth > 6 or node is None:
        return None
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in _SAME_MODULE and not s.qnames(func):
            if func.attr == "requires_grad_":
                return None  # parameters frozen or not: not shown
            return _all_layers(s, func.value, frame, depth + 1)
        qs = s.qnames(func)
        if not qs:
            return None
        if any(q in ("torch.nn.Sequential", "torch.nn.modules.container.Sequential") for q in qs):
            args = call_args(node)
            if not args or any(a.star or a.keyword is not None for a in args):
                return None
            if all(_all_layers(s, a.value, frame, depth + 1) for a in args):
                return "an nn.Sequential of torch.nn layers"
            return None
        for q in qs:
            parts = q.split(".")
            if (len(parts) == 3 and parts[:2] == ["torch", "nn"] and parts[2][:1].isupper()
                    and parts[2] not in _NOT_A_LAYER):
                return f"torch.nn.{parts[2]}"
        return None
    if isinstance(node, ast.Name) and frame is not None:
        b = s.binding(node.id, frame)
        if b is not None:
            return _all_layers(s, b[0], b[1], depth + 1)
        return None
    return None


def _local_model_class(s: Script, node) -> str | None:
    """``Net(...)`` for an ``nn.Module`` subclass of this file whose ``__init__`` only registers
    torch.nn layers and whose ``forward`` calls every one of them, with no branch, loop or
    exception handler: every parameter takes part in every step."""
    import ast

    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
        return None
    name = node.func.id
    classes = s.classes.get(name, [])
    if len(classes) != 1 or name in s.import_map or classes[0].node is None:
        return None
    cdef = classes[0].node
    if len(cdef.bases) != 1 or not (s.qnames(cdef.bases[0]) & {"torch.nn.Module", "torch.nn.modules.module.Module"}):
        return None
    methods = {f.name: f for fs in s.functions.values() for f in fs if f.parent is classes[0]}
    init, fwd = methods.get("__init__"), methods.get("forward")
    if init is None or fwd is None or fwd.node is None:
        return None
    layers: set[str] = set()
    for key, bs in s.attr_bindings.items():
        if not key.startswith("self.") or key.count(".") != 1:
            continue
        mine = [(e, fr) for e, fr in bs if fr.parent is classes[0] or fr is init]
        if not mine:
            continue
        if any(fr is not init for _e, fr in mine) or len(mine) != 1:
            return None  # assigned outside __init__ or twice: not a fixed set of layers
        expr = mine[0][0]
        if isinstance(expr, ast.Call):
            if _all_layers(s, expr, init) is None:
                return None  # a submodule that is not a plain torch.nn layer: may skip parameters
            layers.add(key[5:])
    if not layers or s.methods("add_module") or s.methods("register_module") or s.methods("register_parameter"):
        return None
    if _has_branches(fwd.node.body):
        return None
    called = {c.method for c in s.calls if c.frame is fwd and c.method and isinstance(c.receiver, ast.Name)
              and c.receiver.id == "self"}
    if layers - called:
        return None
    return f"{name}, a module of this file whose forward calls every layer it registers"


def _has_branches(body: list) -> bool:
    """A branch, loop, exception handler, nested function or `with` in the statements ``body``, or
    more than one line of it (among its own statements) that returns."""
    import ast

    branching = (ast.If, ast.IfExp, ast.For, ast.AsyncFor, ast.While, ast.Try, ast.BoolOp, ast.FunctionDef,
                 ast.AsyncFunctionDef, ast.Lambda, ast.With, ast.AsyncWith)
    for st in body:
        for node in ast.walk(st):
            if isinstance(node, branching):
                return True
    return len({st.lineno for st in body if isinstance(st, ast.Return)}) > 1


def _previous_binding(s: Script, call, name: str):
    """The expression ``name`` was built from before ``name = DDP(name, ...)`` in the same scope,
    passing over moves (``name = name.to(device)``)."""
    import ast

    from parallint.model.pyshared import MULTI

    bs = call.frame.bindings.get(name, [])
    for i, b in enumerate(bs):
        if b is call.node:
            j = i - 1
            while j >= 0:
                prev = bs[j]
                if prev is MULTI:
                    return None
                f = prev.func if isinstance(prev, ast.Call) else None
                if (isinstance(f, ast.Attribute) and f.attr in _SAME_MODULE and f.attr != "requires_grad_"
                        and isinstance(f.value, ast.Name) and f.value.id == name):
                    j -= 1
                    continue
                return prev
            return None
    return None


def _wrapped_model_uses_every_parameter(s: Script, call) -> str | None:
    import ast

    m = call.arg_node("module", 0)
    if m is None:
        return None
    if isinstance(m, ast.Name):
        prev = _previous_binding(s, call, m.id)
        if prev is not None:
            m = prev
    while isinstance(m, ast.Call) and isinstance(m.func, ast.Attribute) and m.func.attr in _SAME_MODULE \
            and m.func.attr != "requires_grad_" and not s.qnames(m.func):
        m = m.func.value
    return _all_layers(s, m, call.frame) or _local_model_class(s, m)


def _comment_says_needed(text: str, line: int) -> bool:
    """A comment on the lines around ``line`` explaining the flag ("not all experts are routed")."""
    import io
    import tokenize

    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT and line - 3 <= tok.start[0] <= line + 1:
                if _NEEDED_COMMENT.search(tok.string):
                    return True
            if tok.start[0] > line + 1:
                break
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return True  # cannot tell: stay silent
    return False


class FindUnusedParameters(Rule):
    code = "DDP001"
    calls = frozenset({"ddp"})
    facts = frozenset({"ddp.find_unused_parameters"})
    name = "find-unused-parameters"
    severity = Severity.WARNING
    summary = "find_unused_parameters=True on a model whose forward provably uses every parameter"
    kinds = _PY  # configs state the flag but never show the model: no evidence either way
    doc = """
    ## What it does
    Flags `DistributedDataParallel(..., find_unused_parameters=True)` when the script shows that the
    flag cannot be needed: the model DDP wraps is built in the same file as an `nn.Sequential` of
    torch.nn layers (or a single torch.nn layer), or is an `nn.Module` subclass of the file whose
    `__init__` registers only torch.nn layers and whose `forward` calls every one of them with no
    branch, loop or early return: every parameter takes part in every step.

    The flag is often *required*: GANs and manual optimisation (`automatic_optimization = False`,
    several optimisers), mixture-of-experts routing, multimodal and conditional-branch models,
    adapters over frozen weights, and configs that never train (inference, export, conversion).
    Whether a model leaves parameters unused is a property of its forward, which a linter rarely
    sees. So the rule fires only on positive evidence that every parameter is used, and is silent
    otherwise: on `DDPStrategy(find_unused_parameters=True)`, the HF `ddp_find_unused_parameters`
    argument, accelerate's `DistributedDataParallelKwargs`, Lightning strategy strings and YAML/JSON
    configs (none of them show the model), and when a comment next to the flag explains it.

    ## Why it matters
    With the flag on, DDP walks the autograd graph after every forward pass to find parameters
    that did not take part, and it cannot overlap all of its gradient all-reduce with backward.
    When every parameter is used this is pure overhead on every step.

    ## Example

    ## How to fix
    Drop the flag. If DDP then reports unused parameters, remove the unused submodules from the
    model or freeze them (`requires_grad_(False)`); keep the flag only for models whose forward
    really skips parameters depending on the input, or use `static_graph=True` when the set of
    used parameters is the same every step.
    """
    valid = [
        Example("""
            import torch.distributed as dist
            from torch.nn.parallel import DistributedDataParallel as DDP
            model = DDP(model, device_ids=[local_rank])
        """),
        Example("""
            import os
            import torch.nn as nn
            from torch.nn.parallel import DistributedDataParallel as DDP
            model = nn.Sequential(nn.Linear(8, 8), nn.ReLU())
            model = DDP(model, find_unused_parameters=os.environ.get("FIND_UNUSED") == "1")
        """),
        # a model this file does not build: nothing shows every parameter is used
        Example("""
            from torch.nn.parallel import DistributedDataParallel as DDP
            from mypkg.models import MoETransformer
            model = DDP(MoETransformer(cfg).cuda(), device_ids=[local_rank], find_unused_parameters=True)
        """),
        # a GAN under Lightning: manual optimisation, two optimisers
        Example("""
            import lightning as L
            from lightning.pytorch.strategies import DDPStrategy
            trainer = L.Trainer(strategy=DDPStrategy(find_unused_parameters=True), devices=8)
        """),
        Example("""
            from transformers import TrainingArguments
            args = TrainingArguments(output_dir="out", ddp_find_unused_parameters=True)
        """),
        # explained next to the flag
        Example("""
            import torch.nn as nn
            from torch.nn.parallel import DistributedDataParallel as DDP
            model = nn.Sequential(nn.Linear(8, 8), nn.Linear(8, 8))
            # the second head is skipped on text-only batches, so this is required
            model = DDP(model, find_unused_parameters=True)
        """),
    ]
    invalid = [
        Example("""
            import torch.nn as nn
            import torch.nn.parallel as par
            model = nn.Sequential(nn.Linear(128, 256), nn.ReLU(), nn.Linear(256, 10)).cuda(local_rank)
            model = par.DistributedDataParallel(model, device_ids=[local_rank], find_unused_parameters=True)
        """, line=4),
        Example("""
            import torch.nn as nn
            from torch.nn.parallel import DistributedDataParallel as DDP
            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc1 = nn.Linear(784, 128)
                    self.fc2 = nn.Linear(128, 10)
                def forward(self, x):
                    return self.fc2(self.fc1(x).relu())
            model = DDP(Net().cuda(), device_ids=[local_rank], find_unused_parameters=True)
        """, line=10),
        Example("""
            import torch
            from torch.nn.parallel import DistributedDataParallel as DDP
            FIND_UNUSED = True
            net = DDP(torch.nn.Linear(1024, 1024).to(local_rank), device_ids=[local_rank], find_unused_parameters=FIND_UNUSED)
        """, line=4),
    ]

    def check_file(self, f, ctx) -> Iterable[Diagnostic]:
        s = script_of(f)
        if s is None:
            return  # configs and framework arguments never show the model: no evidence either way
        for c in s.by("ddp"):
            v = s.arg(c, "find_unused_parameters")
            if v is None or not v.known or v.value is not True:
                continue
            what = _wrapped_model_uses_every_parameter(s, c)
            if what is None:
                continue
            span = s.arg_span(c, "find_unused_parameters")
            if _comment_says_needed(s.text, span.line):
                continue
            yield self.report(
                span,
                f"find_unused_parameters=True, but the model DDP wraps is {what} built here: every "
                "parameter takes part in each forward pass, so DDP searches the autograd graph after "
                "every step for nothing and delays the gradient all-reduce; remove find_unused_parameters=True",
            )
