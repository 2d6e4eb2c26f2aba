"""Baselines: adopt parallint on an existing repository and fail only on new findings.

``--write-baseline FILE`` records every current finding by a fingerprint that survives line
shifts: the rule code, the path (relative to the baseline file's folder), the message with its
numbers normalised away and without its fix clause, and a hash of the flagged line's stripped text. ``--baseline FILE`` then
drops the findings whose fingerprint is recorded (as many times as it is recorded), so code moved
up or down keeps its findings baselined, while a new finding or an edit of a flagged line shows.
The same fingerprint goes into SARIF ``partialFingerprints``.

Every message ends with a fix clause: ``"<what is wrong>; <what to change>"``, the change starting
with an imperative verb from :data:`FIX_VERBS` (``tests/test_messages_fix.py`` holds every rule to
it). The fix clause is not part of the fingerprint, so rewording the advice, or the values it
suggests, keeps a baseline valid; rewording what is wrong makes the finding new.

Version 1 baselines (written before the fingerprint left the fix clause out) still load: an entry
whose fingerprint no longer matches is matched on rule code, path and the recorded message, which
must begin with the finding's message without its fix clause (numbers normalised). That is looser
than a fingerprint (the flagged line's text is not compared); ``--write-baseline`` again writes a
version 2 file.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections import Counter
from pathlib import Path
from typing import Iterable

VERSION = 2
_READS = (1, 2)
_NUM = re.compile(r"\d+(?:\.\d+)?")

#: The verbs a message's fix clause may start with (the clause after the last "; ").
FIX_VERBS = frozenset("""
add assign call change choose declare disable drop enable exclude export fix give guard list lower
make move pass raise rebalance remove rename request set simplify split start unset use
""".split())
_FIX = re.compile(r"; (?:(?:" + "|".join(sorted(FIX_VERBS)) + r")\b)")


def split_fix(message: str) -> tuple[str, str]:
    """(what is wrong, what to change): the message split at its last ``"; <verb>"``; the fix is
    ``""`` when the message has no fix clause."""
    last = None
    for last in _FIX.finditer(message):
        pass
    if last is None:
        return message, ""
    return message[: last.start()], message[last.start() + 2:]


class BaselineError(Exception):
    pass


def normalise(message: str) -> str:
    """The message as fingerprinted: without its fix clause, numbers as N, spaces collapsed."""
    return " ".join(_NUM.sub("N", split_fix(message)[0]).split())


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
                    from parallint.util.safeio import read_text_regular  # a FIFO is never read

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
    from parallint.util.safeio import atomic_write

    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(target, json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
    return len(entries)


class Known:
    """A loaded baseline: fingerprints, and for a version 1 file its entries' (code, path,
    normalised message) for the looser match."""

    def __init__(self, fps: Counter, legacy: list[tuple[str, str, str, str]]) -> None:
        self.fps = fps  # version 2
        self.legacy = legacy  # version 1: (fingerprint, code, path, normalised message)

    def take(self, d, fp: str, rel_path: str) -> bool:
        """Whether ``d`` is recorded; each record covers one finding."""
        if self.fps[fp] > 0:
            self.fps[fp] -= 1
            return True
        if not self.legacy:
            return False
        hit = next((i for i, e in enumerate(self.legacy) if e[0] == fp), None)
        if hit is None:
            head = normalise(d.message)
            hit = next((i for i, (_, code, path, msg) in enumerate(self.legacy)
                        if code == d.code and path == rel_path and msg.startswith(head)), None)
        if hit is None:
            return False
        del self.legacy[hit]
        return True


def load(path: str, cwd: Path) -> tuple[Known, Path]:
    target = Path(path) if Path(path).is_absolute() else cwd / path
    import stat

    from parallint.util.safeio import read_regular

    try:
        if not stat.S_ISREG(os.stat(target).st_mode):  # a FIFO or device would block the run
            raise BaselineError(f"{path}: cannot read baseline: not a regular file")
    except OSError as exc:
        raise BaselineError(f"{path}: cannot read baseline: {exc.strerror or exc}") from None
    data = read_regular(target)
    if data is None:
        raise BaselineError(f"{path}: cannot read baseline: not a readable regular file")
    try:
        doc = json.loads(data.decode("utf-8"))
    except RecursionError:
        raise BaselineError(f"{path}: not a parallint baseline (JSON nested too deeply)") from None
    except ValueError as exc:
        raise BaselineError(f"{path}: not a parallint baseline (invalid JSON: {exc})") from None
    if not isinstance(doc, dict) or doc.get("tool") != "parallint" or not isinstance(doc.get("findings"), list):
        raise BaselineError(f"{path}: not a parallint baseline (write one with --write-baseline)")
    version = doc.get("version")
    if version not in _READS:
        raise BaselineError(f"{path}: baseline version {version} is not {VERSION}; write it again")
    entries = [e for e in doc["findings"] if isinstance(e, dict)]
    if version == 1:
        legacy = [(str(e.get("fingerprint")), str(e.get("code")), str(e.get("path")),
                   " ".join(_NUM.sub("N", str(e.get("message", ""))).split())) for e in entries]
        return Known(Counter(), legacy), target.resolve().parent
    return Known(Counter(e.get("fingerprint") for e in entries), []), target.resolve().parent


def filter_new(diags: list, path: str, cwd: Path) -> tuple[list, int]:
    """The findings not in the baseline, and how many were baselined."""
    known, base = load(path, cwd)
    out = []
    for d, fp in zip(diags, fingerprints(diags, cwd, base)):
        if not known.take(d, fp, _rel(d.span.path, cwd, base)):
            out.append(d)
    return out, len(diags) - len(out)
