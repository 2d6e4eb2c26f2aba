"""What the script event API (:mod:`parallint.model.script`), its evaluator
(:mod:`parallint.model.pyeval`) and the Python reader that builds scripts share, in a module below
all three (no import circle)."""

from __future__ import annotations

import ast
from typing import Any, NamedTuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Protocol

    class _Names(Protocol):
        """What :func:`env_name` asks of a script: its qualified-name test."""

        def qname_in(self, node: Any, names: Any) -> bool: ...

#: a name bound in a way that cannot be followed (loop target, augmented assignment, import...)
MULTI: Any = object()


class Arg(NamedTuple):
    """One argument of a call, as written: ``keyword`` (None for positional, ``*x`` and ``**kw``),
    ``star`` ("", "*" or "**") and the expression."""

    keyword: str | None
    star: str
    value: Any


def call_args(node: Any) -> list[Arg]:
    """The arguments of an ``ast.Call`` in source order (``ast`` keeps positional arguments and
    keywords apart; a ``*x`` may follow a keyword)."""
    out: list[Arg] = []
    Starred = ast.Starred
    for a in node.args:
        if type(a) is Starred:
            out.append(Arg(None, "*", a.value))
        else:
            out.append(Arg(None, "", a))
    kws = node.keywords
    if kws:
        if node.args and type(node.args[-1]) is Starred and _before(kws[0], node.args[-1]):
            order = sorted(range(len(out) + len(kws)),
                           key=lambda i: _pos(node.args[i] if i < len(node.args) else kws[i - len(node.args)]))
            merged = out + [Arg(k.arg, "" if k.arg is not None else "**", k.value) for k in kws]
            return [merged[i] for i in order]
        for k in kws:
            out.append(Arg(k.arg, "" if k.arg is not None else "**", k.value))
    return out


def _pos(n: Any) -> tuple[int, int]:
    return (n.lineno, n.col_offset)


def _before(a: Any, b: Any) -> bool:
    return _pos(a) < _pos(b)


def is_int(n: Any) -> bool:
    """An integer literal (LibCST's ``Integer``: not a bool)."""
    return type(n) is ast.Constant and type(n.value) is int


#: fields that never hold a node worth visiting (names, flags, the Load/Store and operator singletons)
_LEAF_FIELDS = frozenset({"ctx", "op", "ops", "id", "attr", "name", "arg", "module", "kind", "level", "conversion",
                          "simple", "is_async", "type_comment", "asname", "lineno", "col_offset", "end_lineno",
                          "end_col_offset"})
_FIELDS: dict[type, tuple[str, ...]] = {}


def ast_nodes(tree: Any) -> list[Any]:
    """The nodes of an ``ast`` tree in :func:`ast.walk`'s order (breadth first), as a list, less
    the context and operator singletons: one pass without ast.walk's generators."""
    AST = ast.AST
    fields_of = _FIELDS
    out = [tree]
    push = out.append
    for node in out:  # (the list grows while it is read: breadth first)
        t = type(node)
        fields = fields_of.get(t)
        if fields is None:
            fields = fields_of[t] = tuple(f for f in t._fields if f not in _LEAF_FIELDS)
        for name in fields:
            v = getattr(node, name, None)
            if type(v) is list:
                for x in v:
                    if isinstance(x, AST):
                        push(x)
            elif isinstance(v, AST):
                push(v)
    return out


#: environment variables that carry the global rank / local rank
GLOBAL_RANK_ENV = frozenset({"RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"})
LOCAL_RANK_ENV = frozenset({"LOCAL_RANK", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID"})

def dotted(node: Any) -> str | None:
    """``a.b.c`` for a chain of attributes on a name, else None (cheap: no code generation)."""
    parts = []
    while type(node) is ast.Attribute:
        parts.append(node.attr)
        node = node.value
    if type(node) is not ast.Name:
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def string_literal(node: Any) -> str | None:
    """The value of a plain (non-f) string literal or an implicit concatenation of them."""
    if type(node) is ast.Constant and type(node.value) is str:
        value: str = node.value
        return value
    return None


def env_name(script: "_Names", node: Any) -> str | None:
    """``os.environ["X"]``, ``os.environ.get("X", ...)``, ``os.getenv("X")`` (optionally in int()) -> X."""
    t = type(node)
    if t is ast.Call and (node.args or node.keywords) and script.qname_in(node.func, {"builtins.int", "int"}):
        return env_name(script, call_args(node)[0].value)
    if t is ast.Subscript and script.qname_in(node.value, {"os.environ"}):
        sl = node.slice
        if type(sl) is not ast.Slice and type(sl) is not ast.Tuple:
            return string_literal(sl)
    if t is ast.Call and script.qname_in(node.func, {"os.environ.get", "os.getenv"}):
        args = call_args(node)
        if args and args[0].keyword is None:
            return string_literal(args[0].value)
    return None


#: per ``ast`` node type: its fields that can hold a node, in ``_fields`` order (see :func:`walk`)
_WALK_FIELDS: dict[type, tuple[str, ...]] = {}
#: fields that never hold a node, or hold only leaves no caller of :func:`walk` looks for
#: (expression contexts, operators)
_NO_NODES = frozenset({"id", "attr", "arg", "name", "asname", "module", "level", "kind", "conversion", "is_async",
                       "simple", "type_comment", "tag", "ctx", "op", "ops"})


def walk(tree: Any) -> list[Any]:
    """Every node of ``tree`` in :func:`ast.walk`'s order (breadth first, fields in order), but
    for expression contexts and operators (``Load``, ``Add``, ``Eq``...): leaves, so the order of
    the rest is the same. A list, built without ``ast.walk``'s generators (about 3× faster)."""
    out = [tree]
    fields = _WALK_FIELDS
    AST = ast.AST
    for node in out:  # the list grows while it is read: breadth first
        t = type(node)
        fs = fields.get(t)
        if fs is None:
            keep = ("name",) if t.__name__ == "TypeAlias" else ()  # 3.12: its name is a Name node
            fs = fields[t] = tuple(f for f in t._fields  # type: ignore[attr-defined]
                                   if f not in _NO_NODES or f in keep)
        for f in fs:
            v = getattr(node, f, None)
            if type(v) is list:
                for x in v:
                    if isinstance(x, AST):
                        out.append(x)
            elif isinstance(v, AST):
                out.append(v)
    return out


#: (module, level) of every import statement of a Python text, by :func:`text_key` of the text,
#: for one run (see :func:`reset`): the Python reader notes what its own
#: parse found, so following an entry script's imports does not parse a file it read again
STATED: dict[bytes, list[tuple[str, int]]] = {}


def text_key(text: str) -> bytes:
    """The key of a Python text in :data:`STATED`."""
    try:  # _blake2 itself: importing hashlib also starts OpenSSL (milliseconds per run)
        from _blake2 import blake2b
    except ImportError:  # pragma: no cover - another Python implementation
        from hashlib import blake2b

    return blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def import_pairs(nodes: Any) -> list[tuple[str, int]]:
    """(module, level) for the Import/ImportFrom ``nodes``, in their order; ``from pkg import a,
    b`` also gives ``pkg.a`` and ``pkg.b`` (each may be a submodule)."""
    out: list[tuple[str, int]] = []
    Import = ast.Import
    for node in nodes:
        if type(node) is Import:
            out.extend((a.name, 0) for a in node.names)
        else:
            base = node.module or ""
            if base:
                out.append((base, node.level))
            out.extend((f"{base}.{a.name}" if base else a.name, node.level) for a in node.names if a.name != "*")
    return out


#: keep :data:`STATED` across runs (the language server, ``link.imports.keep``), at most KEPT entries
KEEP = [False]
KEPT = 50_000


def reset() -> None:
    """Forget the import statements of an earlier run (unless they are kept and not too many)."""
    if not KEEP[0] or len(STATED) > KEPT:
        STATED.clear()
