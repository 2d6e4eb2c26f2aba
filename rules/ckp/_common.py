"""What the CKP rules share."""

from __future__ import annotations

import re

_PY = frozenset({"python"})

#: a path piece that names the writing or reading process: ``rank``, ``mp_rank``, ``process_index``
PER_RANK = re.compile(r"rank|process_index|ordinal|procid", re.I)

#: receivers whose state holds no GPU tensors: loading theirs onto cuda:0 costs nothing
_NO_TENSOR_STATE = re.compile(r"scaler|sampler|dataset|dataloader|loader|scheduler|sched|tokenizer|rng|timer",
                              re.I)


def path_pieces(s, node, frame, depth: int = 0):
    """``node`` and, for each name in it bound once by a plain assignment in its scope, that
    expression (followed 4 deep): ``os.path.join(d, fn)`` with ``fn = f"opt.{rank}.pt"`` yields
    both expressions."""
    import ast

    if not isinstance(node, ast.AST) or depth > 4:
        return
    yield node, frame
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name):
            b = s.binding(sub.id, frame)
            if b is not None and b[0] is not node:
                yield from path_pieces(s, b[0], b[1], depth + 1)


def per_rank_path(s, node, frame) -> bool:
    """Whether a path expression is named after a rank (the global, local, data- or
    model-parallel one), directly or through the variables it is built from."""
    import ast

    for piece, fr in path_pieces(s, node, frame):
        if PER_RANK.search(s.code(piece)):
            return True
        if any(isinstance(sub, (ast.Name, ast.Attribute, ast.BinOp, ast.Call)) and s.rankish(sub, fr)
               for sub in ast.walk(piece)):
            return True
    return False


def reaches_state_load(s, call) -> bool:
    """Whether what ``torch.load`` returns is handed to a ``load_state_dict`` whose state can hold
    GPU tensors (a model's or an optimizer's, not a scaler's or a sampler's): as the argument
    itself, through a variable bound once to it (``sd = torch.load(p)``, ``sd["model"]``), or
    through a function of this file that returns it."""
    import ast

    sinks = [c for c in s.methods("load_state_dict")
             if not (c.receiver is not None and _NO_TENSOR_STATE.search(s.code(c.receiver) or ""))]
    if not sinks:
        return False
    load = call.node
    returns_load: set[str] = set()
    if call.frame.kind == "function" and any(
            isinstance(r, ast.AST) and any(x is load for x in ast.walk(r)) for r in call.frame.returns):
        returns_load.add(call.frame.name)
    target_names = {name for name, bs in call.frame.bindings.items() if any(b is load for b in bs)}

    def flows(expr, frame) -> bool:
        for n in ast.walk(expr):
            if n is load:
                return True
            if isinstance(n, ast.Name) and n.id in target_names and frame is call.frame:
                return True
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in returns_load:
                return True
        return False

    return any(flows(a, sink.frame) for sink in sinks for a in list(sink.node.args)
               + [k.value for k in sink.node.keywords])


def skips_done_items(s, call, dest) -> bool:
    """The save sits after ``if os.path.exists(dest): continue`` (or ``return``): each item's file
    is written by whichever process reaches it first and skipped by the others, a per-item work
    split through the file system (``torch.save(sample, pth_path)`` of a data-preparation loop),
    not every rank writing the same file."""
    import ast

    tree = call.frame.node if call.frame.node is not None else getattr(s, "_ast", None)
    if tree is None:
        return False
    want = s.code(dest)
    for node in ast.walk(tree):
        if not (isinstance(node, ast.If) and node.body and isinstance(node.body[0], (ast.Continue, ast.Return))):
            continue
        test = node.test
        if isinstance(test, ast.Call) and isinstance(test.func, (ast.Attribute, ast.Name)):
            name = test.func.attr if isinstance(test.func, ast.Attribute) else test.func.id
            if name in ("exists", "isfile", "is_file") and test.args and s.code(test.args[0]) == want \
                    and node.lineno < call.node.lineno:
                return True
    return False
