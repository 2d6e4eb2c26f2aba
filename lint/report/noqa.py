"""Writing ``# noqa`` comments: ``check --add-noqa`` and the editor's quick fix. Comments are found
as suppression reads them (:mod:`parallint.engine.suppress`), so a written ``# noqa`` is one that
suppresses.

An edit never changes what a program means: lines are the file's own physical lines (LF, CRLF or
a lone CR; a form feed or U+2028 inside a line is part of it), every byte of the file is kept but
the comment inserted (line breaks, trailing whitespace, a byte-order mark, no final newline), a
Python file is decoded and written back in its declared encoding, and no comment goes inside a
string or after a line continuation. For Python the result must parse to the same tree
(``ast.dump``, comments aside); a file where it would not is left alone and named.
"""

from __future__ import annotations

from parallint.engine.suppress import (_FILE_NOQA, _NOQA, ALL, _codes, comments, line_in_string, one_break,
                                       physical_lines, syntax_of)
from parallint.util.safeio import atomic_write

TYPE_CHECKING = False  # typing is not imported at run time (start-up, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Iterable


def _decode(raw: bytes, syntax: str | None) -> "tuple[str, str] | None":
    """(text, encoding) of a file's bytes: a Python file in its declared encoding (PEP 263, a BOM
    gives ``utf-8-sig``), anything else in UTF-8 (a BOM kept as its character); None when it
    does not decode."""
    encoding = "utf-8"
    if syntax == "python":
        import io
        import tokenize

        try:
            encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
        except (SyntaxError, LookupError):
            return None
    try:
        return raw.decode(encoding), encoding
    except (UnicodeDecodeError, LookupError):
        return None


def _same_program(before: str, after: str) -> bool:
    """Whether two Python sources parse to the same tree (comments are not in it)."""
    import ast
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.dump(ast.parse(before)) == ast.dump(ast.parse(after))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False


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
        from parallint.util.safeio import read_regular  # a FIFO is never read

        try:
            raw = read_regular(p)
        except OSError:
            raw = None
        got = _decode(raw, syntax) if raw is not None else None
        if got is None:
            skipped.extend(f"{path}:{ln}" for ln in by_line)
            continue
        text, encoding = got
        lines = physical_lines(text, syntax, keepends=True)
        plain = one_break(text, syntax)
        found = comments(plain, syntax)
        changed, count = 0, 0
        for ln, codes in sorted(by_line.items()):
            edit = noqa_edit(plain, syntax, ln, codes, found)
            if edit is None:
                skipped.append(f"{path}:{ln}")
                continue
            body, new = edit
            if not new:
                continue
            old = lines[ln - 1]
            content = physical_lines(old, syntax)
            lines[ln - 1] = body + old[len(content[0]) if content else 0:]  # its own line break kept
            count += len(new)
            changed += 1
        if not changed:
            continue
        result = "".join(lines)
        if syntax == "python" and not _same_program(text, result):
            skipped.extend(f"{path}:{ln}" for ln in by_line)  # never write a program that means another thing
            continue
        try:
            data = result.encode(encoding)
        except UnicodeEncodeError:
            skipped.extend(f"{path}:{ln}" for ln in by_line)
            continue
        atomic_write(p, data)
        added += count
    return added, skipped


def noqa_edit(text: str, syntax: str | None, line: int, codes: list[str],
              found: dict[int, tuple[int, str]] | None = None) -> tuple[str, list[str]] | None:
    """The text of ``line`` (without its line break, every character of it kept) with ``codes``
    added to its ``# noqa`` (or a new one at its end), and the codes actually added; None where
    no comment can go."""
    text = one_break(text, syntax)
    lines = physical_lines(text, syntax)
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
    if not body.strip():
        return body + "# noqa: " + ", ".join(codes), list(codes)
    sep = "" if body.endswith(("  ", "\t")) else (" " if body.endswith(" ") else "  ")
    return body + sep + "# noqa: " + ", ".join(codes), list(codes)
