"""Import layering: the package's folders are its layers, in the order of the flow, and the import
graph (static, via ``ast`` over ``lint/`` and ``rules/``) has no circle and no arrow against it
(docs/architecture.md, "Layout"):

    util, data ─► model ─► estimator, discover ─► readers ─► link ─► rules ─► engine ─► report ─► cli

Every import counts: at module level, inside functions (lazy imports) and under
``if TYPE_CHECKING:`` (an annotation is still a dependency), and ``importlib.import_module`` of a
literal name. Rules see the model (facts, jobs, launches, the script event API), never readers or
the linker, and no rule family imports another: what two families share is knowledge of the model
layer. The package's top level holds only its face (``__init__``, ``__main__``).
"""

from __future__ import annotations

import ast

import pytest

from conftest import ROOT

#: package folder (or module) -> layer; the longest matching prefix wins
LAYER_OF = {
    "parallint": "face",  # the package's face: __version__ and the public names plugins use
    "parallint.__main__": "cli",
    "parallint.util": "util",  # imports nothing of parallint: value-class bases, guards, safe reads
    "parallint.data": "data",  # generated tables and package data
    "parallint.schemas": "data",
    "parallint.model": "model",  # facts, diagnostics, jobs, launches, the rule API, the script API
    "parallint.estimator": "knowledge",  # parameter counts, memory, candidate layouts
    "parallint.discover": "discover",  # the walk, ignore rules, classification, settings
    "parallint.readers": "read",  # one reader per format, the launch-line parser
    "parallint.link": "link",  # files into jobs
    "parallint.rules": "rules",
    "parallint.engine": "engine",  # the run, the registry, suppressions, caches
    "parallint.report": "report",  # output formats, baselines, noqa writing
    "parallint.cli": "cli",  # the commands and the language server
}

#: layer -> the layers it may import (besides itself)
BELOW = {
    "util": set(),
    "data": set(),
    "model": {"util", "data"},
    "knowledge": {"model", "util", "data"},
    "discover": {"model", "util", "data"},
    "read": {"discover", "knowledge", "model", "util", "data"},
    "link": {"read", "discover", "knowledge", "model", "util", "data"},
    "rules": {"knowledge", "model", "util", "data"},
    "face": {"model", "util", "data"},
    "engine": {"rules", "link", "read", "discover", "knowledge", "model", "util", "data", "face"},
    "report": {"engine", "rules", "link", "read", "discover", "knowledge", "model", "util", "data", "face"},
    "cli": {"report", "engine", "rules", "link", "read", "discover", "knowledge", "model", "util", "data", "face"},
}

#: the only top-level modules of the package
FACE = {"parallint", "parallint.__main__"}


def _module_name(path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[0] == "lint":
        parts = ["parallint"] + parts[1:]
    elif parts[0] == "rules":
        parts = ["parallint", "rules"] + parts[1:]
    else:
        parts = ["parallint", "schemas"] + parts[1:]
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


MODULES = {_module_name(p): p for d in ("lint", "rules", "schemas") for p in sorted((ROOT / d).rglob("*.py"))}


def _resolve(name: str) -> str | None:
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def imported_names(name: str, tree: ast.AST, is_package: bool) -> set[str]:
    """Every name ``tree`` imports, wherever the import stands (module level, a function, an
    ``if TYPE_CHECKING:`` block), and the literal names given to ``importlib.import_module``."""
    pkg = name if is_package else name.rpartition(".")[0]
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg.split(".")[: len(pkg.split(".")) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            names.add(mod)
            names.update(f"{mod}.{a.name}" for a in node.names)  # `from pkg import module`
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str) and (
                    (isinstance(node.func, ast.Attribute) and node.func.attr == "import_module")
                    or (isinstance(node.func, ast.Name) and node.func.id in ("import_module", "__import__"))):
            names.add(node.args[0].value)
    return names


def _imports(name: str, path) -> set[str]:
    names = imported_names(name, ast.parse(path.read_text("utf-8")), path.name == "__init__.py")
    out = {_resolve(n) for n in names if n.startswith("parallint")}
    # `from parallint.x import y` names the package parallint.x too: an __init__ is imported
    return {m for m in out if m and m != name and not (m == "parallint" and name.startswith("parallint."))
            or m == "parallint" and _names_face(path)}


def _names_face(path) -> bool:
    """Whether a module takes a name from the package's face (``from parallint import X`` where X
    is not a module), not merely a submodule through it."""
    tree = ast.parse(path.read_text("utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "parallint" and not node.level:
            if any(f"parallint.{a.name}" not in MODULES for a in node.names):
                return True
        elif isinstance(node, ast.Import) and any(a.name == "parallint" for a in node.names):
            return True
    return False


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


def layer(module: str) -> str:
    best = max((p for p in LAYER_OF if module == p or (p != "parallint" and module.startswith(p + "."))),
               key=len, default=None)
    assert best is not None, f"{module}: no layer; add it to LAYER_OF in tests/test_layering.py"
    return LAYER_OF[best]


def test_every_module_has_a_layer():
    for m in MODULES:
        layer(m)


def test_the_package_top_holds_only_its_face():
    top = sorted(m for m, p in MODULES.items() if p.parent == ROOT / "lint" and _module_name(p) not in FACE)
    assert not top, f"modules at the top of the package (move them into the folder of their layer): {top}"


def test_the_counter_sees_lazy_and_type_checking_imports():
    tree = ast.parse("TYPE_CHECKING = False\nif TYPE_CHECKING:\n    from parallint.model.job import Job\n"
                     "def f():\n    from parallint.engine import runner\n    import importlib\n"
                     "    return importlib.import_module('parallint.report.formats')\n")
    got = imported_names("parallint.x.y", tree, False)
    assert {"parallint.model.job", "parallint.engine", "parallint.engine.runner", "parallint.report.formats"} <= got


def circles() -> list[list[str]]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(GRAPH[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(GRAPH):
        if v not in index:
            visit(v)
    return out


def test_no_import_circles():
    assert not circles(), f"import circles (move what both sides need down a layer): {circles()}"


def _arrows():
    for src, dests in sorted(GRAPH.items()):
        for dst in sorted(dests):
            yield src, dst


def test_no_arrow_against_the_flow():
    bad = [f"{s} ({layer(s)}) -> {d} ({layer(d)})" for s, d in _arrows()
           if layer(s) != layer(d) and layer(d) not in BELOW[layer(s)]]
    assert not bad, "imports against the flow:\n" + "\n".join(bad)


def test_util_imports_nothing_of_parallint_but_itself():
    bad = [(s, d) for s, d in _arrows() if layer(s) == "util" and layer(d) != "util"]
    assert not bad, bad


def _family(module: str) -> str | None:
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[:2] == ["parallint", "rules"] else None


def test_rule_families_do_not_import_each_other():
    bad = [(s, d) for s, d in _arrows() if layer(s) == layer(d) == "rules" and _family(d) is not None
           and _family(s) != _family(d)]
    assert not bad, f"imports between rule families (shared knowledge goes to the model layer): {bad}"


def test_a_family_package_imports_nothing():
    """Importing one rule imports its family's ``__init__``: it stays a docstring."""
    for m, path in MODULES.items():
        if layer(m) == "rules" and path.name == "__init__.py":
            assert not GRAPH[m], (m, GRAPH[m])


def _layer_or_none(module: str) -> str | None:
    try:
        return layer(module)
    except AssertionError:  # reported by test_every_module_has_a_layer
        return None


@pytest.mark.parametrize("reader", sorted(m for m in MODULES if _layer_or_none(m) == "read"))
def test_readers_emit_no_rule_codes(reader):
    """Readers report facts and problems; rule codes belong to rules (SYN001, the reader's own
    parse-error diagnostic, is the one exception)."""
    import re

    text = MODULES[reader].read_text("utf-8")
    tree = ast.parse(text)
    codes = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
             and re.fullmatch(r"[A-Z]{2,5}[0-9]{3}", n.value)}
    assert codes <= {"SYN001"}, f"{reader} emits rule codes {sorted(codes)}"
