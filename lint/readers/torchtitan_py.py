"""torchtitan config registries (``torchtitan/models/*/config_registry.py``): functions that build
``Trainer.Config(...)`` / ``JobConfig(...)`` from dataclass configs (``ParallelismConfig(...)``,
``TrainingConfig(...)``). Read with LibCST, never executed: literal keyword arguments become a tree
shaped like the TOML job config, anything else is unknown. A file with one config contributes
its facts; a registry with several keeps each under ``data.configs`` (and its partitions)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from parallint.diagnostics import Span
from parallint.facts import FileFacts
from parallint.readers.cfgutil import ConfigData, Emitter, Placeholder, new_facts, syn001
from parallint.readers.yamlpos import PNode

KIND = "torchtitan_py"


def _dotted(expr) -> str:
    import libcst as cst

    if isinstance(expr, cst.Name):
        return expr.value
    if isinstance(expr, cst.Attribute):
        return f"{_dotted(expr.value)}.{expr.attr.value}"
    return ""


def read(path: str, abspath: Path, text: str) -> FileFacts:
    ff = new_facts(path, abspath, KIND, text)
    ff.data = ConfigData(None, "python", "torchtitan")
    # CPython's own parser first: it rejects what would crash LibCST's native parser (nesting
    # deeper than 200 brackets segfaults it) and gives the position of any syntax error
    import ast

    try:
        ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        line = getattr(exc, "lineno", None) or 1
        col = getattr(exc, "offset", None) or 1
        msg = getattr(exc, "msg", None) or str(exc) or type(exc).__name__
        syn001(ff, f"cannot parse Python: {msg}", int(line), int(col))
        return ff
    try:
        import libcst as cst
        from libcst.metadata import MetadataWrapper, PositionProvider

        module = cst.parse_module(text)
        wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
        positions = wrapper.resolve(PositionProvider)
    except Exception as exc:  # libcst.ParserSyntaxError and friends
        line = getattr(exc, "raw_line", None) or getattr(exc, "line", 1) or 1
        col = (getattr(exc, "raw_column", None) or getattr(exc, "column", 0) or 0) + 1
        msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        syn001(ff, f"cannot parse Python: {msg}", int(line), int(col))
        return ff

    def span(node) -> Span:
        p = positions.get(node)
        if p is None:
            return Span(path, 1, 1)
        return Span(path, p.start.line, p.start.column + 1, p.end.line, p.end.column + 1)

    def lit(expr) -> PNode:
        sp = span(expr)
        if isinstance(expr, cst.Integer):
            return PNode(int(expr.evaluated_value), sp)
        if isinstance(expr, cst.Float):
            return PNode(float(expr.evaluated_value), sp)
        if isinstance(expr, (cst.SimpleString, cst.ConcatenatedString)):
            v = expr.evaluated_value
            return PNode(v if isinstance(v, str) else Placeholder("bytes"), sp)
        if isinstance(expr, cst.Name) and expr.value in ("True", "False", "None"):
            return PNode({"True": True, "False": False, "None": None}[expr.value], sp)
        if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus) and isinstance(expr.expression, cst.Integer):
            return PNode(-int(expr.expression.evaluated_value), sp)
        if isinstance(expr, (cst.List, cst.Tuple)):
            return PNode([lit(e.value) for e in expr.elements if not isinstance(e, cst.StarredElement)], sp)
        if isinstance(expr, cst.Call):
            out: dict[str, PNode] = {}
            kspans: dict[str, Span] = {}
            for a in expr.args:
                if a.keyword is not None:
                    out[a.keyword.value] = lit(a.value)
                    kspans[a.keyword.value] = span(a.keyword)
            return PNode(out, sp, kspans)
        return PNode(Placeholder("expression"), sp)

    configs: dict[str, PNode] = {}

    class V(cst.CSTVisitor):
        def __init__(self) -> None:
            self.stack: list[str] = []

        def visit_FunctionDef(self, node) -> None:
            self.stack.append(node.name.value)

        def leave_FunctionDef(self, node) -> None:
            self.stack.pop()

        def visit_Call(self, node) -> bool:
            name = _dotted(node.func)
            if name.endswith("Trainer.Config") or name == "JobConfig" or (
                name.endswith(".Config") and any(a.keyword is not None and a.keyword.value in ("parallelism", "training") for a in node.args)
            ):
                tree = lit(node)
                if any(k in tree.value for k in ("parallelism", "training", "job", "model_spec")):
                    label = self.stack[-1] if self.stack else f"line {span(node).line}"
                    configs.setdefault(label, tree)
                    return False
            return True

    try:
        wrapper.visit(V())
    except RecursionError:
        syn001(ff, "cannot parse Python: nested too deeply")
        return ff
    ff.data.configs = configs
    if configs:
        from parallint.readers.torchtitan import emit_torchtitan

        ff.facts.add("framework", _fw(ff))
        for name, tree in configs.items():
            scratch = new_facts(path, abspath, KIND, "")
            scratch.data = ConfigData(tree, "python", "torchtitan")
            parts = emit_torchtitan(Emitter(scratch, tree), tree, config_name=name)
            ff.data.partitions.extend(parts)
            if len(configs) == 1:
                for key, vs in scratch.facts.items():
                    for v in vs:
                        ff.facts.add(key, v)
                ff.data.tree = tree
                ff.data.extra.update(scratch.data.extra)
    return ff


def _fw(ff: FileFacts) -> Any:
    from parallint.facts import Value

    return Value("torchtitan", Span(ff.path, 1, 1), True, "", "torchtitan config registry")
