"""What the Python reader (:mod:`parallint.readers.python`) and its evaluator
(:mod:`parallint.readers.pyeval`) share, in a module below both (no import circle)."""

from __future__ import annotations

from typing import Any

#: a name bound in a way that cannot be followed (loop target, augmented assignment, import...)
MULTI: Any = object()
