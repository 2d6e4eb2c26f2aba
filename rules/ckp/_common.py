"""What the CKP rules share."""

from __future__ import annotations


_PY = frozenset({"python"})
