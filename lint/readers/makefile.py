"""Makefiles: each recipe line is a shell command, evaluated by :mod:`parallint.readers.shell`.

Make variables (``NNODES = 2``, ``:=``, ``?=``, ``+=``; ``export``) are resolved first, ``$(VAR)`` and
``${VAR}`` references in a recipe become those values, ``$$`` is the shell's ``$``. Make functions
(``$(shell ...)``, ``$(wildcard ...)``) and automatic variables are unknown. Positions: lines are
exact; columns may shift where a reference was replaced.
"""

from __future__ import annotations

import re
from pathlib import Path

from parallint.model.facts import FileFacts, Value

ASSIGN = re.compile(r"^(?:export\s+|override\s+)*([A-Za-z_][A-Za-z0-9_.\-]*)\s*(\?=|:::=|::=|:=|\+=|!=|=)\s*(.*)$")
REF = re.compile(r"\$[({]([A-Za-z_][A-Za-z0-9_.\-]*)[)}]")
MAX_LINES = 50_000


def _logical_lines(text: str):
    """(first line number, text) with backslash continuations joined."""
    lines = text.splitlines()[:MAX_LINES]
    i = 0
    while i < len(lines):
        start = i
        cur = lines[i]
        while cur.endswith("\\") and i + 1 < len(lines):
            i += 1
            cur = cur[:-1] + " " + lines[i].lstrip("\t")
        yield start + 1, cur
        i += 1


def _expand(text: str, mvars: dict[str, tuple[str | None, int]], depth: int = 0) -> str | None:
    """Make-expand ``text``; None when a function or unknown variable is involved."""
    if depth > 10:
        return None
    if re.search(r"\$\((?:shell|wildcard|foreach|call|eval|if|or|and|origin|file|realpath|abspath)\b", text):
        return None
    out = []
    pos = 0
    for m in REF.finditer(text):
        out.append(text[pos:m.start()])
        name = m.group(1)
        if name in mvars:
            val, _ = mvars[name]
            if val is None:
                return None
            sub = _expand(val, mvars, depth + 1)
            if sub is None:
                return None
            out.append(sub)
        else:
            out.append("${" + name + "}")  # left to the shell (an environment variable)
        pos = m.end()
    out.append(text[pos:])
    return "".join(out)


def read(path: str, abspath: Path, text: str) -> FileFacts:
    from parallint.readers import shell

    ff = FileFacts(path=path, abspath=abspath, kind="makefile", text=text)
    if "\x00" in text[:8192]:
        ff.diagnostics.append(shell.syn001(path, "binary content in a Makefile"))
        return ff
    mvars: dict[str, tuple[str | None, int]] = {}
    exported: set[str] = set()
    recipes: list[tuple[int, str]] = []
    in_rule = False
    try:
        for lineno, line in _logical_lines(text):
            if line.startswith("\t"):
                if in_rule:
                    recipes.append((lineno, line[1:]))
                continue
            stripped = line.strip()
            if not stripped or stripped.startswith("#"):
                continue
            m = ASSIGN.match(stripped)
            if m:
                name, op, val = m.group(1), m.group(2), m.group(3).split(" #", 1)[0].strip()
                if stripped.startswith("export"):
                    exported.add(name)
                if op == "!=":
                    mvars[name] = (None, lineno)
                elif op == "?=":
                    mvars.setdefault(name, (val, lineno))
                elif op == "+=":
                    old = mvars.get(name, ("", lineno))[0]
                    mvars[name] = ((old + " " + val).strip() if old is not None else None, lineno)
                elif op in (":=", "::=", ":::="):
                    mvars[name] = (_expand(val, mvars), lineno)
                else:
                    mvars[name] = (val, lineno)
                in_rule = False
                continue
            if stripped.startswith("export "):
                for n in stripped.split()[1:]:
                    exported.add(n)
                continue
            if re.match(r"^[^:=#]+::?(?!=)", stripped):
                in_rule = True
                continue
            if stripped.startswith(("ifeq", "ifneq", "ifdef", "ifndef", "else", "endif", "include", "-include",
                                    "define", "endef", ".PHONY", "vpath")):
                continue
            in_rule = False
    except Exception as exc:  # noqa: BLE001 - a reader never raises
        ff.diagnostics.append(shell.syn001(path, f"cannot read Makefile: {type(exc).__name__}"))
        return ff

    env: dict[str, Value] = {}
    for name, (val, lineno) in mvars.items():
        if name not in exported:
            continue
        full = _expand(val, mvars) if val is not None else None
        sp = ff.span(lineno)
        env[name] = Value(full, sp, True, "", name) if full is not None and "$" not in full else \
            Value.unknown(f"make variable {name} is computed", sp, name)
    for lineno, line in recipes:
        body = line.lstrip("@-+ \t")
        expanded = _expand(body.replace("$$", "\x02"), mvars)
        if expanded is None:
            continue
        expanded = expanded.replace("\x02", "$")
        try:
            ev = shell.evaluate(expanded, path, abspath, env=env, line_offset=lineno - 1,
                                col_offset=1 + len(line) - len(body))
        except Exception:  # noqa: BLE001
            continue
        for la in ev.launches:
            ff.launches.append(la)
            ff.links.extend(la.links)
    return ff
