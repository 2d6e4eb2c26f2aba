"""TOML with positions: values from ``tomllib`` (``tomli`` before 3.11), and each key's line and
column located by a light scan of the text (table headers and ``key = value`` lines), into the
:class:`PNode` trees of ``yamlpos``. A key the scan cannot place (inside an inline table) gets its
parent's position.
"""

from __future__ import annotations

import re
import sys
from typing import Any

from parallint.model.diagnostics import Span
from parallint.readers.yamlpos import PNode

_BARE = r"[A-Za-z0-9_-]+"
_KEYPART = rf'(?:{_BARE}|"(?:[^"\\]|\\.)*"|\'[^\']*\')'
_KEY = re.compile(rf"\s*({_KEYPART}(?:\s*\.\s*{_KEYPART})*)\s*=\s*")
_HEADER = re.compile(rf"\s*(\[\[?)\s*({_KEYPART}(?:\s*\.\s*{_KEYPART})*)\s*\]\]?")


class TomlPosError(ValueError):
    def __init__(self, msg: str, line: int, column: int) -> None:
        super().__init__(msg)
        self.line = line
        self.column = column


def _split_key(k: str) -> list[str]:
    parts = re.findall(_KEYPART, k)
    out = []
    for p in parts:
        if p[:1] in "\"'":
            p = p[1:-1]
        out.append(p)
    return out


def _parse(text: str) -> dict:
    from parallint.util.guards import config_guard

    reason = config_guard("toml", text)  # tomllib recurses per level and keeps every key prefix
    if reason:
        raise TomlPosError(reason, 1, 1)
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    try:
        return tomllib.loads(text)
    except RecursionError:
        raise TomlPosError("too complex (nested too deeply)", 1, 1) from None
    except tomllib.TOMLDecodeError as exc:
        msg = str(exc)
        m = re.search(r"line (\d+), column (\d+)", msg)
        line, col = (int(m.group(1)), int(m.group(2))) if m else (1, 1)
        raise TomlPosError(msg, line, col) from None


def locate(text: str) -> dict[tuple, tuple[int, int, int, int]]:
    """(path tuple) -> (line, key column, value column, end column), best effort."""
    where: dict[tuple, tuple[int, int, int, int]] = {}
    table: tuple = ()
    aot_count: dict[tuple, int] = {}
    in_ml: str | None = None
    for ln, line in enumerate(text.splitlines(), start=1):
        if in_ml:
            if in_ml in line:
                in_ml = None
            continue
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if stripped.startswith("["):
            m = _HEADER.match(line)
            if m:
                parts = tuple(_split_key(m.group(2)))
                if m.group(1) == "[[":
                    idx = aot_count.get(parts, 0)
                    aot_count[parts] = idx + 1
                    table = parts + (idx,)
                else:
                    table = parts
                where.setdefault(table, (ln, m.start(2) + 1, m.start(2) + 1, len(line.rstrip()) + 1))
                continue
        m = _KEY.match(line)
        if m:
            key = table + tuple(_split_key(m.group(1)))
            vcol = m.end() + 1
            rest = line[m.end():]
            for q in ('"""', "'''"):
                if rest.startswith(q) and rest.count(q) == 1:
                    in_ml = q
            code = rest.split(" #", 1)[0].rstrip()
            where.setdefault(key, (ln, m.start(1) + 1, vcol, vcol + max(1, len(code))))
    return where


def load(text: str, path: str) -> PNode:
    data = _parse(text)
    where = locate(text)
    top = Span(path, 1, 1)

    def build(v: Any, key: tuple, parent: Span, is_aot_item: bool = False) -> tuple[PNode, Span]:
        loc = where.get(key)
        if loc:
            ln, kc, vc, ec = loc
            kspan = Span(path, ln, kc, ln, vc)
            vspan = Span(path, ln, vc, ln, ec)
        else:
            kspan = vspan = parent
        if isinstance(v, dict):
            out: dict[str, PNode] = {}
            kspans: dict[str, Span] = {}
            for k, sub in v.items():
                node, ks = build(sub, key + (k,), vspan)
                out[k] = node
                kspans[k] = ks
            return PNode(out, vspan, kspans), kspan
        if isinstance(v, list):
            items = []
            for i, sub in enumerate(v):
                if isinstance(sub, dict) and key + (i,) in where:
                    node, _ = build(sub, key + (i,), vspan)
                else:
                    node, _ = build(sub, ("\0",) + key + (i,), vspan)
                items.append(node)
            return PNode(items, vspan), kspan
        return PNode(v, vspan), kspan

    root, _ = build(data, (), top)
    return root
