"""Reporters: text (``path:line:col: CODE message`` + summary), JSON, SARIF 2.1.0, GitHub annotations."""

from __future__ import annotations

import json
from collections import Counter
from typing import Sequence

from parallint import __version__
from parallint.diagnostics import Diagnostic, Severity

FORMATS = ("text", "json", "sarif", "github")
INFO_URI = "https://github.com/parallint/parallint"


def render(fmt: str, diags: Sequence[Diagnostic], files_checked: int, rules: Sequence[type] = ()) -> str:
    if fmt == "json":
        return json.dumps([d.to_json() for d in diags], indent=2) + "\n"
    if fmt == "sarif":
        return json.dumps(sarif(diags, rules), indent=2) + "\n"
    if fmt == "github":
        return "".join(github_line(d) + "\n" for d in diags)
    return text(diags, files_checked)


def summary(diags: Sequence[Diagnostic], files_checked: int) -> str:
    files = f"{files_checked} file{'s' if files_checked != 1 else ''}"
    if not diags:
        return f"All checks passed ({files} checked)."
    c = Counter(d.severity for d in diags)
    parts = [f"{c[s]} {str(s)}{'s' if c[s] != 1 and s != Severity.INFO else ''}" for s in (Severity.ERROR, Severity.WARNING, Severity.INFO) if c[s]]
    n = len(diags)
    return f"Found {n} finding{'s' if n != 1 else ''} ({', '.join(parts)}) in {files}."


def text(diags: Sequence[Diagnostic], files_checked: int) -> str:
    out = []
    for d in diags:
        s = d.span
        out.append(f"{s.path}:{s.line}:{s.column}: {d.code} {d.message}")
        for r in d.related:
            out.append(f"    note: {r.path}:{r.line}: {r.message}")
    out.append(summary(diags, files_checked))
    return "\n".join(out) + "\n"


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


def _location(path: str, line: int, column: int = 1, end_line: int = 0, end_column: int = 0) -> dict:
    region = {"startLine": line, "startColumn": max(column, 1)}
    if end_line >= line:
        region["endLine"] = end_line
        if end_column > 0 and (end_line > line or end_column >= column):
            region["endColumn"] = max(end_column, 1)
    return {"physicalLocation": {"artifactLocation": {"uri": path.replace(" ", "%20")}, "region": region}}


def sarif(diags: Sequence[Diagnostic], rules: Sequence[type]) -> dict:
    rule_list = sorted({r.code: r for r in rules}.values(), key=lambda r: r.code)
    index = {r.code: i for i, r in enumerate(rule_list)}
    descriptors = [
        {
            "id": r.code,
            "name": r.name,
            "shortDescription": {"text": r.summary or r.name},
            "fullDescription": {"text": r.documentation()},
            "defaultConfiguration": {"level": _SARIF_LEVEL[r.severity]},
            "helpUri": f"{INFO_URI}#{r.code.lower()}",
            "properties": {"tags": [r.code.rstrip("0123456789")]},
        }
        for r in rule_list
    ]
    results = []
    for d in diags:
        s = d.span
        res = {
            "ruleId": d.code,
            "level": _SARIF_LEVEL[d.severity],
            "message": {"text": d.message},
            "locations": [_location(s.path, s.line, s.column, s.end_line, s.end_column)],
        }
        if d.code in index:
            res["ruleIndex"] = index[d.code]
        if d.related:
            res["relatedLocations"] = [
                {"id": i, **_location(r.path, r.line, r.column), "message": {"text": r.message}}
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
                "columnKind": "unicodeCodePoints",
                "results": results,
            }
        ],
    }
