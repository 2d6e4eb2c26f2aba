"""Suppression comments: ``# noqa: CODE[,CODE]`` (or a bare ``# noqa``) on the reported line, and a
file-level ``# parallint: noqa: CODE`` (or bare ``# parallint: noqa``) anywhere in the file.
Codes, prefixes and rule names are accepted, as everywhere.

Only real comments count: Python comments are found with :mod:`tokenize`; shell, Makefile, YAML
and TOML comments by a scanner that knows their quoting (a ``#`` inside a string, a heredoc or a
``${var#pattern}`` is not a comment). JSON has no comments, so nothing in a JSON file suppresses.

:func:`apply` filters findings and, when SYN003 is enabled, reports the suppression codes that
suppressed nothing (unused) or that name no parallint rule (unknown), like Ruff's RUF100. Codes of
other tools (``E501``, ``F401``, ``PGH003``) and bare ``# noqa`` (flake8's) are left alone.
"""

from __future__ import annotations

import io
import re

from parallint.model.fixes import syntax_of  # noqa: F401 - the comment syntax of a file, shared with the fixes
from parallint.util.record import EqRecord

TYPE_CHECKING = False  # typing is not imported at run time (start-up, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Iterable


class _Lazy:
    """A regular expression compiled at its first use: most files hold no noqa comment, and these
    patterns (case-insensitive, with look-ahead) take milliseconds to compile at each start."""

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self.args = (pattern, flags)
        self.compiled: re.Pattern[str] | None = None

    def get(self) -> re.Pattern[str]:
        if self.compiled is None:
            self.compiled = re.compile(*self.args)
        return self.compiled

    def match(self, text: str, pos: int = 0) -> re.Match[str] | None:
        return self.get().match(text, pos)

    def search(self, text: str) -> re.Match[str] | None:
        return self.get().search(text)


_NOQA = _Lazy(r"#\s*noqa(?::\s*(?P<codes>[A-Za-z0-9_\-]+(?:[ \t]*,[ \t]*[A-Za-z0-9_\-]+|[ \t]+(?=[A-Za-z0-9_\-]*[0-9]))*))?", re.I)
_FILE_NOQA = _Lazy(
    r"^#\s*parallint:\s*noqa(?::\s*(?P<codes>[A-Za-z0-9_\-]+(?:[\s,]+[A-Za-z0-9_\-]+)*))?\s*$", re.I)
_PARALLINT = _Lazy(r"parallint", re.I)
ALL = ("ALL",)
_CODE = _Lazy(r"^([A-Z]{2,5})([0-9]{3})$")


def _codes(group: str | None) -> tuple[str, ...]:
    if not group:
        return ALL
    return tuple(c for c in re.split(r"[\s,]+", group.strip()) if c)


# -------------------------------------------------------------------------------- comments



#: where each syntax breaks lines: Python, TOML and shell at LF, CRLF and a lone CR only (a form
#: feed, U+2028 or U+0085 is a character of the line there, unlike ``str.splitlines``); YAML
#: (PyYAML, YAML 1.1) also at U+0085, U+2028 and U+2029
_BREAKS = {"yaml": "\r\n|[\n\r\x85\u2028\u2029]"}
_PLAIN_BREAKS = "\r\n|[\n\r]"


def physical_lines(text: str, syntax: str | None = "python", keepends: bool = False) -> list[str]:
    """The lines of ``text`` as ``syntax`` counts them (see :data:`_BREAKS`); with ``keepends``
    each keeps its own line break, so that ``"".join(...)`` gives ``text`` back."""
    pattern = re.compile(_BREAKS.get(syntax or "", _PLAIN_BREAKS))  # (re caches it)
    if keepends:
        out, start = [], 0
        for m in pattern.finditer(text):
            out.append(text[start:m.end()])
            start = m.end()
        if start < len(text):
            out.append(text[start:])
        return out
    parts = pattern.split(text)
    if parts and parts[-1] == "":
        parts.pop()
    return parts


def one_break(text: str, syntax: str | None = "python") -> str:
    """``text`` with each of its line breaks written ``\n`` (line numbers unchanged)."""
    if "\r" not in text and not (syntax == "yaml" and any(c in text for c in "\x85\u2028\u2029")):
        return text
    return re.sub(_BREAKS.get(syntax or "", _PLAIN_BREAKS), "\n", text)


def comments(text: str, syntax: str | None) -> dict[int, tuple[int, str]]:
    """line -> (0-based column of the ``#``, the comment text) for every real comment."""
    if syntax is None:
        return {}
    if syntax == "python":
        return _python_comments(text)
    return _scan_comments(text, syntax)


def _python_comments(text: str) -> dict[int, tuple[int, str]]:
    import tokenize

    out: dict[int, tuple[int, str]] = {}
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT:
                out[tok.start[0]] = (tok.start[1], tok.string)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass  # a broken file keeps the comments found before the error
    return out


_HEREDOC = _Lazy(r"<<(-?)[ \t]*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\2")


def _scan_comments(text: str, syntax: str) -> dict[int, tuple[int, str]]:
    """Comments of shell, YAML and TOML text: a ``#`` outside quotes at the start of a word
    (shell, YAML) or anywhere outside strings (TOML)."""
    out: dict[int, tuple[int, str]] = {}
    quote = ""  # the open quote: ' " (shell/yaml) or ''' """ (toml multi-line)
    heredocs: list[tuple[str, bool]] = []
    in_heredoc: tuple[str, bool] | None = None
    for ln, line in enumerate(physical_lines(text, syntax), 1):
        if in_heredoc is not None:
            word, strip = in_heredoc
            if (line.lstrip("\t") if strip else line) == word:
                in_heredoc = heredocs.pop(0) if heredocs else None
            continue
        i, n = 0, len(line)
        while i < n:
            c = line[i]
            if quote:
                if syntax == "toml" and len(quote) == 3:
                    if line.startswith(quote, i):
                        quote, i = "", i + 3
                        continue
                    if quote == '"""' and c == "\\":
                        i += 2
                        continue
                elif c == "\\" and quote == '"':
                    i += 2
                    continue
                elif c == quote:
                    if syntax == "yaml" and quote == "'" and line.startswith("''", i):
                        i += 2
                        continue
                    quote = ""
                i += 1
                continue
            if c == "#":
                prev = line[i - 1] if i else " "
                if syntax == "toml" or prev in (" \t" if syntax == "yaml" else " \t;&|()`"):
                    out[ln] = (i, line[i:])
                    break
            elif c == "\\" and syntax == "shell":
                i += 2
                continue
            elif c in "'\"":
                if syntax == "toml" and line.startswith(c * 3, i):
                    quote, i = c * 3, i + 3
                    continue
                if syntax == "yaml" and not _yaml_quote_starts(line, i):
                    i += 1
                    continue
                quote = c
            elif c == "<" and syntax == "shell":
                m = _HEREDOC.match(line, i)
                if m and not line.startswith("<<<", i):
                    heredocs.append((m.group(3), bool(m.group(1))))
                    i = m.end()
                    continue
            i += 1
        if heredocs and not quote:
            in_heredoc = heredocs.pop(0)
    return out


def _yaml_quote_starts(line: str, i: int) -> bool:
    """A YAML quote opens a scalar only where a scalar starts (after ``: ``, ``- ``, ``[``, ``,``,
    ``{`` or at the start of the line); ``it's`` in a plain scalar is an apostrophe."""
    before = line[:i].rstrip()
    return before == "" or before.endswith((":", "-", "[", ",", "{", "?"))


def line_in_string(text: str, syntax: str | None, line: int) -> bool:
    """Whether the end of ``line`` lies inside a string (or heredoc), where text added after it
    would change the value instead of adding a comment."""
    if syntax is None:
        return True
    text = one_break(text, syntax)
    if syntax == "python":
        import tokenize

        try:
            for tok in tokenize.generate_tokens(io.StringIO(text).readline):
                if tok.type in (tokenize.STRING, getattr(tokenize, "FSTRING_MIDDLE", -1)) and \
                        tok.start[0] <= line < tok.end[0]:
                    return True
                if tok.start[0] > line:
                    break
        except (tokenize.TokenError, IndentationError, SyntaxError):
            return True
        lines = physical_lines(text, syntax)
        return line > len(lines) or lines[line - 1].rstrip().endswith("\\")
    lines = physical_lines(text, syntax)
    if line > len(lines):
        return True
    if syntax == "yaml" and _in_block_scalar(lines, line):
        return True
    body = lines[line - 1]
    # a line whose end is inside quotes: the scanner sees the next line's comment as part of it
    probe = "\n".join(lines[:line] + ["#probe"])
    if _scan_comments(probe, syntax).get(line + 1) is None:
        return True
    return syntax == "shell" and body.rstrip().endswith("\\")


#: a YAML line that opens a block scalar (``key: |``, ``- >-``, ``key: |2 # c``)
_BLOCK_START = _Lazy(r"(?:^|[:\-]\s)\s*[|>][-+0-9]*\s*(?:#.*)?$")


def _in_block_scalar(lines: list[str], line: int) -> bool:
    """Whether YAML ``line`` is inside a literal or folded block scalar, where a ``#`` is text."""
    block_indent = None
    for ln, body in enumerate(lines[:line], 1):
        stripped = body.lstrip(" ")
        indent = len(body) - len(stripped)
        if block_indent is not None:
            if not stripped.strip() or indent > block_indent:
                if ln == line:
                    return True
                continue
            block_indent = None
        if ln == line:
            return False
        if _BLOCK_START.search(body.rstrip()):
            block_indent = indent
    return False


# --------------------------------------------------------------------------- suppressions
class Directive(EqRecord):
    _fields = ("line", "column", "codes", "file_level", "used")
    line: int
    column: int  # 1-based column of the '#'
    codes: tuple[str, ...]
    file_level: bool
    used: set[str]

    def __init__(
        self,
        line: int,
        column: int,
        codes: tuple[str, ...],
        file_level: bool,
        used: set[str] | None = None,
    ) -> None:
        self.line = line
        self.column = column
        self.codes = codes
        self.file_level = file_level
        self.used = set() if used is None else used


class Suppressions(EqRecord):
    _fields = ("directives",)
    directives: list[Directive]

    def __init__(self, directives: list[Directive] | None = None) -> None:
        self.directives = [] if directives is None else directives

    @property
    def file_level(self) -> tuple[str, ...]:
        return tuple(c for d in self.directives if d.file_level for c in d.codes)

    @property
    def lines(self) -> dict[int, tuple[str, ...]]:
        return {d.line: d.codes for d in self.directives if not d.file_level}

    @classmethod
    def scan(cls, text: str, path: str = "x.py") -> "Suppressions":
        if "noqa" not in text and "NOQA" not in text:
            return cls()
        out = []
        syntax = syntax_of(path)
        for ln, (col, comment) in comments(one_break(text, syntax), syntax).items():
            if "noqa" not in comment.lower():
                continue
            m = _FILE_NOQA.match(comment)
            if m:
                out.append(Directive(ln, col + 1, _codes(m.group("codes")), True))
                continue
            m = _NOQA.search(comment)
            if m:
                out.append(Directive(ln, col + 1 + m.start(), _codes(m.group("codes")), False))
        return cls(out)

    def matching(self, line: int, end_line: int) -> list[Directive]:
        return [d for d in self.directives if d.file_level or d.line in (line, end_line)]

    def selectors_for(self, line: int, end_line: int) -> tuple[str, ...]:
        return tuple(c for d in self.matching(line, end_line) for c in d.codes)


def _ours(code: str, families: set[str]) -> bool:
    m = _CODE.match(code.upper())
    return bool(m and m.group(1) in families)


def apply(diags: list, files: Iterable, checked: set, config, enabled: set[str], cwd) -> list:
    """Findings left after ``# noqa`` and ``per-file-ignores``; with SYN003 enabled, plus one
    SYN003 finding per unused or unknown code of the files in ``checked`` (abspaths: the files
    whose every rule ran, so an unused code is really unused)."""
    from parallint.engine.registry import UnknownSelector, lazy_registry

    reg = lazy_registry()  # codes and names only: no rule module is imported for this
    by_display = {f.path: f for f in files if f is not None}
    scans: dict[str, Suppressions] = {}

    def scan(f) -> Suppressions:
        if f.path not in scans:
            scans[f.path] = Suppressions.scan(f.text, f.path)
        return scans[f.path]

    out = []
    for d in diags:
        f = by_display.get(d.span.path)
        if f is not None:
            pfi = config.per_file_ignores(f.path, f.abspath)
            covered = False
            for directive in scan(f).matching(d.span.line, d.span.end_line):
                for code in directive.codes:
                    if reg.covers([code], d.code):
                        directive.used.add(code)
                        covered = True
            if covered or (pfi and reg.covers(pfi, d.code)):
                continue
        elif reg.covers(config.per_file_ignores(d.span.path, cwd / d.span.path), d.code):
            continue
        out.append(d)
    if "SYN003" not in enabled:
        return out
    families = {r.code[:-3] for r in reg.rules}
    told: dict[str, bool] = {}

    def tells(code: str) -> bool:
        """Whether an unused ``code`` in a noqa comment can be a SYN003 finding: one that is
        no rule's selector and not of a parallint family (flake8's E501) never is."""
        got = told.get(code)
        if got is None:
            try:
                reg.matches(code)
                got = True
            except UnknownSelector:
                got = _ours(code, families)
            told[code] = got
        return got

    def quiet(text: str) -> bool:
        """No comment of ``text`` can give a SYN003 finding while none of it is used: no
        ``parallint: noqa`` and no code that :func:`tells`, among every noqa match of the whole
        text. A comment's own match is one of those (the codes stay on its line), so this needs
        no tokenizing; a text that fails it is scanned as before."""
        if "noqa" not in text and "NOQA" not in text:
            return True
        if _PARALLINT.search(text):
            return False
        for m in _NOQA.get().finditer(text):
            codes = _codes(m.group("codes"))
            if codes != ALL and any(tells(c) for c in codes):
                return False
        return True

    for f in by_display.values():
        if f.abspath not in checked or not f.text:
            continue
        pfi = config.per_file_ignores(f.path, f.abspath)
        if pfi and reg.covers(pfi, "SYN003"):
            continue
        if f.path not in scans and quiet(f.text):
            continue  # (no finding of the file marked a code used)
        for directive in scan(f).directives:
            if any(reg.covers([c], "SYN003") for c in directive.codes if c != "ALL"):
                continue  # the line asks not to be told
            if directive.codes == ALL:
                if directive.file_level and not directive.used:
                    out.append(_syn003(f, directive, "unused file-level `parallint: noqa` (nothing to suppress); remove it"))
                continue  # a bare noqa comment may be flake8's
            for code in directive.codes:
                if code in directive.used:
                    continue
                try:
                    covers = [r.code for r in reg.matches(code)]
                except UnknownSelector:
                    if _ours(code, families):
                        out.append(_syn003(f, directive, f"unknown rule code `{code}` in noqa; remove it or fix the code (see `parallint rules`)"))
                    continue
                if any(c in enabled for c in covers):
                    out.append(_syn003(f, directive, f"unused noqa code `{code}` (no {code} finding here); remove it"))
    return out


def _syn003(f, directive: Directive, message: str):
    from parallint.model.diagnostics import Diagnostic, Severity, Span

    return Diagnostic("SYN003", "unused-noqa", Severity.WARNING, message,
                      Span(f.path, directive.line, directive.column))
