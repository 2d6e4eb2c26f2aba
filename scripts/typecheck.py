"""Type-check the package with mypy (configuration: [tool.mypy] in pyproject.toml).

The package is laid out as ``lint/`` -> ``parallint`` and ``rules/`` -> ``parallint.rules``
(pyproject's package-dir), which mypy cannot map by itself: this script links the files into a
temporary ``parallint/`` tree and checks that. Run: ``.venv/bin/python scripts/typecheck.py``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="parallint-mypy-") as tmp:
        pkg = Path(tmp) / "parallint"
        pkg.mkdir()
        for item in (ROOT / "lint").iterdir():
            if item.name != "__pycache__":
                os.symlink(item, pkg / item.name)
        os.symlink(ROOT / "rules", pkg / "rules")
        cmd = [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
               "--cache-dir", str(ROOT / ".mypy_cache"), "-p", "parallint"]
        return subprocess.call(cmd, cwd=tmp)


if __name__ == "__main__":
    sys.exit(main())
