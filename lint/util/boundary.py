"""The repository boundary: the folders parallint reads in (docs/security.md, "Repository boundary").

A run's boundary is, for each path named on the command line (or as ``--stdin-filename``), the
repository it belongs to (:func:`find_root`: the nearest folder with ``.git``,
else with ``pyproject.toml``/``parallint.toml``, else the path's own folder) and the path itself,
all as real paths (symbolic links resolved). The file-system root is never a boundary: a path
whose repository would be ``/`` brings only itself. A file a launch line, a config, a symbolic
link or ``extend`` names outside the boundary is reported as linked and not read, so what it
holds never reaches a finding, ``show`` output or a CI log.
"""

from __future__ import annotations

import os
from pathlib import Path


def find_root(start: Path) -> Path:
    """The repository a path belongs to: the nearest folder with ``.git``; else the nearest with a
    ``pyproject.toml`` or ``parallint.toml``; else the path's own folder."""
    start = start if start.is_dir() else start.parent
    for d in (start, *start.parents):
        if (d / ".git").exists():
            return d
    for d in (start, *start.parents):
        if (d / "pyproject.toml").is_file() or (d / "parallint.toml").is_file():
            return d
    return start


class Boundary:
    """The real paths of the folders (and named files) a run may read."""

    __slots__ = ("_roots",)

    def __init__(self) -> None:
        self._roots: set[str] = set()

    def __bool__(self) -> bool:
        return bool(self._roots)

    def add(self, path: "str | Path") -> None:
        """Widen the boundary by a named path: its repository and itself."""
        ap = Path(os.path.abspath(path))
        try:
            root = os.path.realpath(find_root(ap))
        except (OSError, ValueError):
            root = os.sep
        if root != os.sep:
            self._roots.add(root)
        real = os.path.realpath(ap)
        if real != os.sep:
            self._roots.add(real)

    def holds(self, path: "str | Path") -> bool:
        """``path`` (after resolving links) is one of the boundary's paths or below one."""
        try:
            real = os.path.realpath(path)
        except (OSError, ValueError):
            return False
        for r in self._roots:
            if real == r or real.startswith(r.rstrip(os.sep) + os.sep):
                return True
        return False


_ROOT_OF: dict[str, str] = {}


def inside_repository(target: "str | Path", anchor: "str | Path | None") -> bool:
    """``target`` (links resolved) lies inside the repository of the file ``anchor`` that names it
    (a sourced script, a hostfile, an imported module): the reader's own boundary, for files it
    opens itself rather than through the runner."""
    if anchor is None:
        return False
    folder = os.path.dirname(os.path.abspath(anchor))
    root = _ROOT_OF.get(folder)
    if root is None:
        b = Boundary()
        b.add(anchor)
        root = _ROOT_OF[folder] = "\0".join(sorted(b._roots))
    roots = [r for r in root.split("\0") if r]
    try:
        real = os.path.realpath(target)
    except (OSError, ValueError):
        return False
    return any(real == r or real.startswith(r.rstrip(os.sep) + os.sep) for r in roots)


def read_inside(target: "str | Path", anchor: "str | Path | None", cap: int) -> bytes | None:
    """The bytes of the regular file ``target`` (at most ``cap``) when it lies inside ``anchor``'s
    repository; None otherwise (outside, not a regular file, unreadable, too large)."""
    if not inside_repository(target, anchor):
        return None
    from parallint.util.deps import note_side_read
    from parallint.util.safeio import read_regular

    note_side_read(target)  # a cached result of the file that named it depends on it
    return read_regular(target, cap)
