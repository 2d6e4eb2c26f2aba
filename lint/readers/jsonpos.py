"""JSON with positions: a small hand-written parser into the :class:`PNode` trees of ``yamlpos``.

It keeps every value's line and column and every mapping's duplicate keys (DeepSpeed rejects them,
``json.load`` silently keeps the last). It is lenient the way DeepSpeed's own loader (hjson) is:
``//``, ``#`` and ``/* */`` comments and trailing commas are accepted, and a bare word in value
position (``"stage": ZERO_STAGE`` in a template that a script fills in with sed), and so does a
template token (``${zero_stage}``, ``{{ .Values.stage }}``, ``<ZERO_STAGE>``, ``%STAGE%``,
``@STAGE@``), becomes a :class:`Placeholder`, an unknown value, not a
parse error.
"""

from __future__ import annotations

import bisect
import re

from parallint.model.diagnostics import Span
from parallint.model.scalars import Placeholder
from parallint.readers.yamlpos import PNode

TYPE_CHECKING = False  # typing is not imported at run time (start-up, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Any

MAX_DEPTH = 200
MAX_NODES = 500_000

_NUM = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?")
_WORD = re.compile(r"[A-Za-z_$][A-Za-z0-9_$.\-]*")
#: a template placeholder in value position (bounded, no backtracking across lines)
_TEMPLATE = re.compile(r"\$\{[^{}\n]{1,200}\}|\{\{[^{}\n]{1,200}\}\}|<[A-Za-z_][A-Za-z0-9_.\- ]{0,100}>"
                       r"|%[A-Za-z_][A-Za-z0-9_]{0,100}%|@[A-Za-z_][A-Za-z0-9_]{0,100}@")
_LINE_END = re.compile(r"\r\n|\r|\n")
_ESC = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


class JsonPosError(ValueError):
    def __init__(self, msg: str, line: int, column: int) -> None:
        super().__init__(f"{msg} at line {line}, column {column}")
        self.msg = msg
        self.line = line
        self.column = column


class _Parser:
    def __init__(self, text: str, path: str) -> None:
        self.s = text
        self.n = len(text)
        self.i = 0
        self.path = path
        self.count = 0
        # lines as editors and the other readers count them: at LF, CRLF and a lone CR
        self.starts = [0] + [m.end() for m in re.finditer(r"\r\n|\r|\n", text)]

    # positions ----------------------------------------------------------------------------
    def pos(self, off: int) -> tuple[int, int]:
        ln = bisect.bisect_right(self.starts, off) - 1
        return ln + 1, off - self.starts[ln] + 1

    def span(self, a: int, b: int) -> Span:
        l1, c1 = self.pos(a)
        l2, c2 = self.pos(b)
        return Span(self.path, l1, c1, l2, c2)

    def err(self, msg: str, off: int | None = None) -> JsonPosError:
        line, col = self.pos(self.i if off is None else min(off, self.n))
        return JsonPosError(msg, line, col)

    # lexing -------------------------------------------------------------------------------
    def ws(self) -> None:
        s, n = self.s, self.n
        while self.i < n:
            c = s[self.i]
            if c in " \t\r\n\ufeff":
                self.i += 1
            elif c == "#" or s.startswith("//", self.i):
                m = _LINE_END.search(s, self.i)
                self.i = n if m is None else m.end()
            elif s.startswith("/*", self.i):
                j = s.find("*/", self.i + 2)
                if j < 0:
                    raise self.err("unterminated comment")
                self.i = j + 2
            else:
                break

    def string(self) -> str:
        s = self.s
        start = self.i
        self.i += 1
        out: list[str] = []
        while True:
            j = self.i
            while j < self.n and s[j] not in '"\\\n':
                j += 1
            out.append(s[self.i : j])
            if j >= self.n or s[j] == "\n":
                raise self.err("unterminated string", start)
            if s[j] == '"':
                self.i = j + 1
                return "".join(out)
            # escape
            if j + 1 >= self.n:
                raise self.err("unterminated string", start)
            e = s[j + 1]
            if e in _ESC:
                out.append(_ESC[e])
                self.i = j + 2
            elif e == "u":
                hexd = s[j + 2 : j + 6]
                if not re.fullmatch(r"[0-9a-fA-F]{4}", hexd):
                    raise self.err("bad \\u escape", j)
                out.append(chr(int(hexd, 16)))
                self.i = j + 6
            else:
                raise self.err(f"bad escape \\{e}", j)

    # grammar ------------------------------------------------------------------------------
    def value(self, depth: int) -> PNode:

        self.count += 1
        if self.count > MAX_NODES:
            raise self.err(f"more than {MAX_NODES} JSON values")
        if depth > MAX_DEPTH:
            raise self.err(f"JSON nested deeper than {MAX_DEPTH} levels")
        self.ws()
        if self.i >= self.n:
            raise self.err("unexpected end of input")
        c = self.s[self.i]
        start = self.i
        m = _TEMPLATE.match(self.s, self.i) if c in "${<%@" else None
        if m:  # ${zero_stage}, {{ .Values.x }}, <NUM_GPUS>, %BATCH%, @STAGE@: filled in by a script
            self.i = m.end()
            return PNode(Placeholder(m.group(0)), self.span(start, self.i))
        if c == "{":
            return self.obj(depth)
        if c == "[":
            return self.arr(depth)
        if c == '"':
            v = self.string()
            return PNode(v, self.span(start, self.i))
        m = _NUM.match(self.s, self.i)
        if m and (c == "-" or c.isdigit()):
            txt = m.group(0)
            self.i = m.end()
            num: Any = float(txt) if any(ch in txt for ch in ".eE") else (
                int(txt) if len(txt) <= 4000 else float(txt))  # beyond Python's int digit limit
            return PNode(num, self.span(start, self.i))
        m = _WORD.match(self.s, self.i)
        if m:
            w = m.group(0)
            self.i = m.end()
            lit = {"true": True, "false": False, "null": None, "NaN": float("nan"),
                   "Infinity": float("inf")}
            if w in lit:
                return PNode(lit[w], self.span(start, self.i))
            return PNode(Placeholder(w), self.span(start, self.i))
        if self.s.startswith("-Infinity", self.i):
            self.i += 9
            return PNode(float("-inf"), self.span(start, self.i))
        raise self.err(f"unexpected character {c!r}")

    def obj(self, depth: int) -> PNode:
        start = self.i
        self.i += 1
        out: dict[str, PNode] = {}
        key_spans: dict[str, Span] = {}
        dups: list[tuple[str, Span, Span]] = []
        while True:
            self.ws()
            if self.i >= self.n:
                raise self.err("unterminated object", start)
            if self.s[self.i] == "}":
                self.i += 1
                return PNode(out, self.span(start, self.i), key_spans, dups)
            kstart = self.i
            if self.s[self.i] == '"':
                key = self.string()
            else:
                m = _WORD.match(self.s, self.i)
                if not m:
                    raise self.err("expected a string key")
                key = m.group(0)
                self.i = m.end()
            kspan = self.span(kstart, self.i)
            self.ws()
            if self.i >= self.n or self.s[self.i] != ":":
                raise self.err("expected ':' after key")
            self.i += 1
            val = self.value(depth + 1)
            if key in out:
                dups.append((key, key_spans[key], kspan))
            out[key] = val
            key_spans[key] = kspan
            self.ws()
            if self.i < self.n and self.s[self.i] == ",":
                self.i += 1
            elif self.i < self.n and self.s[self.i] == "}":
                continue
            else:
                raise self.err("expected ',' or '}'")

    def arr(self, depth: int) -> PNode:
        start = self.i
        self.i += 1
        items: list[PNode] = []
        while True:
            self.ws()
            if self.i >= self.n:
                raise self.err("unterminated array", start)
            if self.s[self.i] == "]":
                self.i += 1
                return PNode(items, self.span(start, self.i))
            items.append(self.value(depth + 1))
            self.ws()
            if self.i < self.n and self.s[self.i] == ",":
                self.i += 1
            elif self.i < self.n and self.s[self.i] == "]":
                continue
            else:
                raise self.err("expected ',' or ']'")


def load(text: str, path: str) -> PNode:
    """Parse one JSON document. Raises :class:`JsonPosError` (with ``line``/``column``)."""
    p = _Parser(text, path)
    node = p.value(0)
    p.ws()
    if p.i < p.n:
        raise p.err("extra data after the JSON value")
    return node
