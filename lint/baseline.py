"""Baselines: adopt parallint on an existing repository and fail only on new findings.

``--write-baseline FILE`` records every current finding by a fingerprint that survives line
shifts: the rule code, the path (relative to the baseline file's folder), the message with its
numbers normalised away, and a hash of the flagged line's stripped text. ``--baseline FILE`` then
drops the findings whose fingerprint is recorded (as many times as it is recorded), so code moved
up or down keeps its findings baselined, while a new finding or an edit of a flagged line shows.
The same fingerprint goes into SARIF ``partialFingerprints``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections import Counter
from pathlib import Path
from typing import Iterable

VERSION = 1
_NUM = re.compile(r"\d+(?:\.\d+)?")


class BaselineError(Exception):
    pass


def normalise(message: str) -> str:
    return " ".join(_NUM.sub("N", message).split())


class Lines:
    """The stripped text of a file's lines, read once per file."""

    def __init__(self, cwd: Path, overrides: dict[str, str] | None = None) -> None:
        self.cwd = cwd
        self.texts: dict[str, list[str]] = {}
        self.overrides = overrides or {}

    def line(self, path: str, line: int) -> str:
        if path not in self.texts:
            text = self.overrides.get(path)
            if text is None:
                p = Path(path)
                try:
                    from parallint.safeio import read_text_regular  # a FIFO is never read

                    text = read_text_regular(p if p.is_absolute() else self.cwd / p, 64 << 20)
                except OSError:
                    text = ""
            self.texts[path] = text.splitlines()
        lines = self.texts[path]
        return lines[line - 1].strip() if 0 < line <= len(lines) else ""


def fingerprint(d, rel_path: str, line_text: str) -> str:
    ctx = hashlib.sha256(line_text.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    key = "\0".join((d.code, rel_path, normalise(d.message), ctx))
    return hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()[:32]


def _rel(path: str, cwd: Path, base: Path) -> str:
    ap = Path(path) if Path(path).is_absolute() else cwd / path
    try:
        return Path(os.path.relpath(ap, base)).as_posix()
    except ValueError:
        return Path(path).as_posix()


def fingerprints(diags: Iterable, cwd: Path, base: Path, lines: Lines | None = None) -> list[str]:
    lines = lines or Lines(cwd)
    return [fingerprint(d, _rel(d.span.path, cwd, base), lines.line(d.span.path, d.span.line)) for d in diags]


def write(path: str, diags: list, cwd: Path) -> int:
    target = Path(path) if Path(path).is_absolute() else cwd / path
    base = target.resolve().parent
    lines = Lines(cwd)
    entries = [
        {"fingerprint": fp, "code": d.code, "path": _rel(d.span.path, cwd, base), "line": d.span.line,
         "message": d.message}
        for d, fp in zip(diags, fingerprints(diags, cwd, base, lines))
    ]
    entries.sort(key=lambda e: (e["path"], e["line"], e["code"], e["fingerprint"]))
    doc = {"tool": "parallint", "version": VERSION, "findings": entries}
    from parallint.suppress import _atomic_write

    target.parent.mkdir(parents=True, exist_ok=True)
    _atomic_write(target, json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
    return len(entries)


def load(path: str, cwd: Path) -> tuple[Counter, Path]:
    target = Path(path) if Path(path).is_absolute() else cwd / path
    try:
        doc = json.loads(target.read_text("utf-8"))
    except OSError as exc:
        raise BaselineError(f"{path}: cannot read baseline: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise BaselineError(f"{path}: not a parallint baseline (invalid JSON: {exc})") from None
    if not isinstance(doc, dict) or doc.get("tool") != "parallint" or not isinstance(doc.get("findings"), list):
        raise BaselineError(f"{path}: not a parallint baseline (write one with --write-baseline)")
    if doc.get("version") != VERSION:
        raise BaselineError(f"{path}: baseline version {doc.get('version')} is not {VERSION}; write it again")
    return Counter(e.get("fingerprint") for e in doc["findings"] if isinstance(e, dict)), target.resolve().parent


def filter_new(diags: list, path: str, cwd: Path) -> tuple[list, int]:
    """The findings not in the baseline, and how many were baselined."""
    known, base = load(path, cwd)
    out = []
    for d, fp in zip(diags, fingerprints(diags, cwd, base)):
        if known[fp] > 0:
            known[fp] -= 1
            continue
        out.append(d)
    return out, len(diags) - len(out)
