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
            if name in ("exists", "isfile", "is_file") and test.args and _names_path(s, test.args[0], want) \
                    and node.lineno < call.node.lineno:
                return True
    return False


def _names_path(s, arg, want: str) -> bool:
    """``arg`` is the saved path, or that path with a literal suffix: ``f"{save_path}.npy"`` and
    ``save_path + ".npy"`` name the file that ``np.save(save_path, z)`` writes."""
    import ast

    if s.code(arg) == want:
        return True
    if isinstance(arg, ast.JoinedStr) and len(arg.values) == 2:
        head, tail = arg.values
        return (isinstance(head, ast.FormattedValue) and head.conversion == -1 and head.format_spec is None
                and s.code(head.value) == want and isinstance(tail, ast.Constant))
    if isinstance(arg, ast.BinOp) and isinstance(arg.op, ast.Add):
        return s.code(arg.left) == want and isinstance(arg.right, ast.Constant) and isinstance(arg.right.value, str)
    return False


#: methods whose iteration order and items are the same in every process (the model's own modules,
#: a dict's entries): a path named after their items is the same file on every rank
_SAME_EVERYWHERE = frozenset({"items", "keys", "values", "named_modules", "named_parameters", "named_children",
                              "named_buffers", "modules", "parameters", "children"})


def _rank_identical(it) -> bool:
    """An iterable that yields the same items in every process: ``range(...)``, a literal list or
    tuple of constants, or one of :data:`_SAME_EVERYWHERE`'s methods."""
    import ast

    if isinstance(it, (ast.List, ast.Tuple, ast.Set)):
        return all(isinstance(e, ast.Constant) for e in it.elts)
    if isinstance(it, ast.Call):
        f = it.func
        if isinstance(f, ast.Name) and f.id in ("range", "sorted", "reversed", "list", "tuple") and it.args:
            return f.id == "range" or _rank_identical(it.args[0])
        if isinstance(f, ast.Attribute) and f.attr in _SAME_EVERYWHERE:
            return True
    return False


def per_item_path(s, call, dest) -> bool:
    """The saved path is named after the items of an enclosing ``for`` loop whose iterable is not
    known to be the same in every process (a data loader's batches, a list passed in): each rank
    may write its own items' files (PixArt-alpha's feature extraction over an
    ``accelerator.prepare``-d loader), so "every rank writes the same file" is not shown. The index
    of ``enumerate(...)`` is the same on every rank and does not count."""
    import ast

    names = {sub.id for piece, _fr in path_pieces(s, dest, call.frame) for sub in ast.walk(piece)
             if isinstance(sub, ast.Name)}
    if not names:
        return False
    for loop in call.loops:
        node = getattr(loop, "_node", None)
        if not isinstance(node, ast.For):
            continue
        target, it = node.target, node.iter
        if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "enumerate" and it.args \
                and isinstance(target, ast.Tuple) and len(target.elts) == 2:
            target, it = target.elts[1], it.args[0]
        item_names = {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
        if item_names & names and not _rank_identical(it):
            return True
    return False
