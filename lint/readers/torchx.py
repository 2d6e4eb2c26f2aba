"""TorchX components written in Python: the launch a component function describes.

A component is a function returning a ``specs.AppDef``; ``torchx run comp.py:trainer`` runs it. Two
shapes are read (with :mod:`ast`, never imported or run):

* a call of the built-in ``torchx.components.dist.ddp`` (or ``spmd``):
  ``ddp(*script_args, script="train.py", j="2x8")`` starts torchrun on N nodes × M processes,
  exactly like ``torchx run dist.ddp -j 2x8 --script train.py -- ARGS``; the words are handed to
  :mod:`parallint.readers.cmdline`'s ``torchx run`` parser, so both paths give the same facts. A ``j``
  that is not written is the component's default (``1x2`` for ``ddp``, ``1x1`` for ``spmd``); a
  ``j`` taken from the component's parameters (``j=j``) can be changed on the command line and is
  unknown.
* a ``specs.Role(entrypoint=..., args=[...], num_replicas=N, resource=specs.Resource(gpu=G))``:
  the entrypoint and args are a command line (``python -m torch.distributed.run --nnodes 2 ...``)
  that TorchX starts on each of N replicas; the role is the outer launch layer (G GPUs requested
  per node; N is kept as its ``num_replicas`` option, not as a node count: NeMo-Run's torchrun
  component gives one replica and starts the nodes through its own scheduler).

Only literal values count (and names bound once at module level to a literal); any other word is
unknown, and a call inside a loop or comprehension is skipped.
"""

from __future__ import annotations

import ast
from pathlib import Path

from parallint.model.diagnostics import Span
from parallint.model.facts import Value
from parallint.model.launch import Launch

MAX_BYTES = 2_000_000
DIST = {"torchx.components.dist.ddp": "ddp", "torchx.components.dist.spmd": "spmd"}
DEFAULT_J = {"ddp": "1x2", "spmd": "1x1"}
ROLE = ("torchx.specs.Role", "torchx.specs.api.Role")
RESOURCE = ("torchx.specs.Resource", "torchx.specs.api.Resource")
#: ``ddp()`` keywords that become ``torchx run dist.ddp`` options (the others say nothing here)
DDP_OPTIONS = ("script", "m", "j", "rdzv_backend")


class _Reader:
    def __init__(self, path: str, tree: ast.Module) -> None:
        self.path = path
        self.tree = tree
        self.alias: dict[str, str] = {}
        self.consts: dict[str, ast.AST] = {}
        self.loops: set[int] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    self.alias[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for a in node.names:
                    self.alias[a.asname or a.name] = f"{node.module}.{a.name}"
            elif isinstance(node, (ast.For, ast.While, ast.AsyncFor, ast.ListComp, ast.SetComp, ast.DictComp,
                                   ast.GeneratorExp)):
                self.loops.update(id(s) for s in ast.walk(node) if s is not node)
        counts: dict[str, int] = {}
        for node in ast.walk(tree):
            if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                for t in node.targets if isinstance(node, ast.Assign) else [node.target]:
                    if isinstance(t, ast.Name):
                        counts[t.id] = counts.get(t.id, 0) + 1
        for node in tree.body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                    and counts.get(node.targets[0].id) == 1 and isinstance(node.value, ast.Constant):
                self.consts[node.targets[0].id] = node.value

    def qname(self, func: ast.AST) -> str:
        parts: list[str] = []
        while isinstance(func, ast.Attribute):
            parts.append(func.attr)
            func = func.value
        if not isinstance(func, ast.Name) or func.id not in self.alias:
            return ""
        return ".".join([self.alias[func.id]] + list(reversed(parts)))

    def span(self, node: ast.AST) -> Span:
        return Span(self.path, getattr(node, "lineno", 1), getattr(node, "col_offset", 0) + 1,
                    getattr(node, "end_lineno", 0) or 0, (getattr(node, "end_col_offset", -1) or -1) + 1)

    def literal(self, node: ast.AST):
        if isinstance(node, ast.Name) and node.id in self.consts:
            node = self.consts[node.id]
        if isinstance(node, ast.Constant) and isinstance(node.value, (str, int)) and not isinstance(node.value, bool):
            return str(node.value)
        return None

    def word(self, node: ast.AST, what: str):
        from parallint.readers import cmdline

        text = self.literal(node)
        if text is None:
            return cmdline.Word.unknown(f"{what} is not a literal", self.span(node), splat=isinstance(node, ast.Starred))
        return cmdline.Word.lit(text, self.span(node))

    @staticmethod
    def kw(call: ast.Call, name: str) -> ast.AST | None:
        return next((k.value for k in call.keywords if k.arg == name), None)

    # -- dist.ddp / dist.spmd
    def dist(self, call: ast.Call, which: str) -> Launch | None:
        from parallint.readers import cmdline

        sp = self.span(call)
        words = [cmdline.Word.lit("torchx", sp), cmdline.Word.lit("run", sp), cmdline.Word.lit("dist.ddp", sp)]
        if any(k.arg is None for k in call.keywords):
            words.append(cmdline.Word.unknown("**kwargs", sp, splat=True))
        for name in DDP_OPTIONS:
            node = self.kw(call, name)
            if node is None:
                continue
            if name == "j" and which == "spmd" and "x" not in (self.literal(node) or "x"):
                # spmd's `-j N` takes the processes per node from the host type: not known here
                words += [cmdline.Word.lit("-j", sp), cmdline.Word.unknown("GPUs of the host type", self.span(node))]
                continue
            words += [cmdline.Word.lit(f"--{name}" if len(name) > 1 else f"-{name}", sp), self.word(node, name)]
        words.append(cmdline.Word.lit("--", sp))
        words += [self.word(a, "a script argument") for a in call.args]
        la = cmdline.parse_command(words, cmdline.Context(), sp)
        if la is None:
            return None
        la.options["torchx"] = Value(f"dist.{which}", sp, True, "", f"torchx.components.dist.{which}()")
        if self.kw(call, "j") is None:
            jv = Value(DEFAULT_J[which], sp, True, "", f"dist.{which}() j (default {DEFAULT_J[which]})")
            la.options["torchx_j"] = jv
            cmdline.torchx_j(la, jv, f"dist.{which}() j (default {DEFAULT_J[which]})")
        return la

    # -- specs.Role
    def role(self, call: ast.Call, path: str, abspath: Path) -> Launch | None:
        from parallint.readers import cmdline
        from parallint.readers.orchestrator import as_outer_layer

        ep = self.kw(call, "entrypoint")
        args = self.kw(call, "args")
        if ep is None or self.literal(ep) is None:
            return None
        sp = self.span(call)
        words = [self.word(ep, "entrypoint")]
        if args is not None:
            if not isinstance(args, (ast.List, ast.Tuple)):
                words.append(cmdline.Word.unknown("args is not a literal list", self.span(args), splat=True))
            else:
                words += [self.word(a, "an argument") for a in args.elts]
        outer = Launch("torchx", sp)
        n = self.kw(call, "num_replicas")
        if n is None:
            nodes = Value(1, sp, True, "", "TorchX Role num_replicas (default 1)")
        else:
            text = self.literal(n)
            nodes = Value(int(text), self.span(n), True, "", "TorchX Role num_replicas") \
                if text is not None and text.isdigit() and int(text) > 0 else \
                Value.unknown("num_replicas is not a literal", self.span(n), "TorchX Role num_replicas")
        # kept as an option, not as the node count: frameworks built on TorchX (NeMo-Run's torchrun
        # component) give one replica and start the nodes through their own scheduler
        outer.options["num_replicas"] = nodes
        res = self.kw(call, "resource")
        if isinstance(res, ast.Call) and self.qname(res.func) in RESOURCE:
            g = self.kw(res, "gpu")
            text = self.literal(g) if g is not None else None
            if g is not None and text is not None and text.isdigit():
                outer.facts.add("hardware.gpus_per_node_requested",
                                Value(int(text), self.span(g), True, "", "TorchX Resource gpu"))
        as_outer_layer(outer)
        la = cmdline.parse_command(words, cmdline.Context(), sp)
        if la is None:
            return None
        inner = la
        while inner.wrapper is not None:
            inner = inner.wrapper
        inner.wrapper = outer
        la.facts.extend(outer.facts)  # the role's replicas and GPUs sit next to the launcher's own
        return la

    def launches(self, path: str, abspath: Path) -> list[Launch]:
        out: list[Launch] = []
        for node in ast.walk(self.tree):
            if not isinstance(node, ast.Call) or id(node) in self.loops:
                continue
            q = self.qname(node.func)
            la = None
            if q in DIST:
                la = self.dist(node, DIST[q])
            elif q in ROLE:
                la = self.role(node, path, abspath)
            if la is not None:
                out.append(la)
        return out


def component_launches(path: str, abspath: Path, text: str, tree: ast.Module | None = None) -> list[Launch]:
    """The launches the TorchX components in a Python file describe (none when it has none);
    ``tree``: the file's ``ast``, when the caller has parsed it already."""
    if "torchx" not in text or len(text) > MAX_BYTES:
        return []
    if tree is None:
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            return []
    try:
        return _Reader(path, tree).launches(path, abspath)
    except (RecursionError, ValueError, TypeError, KeyError, IndexError):
        return []
