"""Positions and diagnostics: the data every reader, rule and reporter shares."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field


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


@dataclass(frozen=True, order=True)
class Span:
    """A region of a file. Lines and columns are 1-based; the end is exclusive-ish (column after)."""

    path: str
    line: int
    column: int = 1
    end_line: int = 0
    end_column: int = 0

    def __post_init__(self) -> None:
        if self.end_line < self.line:
            object.__setattr__(self, "end_line", self.line)
        if self.end_line == self.line and self.end_column < self.column:
            object.__setattr__(self, "end_column", self.column)

    @classmethod
    def whole_file(cls, path: str) -> "Span":
        return cls(path, 1, 1, 1, 1)


@dataclass(frozen=True)
class Related:
    """Another place that takes part in a (usually cross-file) finding."""

    path: str
    line: int
    message: str
    column: int = 1

    @classmethod
    def at(cls, span: Span, message: str) -> "Related":
        return cls(span.path, span.line, message, span.column)


@dataclass(frozen=True)
class Diagnostic:
    code: str
    name: str
    severity: Severity
    message: str
    span: Span
    related: tuple[Related, ...] = field(default=())

    @property
    def path(self) -> str:
        return self.span.path

    def sort_key(self) -> tuple:
        s = self.span
        return (s.path, s.line, s.column, self.code, self.message)

    def to_json(self) -> dict:
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
