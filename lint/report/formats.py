"""Reporters: text (``path:line:col: CODE message`` + summary; colour and a code frame on a
terminal), JSON, SARIF 2.1.0 (fingerprints, rule help, ``%SRCROOT%``-relative URIs), GitHub
annotations, JUnit XML, GitLab code quality and Checkstyle XML."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

from parallint import __version__
from parallint.model.diagnostics import Diagnostic, Severity
from parallint.util.record import EqRecord

TYPE_CHECKING = False  # typing is not imported at run time (start-up, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Sequence

FORMATS = ("text", "json", "sarif", "github", "junit", "gitlab", "checkstyle")
INFO_URI = "https://github.com/parallint/parallint"
DOCS_URI = INFO_URI + "/blob/main/docs/rules/{code}.md"


def doc_uri(code: str) -> str:
    return DOCS_URI.format(code=code)


class Options(EqRecord):
    """How a report is rendered beyond the format."""

    _fields = ("cwd", "root", "color", "code_frame", "show_docs_link", "statistics")
    cwd: Path
    root: Path | None  # %SRCROOT%: the repository root (default: found from cwd)
    color: bool
    code_frame: bool
    show_docs_link: bool
    statistics: bool

    def __init__(
        self,
        cwd: Path | None = None,
        root: Path | None = None,
        color: bool = False,
        code_frame: bool = False,
        show_docs_link: bool = False,
        statistics: bool = False,
    ) -> None:
        self.cwd = Path.cwd() if cwd is None else cwd
        self.root = root
        self.color = color
        self.code_frame = code_frame
        self.show_docs_link = show_docs_link
        self.statistics = statistics

    def srcroot(self) -> Path:
        if self.root is None:
            from parallint.engine.index import find_root

            self.root = find_root(self.cwd.resolve())
        return self.root


def render(fmt: str, diags: Sequence[Diagnostic], files_checked: int, rules: Sequence[type] = (),
           options: Options | None = None) -> str:
    opts = options or Options()
    if fmt in ("json", "sarif", "gitlab"):
        import json
    if fmt == "json":
        return json.dumps([d.to_json() for d in diags], indent=2) + "\n"
    if fmt == "sarif":
        return json.dumps(sarif(diags, rules, opts), indent=2) + "\n"
    if fmt == "github":
        return "".join(github_line(d) + "\n" for d in diags)
    if fmt == "junit":
        return junit(diags, files_checked)
    if fmt == "gitlab":
        return json.dumps(gitlab(diags, opts), indent=2) + "\n"
    if fmt == "checkstyle":
        return checkstyle(diags)
    out = text(diags, files_checked, opts)
    if opts.statistics:
        out += statistics(diags)
    return out


def summary(diags: Sequence[Diagnostic], files_checked: int) -> str:
    files = f"{files_checked} file{'s' if files_checked != 1 else ''}"
    if not diags:
        return f"All checks passed ({files} checked)."
    c = Counter(d.severity for d in diags)
    parts = [f"{c[s]} {str(s)}{'s' if c[s] != 1 and s != Severity.INFO else ''}" for s in (Severity.ERROR, Severity.WARNING, Severity.INFO) if c[s]]
    n = len(diags)
    return f"Found {n} finding{'s' if n != 1 else ''} ({', '.join(parts)}) in {files}."


_SGR = {"bold": "1", "dim": "2", "red": "31", "yellow": "33", "cyan": "36", "blue": "34", "green": "32"}
_SEV_COLOR = {Severity.ERROR: "red", Severity.WARNING: "yellow", Severity.INFO: "blue"}


def _c(on: bool, style: str, s: str) -> str:
    if not on:
        return s
    codes = ";".join(_SGR[x] for x in style.split("+"))
    return f"\x1b[{codes}m{s}\x1b[0m"


def use_color(stream, no_color_flag: bool = False) -> bool:
    """Colour only on a terminal, never with NO_COLOR set (https://no-color.org); FORCE_COLOR forces."""
    if no_color_flag or os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    try:
        return bool(stream.isatty()) and os.environ.get("TERM") != "dumb"
    except (AttributeError, ValueError):
        return False


class _Sources:
    def __init__(self, cwd: Path) -> None:
        self.cwd = cwd
        self.cache: dict[str, list[str]] = {}

    def lines(self, path: str) -> list[str]:
        if path not in self.cache:
            p = Path(path)
            try:
                from parallint.util.safeio import read_text_regular  # a FIFO is never read

                self.cache[path] = read_text_regular(p if p.is_absolute() else self.cwd / p, 64 << 20).splitlines()
            except OSError:
                self.cache[path] = []
        return self.cache[path]


def _frame(d: Diagnostic, src: _Sources, color: bool) -> list[str]:
    lines = src.lines(d.span.path)
    s = d.span
    if not (0 < s.line <= len(lines)):
        return []
    out = []
    width = len(str(min(s.line + 1, len(lines))))
    for ln in range(max(1, s.line - 1), min(len(lines), s.line + 1) + 1):
        body = lines[ln - 1].expandtabs(4)[:200]
        mark = ">" if ln == s.line else " "
        out.append(f"  {_c(color, 'bold', mark) if mark == '>' else ' '} {_c(color, 'dim', str(ln).rjust(width))} | {body}")
        if ln == s.line:
            start = max(s.column, 1)
            end = s.end_column if s.end_line == s.line and s.end_column > start else start + 1
            end = min(end, max(len(body) + 1, start + 1))
            caret = " " * (start - 1) + "^" * max(1, end - start)
            out.append(f"    {' ' * width} | {_c(color, _SEV_COLOR[d.severity] + '+bold', caret)}")
    return out


def text(diags: Sequence[Diagnostic], files_checked: int, opts: Options | None = None) -> str:
    opts = opts or Options()
    color = opts.color
    src = _Sources(opts.cwd)
    out = []
    for d in diags:
        s = d.span
        where = f"{s.path}:{s.line}:{s.column}:"
        code = _c(color, _SEV_COLOR[d.severity] + "+bold", d.code)
        out.append(f"{_c(color, 'bold', where)} {code} {d.message}")
        for r in d.related:
            out.append(f"    note: {r.path}:{r.line}: {r.message}")
        if opts.show_docs_link:
            out.append(f"    docs: {doc_uri(d.code)}")
        if opts.code_frame:
            out.extend(_frame(d, src, color))
    out.append(summary(diags, files_checked))
    return "\n".join(out) + "\n"


def statistics(diags: Sequence[Diagnostic]) -> str:
    """Findings per rule, most frequent first (`--statistics`)."""
    if not diags:
        return ""
    counts = Counter((d.code, d.name) for d in diags)
    width = len(str(max(counts.values())))
    rows = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0][0]))
    return "".join(f"{n:>{width}}  {code}  {name}\n" for (code, name), n in rows)


def _esc_data(s: str) -> str:
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _esc_prop(s: str) -> str:
    return _esc_data(s).replace(":", "%3A").replace(",", "%2C")


_GH_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}


def github_line(d: Diagnostic) -> str:
    s = d.span
    props = [
        f"file={_esc_prop(s.path)}",
        f"line={s.line}",
        f"col={s.column}",
        f"endLine={s.end_line}",
    ]
    if s.end_line == s.line:
        props.append(f"endColumn={s.end_column}")
    props.append(f"title={_esc_prop(d.code + ' ' + d.name)}")
    msg = d.message + "".join(f"\n{r.path}:{r.line}: {r.message}" for r in d.related)
    return f"::{_GH_LEVEL[d.severity]} {','.join(props)}::{_esc_data(msg)}"


_SARIF_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}


def _uri(path: str, opts: Options) -> dict:
    """An artifact location under %SRCROOT% (the repository root), else an absolute file URI."""
    from urllib.parse import quote

    ap = Path(path) if Path(path).is_absolute() else opts.cwd / path
    ap = Path(os.path.abspath(ap))
    root = opts.srcroot()
    try:
        rel = ap.relative_to(root).as_posix()
        return {"uri": quote(rel), "uriBaseId": "%SRCROOT%"}
    except ValueError:
        return {"uri": ap.as_uri()}


def _location(path: str, line: int, column: int = 1, end_line: int = 0, end_column: int = 0,
              opts: Options | None = None) -> dict:
    region = {"startLine": line, "startColumn": max(column, 1)}
    if end_line >= line:
        region["endLine"] = end_line
        if end_column > 0 and (end_line > line or end_column >= column):
            region["endColumn"] = max(end_column, 1)
    return {"physicalLocation": {"artifactLocation": _uri(path, opts or Options()), "region": region}}


#: GitHub's documented limit for a rule's short and full description
SARIF_DESCRIPTION_MAX = 1000


def _cut(text: str, limit: int = SARIF_DESCRIPTION_MAX) -> str:
    """``text`` in at most ``limit`` characters, cut at a word with an ellipsis."""
    if len(text) <= limit:
        return text
    head = text[:limit - 1].rsplit(" ", 1)[0]
    return head + "…"


def _what_it_does(rule) -> str:
    """The rule's "What it does" section as one paragraph of plain text."""
    import re
    import textwrap

    m = re.search(r"^## What it does\s*\n(.*?)(?=^## |\Z)", textwrap.dedent(rule.doc or ""), re.S | re.M)
    return " ".join(m.group(1).split()) if m else ""


def _sarif_message(d: Diagnostic) -> str:
    """The message, then each related place as a link to its relatedLocation (``[text](id)``), so
    that GitHub shows the cross-file context (the launch file that sets the world size)."""
    if not d.related:
        return d.message
    import re

    def esc(t: str) -> str:  # SARIF message markup: brackets are escaped
        return re.sub(r"([\[\]\\])", r"\\\1", t)

    links = "; ".join(f"[{esc(r.message)}]({i})" for i, r in enumerate(d.related))
    return esc(d.message) + "\n\nSee: " + links


def _sarif_fixes(diags: Sequence[Diagnostic], opts: Options) -> dict[int, dict]:
    """SARIF ``fixes`` per finding that proposes one (id of the finding -> its fix object): the
    replacement ``check --fix`` would make, in the file as it is now (none where it cannot)."""
    wanted = [d for d in diags if d.fix is not None]
    if not wanted:
        return {}
    import bisect

    from parallint.model.fixes import line_starts, syntax_of
    from parallint.report.fixer import file_text, rule_edit

    texts: dict[str, str | None] = {}
    out = {}
    for d in wanted:
        path = d.span.path
        if path not in texts:
            texts[path] = file_text(path, opts.cwd)
        text = texts[path]
        e = rule_edit(d, text) if text is not None else None
        if e is None or text is None or d.fix is None:
            continue
        starts = line_starts(text, syntax_of(path))

        (l1, c1), (l2, c2) = ((i + 1, off - starts[i] + 1) for off in (e.start, e.end)
                              for i in (bisect.bisect_right(starts, off) - 1,))
        out[id(d)] = {
            "description": {"text": d.fix.title + ("" if d.fix.safe else " (unsafe: may change what the job does)")},
            "artifactChanges": [{
                "artifactLocation": _uri(path, opts),
                "replacements": [{"deletedRegion": {"startLine": l1, "startColumn": c1, "endLine": l2, "endColumn": c2},
                                  "insertedContent": {"text": e.text}}],
            }],
        }
    return out


def sarif(diags: Sequence[Diagnostic], rules: Sequence[type], opts: Options | None = None) -> dict:
    from parallint.report.baseline import fingerprints

    opts = opts or Options()
    root = opts.srcroot()
    rule_list = sorted({r.code: r for r in rules}.values(), key=lambda r: r.code)
    index = {r.code: i for i, r in enumerate(rule_list)}
    descriptors = []
    reported = {d.code for d in diags}
    for r in rule_list:
        desc = {
            "id": r.code,
            "name": r.name,
            "shortDescription": {"text": _cut(r.summary or r.name)},
            "defaultConfiguration": {"level": _SARIF_LEVEL[r.severity]},
            "helpUri": doc_uri(r.code),
            "properties": {"tags": [r.code.rstrip("0123456789")]},
        }
        if r.code in reported:  # the doc for the rules this report shows (the file stays small)
            what = _what_it_does(r) or r.summary or r.name
            desc["fullDescription"] = {"text": _cut(what)}
            desc["help"] = {"text": _cut(what + f" See {doc_uri(r.code)}"), "markdown": r.documentation()}
        descriptors.append(desc)
    results = []
    fixes = _sarif_fixes(diags, opts)
    for d, fp in zip(diags, fingerprints(diags, opts.cwd, root)):
        s = d.span
        res = {
            "ruleId": d.code,
            "level": _SARIF_LEVEL[d.severity],
            "message": {"text": _sarif_message(d)},
            "locations": [_location(s.path, s.line, s.column, s.end_line, s.end_column, opts)],
            "partialFingerprints": {"parallint/v1": fp},
        }
        if d.code in index:
            res["ruleIndex"] = index[d.code]
        if id(d) in fixes:
            res["fixes"] = [fixes[id(d)]]
        if d.related:
            res["relatedLocations"] = [
                {"id": i, **_location(r.path, r.line, r.column, opts=opts), "message": {"text": r.message}}
                for i, r in enumerate(d.related)
            ]
        results.append(res)
    return {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "parallint",
                        "version": __version__,
                        "informationUri": INFO_URI,
                        "rules": descriptors,
                    }
                },
                "originalUriBaseIds": {"%SRCROOT%": {"uri": root.as_uri().rstrip("/") + "/"}},
                "columnKind": "unicodeCodePoints",
                "results": results,
            }
        ],
    }


# ------------------------------------------------------------------ JUnit, GitLab, Checkstyle
def _xml_attr(s: str) -> str:
    from xml.sax.saxutils import quoteattr

    return quoteattr("".join(ch for ch in str(s) if ch in "\t\n\r" or ord(ch) >= 32))


def _xml_text(s: str) -> str:
    from xml.sax.saxutils import escape

    return escape("".join(ch for ch in str(s) if ch in "\t\n\r" or ord(ch) >= 32))


def junit(diags: Sequence[Diagnostic], files_checked: int) -> str:
    """One test suite; a failing test case per finding (a passing one when there are none)."""
    out = ['<?xml version="1.0" encoding="UTF-8"?>']
    n = len(diags)
    out.append(f'<testsuites name="parallint" tests="{max(n, 1)}" failures="{n}" errors="0">')
    out.append(f'  <testsuite name="parallint" tests="{max(n, 1)}" failures="{n}" errors="0" skipped="0">')
    if not diags:
        files = f"{files_checked} file{'s' if files_checked != 1 else ''}"
        out.append(f'    <testcase classname="parallint" name={_xml_attr(f"{files} checked")}/>')
    for d in diags:
        s = d.span
        name = f"{d.code} {s.path}:{s.line}:{s.column}"
        body = d.message + "".join(f"\n{r.path}:{r.line}: {r.message}" for r in d.related)
        out.append(f'    <testcase classname={_xml_attr(s.path)} name={_xml_attr(name)} file={_xml_attr(s.path)} line="{s.line}">')
        out.append(f'      <failure type={_xml_attr(d.code)} message={_xml_attr(f"{d.code} {d.name} ({d.severity}): {d.message}")}>'
                   f'{_xml_text(body)}</failure>')
        out.append("    </testcase>")
    out.append("  </testsuite>")
    out.append("</testsuites>")
    return "\n".join(out) + "\n"


_GITLAB_SEVERITY = {Severity.ERROR: "major", Severity.WARNING: "minor", Severity.INFO: "info"}


def gitlab(diags: Sequence[Diagnostic], opts: Options | None = None) -> list[dict]:
    """GitLab code quality report (artifacts:reports:codequality); paths from the repository root."""
    from parallint.report.baseline import fingerprints

    opts = opts or Options()
    root = opts.srcroot()
    out = []
    for d, fp in zip(diags, fingerprints(diags, opts.cwd, root)):
        loc = _uri(d.span.path, opts)
        path = loc["uri"] if "uriBaseId" in loc else d.span.path
        from urllib.parse import unquote

        out.append({
            "description": f"{d.code} {d.message}",
            "check_name": d.code,
            "fingerprint": fp,
            "severity": _GITLAB_SEVERITY[d.severity],
            "location": {"path": unquote(path), "lines": {"begin": d.span.line, "end": max(d.span.end_line, d.span.line)}},
        })
    return out


_CS_SEVERITY = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "info"}


def checkstyle(diags: Sequence[Diagnostic]) -> str:
    out = ['<?xml version="1.0" encoding="UTF-8"?>', '<checkstyle version="4.3">']
    by_file: dict[str, list[Diagnostic]] = {}
    for d in diags:
        by_file.setdefault(d.span.path, []).append(d)
    for path, ds in by_file.items():
        out.append(f"  <file name={_xml_attr(path)}>")
        for d in ds:
            out.append(f'    <error line="{d.span.line}" column="{d.span.column}" severity="{_CS_SEVERITY[d.severity]}" '
                       f"message={_xml_attr(d.message)} source={_xml_attr('parallint.' + d.code)}/>")
        out.append("  </file>")
    out.append("</checkstyle>")
    return "\n".join(out) + "\n"
