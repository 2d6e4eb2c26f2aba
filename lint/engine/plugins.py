"""Plugin support: what third-party rules declare beyond the Rule API (see docs/plugins.md).

``needles``: strings whose presence makes a Python or shell file reach the readers even when none
of the built-in pre-filter's names is in it (the pre-filter skips most files of a repository
without parsing them; a plugin that looks for its own launcher or API names says so here).
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing is not imported at run time (start-up, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Iterable



def register_needles(rules: Iterable[type]) -> None:
    from parallint.discover import classify

    add: dict[str, list[str]] = {"python": [], "shell": []}
    for rule in rules:
        needles = getattr(rule, "needles", ()) or ()
        if isinstance(needles, str):
            needles = (needles,)
        kinds = getattr(rule, "kinds", frozenset()) or frozenset()
        targets = [k for k in ("python", "shell") if k in kinds] or ["python", "shell"]
        for n in needles:
            if isinstance(n, str) and len(n) >= 3:  # a one- or two-letter needle would admit every file
                for k in targets:
                    add[k].append(n)
    for k, extra in add.items():
        if extra:
            classify.PLUGIN_NEEDLES[k] = tuple(dict.fromkeys(classify.PLUGIN_NEEDLES[k] + tuple(extra)))


def may_declare(group: str, path: list[str]) -> bool:
    """False only when no distribution on ``path`` can declare entry points of ``group``: a text
    scan of each ``*.dist-info``/``*.egg-info`` folder's ``entry_points.txt``, without importing
    importlib.metadata (whose import and full scan of every distribution cost tens of
    milliseconds at each start). Anything this scan cannot see (a zip or other non-folder on the
    path, a metadata finder other than the standard one) answers True: look properly."""
    import os
    import sys
    from _frozen_importlib_external import PathFinder  # importlib.machinery's, loaded at start-up

    if any(hasattr(f, "find_distributions") and f is not PathFinder for f in sys.meta_path):
        return True
    needle = group.encode()
    for entry in path:
        if entry.lower().endswith(".egg"):
            return True  # an egg's metadata lives inside it (EGG-INFO)
        try:
            it = os.scandir(entry or ".")
        except NotADirectoryError:
            return True  # a zip archive on sys.path may hold distributions
        except OSError:
            continue
        with it:
            for e in it:
                if not e.name.lower().endswith((".dist-info", ".egg-info")):
                    continue
                try:
                    with open(os.path.join(e.path, "entry_points.txt"), "rb") as fh:
                        if needle in fh.read():
                            return True
                except (NotADirectoryError, FileNotFoundError):
                    continue
                except OSError:
                    return True
    return False
