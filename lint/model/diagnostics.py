"""Positions and diagnostics: the data every reader, rule and reporter shares."""

from __future__ import annotations

import enum

from parallint.util.record import FrozenRecord

TYPE_CHECKING = False  # typing is not imported at run time (start-up, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Any, Final


class Severity(enum.IntEnum):
    """Ordered so that ``severity >= fail_level`` decides the exit code."""

    INFO = 1
    WARNING = 2
    ERROR = 3

    @classmethod
    def parse(cls, text: str) -> "Severity":
        try:
            return cls[text.strip().upper()]
        except KeyError:
            raise ValueError(f"unknown severity {text!r} (expected info, warning or error)") from None

    def __str__(self) -> str:  # "error", "warning", "info"
        return self.name.lower()


class Span(FrozenRecord):
    """A region of a file. Lines and columns are 1-based; the end is exclusive-ish (column after)."""

    _fields = ("path", "line", "column", "end_line", "end_column")
    path: Final[str]
    line: Final[int]
    column: Final[int]
    end_line: Final[int]
    end_column: Final[int]

    def __init__(self, path: str, line: int, column: int = 1, end_line: int = 0, end_column: int = 0) -> None:
        if end_line < line:
            end_line = line
        if end_line == line and end_column < column:
            end_column = column
        self.path = path
        self.line = line
        self.column = column
        self.end_line = end_line
        self.end_column = end_column

    # ordered as a tuple of its fields (sorting findings)
    def __lt__(self, other: Span) -> bool:
        return bool(self._key(self) < self._key(other))

    def __le__(self, other: Span) -> bool:
        return bool(self._key(self) <= self._key(other))

    def __gt__(self, other: Span) -> bool:
        return bool(self._key(self) > self._key(other))

    def __ge__(self, other: Span) -> bool:
        return bool(self._key(self) >= self._key(other))

    @classmethod
    def whole_file(cls, path: str) -> "Span":
        return cls(path, 1, 1, 1, 1)


class Related(FrozenRecord):
    """Another place that takes part in a (usually cross-file) finding."""

    _fields = ("path", "line", "message", "column")
    path: Final[str]
    line: Final[int]
    message: Final[str]
    column: Final[int]

    def __init__(self, path: str, line: int, message: str, column: int = 1) -> None:
        self.path = path
        self.line = line
        self.message = message
        self.column = column

    @classmethod
    def at(cls, span: Span, message: str) -> "Related":
        return cls(span.path, span.line, message, span.column)


class Fix(FrozenRecord):
    """A fix a finding proposes: ``title`` says the edit ("remove shuffle=True"), ``safe``
    whether ``--fix`` makes it without ``--unsafe-fixes``, ``data`` what the rule's edit needs
    (a keyword, a new name or value; empty when the span says all)."""

    _fields = ("title", "safe", "data")
    title: Final[str]
    safe: Final[bool]
    data: Final[str]

    def __init__(self, title: str, safe: bool = True, data: str = "") -> None:
        self.title = title
        self.safe = safe
        self.data = data


class Edit(FrozenRecord):
    """One replacement in a text: characters ``[start, end)`` become ``text``."""

    _fields = ("start", "end", "text")
    start: Final[int]
    end: Final[int]
    text: Final[str]

    def __init__(self, start: int, end: int, text: str) -> None:
        self.start = start
        self.end = end
        self.text = text


class Diagnostic(FrozenRecord):
    _fields = ("code", "name", "severity", "message", "span", "related", "fix")
    code: Final[str]
    name: Final[str]
    severity: Final[Severity]
    message: Final[str]
    span: Final[Span]
    related: Final[tuple[Related, ...]]
    #: the fix the rule proposes (:mod:`parallint.model.fixes` makes it), only when asked for
    fix: Final[Fix | None]

    def __init__(
        self,
        code: str,
        name: str,
        severity: Severity,
        message: str,
        span: Span,
        related: tuple[Related, ...] = (),
        fix: Fix | None = None,
    ) -> None:
        self.code = code
        self.name = name
        self.severity = severity
        self.message = message
        self.span = span
        self.related = related
        self.fix = fix

    @property
    def path(self) -> str:
        return self.span.path

    def sort_key(self) -> tuple[str, int, int, str, str]:
        s = self.span
        return (s.path, s.line, s.column, self.code, self.message)

    def to_json(self) -> dict[str, Any]:
        s = self.span
        return {
            "code": self.code,
            "name": self.name,
            "severity": str(self.severity),
            "message": self.message,
            "path": s.path,
            "line": s.line,
            "column": s.column,
            "end_line": s.end_line,
            "end_column": s.end_column,
            "related": [{"path": r.path, "line": r.line, "message": r.message} for r in self.related],
        }
