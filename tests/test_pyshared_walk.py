"""`pyshared.walk` visits the nodes in `ast.walk`'s order (contexts and operators left out)."""

from __future__ import annotations

import ast
from pathlib import Path

from parallint.model.pyshared import walk

_LEAVES = (ast.expr_context, ast.operator, ast.unaryop, ast.cmpop, ast.boolop)

SOURCE = '''
import os, sys as system
from .pkg import a as b, c
@decorator(x=1)
class K(Base, metaclass=M):
    def f(self, a: int = 1, *args, b=2, **kw) -> None:
        x = [i ** 2 for i in range(a) if i % 2 and not i]
        y = {k: v for k, v in kw.items()}
        with open(a) as fh, ctx():
            try:
                return f"{x!r:>{y}}" if x < y <= 3 else lambda q: -q
            except (ValueError, KeyError) as e:
                raise RuntimeError(e) from e
            finally:
                del x[0], y
    async def g(self):
        async for item in self.items():
            await item
match point:
    case {"x": 0, **rest}:
        pass
    case Point(x=0, y=yy) | [1, *others] as whole if yy > 0:
        global_value = yy
'''


def test_walk_matches_ast_walk():
    trees = [ast.parse(SOURCE)]
    here = Path(__file__).resolve().parents[1] / "lint"
    trees += [ast.parse(p.read_text("utf-8")) for p in sorted(here.rglob("*.py"))[:60]]
    for tree in trees:
        want = [n for n in ast.walk(tree) if not isinstance(n, _LEAVES)]
        got = walk(tree)
        assert len(got) == len(want) and all(a is b for a, b in zip(got, want))
