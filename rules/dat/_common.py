"""What the DAT rules share."""

from __future__ import annotations

import re

from parallint.model.script import Call, Script


_PY = frozenset({"python"})


def _accelerators(s: Script) -> set[str]:
    """Names (``accelerator``, ``self.accelerator``) bound to an ``Accelerator(...)``."""
    return {c.target for c in s.by("accelerator") if c.target}


def prepared_by_accelerate(s: Script, loader: Call) -> Call | None:
    """The ``accelerator.prepare(...)`` call a DataLoader is passed to, if any."""
    import ast

    accs = _accelerators(s)
    if not accs:
        return None
    for c in s.methods("prepare"):
        if c.receiver is None or s.code(c.receiver) not in accs:
            continue
        for a in c.args:
            v = a.value
            if v is loader.node or (isinstance(v, (ast.Name, ast.Attribute)) and loader.target
                                    and s.code(v) == loader.target):
                return c
    return None


_TRAINISH = re.compile(r"train", re.I)


def _passed_not_none(s: Script, c: Call, keyword: str, pos: int | None) -> bool | None:
    """True when an argument is passed and is surely not None; None when it cannot be said."""
    import ast

    n = c.arg_node(keyword, pos)
    if n is None:
        return None if c.has_star() else False
    if isinstance(n, ast.Constant) and n.value is None:
        return False
    if isinstance(n, (ast.Call, ast.List, ast.Tuple)):
        return True
    if isinstance(n, ast.Name):
        b = s.binding(n.id, c.frame)
        if b is not None and isinstance(b[0], ast.Call):
            return True
    return None
