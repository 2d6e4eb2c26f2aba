"""Making the fixes findings propose: ``check --fix``, ``--unsafe-fixes`` and ``--diff``, the
editor's code actions and SARIF's ``fixes`` (:mod:`parallint.model.fixes` says what a fix is).

Per file, every fix is computed on the same text (the file as checked), as one replacement each;
replacements that overlap an earlier one wait for the next run. A file is never changed when:

- a finding of its own says it does not parse (SYN001), or it does not decode;
- it is a link (the edit would land in another file), or not a regular file;
- after the edits it no longer parses (Python, JSON, YAML, TOML), or, for Python, its tree
  differs from the original anywhere but at the fixed calls (checked with ``ast``);
- the text is not what the finding saw (each rule's edit checks the characters it replaces).

A Python file is read and written in its declared encoding; every other byte is kept.
"""

from __future__ import annotations

from parallint.util.record import Record

TYPE_CHECKING = False  # typing is not imported at run time (start-up, docs/architecture.md)
if TYPE_CHECKING:  # pragma: no cover
    from typing import Any, Iterable
    from pathlib import Path
    from parallint.model.diagnostics import Diagnostic
    from parallint.model.fixes import Edit


class FileFix(Record):
    """What the fixes of one file make of it: ``before`` and ``after`` (text), the findings fixed
    and, per finding left unfixed, why."""

    _fields = ("path", "abspath", "before", "after", "encoding", "fixed", "skipped")

    def __init__(self, path: str, abspath: "Path", before: str, after: str, encoding: str,
                 fixed: list["Diagnostic"], skipped: list[tuple["Diagnostic", str]]) -> None:
        self.path = path
        self.abspath = abspath
        self.before = before
        self.after = after
        self.encoding = encoding
        self.fixed = fixed
        self.skipped = skipped

    def diff(self) -> str:
        """A unified diff of the change (``--- a/path`` / ``+++ b/path``)."""
        import difflib

        a = self.before.splitlines(keepends=True)
        b = self.after.splitlines(keepends=True)
        lines = list(difflib.unified_diff(a, b, f"a/{self.path}", f"b/{self.path}"))
        return "".join(x if x.endswith(("\n", "\r")) else x + "\n\\ No newline at end of file\n" for x in lines)


def wanted(d: "Diagnostic", unsafe: bool) -> bool:
    """Whether ``d``'s fix is made in this run (a safe one always, an unsafe one when asked)."""
    return d.fix is not None and (d.fix.safe or unsafe)


def _rule(code: str) -> Any:
    from parallint.engine.registry import RuleRef, get_registry

    r = get_registry().lookup(code)
    if r is None:
        return None
    cls = r.load() if isinstance(r, RuleRef) else r
    return cls()


def rule_edit(d: "Diagnostic", text: str) -> "Edit | None":
    """The one replacement that makes ``d``'s fix in ``text``; None when it cannot be made."""
    from parallint.model.fixes import edit_between

    rule = _rule(d.code)
    if rule is None or d.fix is None:
        return None
    try:
        new = rule.apply_fix(d, text)
    except Exception:  # noqa: BLE001 - a fix that fails is not made; the finding stays
        return None
    return edit_between(text, new) if isinstance(new, str) else None


def apply_edits(text: str, edits: "Iterable[tuple[Edit, Any]]") -> tuple[str, list[Any], list[Any]]:
    """``text`` with the non-overlapping edits made (first come, first kept), the tags of those
    made, and the tags of those left for the next run."""
    chosen: list[tuple["Edit", Any]] = []
    made, later = [], []
    for e, tag in sorted(edits, key=lambda t: (t[0].start, t[0].end)):
        if chosen and e == chosen[-1][0]:  # the same edit twice (two findings of one mistake)
            made.append(tag)
        elif chosen and e.start < chosen[-1][0].end:
            later.append(tag)
        else:
            chosen.append((e, tag))
            made.append(tag)
    out = text
    for e, _ in reversed(chosen):
        out = out[:e.start] + e.text + out[e.end:]
    return out, made, later


def still_parses(path: str, before: str, after: str) -> bool:
    """Whether ``after`` parses where ``before`` did (Python, JSON, YAML, TOML; other formats
    are checked by the finding going away)."""
    low = path.lower()

    def ok(text: str) -> bool:
        try:
            if low.endswith((".py", ".pyi")):
                import ast
                import warnings

                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    ast.parse(text)
            elif low.endswith(".json"):
                import json

                json.loads(text)
            elif low.endswith((".yaml", ".yml")):
                import yaml

                for _ in yaml.safe_load_all(text):
                    pass
            elif low.endswith(".toml"):
                import tomllib

                tomllib.loads(text)
        except Exception:  # noqa: BLE001 - any parser's error
            return False
        return True

    return ok(after) or not ok(before)


def _read(path: str, cwd: "Path") -> "tuple[Path, tuple[str, str] | str]":
    """(absolute path, (text, encoding)) of a checked file as fixes read it (its declared encoding
    for Python), or (absolute path, why it is not read): a link, not a regular file, no decoding."""
    import os
    from pathlib import Path

    from parallint.engine.suppress import syntax_of
    from parallint.report.noqa import _decode
    from parallint.util.safeio import read_regular

    p = Path(path)
    p = p if p.is_absolute() else Path(cwd) / p
    if os.path.islink(p):
        return p, "the file is a link"
    raw = read_regular(p)
    got = _decode(raw, syntax_of(path)) if raw is not None else None
    return p, got if got is not None else "the file cannot be read or decoded"


def file_text(path: str, cwd: "Path") -> str | None:
    """The text of a checked file as fixes read it; None where :func:`_read` does not read it."""
    got = _read(path, cwd)[1]
    return got[0] if isinstance(got, tuple) else None


def plan(diags: "Iterable[Diagnostic]", cwd: "Path", unsafe: bool) -> list[FileFix]:
    """The fixes of ``diags`` per file, computed and checked, nothing written."""
    from pathlib import Path

    from parallint.engine.suppress import syntax_of

    all_diags = list(diags)
    broken = {d.span.path for d in all_diags if d.code == "SYN001"}
    by_path: dict[str, list["Diagnostic"]] = {}
    for d in all_diags:
        if wanted(d, unsafe):
            by_path.setdefault(d.span.path, []).append(d)
    out = []
    for path, ds in sorted(by_path.items()):
        p, got = _read(path, cwd) if path not in broken else (Path(path), "the file does not parse")
        if not isinstance(got, tuple):
            out.append(FileFix(path, p, "", "", "utf-8", [], [(d, got) for d in ds]))
            continue
        text, encoding = got
        edits, skipped = [], []
        for d in ds:
            e = rule_edit(d, text)
            if e is None:
                skipped.append((d, "the text is not what the fix expects"))
            else:
                edits.append((e, d))
        after, fixed, later = apply_edits(text, edits)
        skipped.extend((d, "it overlaps another fix (run again)") for d in later)
        if fixed and not still_parses(path, text, after):
            skipped.extend((d, "the file would not parse after it") for d in fixed)
            after, fixed = text, []
        if fixed and syntax_of(path) == "python" and not _same_outside(text, after, [e for e, d in edits if any(d is x for x in fixed)]):
            skipped.extend((d, "the program would change elsewhere") for d in fixed)
            after, fixed = text, []
        try:
            after.encode(encoding)
        except UnicodeEncodeError:
            skipped.extend((d, f"the result cannot be written in {encoding}") for d in fixed)
            after, fixed = text, []
        out.append(FileFix(path, p, text, after, encoding, fixed, skipped))
    return out


def _same_outside(before: str, after: str, edits: "list[Edit]") -> bool:
    """Whether the two programs' trees are equal but for the statements the edits touch: each
    top-level statement of ``before`` that no edit overlaps is found unchanged in ``after``."""
    import ast
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            old, new = ast.parse(before), ast.parse(after)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    starts = _line_offsets(before)

    def touched(node: ast.stmt) -> bool:
        a = starts[node.lineno - 1]
        end_line = node.end_lineno or node.lineno
        b = starts[end_line] if end_line < len(starts) else len(before)
        return any(e.start < b and e.end >= a for e in edits)

    kept = [ast.dump(n) for n in old.body if not touched(n)]
    fresh = [ast.dump(n) for n in new.body]
    i = 0
    for dumped in fresh:  # the untouched statements, in order, are a subsequence of the new ones
        if i < len(kept) and dumped == kept[i]:
            i += 1
    return i == len(kept) and len(fresh) == len(old.body)


def _line_offsets(text: str) -> list[int]:
    import re

    starts = [0]
    starts.extend(m.end() for m in re.finditer(r"\r\n|\r|\n", text))
    return starts


def write(fixes: "Iterable[FileFix]") -> int:
    """Write each changed file (atomically, its mode and encoding kept); the findings fixed."""
    from parallint.util.safeio import atomic_write

    n = 0
    for ff in fixes:
        if ff.fixed and ff.after != ff.before:
            atomic_write(ff.abspath, ff.after.encode(ff.encoding))
            n += len(ff.fixed)
    return n
