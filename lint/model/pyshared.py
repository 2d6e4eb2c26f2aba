"""What the script event API (:mod:`parallint.model.script`), its evaluator
(:mod:`parallint.model.pyeval`) and the Python reader that builds scripts share, in a module below
all three (no import circle)."""

from __future__ import annotations

from typing import Any

#: a name bound in a way that cannot be followed (loop target, augmented assignment, import...)
MULTI: Any = object()
