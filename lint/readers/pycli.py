"""The entry function a script's command line binds to, besides argparse: ``click``, ``typer``,
``fire`` and Hydra.

- ``@click.command()`` with ``@click.option("--tp", default=2)`` (and ``click.argument``): the
  function's parameter ``tp`` is the option's value;
- ``typer.run(main)``, or one ``@app.command()`` of ``app = typer.Typer()`` run by ``app()``, over
  ``def main(tp: int = 2, fp8: bool = False, data: str = typer.Option("x", "--data-path"))``: a
  parameter with a default is the option ``--tp`` (underscores become dashes), a bool one the
  flag pair ``--fp8/--no-fp8``, one without a default (or a ``typer.Argument``) a positional word;
- ``fire.Fire(main)`` over ``def main(tp=2, pp=4)``: ``--tp 4`` / ``--tp=4`` set ``tp``;
- ``@hydra.main(config_path="conf", config_name="config")`` (or NeMo's ``@hydra_runner``) over
  ``def main(cfg)``: ``cfg.model.tp`` is ``model.tp`` of ``conf/config.yaml``, and an override
  ``model.tp=2`` on the launch line wins over it.

:func:`find` records the entry (:class:`Entry`) on the Script, from the syntax tree only; nothing is
imported or run. :func:`bind` reads a launch line's words into ``{name: Value}`` the way the
library does, each Value pointing at the launch-line word; the evaluator
(:mod:`parallint.model.pyeval`) gives a parameter the bound value, else its default. A word
parallint cannot read (``$ARGS``, ``"$@"``) may set any option: every option it does not see given
after it is unknown (the ``*`` entry), never its default. Where a default is not certain (an
``envvar``, a callable default, a Hydra key the config composes from elsewhere) it is unknown.
"""

from __future__ import annotations

import ast
import re

from parallint.model.facts import Value
from parallint.model.origin import Origin

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

    from parallint.model.script import Frame, Script

#: the key of :func:`bind`'s result that stands for every name the line does not give
ANY = "*"


def unknown_word(out: dict[str, Value], w: Value) -> None:
    """A launch-line word parallint cannot read (``$ARGS``, ``"$@"``) may set any option: what
    ``out`` holds so far is no longer certain, and neither is any option not given after it
    (:data:`ANY`: never its default). Shared by every parser binding (argparse, click, fire, Hydra)."""
    for k, v in list(out.items()):
        out[k] = Value.unknown(f"{v.source} may be set again by {w.why or 'an unknown word'}", v.span, v.source)
    out[ANY] = Value.unknown(w.why or "an unknown word on the launch line", w.span, "the launch line")
#: the largest Hydra config read for its defaults
MAX_CONFIG_BYTES = 400_000
_TYPES = {"int": "int", "float": "float", "str": "str", "bool": "bool", "INT": "int", "FLOAT": "float",
          "STRING": "str", "BOOL": "bool"}


class Param:
    """One parameter of the entry function: its default expression (None: none, or not certain,
    with ``why``), the frame it is evaluated in, and the type a launch-line word converts to."""

    __slots__ = ("name", "default", "dframe", "typ", "why", "flag")

    def __init__(self, name: str, default: "ast.expr | None", dframe: "Frame | None", typ: str | None,
                 why: str = "", flag: str = "") -> None:
        self.name, self.default, self.dframe, self.typ, self.why, self.flag = name, default, dframe, typ, why, flag


class Entry:
    """The function the command line binds to. ``options``: word -> (parameter, action, type), the
    action ``store``, ``true``, ``false`` or ``many`` (takes a number of words parallint does not
    follow); ``positionals``: click arguments in order; for Hydra, ``config`` holds the primary
    config's scalars by dotted key (``certain`` says whether they are what runs) and ``groups`` the
    config groups (folders beside the config)."""

    def __init__(self, kind: str, frame: "Frame", name: str) -> None:
        self.kind = kind
        self.frame = frame
        self.name = name
        self.params: dict[str, Param] = {}
        self.options: dict[str, tuple[str, str, str | None]] = {}
        self.positionals: list[str] = []
        self.cfg = ""  # the Hydra config parameter
        self.config: dict[str, tuple[object, int]] = {}
        self.config_path = ""  # the primary config, relative to the script's folder
        self.certain = False
        self.groups: set[str] = set()
        self.assigned: list[str] = []  # Hydra keys the function sets itself
        #: Hydra: the defaults list's group choices (``model: llama7b``), whether ``_self_`` comes
        #: last (the primary's keys win over the groups'), the keys each group gave, the primary's
        #: own keys, the file each group key was read from, and where the config folder is
        self.choices: dict[str, str] = {}
        self.self_last = True
        self.group_keys: dict[str, set[str]] = {}
        self.primary_keys: set[str] = set()
        self.sources: dict[str, str] = {}
        self.config_dir: "Path | None" = None
        self.script_abspath: "Path | None" = None

    def key_value(self, key: str, overrides: "dict[str, Value] | None") -> Value:
        """The value of ``cfg.<key>`` in the entry function: the launch line's override, else the
        primary config's scalar when it is certain to be what runs; unknown otherwise."""
        for done in self.assigned:
            if not done or key == done or key.startswith(done + ".") or done.startswith(key + "."):
                return Value.unknown(f"cfg.{key} is changed in {self.name}()", None, f"cfg.{key}")
        if overrides:
            for k, v in overrides.items():
                if k == key:
                    return v
                if k != ANY and (key.startswith(k + ".") or k.startswith(key + ".")):
                    return Value.unknown(f"{k} on the launch line", v.span, v.source)
            if ANY in overrides:
                return overrides[ANY]
        got = self.config.get(key)
        if got is None or not self.certain or got[0] is _UNKNOWN:
            return Value.unknown(f"{key} of {self.config_path}", None, f"cfg.{key}")
        return Value(got[0], None, True, "", self.sources.get(key) or f"{self.config_path}.yaml {key}")


def _tail(node: "ast.expr") -> str:
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def _is(script: "Script", node: "ast.expr", names: "set[str]") -> bool:
    target = node.func if isinstance(node, ast.Call) else node
    return bool(script.qnames(target) & names)


def _literal(node: "ast.expr | None") -> "tuple[bool, Any]":
    if node is None:
        return False, None
    try:
        return True, ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
        return False, None


def _calls_of(tree: "ast.Module", name: str) -> "list[ast.Call]":
    return [n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == name]


def _only_function(script: "Script", tree: "ast.Module", name: str) -> "Frame | None":
    """The module-level function ``name`` when it is defined once and its name bound only by that."""
    frames = script.functions.get(name, [])
    if len(frames) != 1 or frames[0].parent is not script.module_frame:
        return None
    defs = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
                                                   ast.Assign, ast.Import, ast.ImportFrom))
            and name in _bound_names(n)]
    return frames[0] if len(defs) == 1 else None


def _bound_names(n: "ast.stmt") -> "set[str]":
    if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {n.name}
    if isinstance(n, ast.Assign):
        return {t.id for t in n.targets if isinstance(t, ast.Name)}
    if isinstance(n, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in n.names}
    return set()


def find(script: "Script", tree: "ast.Module | None", abspath: "Path | None") -> None:
    """Set ``script.cli_entry`` when the script's command line binds to one function by click,
    fire or Hydra (and the script has no argparse parser of its own)."""
    if tree is None or script.argparse:
        return
    text = script.text
    found: list[Entry] = []
    if "click" in text:
        found.extend(e for e in (_click(script, tree, n) for n in tree.body
                                 if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))) if e is not None)
    if "typer" in text:
        found.extend(e for e in (_typer(script, tree, n) for n in tree.body
                                 if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))) if e is not None)
    if "Fire" in text:
        found.extend(e for e in (_fire(script, tree, n) for n in ast.walk(tree)
                                 if isinstance(n, ast.Call) and _is(script, n, {"fire.Fire"})) if e is not None)
    if "hydra" in text:
        found.extend(e for e in (_hydra(script, tree, n, abspath) for n in tree.body
                                 if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))) if e is not None)
    if len(found) == 1:
        script.cli_entry = found[0]


# ---------------------------------------------------------------- click
def _click(script: "Script", tree: "ast.Module", node: "ast.FunctionDef | ast.AsyncFunctionDef") -> Entry | None:
    decs = node.decorator_list
    if not any(_is(script, d, {"click.command"}) for d in decs):
        return None
    frame = _only_function(script, tree, node.name)
    if frame is None:
        return None
    for call in _calls_of(tree, node.name):  # main() / main(obj={}): click reads sys.argv
        if call.args or any(k.arg != "obj" for k in call.keywords):
            return None
    entry = Entry("click", frame, node.name)
    for d in decs:
        if isinstance(d, ast.Call) and _is(script, d, {"click.command"}):
            if any(k.arg in ("context_settings", "cls") or k.arg is None for k in d.keywords):
                return None  # auto_envvar_prefix, ignore_unknown_options, a custom command class
    args = node.args
    if args.vararg is not None or args.kwarg is not None:
        return None
    declared = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}
    # decorators apply bottom up: click arguments are ordered as written (top first)
    for d in decs:
        if not isinstance(d, ast.Call):
            continue
        if _is(script, d, {"click.option"}):
            if not _click_option(script, entry, d):
                return None
        elif _is(script, d, {"click.argument"}):
            if not _click_argument(entry, d):
                return None
        elif _is(script, d, {"click.version_option", "click.help_option", "click.pass_context",
                             "click.pass_obj", "click.command"}):
            continue
        else:
            return None  # a decorator parallint does not know may add or change parameters
    if not set(entry.params) <= declared:
        return None
    return entry


def _click_type(node: "ast.expr | None", default: "ast.expr | None") -> str | None:
    if node is not None:
        t = _TYPES.get(_tail(node)) if isinstance(node, (ast.Name, ast.Attribute)) else None
        if t is None and isinstance(node, ast.Call) and _tail(node) == "Choice":
            return "str"
        return t or "?"
    ok, v = _literal(default)
    if not ok or v is None:
        return "str"
    return {bool: "bool", int: "int", float: "float", str: "str"}.get(type(v), "?")


def _click_option(script: "Script", entry: Entry, d: "ast.Call") -> bool:
    names: list[str] = []
    for a in d.args:
        if not (isinstance(a, ast.Constant) and isinstance(a.value, str)):
            return False
        names.append(a.value)
    kw = {k.arg: k.value for k in d.keywords if k.arg}
    if any(k.arg is None for k in d.keywords):
        return False
    plain = [n for n in names if n.isidentifier()]
    words: list[str] = []
    off: list[str] = []
    for n in names:
        if n.isidentifier():
            continue
        on, sep, no = n.partition("/")
        words.append(on.strip())
        if sep:
            off.append(no.strip())
    if not words:
        return False
    longs = [w for w in words if w.startswith("--")]
    name = plain[0] if plain else (longs[0] if longs else words[0]).lstrip("-").replace("-", "_").lower()
    default = kw.get("default")
    why = ""
    if "envvar" in kw:
        why = f"{words[0]} may come from the environment (envvar)"
    elif isinstance(default, (ast.Lambda, ast.Name, ast.Attribute, ast.Call)) and not _literal(default)[0]:
        why = f"the default of {words[0]} is computed when the command runs"
    elif "prompt" in kw:
        why = f"{words[0]} is asked for when missing (prompt)"
    elif "required" in kw and default is None:
        why = f"{words[0]} is required"
    flag = kw.get("is_flag")
    is_flag = bool(off) or (isinstance(flag, ast.Constant) and flag.value is True)
    many = any(k in kw for k in ("multiple", "count", "nargs", "flag_value", "callback"))
    if is_flag:
        if default is None:
            default = ast.Constant(False)
        if many:
            why = why or f"{words[0]} is not a plain flag"
    entry.params[name] = Param(name, default, script.module_frame, "bool" if is_flag else _click_type(kw.get("type"), default),
                               why, words[0])
    for w in words:
        entry.options[w] = (name, "many" if many else ("true" if is_flag else "store"), entry.params[name].typ)
    for w in off:
        entry.options[w] = (name, "false", "bool")
    return True


def _click_argument(entry: Entry, d: "ast.Call") -> bool:
    if not d.args or not (isinstance(d.args[0], ast.Constant) and isinstance(d.args[0].value, str)):
        return False
    kw = {k.arg: k.value for k in d.keywords if k.arg}
    name = d.args[0].value.replace("-", "_").lower()
    why = "" if "default" in kw else f"the argument {name} is given on the command line"
    if "nargs" in kw or "envvar" in kw:
        return False
    entry.params[name] = Param(name, kw.get("default"), entry.frame.parent, _click_type(kw.get("type"), kw.get("default")),
                               why, name)
    entry.positionals.append(name)
    return True


# ---------------------------------------------------------------- typer
#: ``typer.Typer(...)`` settings that leave one command's parsing as typer's default
_TYPER_PLAIN = frozenset({"help", "add_completion", "rich_markup_mode", "pretty_exceptions_enable",
                          "pretty_exceptions_show_locals", "pretty_exceptions_short", "name", "epilog",
                          "short_help", "no_args_is_help", "add_help_option", "hidden", "deprecated"})


def _typer_app_runs(script: "Script", tree: "ast.Module", node: "ast.FunctionDef | ast.AsyncFunctionDef") -> bool:
    """``node`` is the one command of a module-level ``app = typer.Typer(...)`` that ``app()``
    runs (no callback, no other command, no sub-app): typer then needs no command word."""
    for d in node.decorator_list:
        f = d.func if isinstance(d, ast.Call) else None
        if not (isinstance(f, ast.Attribute) and f.attr == "command" and isinstance(f.value, ast.Name)):
            continue
        app = f.value.id
        makers = [n for n in tree.body if isinstance(n, ast.Assign) and app in _bound_names(n)]
        if len(makers) != 1 or not isinstance(makers[0].value, ast.Call) \
                or not _is(script, makers[0].value, {"typer.Typer", "typer.main.Typer"}):
            return False
        if any(k.arg not in _TYPER_PLAIN for k in makers[0].value.keywords) or makers[0].value.args:
            return False
        if any(k.arg not in ("help", "short_help", "epilog") for k in (d.keywords if isinstance(d, ast.Call) else ())):
            return False
        uses = [n for n in ast.walk(tree) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
                and n.value.id == app]
        if any(u.attr != "command" for u in uses) or len(uses) != 1:
            return False  # a callback, a second command, add_typer(...): a command word or more
        return bool(_calls_of(tree, app)) and all(not c.args and not c.keywords for c in _calls_of(tree, app))
    return False


def _typer(script: "Script", tree: "ast.Module", node: "ast.FunctionDef | ast.AsyncFunctionDef") -> Entry | None:
    runs = [c for c in ast.walk(tree) if isinstance(c, ast.Call) and _is(script, c, {"typer.run", "typer.main.run"})]
    by_run = any(len(c.args) == 1 and not c.keywords and isinstance(c.args[0], ast.Name) and c.args[0].id == node.name
                 for c in runs)
    if not by_run and not _typer_app_runs(script, tree, node):
        return None
    if by_run and node.decorator_list:
        return None
    frame = _only_function(script, tree, node.name)
    if frame is None or [c for c in _calls_of(tree, node.name)]:
        return None  # called from Python too: its parameters are not only the command line's
    a = node.args
    if a.vararg is not None or a.kwarg is not None or a.posonlyargs:
        return None
    entry = Entry("typer", frame, node.name)
    regular = a.args
    first = len(regular) - len(a.defaults)
    pairs = [(prm, a.defaults[i - first] if i >= first else None) for i, prm in enumerate(regular)]
    pairs += list(zip(a.kwonlyargs, a.kw_defaults))
    for prm, dflt in pairs:
        if not _typer_param(script, entry, prm, dflt):
            return None
    return entry


def _typer_annotation(script: "Script", ann: "ast.expr | None") -> "tuple[str | None, ast.Call | None, bool]":
    """(type, the ``typer.Option``/``typer.Argument`` of an ``Annotated[...]``, parsable): the
    type a word converts to (None: any), and False for a type parallint does not follow (a list,
    an enum, a path class: how many words or which values it takes)."""
    info = None
    if isinstance(ann, ast.Subscript) and _tail(ann.value) == "Annotated" and isinstance(ann.slice, ast.Tuple) \
            and ann.slice.elts:
        for extra in ann.slice.elts[1:]:
            if isinstance(extra, ast.Call) and _is(script, extra, {"typer.Option", "typer.Argument",
                                                                   "typer.params.Option", "typer.params.Argument"}):
                info = extra
        ann = ann.slice.elts[0]
    if isinstance(ann, ast.Subscript) and _tail(ann.value) == "Optional":
        ann = ann.slice
    if isinstance(ann, ast.BinOp) and isinstance(ann.op, ast.BitOr):  # int | None
        sides = [x for x in (ann.left, ann.right) if not (isinstance(x, ast.Constant) and x.value is None)]
        ann = sides[0] if len(sides) == 1 else None
    if ann is None:
        return "str", info, True
    if isinstance(ann, ast.Name) and ann.id in ("int", "float", "str", "bool"):
        return ann.id, info, True
    if isinstance(ann, ast.Constant) and isinstance(ann.value, str) and ann.value in ("int", "float", "str", "bool"):
        return ann.value, info, True
    if isinstance(ann, ast.Attribute) and ann.attr == "Context":
        return "context", info, True
    return None, info, False


def _typer_param(script: "Script", entry: Entry, prm: "ast.arg", dflt: "ast.expr | None") -> bool:
    typ, info, ok = _typer_annotation(script, prm.annotation)
    if typ == "context":
        return True  # typer.Context: not on the command line
    if not ok:
        return False
    name = prm.arg
    decls: list[str] = []
    kind = "option" if dflt is not None else "argument"
    why = ""
    if isinstance(dflt, ast.Call) and _is(script, dflt, {"typer.Option", "typer.Argument", "typer.params.Option",
                                                         "typer.params.Argument"}):
        info, kind_of = dflt, dflt  # the old spelling: typer.Option(default, "--name", ...)
        kind = "argument" if _tail(kind_of.func) == "Argument" else "option"
        kw = {k.arg: k.value for k in dflt.keywords if k.arg}
        if any(k.arg is None for k in dflt.keywords):
            return False
        dflt = kw.get("default", dflt.args[0] if dflt.args else None)
        for d in kind_of.args[1:]:
            if not (isinstance(d, ast.Constant) and isinstance(d.value, str)):
                return False
            decls.append(d.value)
        info_kw = kw
    elif info is not None:
        kind = "argument" if _tail(info.func) == "Argument" else "option"
        info_kw = {k.arg: k.value for k in info.keywords if k.arg}
        if any(k.arg is None for k in info.keywords):
            return False
        for d in info.args:
            if not (isinstance(d, ast.Constant) and isinstance(d.value, str)):
                return False
            decls.append(d.value)
        if "default" in info_kw:
            dflt = info_kw["default"]
    else:
        info_kw = {}
    if isinstance(dflt, ast.Constant) and dflt.value is Ellipsis:
        dflt = None
        why = f"{name} is required"
    if any(k in info_kw for k in ("envvar", "callback", "parser", "click_type", "count", "prompt", "is_flag",
                                  "flag_value", "default_factory")):
        why = why or f"{name} may be set another way (envvar, prompt, callback)"
        if any(k in info_kw for k in ("callback", "parser", "click_type", "count", "is_flag", "flag_value")):
            return False
    if dflt is not None and not _literal(dflt)[0]:
        why = why or f"the default of {name} is computed when the command runs"
    if kind == "argument":
        if decls:
            return False
        entry.params[name] = Param(name, dflt, entry.frame.parent, typ,
                                   why or ("" if dflt is not None else f"the argument {name} is given on the command line"),
                                   name)
        entry.positionals.append(name)
        return True
    on: list[str] = []
    off: list[str] = []
    for decl in decls:
        yes, sep, no = decl.partition("/")
        if yes.strip():
            on.append(yes.strip())
        if sep:
            off.append(no.strip())
    if not on:
        on = ["--" + name.replace("_", "-")]
        if typ == "bool" and not decls:
            off = ["--no-" + name.replace("_", "-")]
    if dflt is None and not why:
        why = f"{on[0]} is required"
    entry.params[name] = Param(name, dflt, entry.frame.parent, typ, why, on[0])
    for w in on:
        entry.options[w] = (name, "true" if typ == "bool" else "store", typ)
    for w in off:
        entry.options[w] = (name, "false", "bool")
    return True


# ---------------------------------------------------------------- fire
def _fire(script: "Script", tree: "ast.Module", call: "ast.Call") -> Entry | None:
    if len(call.args) != 1 or call.keywords or not isinstance(call.args[0], ast.Name):
        return None  # fire.Fire(), a class, a dict, command=...: not one function
    name = call.args[0].id
    frame = _only_function(script, tree, name)
    if frame is None or _calls_of(tree, name):
        return None  # called elsewhere too: its parameters are not only the command line's
    node = frame.node
    entry = Entry("fire", frame, name)
    a = node.args
    regular = a.posonlyargs + a.args
    first = len(regular) - len(a.defaults)
    for i, prm in enumerate(regular):
        dflt = a.defaults[i - first] if i >= first else None
        entry.params[prm.arg] = Param(prm.arg, dflt, frame.parent, None,
                                      "" if dflt is not None else f"{prm.arg} is given on the command line")
    for prm, dflt in zip(a.kwonlyargs, a.kw_defaults):
        entry.params[prm.arg] = Param(prm.arg, dflt, frame.parent, None,
                                      "" if dflt is not None else f"{prm.arg} is given on the command line")
    for p in entry.params.values():
        entry.options[f"--{p.name}"] = (p.name, "store", None)
        if "_" in p.name:
            entry.options[f"--{p.name.replace('_', '-')}"] = (p.name, "store", None)
    return entry


# ---------------------------------------------------------------- Hydra
DECORATORS = ("hydra_runner", "main")  # nemo.core.config.hydra_runner, hydra.main


def hydra_names(dec: ast.expr) -> tuple[str, str] | None:
    """``(config_path, config_name)`` of ``@hydra_runner(...)`` / ``@hydra.main(...)`` when both are
    literal strings, else None."""
    if not isinstance(dec, ast.Call):
        return None
    f = dec.func
    fname = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
    if fname not in DECORATORS or (fname == "main" and not (isinstance(f, ast.Attribute)
                                                            and isinstance(f.value, ast.Name) and f.value.id == "hydra")):
        return None
    kw = {k.arg: k.value for k in dec.keywords if k.arg}
    cpath, cname = kw.get("config_path"), kw.get("config_name")
    if not (isinstance(cpath, ast.Constant) and isinstance(cpath.value, str)
            and isinstance(cname, ast.Constant) and isinstance(cname.value, str)):
        return None
    return cpath.value, cname.value


def dotted_under(node: ast.expr, root: str) -> str:
    """``cfg.a.b`` / ``cfg.a["b"]`` -> ``"a.b"`` when the chain starts at the name ``root``."""
    parts: list[str] = []
    while True:
        if isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) \
                and isinstance(node.slice.value, str):
            parts.append(node.slice.value)
            node = node.value
        else:
            break
    if not parts or not (isinstance(node, ast.Name) and node.id == root):
        return ""
    return ".".join(reversed(parts))


def _hydra(script: "Script", tree: "ast.Module", node: "ast.FunctionDef | ast.AsyncFunctionDef",
           abspath: "Path | None") -> Entry | None:
    named = [n for n in map(hydra_names, node.decorator_list) if n is not None]
    if len(named) != 1 or len(node.decorator_list) != 1 or not node.args.args:
        return None
    frame = _only_function(script, tree, node.name)
    if frame is None:
        return None
    entry = Entry("hydra", frame, node.name)
    entry.cfg = node.args.args[0].arg
    for sub in ast.walk(node):
        targets: list[ast.expr] = []
        if isinstance(sub, ast.Assign):
            targets = list(sub.targets)
        elif isinstance(sub, (ast.AugAssign, ast.AnnAssign)):
            targets = [sub.target]
        elif isinstance(sub, ast.Call) and _tail(sub.func) in ("update", "merge", "merge_with", "unsafe_merge",
                                                                   "set_struct", "open_dict"):
            entry.assigned.append("")  # the config is changed wholesale
        for t in targets:
            for el in (t.elts if isinstance(t, (ast.Tuple, ast.List)) else [t]):
                if isinstance(el, ast.Name) and el.id == entry.cfg:
                    entry.assigned.append("")
                dotted = dotted_under(el, entry.cfg)
                if dotted:
                    entry.assigned.append(dotted)
    cpath, cname = named[0]
    entry.config_path = f"{cpath.rstrip('/')}/{cname}" if cpath else cname
    if abspath is not None:
        _hydra_config(entry, abspath)
    return entry


def _hydra_config(entry: Entry, abspath: "Path") -> None:
    """The primary config's scalars, read inside the repository (a side read of the script)."""
    from parallint.util.boundary import read_inside

    folder = abspath.parent
    name = entry.config_path if entry.config_path.endswith((".yaml", ".yml")) else entry.config_path + ".yaml"
    path = folder / name
    raw = read_inside(path, abspath, MAX_CONFIG_BYTES)
    if raw is None:
        return
    import yaml

    try:
        root = yaml.compose(raw.decode("utf-8", errors="replace"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except (yaml.YAMLError, RecursionError, MemoryError, ValueError):
        return
    if not isinstance(root, yaml.MappingNode):
        return
    try:
        entry.groups = {p.name for p in path.parent.iterdir() if p.is_dir()}
    except OSError:
        entry.groups = set()
    entry.config_dir, entry.script_abspath = path.parent, abspath
    certain = True
    choices: dict[str, str] = {}
    for k, v in root.value:
        if isinstance(k, yaml.ScalarNode) and k.value == "defaults":
            items = v.value if isinstance(v, yaml.SequenceNode) else None
            if items is None:
                certain = False
                continue
            words = []
            for i in items:
                if isinstance(i, yaml.ScalarNode):
                    words.append(i.value)
                    continue
                pair = _choice(i)
                if pair is None or pair[0] not in entry.groups or pair[0] in choices:
                    certain = False  # a config parallint does not compose (optional, override, @package)
                    words.append("")
                    continue
                choices[pair[0]] = pair[1]
                words.append(pair[0])
            others = [w for w in words if w != "_self_"]
            if others and words.count("_self_") != 1:
                certain = False  # Hydra 1.0 and 1.1 put a missing _self_ at different ends
            elif others and words[-1] != "_self_" and words[0] != "_self_":
                certain = False
            elif any(w not in choices for w in others):
                certain = False  # another config may override the primary's keys
            entry.self_last = not others or words[-1] == "_self_"
    _flatten(root, "", entry.config)
    entry.primary_keys = set(entry.config)
    for group, option in choices.items():
        got = group_config(entry, group, option)
        if got is None:
            certain = False
            continue
        entry.group_keys[group] = set(got)
        for key, val in got.items():
            if entry.self_last and key in entry.primary_keys:
                continue  # the primary, composed after the group, wins
            entry.config[key] = val
            entry.sources[key] = f"{group}/{option}.yaml {key[len(group) + 1:]}"
    entry.choices = choices
    entry.certain = certain


def _choice(node: "Any") -> "tuple[str, str] | None":
    """``model: llama7b`` of a defaults list: (group, option), None for anything else (a list of
    options, ``null``, ``optional``/``override``, a package ``@``, an absolute ``/group``)."""
    import yaml

    if not isinstance(node, yaml.MappingNode) or len(node.value) != 1:
        return None
    k, v = node.value[0]
    if not isinstance(k, yaml.ScalarNode) or not isinstance(v, yaml.ScalarNode):
        return None
    if not re.fullmatch(r"[A-Za-z_][\w-]*", k.value) or not re.fullmatch(r"[\w.-]+", v.value or ""):
        return None
    if v.value.lower() in ("null", "~") or v.tag.endswith(":null"):
        return None
    return k.value, v.value


def group_config(entry: Entry, group: str, option: str) -> "dict[str, tuple[object, int]] | None":
    """The scalars of ``<config folder>/<group>/<option>.yaml`` under ``group.`` (its default
    package), read inside the repository; None when it cannot be read as such (no file, not a
    mapping, its own defaults list, a ``# @package`` header)."""
    if entry.config_dir is None or entry.script_abspath is None or not re.fullmatch(r"[\w.-]+", option):
        return None
    from parallint.util.boundary import read_inside

    raw = read_inside(entry.config_dir / group / f"{option}.yaml", entry.script_abspath, MAX_CONFIG_BYTES)
    if raw is None:
        return None
    text = raw.decode("utf-8", errors="replace")
    if "@package" in text:
        return None
    import yaml

    try:
        root = yaml.compose(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except (yaml.YAMLError, RecursionError, MemoryError, ValueError):
        return None
    if not isinstance(root, yaml.MappingNode):
        return None
    if any(isinstance(k, yaml.ScalarNode) and k.value == "defaults" for k, _ in root.value):
        return None
    out: dict[str, tuple[object, int]] = {}
    _flatten(root, group + ".", out)
    return out


def _flatten(node: "Any", prefix: str, out: "dict[str, tuple[object, int]]") -> None:
    import yaml

    for k, v in node.value:
        if not isinstance(k, yaml.ScalarNode) or k.value == "defaults":
            continue
        key = f"{prefix}{k.value}"
        if isinstance(v, yaml.MappingNode):
            _flatten(v, key + ".", out)
        elif isinstance(v, yaml.ScalarNode):
            out[key] = (_scalar(v.value, v.tag), v.start_mark.line + 1)


_UNKNOWN = object()


def _scalar(text: str, tag: str = "") -> object:
    """A YAML or Hydra-override scalar: int, float, bool, null or a plain string; ``_UNKNOWN`` for
    an interpolation (``${...}``), a sweep, a function or a quoted or structured value."""
    if "${" in text or "???" == text:
        return _UNKNOWN
    if tag and not tag.endswith((":int", ":float", ":bool", ":null", ":str")):
        return _UNKNOWN
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    if low in ("null", "~", ""):
        return None
    try:
        return int(text.replace("_", ""))
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        pass
    if any(c in text for c in ",()[]{}*'\"") or text.startswith(("interval", "choice", "range", "glob")):
        return _UNKNOWN
    return text


# ---------------------------------------------------------------- the launch line
def _launched(v: Value, source: str, value: object) -> Value:
    return Value(value, v.span, True, "", source, Origin(via="launcher"))


def _convert(word: str, typ: str | None) -> object:
    if typ == "int":
        return int(word)
    if typ == "float":
        return float(word)
    if typ == "bool":
        low = word.lower()
        if low in ("1", "true", "t", "yes", "y", "on"):
            return True
        if low in ("0", "false", "f", "no", "n", "off"):
            return False
        raise ValueError(word)
    if typ in (None, "str"):
        return word
    raise ValueError(word)


def _fire_value(word: str) -> object:
    """What fire makes of a word: a Python literal where it is one, else the string."""
    try:
        v = ast.literal_eval(word)
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
        return word
    return v if isinstance(v, (int, float, bool, str)) or v is None else _UNKNOWN


def bind(entry: Entry, words: list[Value]) -> dict[str, Value]:
    """``{parameter or dotted key: Value}`` for what the launch line gives the entry; ``ANY``
    (unknown) when a word parallint cannot read may give any of the others."""
    if entry.kind == "hydra":
        return _bind_hydra(entry, words)
    out: dict[str, Value] = {}
    pos = 0
    i, n = 0, len(words)
    while i < n:
        w = words[i]
        text = w.value if w.known and isinstance(w.value, str) else None
        if text is None:
            unknown_word(out, w)
            i += 1
            continue
        if text == "--":
            if entry.kind == "fire":
                break  # fire's own flags follow
            for k in entry.positionals[pos:]:
                out[k] = Value.unknown("positional arguments after --", w.span, "the launch line")
            break
        if not text.startswith("-") or text == "-" or text[1:2].isdigit():
            if entry.kind == "fire":  # fills the parameters not named, or calls what main returns
                for k in entry.params:
                    out.setdefault(k, Value.unknown(f"a positional word {text!r} on the launch line", w.span,
                                                    "the launch line"))
                break
            if pos < len(entry.positionals):
                p = entry.params[entry.positionals[pos]]
                pos += 1
                try:
                    out[p.name] = _launched(w, f"{p.name} on the launch line", _convert(text, p.typ))
                except ValueError:
                    out[p.name] = Value.unknown(f"{p.name} {text!r} does not convert", w.span, "the launch line")
            i += 1
            continue
        flag, eq, rest = text.partition("=") if text.startswith("--") else (text, "", "")
        opt = entry.options.get(flag)
        if opt is None and entry.kind == "fire" and flag.startswith("--no") and eq == "":
            base = entry.options.get("--" + flag[4:])
            if base is not None:
                out[base[0]] = _launched(w, f"{flag} on the launch line", False)
                i += 1
                continue
        if opt is None:
            # click stops on an option it does not know; fire may take a short flag for any name
            out.setdefault(ANY, Value.unknown(f"{flag} on the launch line", w.span, "the launch line"))
            break
        name, action, typ = opt
        source = f"{flag} on the launch line"
        if action in ("true", "false"):
            if eq:
                break
            out[name] = _launched(w, source, action == "true")
            i += 1
            continue
        if action == "many":
            out[name] = Value.unknown(f"{flag} takes words parallint does not follow", w.span, source)
            break
        if eq:
            word: Value | None = Value(rest, w.span, True, "", source)
            i += 1
        elif entry.kind == "fire" and (i + 1 >= n or (words[i + 1].known and str(words[i + 1].value).startswith("--"))):
            out[name] = _launched(w, source, True)  # fire: a flag alone is True
            i += 1
            continue
        else:
            word = words[i + 1] if i + 1 < n else None
            i += 2
        if word is None:
            break
        if not word.known or not isinstance(word.value, str):
            out[name] = Value.unknown(word.why or f"{flag} value", word.span, source)
            continue
        try:
            val = _fire_value(word.value) if entry.kind == "fire" else _convert(word.value, typ)
        except ValueError:
            val = _UNKNOWN
        if val is _UNKNOWN:
            out[name] = Value.unknown(f"{flag} {word.value!r} is not read", word.span, source)
            continue
        out[name] = _launched(word, source, val)
    return out


def _pick(entry: Entry, out: dict[str, Value], group: str, option: str, w: Value) -> None:
    """``model=llama70b`` on the launch line: the group's keys come from ``model/llama70b.yaml``
    (the primary's own keys still win when ``_self_`` is last); a key of the default choice the
    new file lacks is unknown. A value the line gives a key itself wins over the pick whatever its
    place (Hydra applies value overrides after composing)."""
    got = group_config(entry, group, option) if entry.certain else None
    source = f"{group}={option} on the launch line"
    if got is None:
        out[group] = Value.unknown(f"{group}={option}: a config parallint does not read", w.span, source)
        return
    for key, (val, _line) in got.items():
        if entry.self_last and key in entry.primary_keys:
            continue
        where = f"{source} ({group}/{option}.yaml {key[len(group) + 1:]})"
        if val is _UNKNOWN:
            out.setdefault(key, Value.unknown(f"{key} of {group}/{option}.yaml is not read", w.span, where))
        else:
            out.setdefault(key, _launched(w, where, val))
    for key in entry.group_keys.get(group, set()) - set(got):
        if not (entry.self_last and key in entry.primary_keys):
            out.setdefault(key, Value.unknown(f"{key} is not in {group}/{option}.yaml", w.span, source))


def _bind_hydra(entry: Entry, words: list[Value]) -> dict[str, Value]:
    out: dict[str, Value] = {}
    multirun = False
    i, n = 0, len(words)
    while i < n:
        w = words[i]
        text = w.value if w.known and isinstance(w.value, str) else None
        i += 1
        if text is None:
            unknown_word(out, w)
            continue
        if text in ("-m", "--multirun"):
            multirun = True
            continue
        if text.startswith("-"):
            flag, eq, _rest = text.partition("=")
            if flag in ("-cn", "--config-name", "-cp", "--config-path", "-cd", "--config-dir"):
                out[ANY] = Value.unknown(f"{flag}: another config", w.span, "the launch line")
                i += 0 if eq else 1
                continue
            out[ANY] = Value.unknown(f"{flag} on the launch line", w.span, "the launch line")
            continue
        if text.startswith("~"):
            out[text[1:].partition("=")[0]] = Value.unknown(f"{text} deletes the key", w.span, "the launch line")
            continue
        key, eq, rest = text.lstrip("+").partition("=")
        if not eq or not key:
            continue
        source = f"{key}={rest} on the launch line"
        sub = Value(rest, w.span, True, "", source)
        val = _scalar(rest)
        if key in entry.choices and not text.startswith("+") and not (multirun and "," in rest):
            _pick(entry, out, key, rest, w)  # model=llama70b: another file of the group
            continue
        if key in entry.groups or (multirun and "," in rest):
            out[key] = Value.unknown(f"{key}={rest} picks a config or sweeps", w.span, source)
            continue
        if val is _UNKNOWN:
            out[key] = Value.unknown(f"{key}={rest} is not read", w.span, source)
            continue
        out[key] = _launched(sub, source, val)
    return out
