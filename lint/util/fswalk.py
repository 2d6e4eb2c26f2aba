"""A folder walk that cannot overflow the stack: ``os.walk``'s top-down order and pruning, done
with an explicit stack (Python 3.11's ``os.walk`` recurses once per level, so a 1,000-deep tree
raises RecursionError), and a bound on the depth (:data:`MAX_DEPTH`): a folder nested deeper is
not entered, and ``too_deep`` is told which folder was cut."""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing is not imported at run time (start-up, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Callable, Iterator

#: levels below the walk's top that are entered (a real repository is a few dozen deep; a path
#: this deep is near the kernel's PATH_MAX, past which nothing can be opened by name anyway)
MAX_DEPTH = 256


def walk(top, followlinks: bool = False, onerror: "Callable[[OSError], None] | None" = None,
         max_depth: int = MAX_DEPTH,
         too_deep: "Callable[[str], None] | None" = None) -> "Iterator[tuple[str, list[str], list[str]]]":
    """Yield (folder, dirnames, filenames) as ``os.walk(top, topdown=True)`` does, in the same
    order; editing ``dirnames`` in place prunes the walk. Folders more than ``max_depth`` levels
    below ``top`` are not entered (``too_deep(folder)`` is called for the folder whose children
    were cut)."""
    stack: "list[tuple[str, int]]" = [(os.fspath(top), 0)]
    while stack:
        path, depth = stack.pop()
        dirs: list[str] = []
        files: list[str] = []
        links: set[str] = set()
        try:
            with os.scandir(path) as it:
                for entry in it:
                    try:
                        is_dir = entry.is_dir()
                    except OSError:
                        is_dir = False
                    if is_dir:
                        dirs.append(entry.name)
                        if not followlinks:
                            try:
                                if entry.is_symlink():
                                    links.add(entry.name)
                            except OSError:
                                pass
                    else:
                        files.append(entry.name)
        except OSError as exc:
            if onerror is not None:
                onerror(exc)
            continue
        yield path, dirs, files
        children = [os.path.join(path, d) for d in dirs if followlinks or d not in links]
        if not children:
            continue
        if depth + 1 > max_depth:
            if too_deep is not None:
                too_deep(path)
            continue
        for child in reversed(children):
            stack.append((child, depth + 1))
