"""Megatron's own argument table: which ``--flags`` its argparse parser accepts.

Read statically from a Megatron checkout with :mod:`ast` (never imported): every string starting with
``--`` given to an ``add_argument(...)`` call in the arguments module, plus the flags that
Megatron-LM generates from config dataclasses (``ArgumentGroupFactory(TrainingConfig, exclude=[...])``:
one ``--field-name`` per dataclass field, ``--no-``/``--disable-`` spellings for booleans, and the
``arg_names`` of ``argparse_meta``), plus DeepSpeed's ``add_config_arguments`` flags for
Megatron-DeepSpeed.

Two uses:

- ``scripts/update_megatron_args.py CHECKOUT`` writes the bundled tables
  (``parallint/data/<framework>.args.json``): the flags, and the extra flags of the
  checkout's entry scripts (``pretrain_gpt.py``...) and their ``extra_args_provider``;
- a repository that vendors Megatron (``megatron/training/arguments.py`` or
  ``megatron/arguments.py`` under its root) is checked against its own source, read the same way.

:func:`accepted_flags` is the table for one launch: the linker sets it on ``Launch.megatron_table``
and CFG006 checks the command line's flags against it. :func:`script_flags` reads a launched script: the flags it adds itself and those of the
``extra_args_provider`` it passes (followed into the repository's own modules); ``None`` when the
provider, or the parsing mode, cannot be read: then no flag can be called unknown.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Container
from functools import lru_cache
from pathlib import Path

#: flags ``deepspeed.add_config_arguments(parser)`` adds (Megatron-DeepSpeed calls it in parse_args)
DEEPSPEED_FLAGS = ("--deepspeed", "--deepspeed_config", "--deepscale", "--deepscale_config", "--deepspeed_mpi")
#: flags a launcher adds to the script's command line
LAUNCHER_FLAGS = ("--local_rank", "--local-rank")
MAX_FILE_BYTES = 2_000_000
FRAMEWORKS = ("megatron-lm", "megatron-deepspeed")


# -- reading Python source without importing it ---------------------------------------------------
#: what one run has read already (trees, tables, flags), emptied by :func:`reset` when a run starts:
#: a launch file per experiment names the same few entry scripts, and their tables are the same
_MEMO: dict[tuple, object] = {}


#: while :func:`keep` is on (the language server): every path the memo's entries looked at, with
#: its stat signature then (None: missing); the memo outlives a run while all of them are unchanged
_SEEN: dict[str, object] = {}
_KEEP = [False]


def keep(on: bool = True) -> None:
    """Keep what was read across runs while the files it came from are unchanged (see :func:`reset`)."""
    if on != _KEEP[0]:  # entries made before were not noted: forget them
        _MEMO.clear()
        _SEEN.clear()
    _KEEP[0] = on


def reset() -> None:
    """Forget what earlier runs read (the files may have changed since); with :func:`keep`, only
    when one of the files (or folders) it looked at changed."""
    if _KEEP[0] and _MEMO and _unchanged():
        return
    _MEMO.clear()
    _SEEN.clear()


def _unchanged() -> bool:
    import time

    from parallint.util.deps import RACY_NS, stat_signature

    soon = time.time_ns() - RACY_NS
    for p, was in _SEEN.items():
        if stat_signature(p) != was or was is not None and was[0] >= soon:  # type: ignore[index]
            return False
    return True


def _note(path: Path) -> None:
    """A path a memo entry depends on (its existence, or its content)."""
    from parallint.util.deps import note_probe

    note_probe(path)
    if _KEEP[0]:
        key = str(path)
        if key not in _SEEN:
            from parallint.util.deps import stat_signature

            _SEEN[key] = stat_signature(key)


def _memo(key: tuple, make):
    if key in _MEMO:
        return _MEMO[key]
    value = _MEMO[key] = make()
    return value


def _parse(path: Path) -> ast.Module | None:
    return _memo(("parse", path), lambda: _parse_now(path))  # type: ignore[no-any-return]


def _parse_now(path: Path) -> ast.Module | None:
    _note(path)
    try:
        if not path.is_file() or path.stat().st_size > MAX_FILE_BYTES:
            return None
        return ast.parse(path.read_bytes())
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _nodes(tree: ast.AST) -> list[ast.AST]:
    """The nodes of a tree in :func:`ast.walk`'s order (less the context and operator
    singletons), listed once per tree and run."""
    key = ("nodes", id(tree))
    hit = _MEMO.get(key)
    if hit is not None and hit[0] is tree:  # type: ignore[index]
        return hit[1]  # type: ignore[index,no-any-return]
    from parallint.model.pyshared import ast_nodes

    out = ast_nodes(tree)
    _MEMO[key] = (tree, out)  # the tree kept with it: its id stays its own
    return out


_BLOCKS = frozenset({"body", "orelse", "finalbody", "handlers", "cases"})


def _statements(tree: ast.AST) -> list[ast.AST]:
    """The statements of ``tree`` (and its except handlers and match cases) in :func:`ast.walk`'s
    order, without entering expressions (which hold no statement)."""
    out = [tree]
    for node in out:  # (the list grows while it is read: breadth first)
        for name in node._fields:
            if name in _BLOCKS:
                out.extend(x for x in getattr(node, name, ()) if isinstance(x, ast.AST))
    return out


def _call_name(node: ast.Call) -> str:
    f = node.func
    if isinstance(f, ast.Attribute):
        return f.attr
    if isinstance(f, ast.Name):
        return f.id
    return ""


def added_flags(tree: ast.AST) -> set[str]:
    """Every ``--flag`` string given positionally to an ``add_argument`` call."""
    out: set[str] = set()
    for node in _nodes(tree):
        if isinstance(node, ast.Call) and _call_name(node) == "add_argument":
            for a in node.args:
                if isinstance(a, ast.Constant) and isinstance(a.value, str) and a.value.startswith("--"):
                    out.add(a.value)
    return out


def _imports(tree: ast.AST) -> dict[str, tuple[str, int]]:
    """name -> (module, level) for every ``from module import name`` in the file (any scope)."""
    key = ("imports", id(tree))
    hit = _MEMO.get(key)
    if hit is None or hit[0] is not tree:  # type: ignore[index]
        hit = _MEMO[key] = (tree, _imports_now(tree))  # the tree kept with it: its id stays its own
    return hit[1]  # type: ignore[index,no-any-return]


def _imports_now(tree: ast.AST) -> dict[str, tuple[str, int]]:
    out: dict[str, tuple[str, int]] = {}
    for node in _statements(tree):
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                out[alias.asname or alias.name] = (node.module or "", node.level)
    return out


def _module_file(root: Path, here: Path, module: str, level: int) -> Path | None:
    """The file of ``module`` inside ``root``: ``from .x import`` relative to ``here``; an absolute
    module from the repository root or from the script's own folder (``sys.path[0]``)."""
    parts = [p for p in module.split(".") if p]
    if level:
        base = here.parent
        for _ in range(level - 1):
            base = base.parent
        bases = [base]
    else:
        bases = [root, here.parent]
    note_probe = _note
    for b in bases:
        cand = b.joinpath(*parts) if parts else b
        for c in (cand.with_suffix(".py") if parts else None, cand / "__init__.py"):
            if c is not None:
                note_probe(c)
            try:
                if c is not None and c.is_file() and (root == c.resolve().parent or root in c.resolve().parents):
                    return c
            except OSError:
                continue
    return None


def _find_class(root: Path, path: Path, tree: ast.Module, name: str,
                depth: int = 0) -> tuple[ast.ClassDef, Path, ast.Module] | None:
    """(class node, its file, its module tree) for class ``name`` visible in ``tree``."""
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return node, path, tree
    if depth > 4:
        return None
    imp = _imports(tree).get(name)
    if imp is None:
        return None
    target = _module_file(root, path, imp[0], imp[1])
    if target is None:
        return None
    sub = _parse(target)
    if sub is None:
        return None
    return _find_class(root, target, sub, name, depth + 1)


def _dataclass_flags(root: Path, path: Path, tree: ast.Module, name: str, exclude: Container[object],
                     depth: int = 0) -> set[str] | None:
    """The flags ``ArgumentGroupFactory`` generates from dataclass ``name`` (None: not found)."""
    found = _find_class(root, path, tree, name)
    if found is None or depth > 6:
        return None
    cls, cpath, ctree = found
    out: set[str] = set()
    for base in cls.bases:
        if isinstance(base, ast.Name) and base.id not in ("object",):
            sub = _dataclass_flags(root, cpath, ctree, base.id, exclude, depth + 1)
            if sub is None:
                return None
            out |= sub
    for stmt in cls.body:
        if not isinstance(stmt, ast.AnnAssign) or not isinstance(stmt.target, ast.Name):
            continue
        field = stmt.target.id
        ann = ast.unparse(stmt.annotation)
        if "ClassVar" in ann or field in exclude or field.startswith("_"):
            continue
        dashed = field.replace("_", "-")
        out.add(f"--{dashed}")
        if ann in ("bool", "Optional[bool]", "bool | None"):
            out.update((f"--no-{dashed}", f"--disable-{dashed}"))
        if stmt.value is not None:  # argparse_meta {"arg_names": [...]}
            for node in ast.walk(stmt.value):
                if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("--"):
                    out.add(node.value)
    return out


def _factory_flags(root: Path, path: Path, tree: ast.Module) -> set[str] | None:
    """Flags of every ``ArgumentGroupFactory(Config, exclude=[...])`` in the arguments module."""
    out: set[str] = set()
    for node in _nodes(tree):
        if not (isinstance(node, ast.Call) and _call_name(node) == "ArgumentGroupFactory" and node.args):
            continue
        cls = node.args[0]
        if not isinstance(cls, ast.Name):
            return None
        exclude: Container[object] = set()  # names; any constant of an exclude=[...] literal
        for kw in node.keywords:
            if kw.arg == "exclude":
                if isinstance(kw.value, ast.Name):  # a list assigned just before
                    exclude = _list_assigned(tree, kw.value.id)
                elif isinstance(kw.value, (ast.List, ast.Tuple, ast.Set)):
                    exclude = {e.value for e in kw.value.elts if isinstance(e, ast.Constant)}
        flags = _dataclass_flags(root, path, tree, cls.id, exclude)
        if flags is None:
            return None
        out |= flags
    return out


def _list_assigned(tree: ast.AST, name: str) -> set[str]:
    out: set[str] = set()
    for node in _nodes(tree):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            if isinstance(node.value, (ast.List, ast.Tuple, ast.Set)):
                out |= {e.value for e in node.value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
    return out


ARGUMENT_MODULES = ("megatron/training/arguments.py", "megatron/arguments.py")


def arguments_module(root: Path) -> Path | None:
    note_probe = _note
    for rel in ARGUMENT_MODULES:
        p = root / rel
        note_probe(p)
        if p.is_file():
            return p
    return None


def extract(root: Path) -> dict | None:
    """The argument table of the Megatron checkout at ``root``, or None when it cannot be read
    completely (a generated group whose dataclass is not found)."""
    path = arguments_module(root)
    if path is None:
        return None
    tree = _parse(path)
    if tree is None:
        return None
    flags = added_flags(tree)
    gen = _factory_flags(root, path, tree)
    if gen is None:
        return None
    flags |= gen
    rejected = rejected_flags(tree)
    src = path.read_text(errors="replace")
    framework = "megatron-deepspeed" if "add_config_arguments" in src else "megatron-lm"
    if "add_config_arguments" in src:
        flags.update(DEEPSPEED_FLAGS)
    scripts = {}
    _note(root)  # its listing (a script added there)
    for entry in sorted(root.glob("*.py")):
        if entry.name == "setup.py":
            continue
        extra = script_flags(entry, root)
        if extra is not None:
            scripts[entry.name] = sorted(extra)
    return {"framework": framework, "flags": sorted(flags), "scripts": scripts, "rejected": rejected}


def rejected_flags(tree: ast.AST) -> dict[str, str]:
    """Flags argparse still accepts but the validation rejects (Megatron-LM: ``assert args.batch_size
    is None, '--batch-size argument is no longer valid, use --micro-batch-size instead'``, and
    ``if args.checkpoint_activations: print(... no longer valid, use --recompute-activations ...); exit()``)
    -> the replacement the message names."""
    import re

    out: dict[str, str] = {}
    texts: list[ast.AST]
    for node in _nodes(tree):
        if isinstance(node, ast.Assert) and node.msg is not None:
            texts = [node.msg]
        elif isinstance(node, ast.If):
            texts = [c for st in node.body for c in ast.walk(st)]
        else:
            continue
        for t in texts:
            if not (isinstance(t, ast.Constant) and isinstance(t.value, str)):
                continue
            m = re.match(r"\s*(--[\w-]+) (?:argument )?is no\s*longer valid, use (--[\w-]+)", t.value)
            if m:
                out[m.group(1)] = m.group(2)
    return dict(sorted(out.items()))


# -- a launched script ----------------------------------------------------------------------------
ENTRY_CALLS = frozenset({"pretrain", "initialize_megatron", "parse_args", "parse_and_validate_args",
                         "set_global_variables"})


def script_flags(path: Path, root: Path) -> set[str] | None:
    """The flags a Megatron entry script adds to Megatron's: its own ``add_argument`` flags and
    those of its ``extra_args_provider``. None when they cannot be known (a provider that is not
    in the repository, ``ignore_unknown_args=True``, a script that is not a Megatron entry point)."""
    got = _memo(("script", path, root), lambda: _script_flags(path, root))
    return None if got is None else set(got)  # type: ignore[call-overload]


def _script_flags(path: Path, root: Path) -> set[str] | None:
    tree = _parse(path)
    if tree is None:
        return None
    flags = added_flags(tree)
    imports = _imports(tree)
    nodes = _nodes(tree)
    defined = {d.name: d for d in nodes if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef))}
    assigned = {t.id for d in nodes if isinstance(d, ast.Assign) for t in d.targets
                if isinstance(t, ast.Name)}
    megatron_entry = False
    for node in _nodes(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ENTRY_CALLS
                and imports.get(node.func.id, ("", 0))[0].split(".")[0] == "megatron"):
            continue  # Megatron's own entry points only (not some `parser.parse_args()`)
        megatron_entry = True
        for kw in node.keywords:
            if kw.arg == "ignore_unknown_args" and not (isinstance(kw.value, ast.Constant) and kw.value.value is False):
                return None
            if kw.arg is None:
                return None  # **kwargs: the provider may be in there
            if kw.arg != "extra_args_provider":
                continue
            for name in (n.id for n in ast.walk(kw.value) if isinstance(n, ast.Name)):
                if name in ("None", "True", "False"):
                    continue
                if name in defined:
                    more = _provider_calls(defined[name], defined, imports, root, path)
                    if more is None:
                        return None
                    flags |= more
                    continue
                imp = imports.get(name)
                if imp is None:
                    if name in assigned:
                        continue  # a condition (`add_args if has_modelopt else None`)
                    return None
                target = _module_file(root, path, imp[0], imp[1])
                sub = _parse(target) if target is not None else None
                if sub is None:
                    return None  # a provider in a module parallint cannot read
                flags |= added_flags(sub)
        for a in node.args:  # a provider passed positionally: pretrain(..., extra_args_provider)?
            if isinstance(a, ast.Name) and a.id in imports and _call_name(node) in (
                    "initialize_megatron", "parse_args", "parse_and_validate_args"):
                return None
    if not megatron_entry:
        return None
    return flags


def _provider_calls(func, defined: dict, imports: dict, root: Path, path: Path, depth: int = 0) -> set[str] | None:
    """Flags a locally defined provider adds through the functions it hands the parser to
    (``parser = add_multimodal_extra_args(parser)``); its own ``add_argument`` flags are already in
    the script's. None when one of those functions is in a module parallint cannot read."""
    if depth > 4:
        return set()
    params = {a.arg for a in func.args.args}
    local = params | {t.id for n in ast.walk(func) if isinstance(n, ast.Assign) for t in n.targets
                      if isinstance(t, ast.Name)}
    out: set[str] = set()
    for node in ast.walk(func):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
            continue
        if not any(isinstance(a, ast.Name) and a.id in local for a in node.args):
            continue
        name = node.func.id
        if name in defined:
            if defined[name] is not func:
                sub = _provider_calls(defined[name], defined, imports, root, path, depth + 1)
                if sub is None:
                    return None
                out |= sub
            continue
        imp = imports.get(name)
        if imp is None:
            continue  # a builtin (print, vars, ...)
        target = _module_file(root, path, imp[0], imp[1])
        sub_tree = _parse(target) if target is not None else None
        if sub_tree is None or _dynamic_flags(sub_tree, name):
            return None  # a module parallint cannot read, or flags made at run time
        out |= added_flags(sub_tree)
    return out


def _dynamic_flags(tree: ast.Module, name: str) -> bool:
    """Whether function ``name`` of ``tree`` adds arguments whose names are computed
    (``group.add_argument(f"--{field.name}")`` over a config dataclass's fields, as Megatron's
    ``add_config_args`` does): the flags it adds cannot be listed."""
    for node in _nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            for sub in ast.walk(node):
                if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) and sub.func.attr == "add_argument" \
                        and sub.args and not (isinstance(sub.args[0], ast.Constant) and isinstance(sub.args[0].value, str)):
                    return True
    return False


# -- bundled tables -------------------------------------------------------------------------------
@lru_cache(maxsize=None)
def bundled(framework: str) -> dict:
    """The bundled table of ``framework`` (megatron-lm | megatron-deepspeed)."""
    from importlib import resources

    try:
        text = resources.files("parallint.data").joinpath(f"{framework}.args.json").read_text()
    except (OSError, ModuleNotFoundError, FileNotFoundError):
        return {"flags": [], "scripts": {}, "renamed": {}}
    return json.loads(text)


def vendored(root: str) -> dict | None:
    """The table of a Megatron checkout at ``root`` (the repository being checked), or None."""
    return _memo(("vendored", root), lambda: _vendored(root))  # type: ignore[no-any-return]


def _vendored(root: str) -> dict | None:
    try:
        return extract(Path(root))
    except (OSError, RecursionError, ValueError):
        return None


# -- the table for one launch -----------------------------------------------------------------------
#: flags that only Megatron-DeepSpeed's command lines carry (normalized names)
MDS_SIGNALS = frozenset({"deepspeed", "deepspeed-config", "zero-stage", "deepspeed-activation-checkpointing",
                         "deepscale", "deepscale-config"})


class AcceptedFlags:
    """The flags a launched Megatron script accepts (``Launch.megatron_table``, set by the linker):
    ``known`` flags, ``rejected`` ones (argparse accepts them, the validation stops: flag -> what to
    use), ``renamed`` ones (removed: flag -> new spelling), ``what`` the table is ("this
    repository's Megatron", "Megatron-LM"...), and the ``launcher_flags`` a launcher adds itself."""

    launcher_flags = LAUNCHER_FLAGS

    def __init__(self, known: set[str], rejected: dict[str, str], renamed: dict[str, str], what: str) -> None:
        self.known = known
        self.rejected = rejected
        self.renamed = renamed
        self.what = what


def _framework(la, flags) -> str:
    """megatron-lm | megatron-deepspeed | either, from the command line and the script's path."""
    names = {name for name, _, _ in flags}
    script = str(la.script.value).lower() if la.script is not None and la.script.known else ""
    mds = bool(names & MDS_SIGNALS) or "megatron-deepspeed" in script or la.launcher == "deepspeed"
    lm = "megatron-lm" in script
    if mds and not lm:
        return "megatron-deepspeed"
    if lm and not mds:
        return "megatron-lm"
    return "either"


def _bundled(framework: str) -> tuple[list[dict], str]:
    if framework == "either":
        return [bundled("megatron-lm"), bundled("megatron-deepspeed")], \
            "Megatron-LM or Megatron-DeepSpeed"
    return [bundled(framework)], \
        {"megatron-lm": "Megatron-LM", "megatron-deepspeed": "Megatron-DeepSpeed"}[framework]


def submodules(start: Path) -> tuple[Path, tuple[str, ...]]:
    """The repository's top and the ``path =`` entries of its ``.gitmodules`` ('/'-separated, no
    ``./``): the first folder from ``start`` up that has a ``.gitmodules``, stopping at the one
    that holds ``.git``; ``(start, ())`` when there is none."""
    def read(d: Path) -> tuple[str, ...]:
        from parallint.util.safeio import read_text_regular

        _note(d / ".gitmodules")
        _note(d / ".git")
        try:
            text = read_text_regular(d / ".gitmodules", 1_000_000)
        except (OSError, ValueError):
            return ()
        out = []
        for line in text.splitlines():
            key, eq, value = line.partition("=")
            if eq and key.strip() == "path" and value.strip():
                out.append(value.strip().replace("\\", "/").strip("/").removeprefix("./"))
        return tuple(out)

    def find() -> tuple[Path, tuple[str, ...]]:
        for d in (start, *start.parents):
            subs = read(d)
            if subs or (d / ".git").exists():
                return d, subs
        return start, ()

    return _memo(("gitmodules", start), find)  # type: ignore[no-any-return]


def _in_submodule(root: Path, script: str) -> bool:
    """Whether the script path as written (not found on disk) lies in one of the git submodules
    of the repository (``third_party/Megatron-LM/pretrain_gpt.py``): a fork or a pinned version."""
    written = "/".join(w for w in script.replace("\\", "/").split("/") if w not in ("", "."))
    return any(written.startswith(sub + "/") or f"/{sub}/" in "/" + written for sub in submodules(root)[1])


def _pinned_megatron(root: Path) -> bool:
    """Whether the repository declares a Megatron git submodule (``third_party/Megatron-LM``) that
    is not checked out: the ``megatron`` its scripts import is that version, often patched (as
    FlagScale patches it with arguments of its own), not the one the bundled tables describe."""
    top, subs = submodules(root)
    return any("megatron" in sub.rsplit("/", 1)[-1].lower() and not (top / sub / "megatron").is_dir() for sub in subs)


def accepted_flags(la, flags) -> AcceptedFlags | None:
    """The flags the launched script accepts, or None when that cannot be known. Uses the script
    file and repository root the linker found for the launch."""
    if la.script is None or not la.script.known or la.is_module:
        return None
    path = la.script_path
    if path is not None:
        path_root = la.repo_root if la.repo_root is not None else path.parent
        extra = script_flags(path, path_root)
        if extra is None:
            return None  # not a Megatron entry point, or flags parallint cannot see
        module = arguments_module(path_root)
        if module is not None:
            from parallint.util.boundary import inside_repository

            if not inside_repository(module, path):
                return None  # a Megatron copy linked in from outside the repository: not read
            own = vendored(str(path_root))
            if own is None:
                return None
            renamed = bundled(own["framework"]).get("renamed", {})
            return AcceptedFlags(set(own["flags"]) | extra, own.get("rejected", {}), renamed,
                                 "this repository's Megatron")
        if _pinned_megatron(Path(path_root)):
            return None  # the repository pins its own Megatron (a submodule, not checked out here)
        tables, what = _bundled(_framework(la, flags))
    else:
        if la.repo_root is not None and _in_submodule(Path(la.repo_root), str(la.script.value)):
            return None  # a pinned submodule that is not checked out: its own version's arguments
        tables, what = _bundled(_framework(la, flags))
        name = Path(str(la.script.value)).name
        extras = [t.get("scripts", {}).get(name) for t in tables]
        if all(e is None for e in extras):
            return None  # a script parallint cannot read and that is not one of Megatron's
        extra = {f for e in extras if e is not None for f in e}
    known = set(extra)
    for t in tables:
        known.update(t.get("flags", ()))
    rejected = dict(tables[0].get("rejected", {}))
    for t in tables[1:]:
        rejected = {k: v for k, v in rejected.items() if k in t.get("rejected", {})}
    renamed = {}
    for t in tables:
        renamed.update(t.get("renamed", {}))
    return AcceptedFlags(known, rejected, renamed, what)
