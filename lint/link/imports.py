"""The repository's own modules that a launched entry script imports, transitively.

``torchrun --nnodes 2 ... -m gpt_oss.generate``, and ``generate.py`` calls
``init_distributed()`` from ``gpt_oss/dist.py``, which picks the device by the global rank: the
mistake is written in a module the launch never names. :func:`modules` lists the files reached
from the entry script through ``import`` / ``from ... import`` (absolute, relative, package roots
from the script's folder up to the repository root, a ``src/`` layout, ``from pkg import mod``
naming a submodule), breadth first, and :func:`parallint.link.jobs.build_jobs` adds those that are
parallint's files to the launch's job, so its job rules see them with the launch's facts (nodes,
processes), and each finding stays where it is written.

Static and bounded: read with ``ast``, never imported; only files inside the repository
(``site-packages`` and third-party packages are never read); at most :data:`MAX_HOPS` imports
deep, :data:`MAX_MODULES` files per entry script and :data:`MAX_BYTES` per file. The folders the
entry script (or a module on the way) adds to ``sys.path`` with static paths
(:func:`parallint.readers.pyparser_import.path_tweaks`) are searched too, inside the repository
only.
"""

from __future__ import annotations

import ast
from pathlib import Path

#: imports followed from the entry script (1: the modules it imports itself)
MAX_HOPS = 3
#: files reached from one entry script
MAX_MODULES = 24
#: a module larger than this is not read for its imports
MAX_BYTES = 400_000


def _imports(path: Path) -> list[tuple[str, int]]:
    """(module, level) for every import statement of the file at ``path`` (see
    :func:`import_statements`), read inside the repository boundary."""
    from parallint.util.boundary import read_inside

    raw = read_inside(path, path, MAX_BYTES)
    if raw is None:
        return []
    if len(raw) > MAX_BYTES:
        return []
    from parallint.model.pyshared import STATED, text_key

    key = text_key(raw.decode("utf-8", errors="replace"))
    got = STATED.get(key)
    if got is None:
        got = STATED[key] = import_statements(raw)
    return got


def keep(on: bool = True) -> None:
    """Keep the import statements across runs (the language server): they are keyed by the
    text's digest (``model.pyshared.STATED``), so an entry never goes stale; at most
    ``pyshared.KEPT`` of them."""
    from parallint.model import pyshared

    pyshared.KEEP[0] = on


def reset() -> None:
    """Forget the import statements read by an earlier run (with :func:`keep`, only when there are
    too many of them)."""
    from parallint.model.pyshared import reset as forget

    forget()


def import_statements(raw: bytes) -> list[tuple[str, int]]:
    """(module, level) for every import statement of Python source ``raw``, in the order
    written; ``from pkg import a, b`` also gives ``pkg.a`` and ``pkg.b`` (each may be a
    submodule). Nothing for a file over :data:`MAX_BYTES` or one that does not parse."""
    if len(raw) > MAX_BYTES:
        return []
    try:
        tree = ast.parse(raw.decode("utf-8", errors="replace"))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    from parallint.model.pyshared import import_pairs, walk

    Import, ImportFrom = ast.Import, ast.ImportFrom
    return import_pairs([node for node in walk(tree) if type(node) is Import or type(node) is ImportFrom])


def _under(top: Path, module: str, anchor: Path) -> Path | None:
    """``module`` as a file under ``top`` (the folder ``python -m pkg.mod`` ran in, which is on
    its ``sys.path``), inside the repository of the file ``anchor``; None otherwise."""
    from parallint.util.boundary import inside_repository

    parts = [p for p in module.split(".") if p]
    if not parts:
        return None
    for cand in (top.joinpath(*parts).with_suffix(".py"), top.joinpath(*parts, "__init__.py")):
        try:
            if cand.is_file() and inside_repository(cand, anchor):
                return cand.resolve()
        except (OSError, ValueError):
            continue
    return None


def imported_files(path: Path, stated: "list[tuple[str, int]] | None" = None) -> set[Path]:
    """The repository files that the Python file at ``path`` imports itself (one hop);
    ``stated``: its import statements when already known."""
    from parallint.readers.pyparser_import import resolve

    out: set[Path] = set()
    for module, level in (_imports(path) if stated is None else stated):
        try:
            target = resolve(path, module, level)
        except (OSError, ValueError, RecursionError):
            continue
        if target is not None and target != path:
            out.add(target)
    return out


def modules(entry: Path, top: Path | None = None) -> list[Path]:
    """The repository files the entry script at ``entry`` imports, transitively (see the module
    doc), nearest first; ``entry`` itself is not among them. ``top``: the folder a ``-m`` launch
    runs in, searched too for absolute imports."""
    from parallint.readers.pyparser_import import path_tweaks, resolve

    seen = {entry}
    tweaks = path_tweaks(entry)  # sys.path is the process's: the entry's tweaks hold for every module
    out: list[Path] = []
    frontier = [entry]
    for _hop in range(MAX_HOPS):
        nxt: list[Path] = []
        for here in frontier:
            for module, level in _imports(here):
                try:
                    target = resolve(here, module, level, tweaks + [t for t in path_tweaks(here) if t not in tweaks])
                    if target is None and top is not None and not level:
                        target = _under(top, module, entry)
                except (OSError, ValueError, RecursionError):
                    target = None
                if target is None or target in seen:
                    continue
                seen.add(target)
                out.append(target)
                nxt.append(target)
                if len(out) >= MAX_MODULES:
                    return out
        frontier = nxt
        if not frontier:
            break
    return out
