"""Writing ``# noqa`` comments: ``check --add-noqa`` and the editor's quick fix. Comments are found
as suppression reads them (:mod:`parallint.engine.suppress`), so a written ``# noqa`` is one that
suppresses."""

from __future__ import annotations

from parallint.engine.suppress import _FILE_NOQA, _NOQA, ALL, _codes, comments, line_in_string, syntax_of
from parallint.util.safeio import atomic_write

TYPE_CHECKING = False  # typing is not imported at run time (start-up, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Iterable


def add_noqa(diags: Iterable, cwd) -> tuple[int, list[str]]:
    """Write ``# noqa: CODE`` on the line of each finding (merged into a ``# noqa`` already there).
    Only where a comment can go: never in JSON, inside a string, a heredoc or after a line
    continuation. Files are replaced atomically. Returns (codes added, 'path:line' left alone)."""
    from pathlib import Path

    wanted: dict[str, dict[int, list[str]]] = {}
    for d in diags:
        if d.code in ("SYN001", "SYN003"):
            continue
        codes = wanted.setdefault(d.span.path, {}).setdefault(d.span.line, [])
        if d.code not in codes:
            codes.append(d.code)
    added, skipped = 0, []
    for path, by_line in sorted(wanted.items()):
        p = Path(path)
        p = p if p.is_absolute() else Path(cwd) / p
        syntax = syntax_of(path)
        try:
            from parallint.util.safeio import read_regular  # a FIFO is never read

            raw = read_regular(p)
            if raw is None:
                raise OSError("not a readable regular file")
            text = raw.decode("utf-8")
        except (OSError, UnicodeDecodeError):
            skipped.extend(f"{path}:{ln}" for ln in by_line)
            continue
        lines = text.splitlines(keepends=True)
        plain = text.replace("\r\n", "\n")
        found = comments(plain, syntax)
        changed = 0
        for ln, codes in sorted(by_line.items()):
            edit = noqa_edit(plain, syntax, ln, codes, found)
            if edit is None:
                skipped.append(f"{path}:{ln}")
                continue
            body, new = edit
            if not new:
                continue
            old = lines[ln - 1]
            lines[ln - 1] = body + old[len(old.rstrip("\r\n")):]
            added += len(new)
            changed += 1
        if changed:
            atomic_write(p, "".join(lines))
    return added, skipped


def noqa_edit(text: str, syntax: str | None, line: int, codes: list[str],
              found: dict[int, tuple[int, str]] | None = None) -> tuple[str, list[str]] | None:
    """The text of ``line`` (without its line break) with ``codes`` added to its ``# noqa`` (or a
    new one), and the codes actually added; None where no comment can go."""
    lines = text.splitlines()
    if syntax is None or line > len(lines) or line_in_string(text, syntax, line):
        return None
    body = lines[line - 1]
    found = comments(text, syntax) if found is None else found
    existing = found.get(line)
    m = _NOQA.search(existing[1]) if existing else None
    if m and not _FILE_NOQA.match(existing[1]):
        have = _codes(m.group("codes"))
        if have == ALL:
            return body, []
        new = [c for c in codes if c not in have]
        if not new:
            return body, []
        start = existing[0] + m.end("codes")
        return body[:start] + ", " + ", ".join(new) + body[start:], new
    sep = "  " if body.strip() else ""
    return body.rstrip() + sep + "# noqa: " + ", ".join(codes), list(codes)
