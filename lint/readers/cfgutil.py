"""Helpers shared by the framework-config readers (DeepSpeed, NeMo, torchtitan, accelerate, ...).

* :func:`load_tree` parses JSON / YAML / TOML text into a positioned :class:`PNode` tree, or returns
  a SYN001 diagnostic instead of raising.
* :func:`to_value` turns a positioned scalar into a :class:`Value`, keeping placeholders, ``auto``,
  Hydra ``???``, ``${...}`` interpolations, environment references and ``null`` unknown.
* :class:`Emitter` adds facts to a :class:`FileFacts` with their spans and a readable ``source``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Callable, Iterable

from parallint.diagnostics import Diagnostic, Severity, Span
from parallint.facts import FileFacts, Value
from parallint.readers.yamlpos import PNode


class Placeholder(str):
    """A bare word in a JSON template (``"train_batch_size": CONFIG_BATCH_SIZE``): never a known value."""


_PLACEHOLDER_RES = (
    re.compile(r"^<[^<>]*>$"),  # <NUM_NODES>
    re.compile(r"^\{\{.*\}\}$", re.S),  # {{ .Values.x }} (Helm / Jinja)
    re.compile(r"^(your|my)[_-]", re.I),  # your_num_nodes
    re.compile(r"^(X{2,}|TODO|TBD|FIXME|CHANGEME|REPLACE_?ME)$", re.I),
    re.compile(r"^[A-Z][A-Z0-9_]*_(SIZE|NUM|DEGREE|STAGE|MBSIZE|ENABLED|NODES|GPUS)$"),
)
_ENV_RE = re.compile(r"\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|\$\(")


def unknown_reason(v: Any) -> str:
    """Why a raw scalar cannot be used as a known value ('' when it can)."""
    if v is None:
        return "null"
    if isinstance(v, Placeholder):
        return f"template placeholder {str(v)}"
    if isinstance(v, str):
        s = v.strip()
        low = s.lower()
        if low == "auto":
            return "auto"
        if s in ("???", "") or low in ("none", "null", "~"):
            return f"unset ({s or 'empty'})"
        if "${" in s or "{{" in s:
            return f"interpolation {s}"
        if _ENV_RE.search(s):
            return f"environment variable in {s}"
        for rx in _PLACEHOLDER_RES:
            if rx.search(s):
                return f"placeholder {s}"
    return ""


def to_value(node: PNode | None, source: str, *, raw: Any = ...) -> Value | None:
    """The Value a positioned scalar stands for; None when the node is absent."""
    if node is None:
        return None
    v = node.value if raw is ... else raw
    if isinstance(v, (dict, list)):
        return Value(node.plain(), node.span, True, "", source)
    why = unknown_reason(v)
    if why:
        return Value.unknown(why, node.span, source)
    return Value(v, node.span, True, "", source)


def syn001(ff: FileFacts, message: str, line: int = 1, column: int = 1) -> None:
    ff.diagnostics.append(
        Diagnostic(
            "SYN001",
            "parse-error",
            Severity.ERROR,
            f"{message} (line {line}, column {column})",
            Span(ff.path, max(1, line), max(1, column)),
        )
    )


def load_tree(ff: FileFacts, fmt: str | None = None) -> PNode | None:
    """Parse ``ff.text`` (format from the suffix unless given); None plus SYN001 on bad input.

    A YAML file with several documents yields the first mapping document.
    """
    fmt = fmt or fmt_of(ff.path)
    try:
        if fmt == "json":
            from parallint.readers import jsonpos

            return jsonpos.load(ff.text, ff.path)
        if fmt == "toml":
            from parallint.readers import tomlpos

            return tomlpos.load(ff.text, ff.path)
        from parallint.readers import yamlpos

        docs = yamlpos.load_all(ff.text, ff.path)
        for d in docs:
            if d.is_map:
                return d
        return docs[0] if docs else PNode({}, Span(ff.path, 1, 1))
    except RecursionError:
        syn001(ff, "cannot parse: nested too deeply")
        return None
    except Exception as exc:  # every parser error becomes SYN001, never a traceback
        line, col = error_pos(exc)
        msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        syn001(ff, f"cannot parse {fmt.upper()}: {msg}", line, col)
        return None


def error_pos(exc: Exception) -> tuple[int, int]:
    line = getattr(exc, "line", None) or getattr(exc, "lineno", None)
    col = getattr(exc, "column", None) or getattr(exc, "colno", None)
    if line:
        return int(line), int(col or 1)
    from parallint.readers.yamlpos import error_position

    return error_position(exc)


def fmt_of(path: str) -> str:
    p = path.lower()
    if p.endswith(".json"):
        return "json"
    if p.endswith(".toml"):
        return "toml"
    return "yaml"


def new_facts(path: str, abspath: Path, kind: str, text: str) -> FileFacts:
    return FileFacts(path=path, abspath=abspath, kind=kind, text=text)


def basename(path: str) -> str:
    return path.replace("\\", "/").rsplit("/", 1)[-1]


class Emitter:
    """Adds facts to ``ff`` from nodes of ``root``; ``source`` reads "<file> <key path>"."""

    def __init__(self, ff: FileFacts, root: PNode | None) -> None:
        self.ff = ff
        self.root = root
        self.name = basename(ff.path)

    def node(self, dotted: str) -> PNode | None:
        if self.root is None:
            return None
        return self.root.path(dotted)

    def value(self, dotted: str, node: PNode | None = None) -> Value | None:
        n = node if node is not None else self.node(dotted)
        return to_value(n, f"{self.name} {dotted}")

    def add(
        self,
        key: str,
        dotted: str | Iterable[str],
        conv: Callable[[Any], Any] | None = None,
        node: PNode | None = None,
    ) -> Value | None:
        """Add fact ``key`` from the first of ``dotted`` present; returns the Value added."""
        paths = [dotted] if isinstance(dotted, str) else list(dotted)
        for p in paths:
            n = node if node is not None else self.node(p)
            if n is None:
                continue
            v = self.value(p, n)
            if v is None:
                continue
            if conv is not None and v.known:
                v = v.map(conv)
            self.ff.facts.add(key, v)
            return v
        return None

    def put(self, key: str, value: Any, span: Span | None, source: str) -> Value:
        v = Value(value, span, True, "", source)
        self.ff.facts.add(key, v)
        return v

    def framework(self, name: str) -> None:
        span = self.root.span if self.root is not None else Span(self.ff.path, 1, 1)
        self.ff.facts.add("framework", Value(name, Span(self.ff.path, span.line, span.column), True, "", self.name))


def as_bool(v: Any) -> bool:
    """YAML/JSON truthiness as frameworks read it: True/False, 'true'/'false', 1/0."""
    if isinstance(v, bool):
        return v
    if isinstance(v, (int, float)) and v in (0, 1):
        return bool(v)
    if isinstance(v, str) and v.strip().lower() in ("true", "false", "yes", "no", "1", "0"):
        return v.strip().lower() in ("true", "yes", "1")
    raise ValueError(v)


def as_int(v: Any) -> int:
    if isinstance(v, bool):
        raise TypeError(v)
    if isinstance(v, int):
        return v
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, str):
        s = v.strip()
        if re.fullmatch(r"[+-]?\d+", s):
            return int(s)
        if re.fullmatch(r"[+-]?\d+(\.0*)?([eE]\+?\d+)?", s):
            f = float(s)
            if f.is_integer():
                return int(f)
    raise ValueError(v)
