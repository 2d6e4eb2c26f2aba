"""A proposal for parallint.readers.python._ast_depth (not applied here: that module is being
ported): the same depth, Import/ImportFrom list and gate shapes, level by level, with each node
type's fields planned once and the Load/Store/operator singletons (a third of all nodes) not
visited: a level that has one below it counts one more. Prints both timings over the ``.py``
files below a folder and whether every result is identical (at several limits; the import and
shape lists as sets: the reader only takes their union).

    python benchmarks/ast_depth_levels.py /work/repos/NVIDIA+Megatron-LM
"""

from __future__ import annotations

import ast
import os
import sys
import time

_SKIP = frozenset({"ctx", "op", "ops", "id", "attr", "name", "arg", "module", "level", "kind", "conversion",
                   "simple", "is_async", "type_comment", "asname", "lineno", "col_offset", "end_lineno",
                   "end_col_offset"})
_SINGLETONS = ("ctx", "op", "ops")
_PLAN: dict[type, tuple[tuple[str, ...], tuple[str, ...]]] = {}


def ast_depth_levels(tree, limit: int, imports: list | None = None, shapes: list | None = None) -> int:
    AST, Import, ImportFrom = ast.AST, ast.Import, ast.ImportFrom
    want = (ast.Call, ast.List, ast.Tuple, ast.If) if shapes is not None else ()
    level, depth = [tree], 0
    while level:
        depth += 1
        if depth >= limit:
            return depth
        nxt: list = []
        push = nxt.append
        below = False  # a context or operator singleton under this level: one level more
        for node in level:
            t = type(node)
            plan = _PLAN.get(t)
            if plan is None:
                plan = _PLAN[t] = (tuple(f for f in t._fields if f not in _SKIP),
                                   tuple(f for f in t._fields if f in _SINGLETONS))
            if imports is not None and (t is Import or t is ImportFrom):
                imports.append(node)
            elif t in want:
                shapes.append(node)  # type: ignore[union-attr]
            for name in plan[0]:
                v = getattr(node, name, None)
                if type(v) is list:
                    for x in v:
                        if isinstance(x, AST):
                            push(x)
                elif isinstance(v, AST):
                    push(v)
            if plan[1] and not below:
                for name in plan[1]:
                    v = getattr(node, name, None)
                    if isinstance(v, AST) or (type(v) is list and any(isinstance(x, AST) for x in v)):
                        below = True
        if not nxt and below:
            return depth + 1
        level = nxt
    return depth


def main(folder: str) -> None:
    from parallint.readers.python import _ast_depth

    trees = []
    for d, dirs, files in os.walk(folder):
        dirs[:] = [x for x in dirs if not x.startswith(".")]
        for f in files:
            if f.endswith(".py"):
                try:
                    trees.append(ast.parse(open(os.path.join(d, f), "rb").read()))
                except (SyntaxError, ValueError, RecursionError, MemoryError):
                    pass
    results = {}
    for fn in (_ast_depth, ast_depth_levels, _ast_depth, ast_depth_levels):
        t = time.process_time()
        out = []
        for tree in trees:
            im: list = []
            sh: list = []
            out.append((fn(tree, 101, im, sh), sorted(id(x) for x in im), sorted(id(x) for x in sh)))
        print(f"{fn.__name__:18s} {time.process_time() - t:6.2f} s CPU over {len(trees)} trees")
        results[fn.__name__] = out
    same = results["_ast_depth"] == results["ast_depth_levels"] and all(
        _ast_depth(t, lim) == ast_depth_levels(t, lim) for t in trees for lim in (5, 12, 30))
    print("identical:", same)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
