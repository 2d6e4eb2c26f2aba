"""``python -m parallint``. The working directory is not a place to import from: a repository
being checked may hold a ``typer.py`` or ``yaml.py`` of its own, and ``-m`` puts the working
directory first on ``sys.path``. It is removed before anything else is imported."""

import os
import sys


def _strip_cwd() -> None:
    try:
        cwd = os.path.realpath(os.getcwd())
    except OSError:  # the working directory was removed
        cwd = None
    keep = []
    for i, p in enumerate(sys.path):
        if p in ("", ".") or (cwd is not None and i == 0 and os.path.realpath(p) == cwd):
            continue
        keep.append(p)
    sys.path[:] = keep


_strip_cwd()

from parallint.cli.main import main  # noqa: E402

if __name__ == "__main__":  # pragma: no cover
    main()
