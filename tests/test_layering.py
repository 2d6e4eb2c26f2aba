"""Import layering: the package's import graph (static, via ast over lint/ and rules/) has no
circle and no arrow against the flow

    discover -> read (formats) -> facts -> link -> jobs -> rules -> report

(docs/architecture.md). Imports under ``if TYPE_CHECKING:`` are annotations only and do not count;
imports inside functions (lazy imports) do.

Rules see the model (facts, jobs, launches, the script event API), not readers: there is no arrow
from rules into the read or link layers and none between rule families. The KNOWN_* allow-lists
are empty and stay so; the tests fail on any new arrow (and on a listed one that disappeared).
"""

from __future__ import annotations

import ast

import pytest

from conftest import ROOT

#: module (or package prefix) -> layer; the longest matching prefix wins
LAYER_OF = {
    # the model: values, facts, jobs, launches, diagnostics, the rule API. Everyone may import it.
    "parallint": "model",
    "parallint.diagnostics": "model",
    "parallint.facts": "model",
    "parallint.model": "model",
    "parallint.job": "model",
    "parallint.launch": "model",
    "parallint.rule": "model",
    "parallint.data": "model",
    "parallint.schemas": "model",
    "parallint.guards": "model",  # utilities that import nothing: input guards, run limits
    "parallint.limits": "model",
    "parallint.safeio": "model",  # reading regular files without blocking
    "parallint.record": "model",  # the bases of the value classes (in place of dataclasses)
    "parallint.deps": "model",  # what a run read and probed (the run cache's manifest)
    # domain knowledge the readers and rules share: presets, parameter counts, memory
    "parallint.estimator": "knowledge",
    # finding and classifying files
    "parallint.discover": "discover",
    "parallint.classify": "discover",
    "parallint.readers.sniff": "discover",
    "parallint.config": "discover",
    # reading formats into facts
    "parallint.readers": "read",
    "parallint.cmdline": "read",
    "parallint.megatron_args": "read",
    "parallint.megatron_table": "read",
    # joining files into jobs
    "parallint.link": "link",
    "parallint.hydrascripts": "link",
    "parallint.hfargs": "link",
    "parallint.pylaunch": "link",
    # rules
    "parallint.rules": "rules",
    # the engine that runs it all, and what reports the result
    "parallint.registry": "engine",
    "parallint.runner": "engine",
    "parallint.suppress": "engine",
    "parallint.baseline": "engine",
    "parallint.index": "engine",
    "parallint.cache": "engine",
    "parallint.plugins": "engine",  # plugin needles into the pre-filter (registry)
    "parallint.workers": "engine",
    "parallint.examples": "engine",
    "parallint.layouts": "engine",  # plan's filter: the real layout rules on candidate layouts
    "parallint.report": "report",
    "parallint.show": "report",
    "parallint.estimate_cmd": "report",
    "parallint.estimate_ux": "report",
    "parallint.ruledocs": "report",
    "parallint.server": "report",
    "parallint.cli": "report",
    "parallint.cli_typer": "report",
    "parallint.check_cmd": "report",
    "parallint.__main__": "report",
}

#: layer -> the layers it may import (besides itself)
MAY_IMPORT = {
    "model": set(),
    "knowledge": {"model"},
    "discover": {"model"},
    "read": {"model", "knowledge", "discover"},
    "link": {"model", "knowledge", "discover", "read"},
    "rules": {"model", "knowledge"},
    "engine": {"model", "knowledge", "discover", "read", "link", "rules"},
    "report": {"model", "knowledge", "discover", "read", "link", "rules", "engine"},
}

#: the strictly layered core: the model package imports only these
MODEL_PACKAGE_MAY_IMPORT = {"parallint.diagnostics", "parallint.facts", "parallint.record"}

#: rules -> read arrows allowed (none: rules see the model — facts, jobs, launches, the script event
#: API of ``parallint.model.script`` — never readers; what a rule needs from a reader is a fact or
#: a field of the model)
KNOWN_RULE_TO_READ: set[tuple[str, str]] = set()

#: rules -> link arrows allowed (none: rules receive jobs; they do not build them)
KNOWN_RULE_TO_LINK: set[tuple[str, str]] = set()

#: import circles allowed (none)
KNOWN_CIRCLES: list[list[str]] = []

#: one rule family importing another's module (none: shared logic belongs in the model layer;
#: ``rules._cfgfacts``, the config rules' shared base, is not a family and may be imported)
KNOWN_RULE_TO_RULE: set[tuple[str, str]] = set()


def _module_name(path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    parts = (["parallint"] + parts[1:]) if parts[0] == "lint" else (["parallint", "rules"] + parts[1:])
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


MODULES = {_module_name(p): p for d in ("lint", "rules") for p in sorted((ROOT / d).rglob("*.py"))}


def _resolve(name: str) -> str | None:
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imports(name: str, path) -> set[str]:
    tree = ast.parse(path.read_text("utf-8"))
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip.update(id(n) for n in ast.walk(node))
    pkg = name if path.name == "__init__.py" else name.rpartition(".")[0]
    names: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
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
    out = {_resolve(n) for n in names if n.startswith("parallint")}
    return {m for m in out if m and m != name}


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


def layer(module: str) -> str:
    best = max((p for p in LAYER_OF if module == p or (p != "parallint" and module.startswith(p + "."))),
               key=len, default=None)
    assert best is not None, f"{module}: no layer; add it to LAYER_OF in tests/test_layering.py"
    return LAYER_OF[best]


def test_every_module_has_a_layer():
    for m in MODULES:
        layer(m)


def test_no_import_circles():
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    circles: list[list[str]] = []

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
                circles.append(sorted(comp))

    for v in sorted(GRAPH):
        if v not in index:
            visit(v)
    new = [c for c in circles if c not in KNOWN_CIRCLES]
    gone = [c for c in KNOWN_CIRCLES if c not in circles]
    assert not new, f"import circles: {new}"
    assert not gone, f"gone, remove them from KNOWN_CIRCLES: {gone}"


def _arrows():
    for src, dests in sorted(GRAPH.items()):
        for dst in sorted(dests):
            yield src, dst


def test_no_arrow_against_the_flow():
    bad = []
    for src, dst in _arrows():
        a, b = layer(src), layer(dst)
        if a == b or b in MAY_IMPORT[a]:
            continue
        if (src, dst) in KNOWN_RULE_TO_READ or (src, dst) in KNOWN_RULE_TO_LINK:
            continue
        bad.append(f"{src} ({a}) -> {dst} ({b})")
    assert not bad, "imports against the flow:\n" + "\n".join(bad)


def test_the_model_package_is_strictly_below_everything():
    for src, dst in _arrows():
        if src.startswith("parallint.model"):
            assert dst.startswith("parallint.model") or dst in MODEL_PACKAGE_MAY_IMPORT, (src, dst)


def test_known_rule_to_read_arrows_only_shrink():
    now = {(s, d) for s, d in _arrows() if layer(s) == "rules" and layer(d) == "read"}
    new = sorted(now - KNOWN_RULE_TO_READ)
    gone = sorted(KNOWN_RULE_TO_READ - now)
    assert not new, f"new imports from rules into readers (use the model layer instead): {new}"
    assert not gone, f"gone, remove them from KNOWN_RULE_TO_READ: {gone}"


def test_known_rule_to_link_arrows_only_shrink():
    now = {(s, d) for s, d in _arrows() if layer(s) == "rules" and layer(d) == "link"}
    assert now == KNOWN_RULE_TO_LINK, (f"new: {sorted(now - KNOWN_RULE_TO_LINK)}; "
                                       f"gone (remove from the list): {sorted(KNOWN_RULE_TO_LINK - now)}")


def test_rule_families_do_not_import_each_other_beyond_the_known_ones():
    now = {(s, d) for s, d in _arrows() if layer(s) == layer(d) == "rules"
           and d != "parallint.rules._cfgfacts" and d != "parallint.rules"}
    new = sorted(now - KNOWN_RULE_TO_RULE)
    gone = sorted(KNOWN_RULE_TO_RULE - now)
    assert not new, f"new imports between rule families (shared logic goes to the model layer): {new}"
    assert not gone, f"gone, remove them from KNOWN_RULE_TO_RULE: {gone}"


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
