"""torchtitan config registries (``torchtitan/models/*/config_registry.py``): functions that build
``Trainer.Config(...)`` / ``JobConfig(...)`` from dataclass configs (``ParallelismConfig(...)``,
``TrainingConfig(...)``). Read with CPython's ``ast``, never executed: literal keyword arguments become a tree
shaped like the TOML job config, anything else is unknown. A file with one config contributes
its facts; a registry with several keeps each under ``data.configs`` (and its partitions)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from parallint.model.diagnostics import Span
from parallint.model.facts import FileFacts
from parallint.readers.cfgutil import ConfigData, Emitter, Placeholder, new_facts, syn001
from parallint.readers.yamlpos import PNode

KIND = "torchtitan_py"


def _dotted(expr) -> str:
    import ast

    if isinstance(expr, ast.Name):
        return expr.id
    if isinstance(expr, ast.Attribute):
        return f"{_dotted(expr.value)}.{expr.attr}"
    return ""


def read(path: str, abspath: Path, text: str) -> FileFacts:
    ff = new_facts(path, abspath, KIND, text)
    ff.data = ConfigData(None, "python", "torchtitan")
    import ast

    try:
        module = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        line = getattr(exc, "lineno", None) or 1
        col = getattr(exc, "offset", None) or 1
        msg = getattr(exc, "msg", None) or str(exc) or type(exc).__name__
        syn001(ff, f"cannot parse Python: {msg}", int(line), int(col))
        return ff
    from parallint.model.script import Script

    where = Script(path, text)  # positions: character columns, as LibCST gave them

    def span(node) -> Span:
        return where.span_of(node)

    def keyword_span(k) -> Span:
        # the keyword's name (ast places the keyword node over `name=value`)
        a = where._offset(k.lineno, k.col_offset)
        (l1, c1), (l2, c2) = where._linecol(a), where._linecol(a + len(k.arg))
        return Span(path, l1, c1, l2, c2)

    def lit(expr) -> PNode:
        sp = span(expr)
        if isinstance(expr, ast.Constant):
            v = expr.value
            if isinstance(v, bool) or v is None:
                return PNode(v, sp)
            if isinstance(v, int):
                return PNode(int(v), sp)
            if isinstance(v, float):
                return PNode(float(v), sp)
            if isinstance(v, str):
                return PNode(v, sp)
            if isinstance(v, bytes):
                return PNode(Placeholder("bytes"), sp)
            return PNode(Placeholder("expression"), sp)
        if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.USub) and isinstance(expr.operand, ast.Constant) \
                and type(expr.operand.value) is int:
            return PNode(-int(expr.operand.value), sp)
        if isinstance(expr, (ast.List, ast.Tuple)):
            return PNode([lit(e) for e in expr.elts if not isinstance(e, ast.Starred)], sp)
        if isinstance(expr, ast.Call):
            out: dict[str, PNode] = {}
            kspans: dict[str, Span] = {}
            for k in expr.keywords:
                if k.arg is not None:
                    out[k.arg] = lit(k.value)
                    kspans[k.arg] = keyword_span(k)
            return PNode(out, sp, kspans)
        return PNode(Placeholder("expression"), sp)

    configs: dict[str, PNode] = {}
    stack: list[str] = []

    def visit(node) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            stack.append(node.name)
            for child in ast.iter_child_nodes(node):
                visit(child)
            stack.pop()
            return
        if isinstance(node, ast.Call):
            name = _dotted(node.func)
            if name.endswith("Trainer.Config") or name == "JobConfig" or (
                name.endswith(".Config") and any(k.arg in ("parallelism", "training") for k in node.keywords)
            ):
                found = lit(node)
                if any(k in found.value for k in ("parallelism", "training", "job", "model_spec")):
                    label = stack[-1] if stack else f"line {span(node).line}"
                    configs.setdefault(label, found)
                    return
        for child in ast.iter_child_nodes(node):
            visit(child)

    try:
        visit(module)
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
    from parallint.model.facts import Value

    return Value("torchtitan", Span(ff.path, 1, 1), True, "", "torchtitan config registry")
