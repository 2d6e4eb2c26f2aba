"""Suppression comments: ``# noqa: CODE[,CODE]`` (or a bare ``# noqa``) on the reported line, and a
file-level ``# parallint: noqa: CODE`` (or bare ``# parallint: noqa``) anywhere in the file.
Codes, prefixes and rule names are accepted, as everywhere."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Za-z0-9_\-]+(?:[\s,]+[A-Za-z0-9_\-]+)*))?", re.I)
_FILE_NOQA = re.compile(
    r"^\s*#\s*parallint:\s*noqa(?::\s*(?P<codes>[A-Za-z0-9_\-]+(?:[\s,]+[A-Za-z0-9_\-]+)*))?\s*$",
    re.I | re.M,
)
ALL = ("ALL",)


def _codes(group: str | None) -> tuple[str, ...]:
    if not group:
        return ALL
    return tuple(c for c in re.split(r"[\s,]+", group.strip()) if c)


@dataclass
class Suppressions:
    file_level: tuple[str, ...] = ()  # selectors suppressed for the whole file (ALL for bare)
    lines: dict[int, tuple[str, ...]] = field(default_factory=dict)

    @classmethod
    def scan(cls, text: str) -> "Suppressions":
        if "noqa" not in text and "NOQA" not in text:
            return cls()
        file_level: list[str] = []
        for m in _FILE_NOQA.finditer(text):
            file_level.extend(_codes(m.group("codes")))
        lines: dict[int, tuple[str, ...]] = {}
        for i, line in enumerate(text.splitlines(), 1):
            if "noqa" not in line.lower() or _FILE_NOQA.match(line):
                continue
            m = _NOQA.search(line)
            if m:
                lines[i] = _codes(m.group("codes"))
        return cls(tuple(file_level), lines)

    def selectors_for(self, line: int, end_line: int) -> tuple[str, ...]:
        sels = list(self.file_level)
        for ln in {line, end_line}:
            sels.extend(self.lines.get(ln, ()))
        return tuple(sels)
