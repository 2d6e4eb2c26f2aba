"""An argument parser in another module of the repository.

``from gpt.arguments import get_args`` then ``args = get_args()``: the degrees are that module's
``argparse`` defaults. :func:`adopt` finds the module among the repository's own files (package
roots from the script's folder up to the repository root, a ``src/`` layout, relative imports),
reads it with ``ast`` (never imports it) and hands its options to the script as if it defined
them. Bounded: the repository root is never left, ``site-packages`` never read, one module per
imported name, a size limit. Only literal defaults are known; a module whose parser parallint
cannot see whole keeps it open (CFG009 stays silent).
"""

from __future__ import annotations

import ast
import os
from pathlib import Path

from parallint.model.pyshared import MULTI

TYPE_CHECKING = False
if TYPE_CHECKING:
    from parallint.model.script import Script

MAX_BYTES = 400_000
_MARKERS = (".git", "pyproject.toml", "setup.py")


def _root(start: Path) -> Path | None:
    if start in _ROOTS:
        return _ROOTS[start]
    found = None
    for d in (start, *start.parents):
        if any(os.path.exists(d / m) for m in _MARKERS):
            found = d
            break
    _ROOTS[start] = found
    return found


#: for one run (see reset): the repository root of a folder; what :func:`resolve` found, as
#: (the folders searched, the module's parts, how many candidates it looked for, the file): the
#: candidates are noted again on each hit, for the run's dependencies
_ROOTS: dict[Path, "Path | None"] = {}
_RESOLVED: dict[tuple, tuple[tuple[str, ...], list[str], int, "Path | None"]] = {}
#: the folders searched, shared by the entries of one folder
_BASES: dict[tuple, tuple[str, ...]] = {}


#: while :func:`keep` is on (the language server): the file found for each entry of _RESOLVED as
#: its own path (None: the last candidate looked for is not a file), checked again by :func:`reset`
_LAST: "dict[tuple, str | None | bool]" = {}
#: the kept entries checked in this run (see :func:`_still`)
_CHECKED: set[tuple] = set()
_KEEP = [False]


def keep(on: bool = True) -> None:
    """Keep what :func:`resolve` found across runs, each entry while the candidates it looked for
    still are (or are not) files (see :func:`reset`)."""
    if on != _KEEP[0]:
        _ROOTS.clear()
        _RESOLVED.clear()
        _BASES.clear()
        _LAST.clear()
        _CHECKED.clear()
    _KEEP[0] = on


def reset() -> None:
    """Forget the roots and modules found by an earlier run; with :func:`keep`, an entry is
    checked again when a run first asks for it (:func:`_still`: a file created, removed or moved
    among its candidates forgets it), and all are forgotten when a folder's repository root changed."""
    if _KEEP[0] and _ROOTS:
        roots = dict(_ROOTS)
        _ROOTS.clear()
        if all(_root(start) == was for start, was in roots.items()):
            _CHECKED.clear()  # each entry is checked again when a run first asks for it
            return
    _ROOTS.clear()
    _RESOLVED.clear()
    _BASES.clear()
    _LAST.clear()
    _CHECKED.clear()


#: per file: (its stat signature, the folders its ``sys.path`` tweaks add)
_TWEAKS: dict[Path, tuple[tuple[int, int], list[Path]]] = {}


def path_tweaks(script_path: Path) -> list[Path]:
    """The folders inside the repository that the file at ``script_path`` adds to ``sys.path``
    (``sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))``,
    ``sys.path.append("src")``, ``Path(__file__).resolve().parents[1]``, a module constant bound
    once to such a path), read with ``ast`` through the repository boundary. A relative literal
    is tried against the file's folder and the repository root (the folders it is run from)."""
    try:
        st = os.stat(script_path)
    except (OSError, ValueError):
        return []
    sig = (st.st_mtime_ns, st.st_size)
    got = _TWEAKS.get(script_path)
    if got is not None and got[0] == sig:
        return got[1]
    out: list[Path] = []
    from parallint.util.boundary import inside_repository, read_inside

    raw = read_inside(script_path, script_path, MAX_BYTES)
    if raw is not None and b"sys.path" in raw:
        try:
            tree = ast.parse(raw.decode("utf-8", errors="replace"))
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            tree = None
        if tree is not None:
            root = _root(script_path.parent) or script_path.parent
            for cand in _tweaked(tree, script_path, root):
                try:
                    real = cand.resolve()
                except (OSError, ValueError, RuntimeError):
                    continue
                if real.is_dir() and real not in out and inside_repository(real, script_path):
                    top = root.resolve()
                    if real == top or top in real.parents:
                        out.append(real)
    _TWEAKS[script_path] = (sig, out)
    return out


def _tweaked(tree: ast.Module, script_path: Path, root: Path) -> list[Path]:
    consts: dict[str, list[ast.expr]] = {}
    for st in tree.body:
        if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name):
            consts.setdefault(st.targets[0].id, []).append(st.value)
    out: list[Path] = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("insert", "append") and ast.unparse(node.func.value) == "sys.path"):
            continue
        arg = node.args[-1] if node.args and len(node.args) == (2 if node.func.attr == "insert" else 1) else None
        if arg is None:
            continue
        for p in _path_of(arg, script_path, consts, 0):
            if os.path.isabs(p):
                out.append(Path(p))
            else:  # relative to the folder it is run from
                out.extend((script_path.parent / p, root / p))
    return out


def _path_of(node: ast.expr, script_path: Path, consts: dict[str, list[ast.expr]], depth: int) -> list[str]:
    """The path texts ``node`` may stand for ('' items dropped); [] when it is not static."""
    if depth > 12:
        return []
    def one(n: ast.expr) -> list[str]:
        return _path_of(n, script_path, consts, depth + 1)

    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.Name):
        if node.id == "__file__":
            return [str(script_path)]
        vals = consts.get(node.id, [])
        return one(vals[0]) if len(vals) == 1 else []
    if isinstance(node, ast.Attribute) and node.attr == "parent":
        return [os.path.dirname(os.path.normpath(p)) for p in one(node.value)]
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and node.value.attr == "parents" \
            and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, int) and node.slice.value >= 0:
        out = []
        for p in one(node.value.value):
            for _ in range(node.slice.value + 1):
                p = os.path.dirname(os.path.normpath(p))
            out.append(p)
        return out
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        return [os.path.join(a, b) for a in one(node.left) for b in one(node.right)]
    if isinstance(node, ast.Call):
        name = ast.unparse(node.func)
        tail = name.rsplit(".", 1)[-1]
        if name in ("os.path.dirname", "path.dirname", "osp.dirname", "dirname") and len(node.args) == 1:
            return [os.path.dirname(os.path.normpath(p)) for p in one(node.args[0])]
        if tail in ("abspath", "realpath", "normpath", "expanduser") and name.startswith(("os.path", "osp", "path")) \
                and len(node.args) == 1 or name in ("str", "Path", "pathlib.Path", "os.fspath") and len(node.args) == 1:
            return [p for p in one(node.args[0]) if not p.startswith("~")]
        if tail == "join" and name.startswith(("os.path", "osp", "path")) and node.args and not node.keywords:
            parts = [one(a) for a in node.args]
            if any(len(x) != 1 for x in parts):
                return []
            return [os.path.join(*[x[0] for x in parts])]
        if isinstance(node.func, ast.Attribute) and node.func.attr in ("resolve", "absolute") and not node.args:
            return one(node.func.value)
    return []


def resolve(script_path: Path, module: str, level: int, extra: "list[Path] | None" = None) -> Path | None:
    """The repository file that ``from <level dots><module> import ...`` names, or None;
    ``extra``: folders the entry script added to ``sys.path`` (by default the file's own,
    :func:`path_tweaks`), searched after the usual ones."""
    here = script_path.parent
    if extra is None and not level:
        extra = path_tweaks(script_path)
    tweaks = tuple(extra) if extra is not None and not level else None
    key = (here, module, level, tweaks)
    got = _RESOLVED.get(key)
    if got is not None and _KEEP[0] and key not in _CHECKED:
        _CHECKED.add(key)
        if not _still(got, _LAST.get(key, False)):
            got = None
    if got is None:
        got = _RESOLVED[key] = _resolve(here, module, level, extra, tweaks)
        if _KEEP[0]:
            _LAST[key] = _last(got)
            _CHECKED.add(key)
    bases, parts, n, found = got
    if n:
        from parallint.util import deps

        if deps.recording() is not None:
            for i in range(n):
                if i % 2:
                    deps.note_probe(os.path.join(bases[i // 2], *parts, "__init__.py"))
                else:
                    deps.note_probe(os.path.join(bases[i // 2], *parts) + ".py")
    return found


def _still(got: tuple, last: "str | None | bool") -> bool:
    """Whether a kept entry of _RESOLVED holds: the candidates before the last one it looked for
    are still no files, and the last one is still the file it was (or still none)."""
    if last is False:
        return False
    bases, parts, n, _found = got
    isfile, join = os.path.isfile, os.path.join
    for i in range(n):
        cand = join(bases[i // 2], *parts, "__init__.py") if i % 2 else join(bases[i // 2], *parts) + ".py"
        if i < n - 1 or last is None:
            if isfile(cand):
                return False
        elif not isfile(cand) or os.path.realpath(cand) != last:
            return False
    return True


def _last(got: tuple) -> "str | None | bool":
    """The real path of the last candidate :func:`_resolve` looked for when it is a file (the one
    it took, or one it refused), else None; False when that cannot be told (kept no longer)."""
    bases, parts, n, _found = got
    if not n:
        return None
    i = n - 1
    cand = os.path.join(bases[i // 2], *parts, "__init__.py") if i % 2 else os.path.join(bases[i // 2], *parts) + ".py"
    try:
        return os.path.realpath(cand) if os.path.isfile(cand) else None
    except (OSError, ValueError):
        return False


def _resolve(here: Path, module: str, level: int, extra: "list[Path] | None",
             tweaks: "tuple | None") -> tuple[tuple[str, ...], list[str], int, Path | None]:
    """(the folders searched, the module's parts, the candidates looked for, the file found)."""
    root = _root(here)
    parts = [p for p in module.split(".") if p] if module else []
    if level:
        base = here
        for _ in range(level - 1):
            base = base.parent
        bases = [base]
    else:
        bases = []
        stop = root if root is not None else here
        for d in (here, *here.parents):
            bases.append(d)
            if d == stop:
                break
        if root is not None:
            bases.append(root / "src")
        bases.extend(b for b in (extra or ()) if b not in bases)
    if not parts:
        return (), parts, 0, None
    bkey = (here, level, tweaks)
    shown = _BASES.get(bkey)
    if shown is None:
        shown = _BASES[bkey] = tuple(str(b) for b in bases)
    n = 0
    for b in bases:
        for cand in (b.joinpath(*parts).with_suffix(".py"), b.joinpath(*parts, "__init__.py")):
            n += 1
            try:
                if not cand.is_file():
                    continue
                real = cand.resolve()
            except (OSError, ValueError):
                continue
            if "site-packages" in real.parts or "dist-packages" in real.parts:
                return shown, parts, n, None
            top = (root or here).resolve()
            if top != real and top not in real.parents:
                return shown, parts, n, None
            return shown, parts, n, real
    return shown, parts, n, None


def _literal(node: ast.AST | None) -> tuple[bool, object]:
    if node is None:
        return True, None
    try:
        return True, ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False, None


def _options(tree: ast.Module) -> tuple[dict[str, tuple], str]:
    """``{dest: (flag, default known, default, action, type)}`` of every ``add_argument`` of the
    module, and why the parser is not wholly visible ('' when it is)."""
    out: dict[str, tuple] = {}
    open_ = ""
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        if node.func.attr in ("parse_known_args", "add_subparsers"):
            open_ = open_ or f"{node.func.attr}()"
        if node.func.attr != "add_argument":
            continue
        flags = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        if len(flags) != len(node.args) or not flags or any(k.arg is None for k in node.keywords):
            open_ = "computed add_argument() in the parser module"
            continue
        kw = {k.arg: k.value for k in node.keywords}
        long = [f for f in flags if f.startswith("--")]
        dest: str | None = None
        if "dest" in kw:
            ok, lit = _literal(kw["dest"])
            if not ok or not isinstance(lit, str):
                open_ = "computed dest"
                continue
            dest = lit
        if dest is None:
            dest = (long[0][2:] if long else flags[0].lstrip("-")).replace("-", "_")
        ok_a, action = _literal(kw.get("action"))
        tnode = kw.get("type")
        typ = tnode.id if isinstance(tnode, ast.Name) else None
        known, default = _literal(kw.get("default"))
        if not ok_a or "required" in kw or "nargs" in kw or action not in (None, "store", "store_true", "store_false"):
            out[dest] = MULTI
            continue
        out[dest] = MULTI if dest in out else ((long or flags)[0], known, default, action, typ)
    return out, open_


def adopt(script: "Script", abspath: Path, tree: ast.Module) -> None:
    """Give ``script`` the options of a parser it calls from another repository module."""
    if script.argparse:
        return  # the script's own parser: its options are the ones that count
    imported: dict[str, tuple[str, int, str]] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.ImportFrom) and not any(a.name == "*" for a in stmt.names):
            for a in stmt.names:
                imported[a.asname or a.name] = (stmt.module or "", stmt.level, a.name)
    targets: dict[str, list[str]] = {}  # imported function -> names bound to its result
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Name) \
                and node.value.func.id in imported and not node.value.args and not node.value.keywords:
            targets.setdefault(node.value.func.id, []).append(node.targets[0].id)
    if not targets or len(targets) > 2:
        return
    for local, names in targets.items():
        if local in script.functions:
            continue
        module, level, name = imported[local]
        path = resolve(abspath, module, level)
        if path is None:
            continue
        from parallint.util.boundary import read_inside

        raw = read_inside(path, abspath, MAX_BYTES)
        if raw is None:
            continue  # outside the repository, too large or not a regular file
        try:
            mtree = ast.parse(raw.decode("utf-8", errors="replace"))
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        fn = next((n for n in mtree.body if isinstance(n, ast.FunctionDef) and n.name == name), None)
        if fn is None or not any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                                 and n.func.attr in ("parse_args", "parse_known_args") for n in ast.walk(fn)):
            continue  # a function that does not parse (Megatron's get_args returns a global)
        opts, _why = _options(mtree)
        if not opts:
            continue
        rel = os.path.relpath(path, abspath.parent)
        for dest, entry in opts.items():
            if entry is MULTI:
                script.argparse[dest] = MULTI
                continue
            flag, known, default, action, typ = entry
            dnode: ast.AST | None
            if default is None and known:
                dnode = None
            elif known and isinstance(default, (int, float, str, bool)):
                dnode = ast.Constant(default)
            else:
                dnode = ast.Name(id=f"<default of {flag} in {rel}>")  # unknown to the evaluator
            script.argparse[dest] = (flag, dnode, script.module_frame, action, typ)
            script.argparse_options[flag] = (dest, action, typ, False, False)
        script.args_names.update(names)
        script.argparse_open = f"the parser of {rel}"
