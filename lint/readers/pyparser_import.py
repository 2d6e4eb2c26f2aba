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
    for d in (start, *start.parents):
        if any(os.path.exists(d / m) for m in _MARKERS):
            return d
    return None


def _note(p: Path) -> None:
    from parallint.util import deps

    if deps.recording() is not None:
        deps.note_probe(p)


def resolve(script_path: Path, module: str, level: int) -> Path | None:
    """The repository file that ``from <level dots><module> import ...`` names, or None."""
    here = script_path.parent
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
    if not parts:
        return None
    for b in bases:
        for cand in (b.joinpath(*parts).with_suffix(".py"), b.joinpath(*parts, "__init__.py")):
            _note(cand)
            try:
                if not cand.is_file():
                    continue
                real = cand.resolve()
            except (OSError, ValueError):
                continue
            if "site-packages" in real.parts or "dist-packages" in real.parts:
                return None
            top = (root or here).resolve()
            if top != real and top not in real.parents:
                return None
            return real
    return None


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
