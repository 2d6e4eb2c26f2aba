"""submitit ``CommandFunction([...])`` in a script: the command line it submits, as facts of the
script (Megatron flags and the like), read with :mod:`ast` and :mod:`parallint.readers.cmdline`. The
executor's own counts (``update_parameters(nodes=, tasks_per_node=)``) are read by
:mod:`parallint.link.pylaunch`; the node and process counts of the command itself are the executor's,
so they are left out here."""

from __future__ import annotations

import ast

from parallint.model.diagnostics import Span
from parallint.model.facts import FactMap

MAX_BYTES = 2_000_000
COMMAND = ("submitit.helpers.CommandFunction",)
#: the counts the executor decides (update_parameters), not the command it runs
EXECUTOR_COUNTS = frozenset(("nodes", "procs_per_node", "world_size"))


def _aliases(tree: ast.Module) -> dict[str, str]:
    alias: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                alias[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for a in node.names:
                alias[a.asname or a.name] = f"{node.module}.{a.name}"
    return alias


def _qname(func: ast.AST, alias: dict[str, str]) -> str:
    parts: list[str] = []
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if not isinstance(func, ast.Name) or func.id not in alias:
        return ""
    return ".".join([alias[func.id]] + list(reversed(parts)))


def command_facts(path: str, text: str, tree: ast.Module | None = None) -> FactMap:
    """The facts of the literal command lines a script hands to ``CommandFunction`` (``tree``: the
    file's ``ast``, when the caller has parsed it already)."""
    from parallint.readers import cmdline

    out = FactMap()
    if "CommandFunction" not in text or len(text) > MAX_BYTES:
        return out
    if tree is None:
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            return out
    alias = _aliases(tree)
    loops = {id(s) for n in ast.walk(tree) if isinstance(n, (ast.For, ast.While, ast.ListComp, ast.GeneratorExp))
             for s in ast.walk(n) if s is not n}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and _qname(node.func, alias) in COMMAND and node.args) or id(node) in loops:
            continue
        lst = node.args[0]
        if not isinstance(lst, (ast.List, ast.Tuple)):
            continue
        words = []
        for el in lst.elts:
            sp = Span(path, el.lineno, el.col_offset + 1, el.end_lineno or el.lineno, (el.end_col_offset or 0) + 1)
            if isinstance(el, ast.Constant) and isinstance(el.value, (str, int)) and not isinstance(el.value, bool):
                words.append(cmdline.Word.lit(str(el.value), sp))
            else:
                words.append(cmdline.Word.unknown("not a literal", sp))
        try:
            la = cmdline.parse_command(words, cmdline.Context(), words[0].span if words else None)
        except (ValueError, TypeError, IndexError, KeyError):
            continue
        if la is None:
            continue
        for key, vs in la.facts.items():
            if key.partition(".")[2] in EXECUTOR_COUNTS:
                continue  # the executor's, not the command's
            for v in vs:
                out.add(key, v)
    return out
