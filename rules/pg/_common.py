"""What the PG rules share."""

from __future__ import annotations

from parallint.model.script import Call, Guard, Script


_PY = frozenset({"python"})


def _backend(s: Script, c: Call):
    v = s.arg(c, "backend", 0)
    if v is None or not v.known or not isinstance(v.value, str):
        return None, v
    return v.value.strip().lower(), v


def _reached(s: Script, c: Call) -> list[tuple[Guard, ...]] | None:
    """Guard chains under which the call runs from module level (None: the file never calls it)."""
    return s.effective_guards(c)


def _is_none(n) -> bool:
    """The literal ``None``."""
    import ast

    return isinstance(n, ast.Constant) and n.value is None
