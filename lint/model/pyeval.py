"""Static value resolution for Python scripts: what an expression evaluates to, when the code shows it.

Known: literals, module and function constants (a name bound exactly once, by a plain assignment),
simple arithmetic, ``dict(...)`` and ``**kwargs`` built from literals, ``int()/float()/str()/bool()``
of a known value, ``len()`` of a literal, argparse defaults flowing through ``args.x``.
Unknown (with why): the environment (``os.environ``, ``os.getenv``), parameters, attributes of
objects, calls, anything bound more than once. Nothing here runs, imports or evaluates user code.

Used by :class:`parallint.model.script.Script` (built by :mod:`parallint.readers.python`); nodes
are CPython ``ast`` nodes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

import ast

from parallint.model.facts import Value
from parallint.model.pyshared import GLOBAL_RANK_ENV, LOCAL_RANK_ENV, call_args, env_name, string_literal  # noqa: F401 - re-exported
from parallint.model.pyshared import dotted as _dotted_name

if TYPE_CHECKING:  # pragma: no cover
    from parallint.model.script import Frame, Script

MAX_DEPTH = 12
from parallint.model.pyshared import MULTI  # noqa: E402,F401 - one sentinel for the evaluator and the script

def _concatenated(script: "Script", node: Any) -> bool:
    """An f-string written as several string literals side by side."""
    import io
    import tokenize

    src = script.source(node)
    kinds = {tokenize.STRING, getattr(tokenize, "FSTRING_START", -1)}
    n = depth = 0
    try:
        for tok in tokenize.generate_tokens(io.StringIO(src).readline):
            if tok.type == getattr(tokenize, "FSTRING_START", -1):
                depth += 1
                if depth == 1:
                    n += 1
            elif tok.type == getattr(tokenize, "FSTRING_END", -1):
                depth -= 1
            elif tok.type in kinds and depth == 0:
                n += 1
    except (tokenize.TokenError, SyntaxError, ValueError):
        return False
    return n > 1


def _debug(script: "Script", p: Any) -> bool:
    """``{x=}``: a self-documenting expression without conversion or format (LibCST evaluated it
    as ``{x}``)."""
    v = p.value
    try:
        off = script._offset(v.end_lineno, v.end_col_offset)
    except (AttributeError, TypeError):
        return False
    rest = script.text[off:off + 200].lstrip()
    return rest.startswith("=") and rest[1:].lstrip().startswith("}")


#: the LibCST names of expression types the evaluator does not follow (its "why")
_CST_NAMES = {"Compare": "Comparison", "BoolOp": "BooleanOperation", "Starred": "StarredElement",
              "JoinedStr": "FormattedString", "Slice": "Slice"}


class Evaluator:
    """Resolves expressions of one script. ``frame`` is the scope the expression appears in."""

    def __init__(self, script: "Script") -> None:
        self.script = script
        self._bound_span: Any = None  # the launch-line word of a bound argument the value used

    # ------------------------------------------------------------------ public
    def value(self, node: Any | None, frame: "Frame", depth: int = 0, with_span: bool = True) -> Value:
        """``with_span=False`` leaves the span out (positions cost a pass over the whole file)."""
        span = self.script.span_of(node) if node is not None and with_span else None
        if node is None:
            return Value.unknown("no expression", span)
        self._bound_span = None
        try:
            v, source = self._eval(node, frame, depth)
            if self._bound_span is not None and with_span:
                span = self._bound_span
        except _Unknown as u:
            return Value.unknown(u.why, span, u.source)
        except (RecursionError, ArithmeticError, ValueError, TypeError, OverflowError, MemoryError):
            return Value.unknown("cannot evaluate", span)
        return Value(v, span, True, "", source)

    # ------------------------------------------------------------------ internals
    def _eval(self, node: Any, frame: "Frame", depth: int) -> tuple[Any, str]:
        if depth > MAX_DEPTH:
            raise _Unknown("too deep")
        def ev(n: Any) -> Any:
            return self._eval(n, frame, depth + 1)[0]

        t = type(node)
        if t is ast.Constant:
            v = node.value
            tv = type(v)
            if tv is str or tv is int or tv is float or tv is bool or v is None:
                return v, ""
            if tv is bytes:
                raise _Unknown("not a plain string")
            raise _Unknown("Ellipsis" if v is Ellipsis else "Imaginary")
        if t is ast.JoinedStr:
            if _concatenated(self.script, node):
                raise _Unknown("not a plain string")  # "a" f"{b}": LibCST's ConcatenatedString
            parts: list[str] = []
            for p in node.values:
                if type(p) is ast.Constant:
                    parts.append(str(p.value))
                elif type(p) is ast.FormattedValue and p.format_spec is None and (
                        p.conversion == -1 or (p.conversion == 114 and _debug(self.script, p))):
                    parts.append(str(ev(p.value)))
                else:
                    raise _Unknown("formatted string")
            return "".join(parts), ""
        if t is ast.Name:
            return self._name(node, frame, depth)
        if t is ast.UnaryOp:
            v = ev(node.operand)
            op = type(node.op)
            if op is ast.USub:
                return _num(v) * -1, ""
            if op is ast.UAdd:
                return +_num(v), ""
            if op is ast.Not:
                return (not v), ""
            raise _Unknown("operator")
        if t is ast.BinOp:
            a, b = ev(node.left), ev(node.right)
            return _binop(node.op, a, b), ""
        if t is ast.List or t is ast.Tuple or t is ast.Set:
            items = []
            for el in node.elts:
                if type(el) is ast.Starred:
                    items.extend(list(ev(el.value)))
                else:
                    items.append(ev(el))
            if t is ast.Tuple:
                return tuple(items), ""
            return (set(items) if t is ast.Set else items), ""
        if t is ast.Dict:
            out: dict[Any, Any] = {}
            for k, dv in zip(node.keys, node.values):
                if k is None:
                    d = ev(dv)
                    if not isinstance(d, dict):
                        raise _Unknown("not a dict")
                    out.update(d)
                else:
                    out[ev(k)] = ev(dv)
            return out, ""
        if t is ast.Call:
            return self._call(node, frame, depth)
        if t is ast.Attribute:
            return self._attribute(node, frame, depth)
        if t is ast.Subscript:
            name = env_name(self.script, node)
            if name is not None:
                return self._env(node, name)
            raise _Unknown("subscript")
        raise _Unknown(_CST_NAMES.get(t.__name__, t.__name__))

    def _name(self, node: Any, frame: "Frame", depth: int) -> tuple[Any, str]:
        binding = self.script.binding(node.id, frame)
        if binding is None:
            got = self._entry_param(node.id, frame, depth)
            if got is not None:
                return got
            raise _Unknown(f"{node.id} is not a constant")
        expr, bframe = binding
        v, src = self._eval(expr, bframe, depth + 1)
        return v, src or f"constant {node.id}"

    def _entry_frame(self, name: str, frame: "Frame") -> Any:
        """The script's command-line entry (:mod:`parallint.readers.pycli`) when ``name`` in
        ``frame`` is a parameter of its function that the function never rebinds."""
        entry = getattr(self.script, "cli_entry", None)
        if entry is None:
            return None
        f: Frame | None = frame
        while f is not None and name not in f.params:
            if name in f.bindings:
                return None
            f = f.parent
        if f is None or f is not entry.frame or name in f.bindings:
            return None
        return entry

    def _entry_param(self, name: str, frame: "Frame", depth: int) -> tuple[Any, str] | None:
        """A click option's or fire parameter's value: the launch line's word, else its default."""
        entry = self._entry_frame(name, frame)
        if entry is None or entry.kind == "hydra":
            return None
        param = entry.params.get(name)
        if param is None:
            return None
        ov = self.script.cli_overrides
        if ov is not None:
            bound = ov.get(name)
            if bound is None:
                bound = ov.get("*")
            if bound is not None:
                if not bound.known:
                    raise _Unknown(bound.why or f"{name} on the launch line", bound.source)
                if self._bound_span is None:
                    self._bound_span = bound.span
                return bound.value, bound.source
        if param.why or param.default is None:
            raise _Unknown(param.why or f"{name} has no default")
        v, _ = self._eval(param.default, param.dframe, depth + 1)
        if param.typ in ("int", "float") and isinstance(v, str):
            v = int(v) if param.typ == "int" else float(v)
        return v, f"{entry.kind} default of {param.flag or name}"

    def _hydra_key(self, node: Any, frame: "Frame") -> tuple[Any, str] | None:
        """``cfg.a.b`` in a Hydra entry function: the launch line's override, else the config's."""
        parts: list[str] = []
        while type(node) is ast.Attribute:
            parts.append(node.attr)
            node = node.value
        if type(node) is not ast.Name or not parts:
            return None
        entry = self._entry_frame(node.id, frame)
        if entry is None or entry.kind != "hydra" or node.id != entry.cfg:
            return None
        v = entry.key_value(".".join(reversed(parts)), self.script.cli_overrides)
        if not v.known:
            raise _Unknown(v.why, v.source)
        if v.span is not None and self._bound_span is None:
            self._bound_span = v.span
        return v.value, v.source

    def _dataclass_field(self, node: Any, frame: "Frame", depth: int) -> tuple[Any, str] | None:
        """``cfg.tp`` where ``cfg = Config(...)`` builds a @dataclass of this file: the keyword
        passed for the field, else its default. None when that is not what the code shows.
        ``cfg.parallel.tp`` follows a field that holds another dataclass of the file
        (``parallel: Parallel = field(default_factory=Parallel)``, or ``Config(parallel=Parallel(...))``)."""
        dotted = _dotted_name(node)
        if dotted is None:
            return None
        if self.script.attr_bindings.get(dotted):
            return None  # the field is assigned somewhere: not the default
        got = self._instance(node.value, frame, depth)
        if got is None:
            return None
        cls, call, cframe = got
        fname, attr = cls.name, node.attr
        for k in call.keywords:
            if k.arg == attr:
                v, _ = self._eval(k.value, cframe, depth + 1)
                return v, f"{fname}({attr}=...)"
        bs = cls.bindings.get(attr)
        if not bs or len(bs) != 1 or bs[0] is MULTI:
            return None
        v, _ = self._eval(bs[0], cls, depth + 1)
        return v, f"default of {fname}.{attr}"

    def _instance(self, expr: Any, frame: "Frame", depth: int) -> "tuple[Frame, Any, Frame] | None":
        """The dataclass of this file an expression holds, with the call that built it (keywords
        only) and the frame of that call: ``cfg`` bound to (or passed as) ``Config(...)``, or
        ``cfg.parallel``, a field whose keyword or default builds another dataclass."""
        if depth > 8:
            return None
        if type(expr) is ast.Name:
            b = self.script.binding(expr.id, frame)
            if b is None:
                b = self._passed_at_one_site(expr.id, frame)
            if b is None:
                return None
            call, cframe = b
        elif type(expr) is ast.Attribute:
            if self.script.attr_bindings.get(_dotted_name(expr) or ""):
                return None
            outer = self._instance(expr.value, frame, depth + 1)
            if outer is None:
                return None
            ocls, ocall, oframe = outer
            kw = next((k.value for k in ocall.keywords if k.arg == expr.attr), None)
            if kw is not None:
                call, cframe = kw, oframe
            else:
                bs = ocls.bindings.get(expr.attr)
                if not bs or len(bs) != 1 or bs[0] is MULTI:
                    return None
                call, cframe = _factory_call(bs[0]), ocls
        else:
            return None
        if type(call) is not ast.Call or type(call.func) is not ast.Name:
            return None
        fname = call.func.id
        classes = self.script.classes.get(fname, [])
        if len(classes) != 1 or not classes[0].dataclass or fname in self.script.import_map:
            return None
        if call.args or any(k.arg is None for k in call.keywords):
            return None  # positional fields: the order is not followed here
        return classes[0], call, cframe

    def _passed_at_one_site(self, name: str, frame: "Frame") -> tuple[Any, "Frame"] | None:
        """``def main(cfg): ... cfg.shard`` with ``main(Config())`` the one call of a module
        function defined once, never passed as a value, that never rebinds ``cfg``: the argument
        expression and the caller's frame (:meth:`_dataclass_field` then reads the dataclass)."""
        f: Frame | None = frame
        while f is not None and name not in f.params:
            if name in f.bindings:
                return None
            f = f.parent
        if f is None or f.kind != "function" or f.cls is not None or name in f.bindings or f.node is None \
                or f.parent is None or f.parent.kind != "module":
            return None
        if len(self.script.functions.get(f.name, [])) != 1 or f.name in self.script.refs:
            return None
        sites = self.script.callsites.get(f.name, [])
        if len(sites) != 1 or sites[0][0] is None:
            return None
        call = sites[0][0]
        cnode = call.node
        if type(cnode.func) is not ast.Name or cnode.func.id != f.name:
            return None
        fargs = f.node.args
        if fargs.vararg is not None or fargs.kwarg is not None:
            return None
        positional = [a.arg for a in list(fargs.posonlyargs) + list(fargs.args)]
        if any(type(a) is ast.Starred for a in cnode.args) or any(k.arg is None for k in cnode.keywords):
            return None
        for k in cnode.keywords:
            if k.arg == name:
                return k.value, call.frame
        if name in positional:
            i = positional.index(name)
            if i < len(cnode.args):
                return cnode.args[i], call.frame
        return None

    def _attribute(self, node: Any, frame: "Frame", depth: int) -> tuple[Any, str]:
        got = self._dataclass_field(node, frame, depth)
        if got is not None:
            return got
        if getattr(self.script, "cli_entry", None) is not None:
            got = self._hydra_key(node, frame)
            if got is not None:
                return got
        # args.x where args came from argparse: the default of --x
        if type(node.value) is ast.Name and self.script.is_args_name(node.value.id, frame):
            arg = self.script.argparse.get(node.attr)
            if arg is not None:
                if arg is MULTI:
                    raise _Unknown(f"argument {node.attr} defined more than once")
                flag, default, dframe, action, typ = arg
                ov = self.script.cli_overrides
                if ov is not None and node.attr not in ov and "*" in ov:
                    raise _Unknown(ov["*"].why or f"{flag} may be given on the launch line", ov["*"].source)
                if ov is not None and node.attr in ov:
                    if self.script.attr_bindings.get(f"{node.value.id}.{node.attr}"):
                        raise _Unknown(f"{node.value.id}.{node.attr} is reassigned after parsing")
                    bound = ov[node.attr]
                    if not bound.known:
                        raise _Unknown(bound.why or f"{flag} on the launch line", bound.source)
                    if self._bound_span is None:
                        self._bound_span = bound.span
                    return bound.value, bound.source
                sd = self.script.argparse_set_defaults.get(node.attr)
                if sd is not None:
                    if len(sd) != 1:
                        raise _Unknown(f"set_defaults({node.attr}=...) more than once")
                    default, dframe = sd[0]
                if default is None:
                    if action == "store_true":
                        return False, f"argparse default of {flag}"
                    if action == "store_false":
                        return True, f"argparse default of {flag}"
                    return None, f"argparse default of {flag}"
                v, _ = self._eval(default, dframe, depth + 1)
                if typ in ("int", "float") and isinstance(v, str):
                    v = int(v) if typ == "int" else float(v)
                return v, f"argparse default of {flag}"
        raise _Unknown(f"attribute {node.attr}")

    def _env(self, node: Any, name: str) -> tuple[Any, str]:
        """An environment variable the launch provably gives the script (``WORLD_SIZE`` of a
        torchrun or deepspeed launch whose world is known, a known ``export``), as the string it
        is, or as an int inside ``int(...)``; unknown otherwise (never the read's own default)."""
        env = self.script.env_overrides
        v = env.get(name) if env else None
        if v is None or not v.known:
            raise _Unknown(f"environment variable {name}", f"env:{name}")
        text = str(v.value)
        if type(node) is ast.Call and self.script.qname_in(node.func, {"builtins.int", "int"}):
            try:
                return int(text), v.source
            except ValueError:
                raise _Unknown(f"environment variable {name}={text!r} is not an int", f"env:{name}") from None
        return text, v.source  # the finding stays where the script uses it

    def _call(self, node: Any, frame: "Frame", depth: int) -> tuple[Any, str]:
        script = self.script
        name = env_name(script, node)
        if name is not None:
            return self._env(node, name)
        func = node.func
        fname = func.id if type(func) is ast.Name else None
        args = call_args(node)
        if fname == "range" and script.is_builtin(func) and 1 <= len(args) <= 3:
            xs = []
            for a in args:
                if a.keyword is not None or a.star:
                    raise _Unknown("range() call")
                xs.append(_num(self._eval(a.value, frame, depth + 1)[0]))
            r = range(*[int(x) for x in xs])
            if len(r) > 4096:
                raise _Unknown("huge range")
            return list(r), ""
        if fname in ("int", "float", "str", "bool", "len", "dict", "tuple", "list") and script.is_builtin(func):
            if fname == "dict":
                out = {}
                for a in args:
                    if a.keyword is not None:
                        out[a.keyword] = self._eval(a.value, frame, depth + 1)[0]
                    elif a.star == "**":
                        d = self._eval(a.value, frame, depth + 1)[0]
                        if not isinstance(d, dict):
                            raise _Unknown("not a dict")
                        out.update(d)
                    else:
                        d = self._eval(a.value, frame, depth + 1)[0]
                        out.update(dict(d))
                return out, ""
            if len(args) != 1 or args[0].keyword is not None or args[0].star:
                raise _Unknown(f"{fname}() call")
            v, src = self._eval(args[0].value, frame, depth + 1)
            if fname == "int":
                if isinstance(v, bool):
                    return int(v), src
                if isinstance(v, float):
                    return int(v), src
                return int(v), src
            convs: dict[str, Callable[[Any], Any]] = {
                "float": float, "str": str, "bool": bool, "len": len, "tuple": tuple, "list": list}
            return convs[fname](v), src
        if fname is not None and not args:
            got = self._returned(fname, depth)
            if got is not None:
                return got
        raise _Unknown("function call")

    def _returned(self, fname: str, depth: int) -> tuple[Any, str] | None:
        """``f()`` for a function this file defines once, without parameters, that returns one
        expression: that expression's value (``def get_degrees(): return 2, 4``)."""
        script = self.script
        frames = script.functions.get(fname, [])
        if len(frames) != 1 or fname in script.import_map:
            return None
        fr = frames[0]
        if fr.has_params or fr.cls is not None or len(fr.returns) != 1 or fr.returns[0] is None \
                or fr.returns[0] is MULTI:
            return None
        v, _ = self._eval(fr.returns[0], fr, depth + 1)
        return v, f"return value of {fname}()"


class _Unknown(Exception):
    def __init__(self, why: str, source: str = "") -> None:
        super().__init__(why)
        self.why = why
        self.source = source


def _num(v: Any) -> Any:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise _Unknown("not a number")
    return v


def _binop(op: ast.operator, a: Any, b: Any) -> Any:
    t = type(op)
    if t is ast.Add:
        if isinstance(a, str) and isinstance(b, str):
            return a + b
        if isinstance(a, list) and type(a) is type(b):
            return a + b
        if isinstance(a, tuple) and type(a) is type(b):
            return a + b
        return _num(a) + _num(b)
    if t is ast.Sub:
        return _num(a) - _num(b)
    if t is ast.Mult:
        if isinstance(a, (list, tuple, str)) and isinstance(b, int) and not isinstance(b, bool) and 0 <= b <= 4096:
            return a * b
        return _num(a) * _num(b)
    if t is ast.FloorDiv:
        return _num(a) // _num(b)
    if t is ast.Div:
        return _num(a) / _num(b)
    if t is ast.Mod:
        if isinstance(a, str):
            raise _Unknown("string formatting")
        return _num(a) % _num(b)
    if t is ast.Pow:
        a, b = _num(a), _num(b)
        if abs(b) > 64:
            raise _Unknown("huge power")
        return a**b
    raise _Unknown("operator")




def _factory_call(expr: Any) -> Any:
    """A field's default as the call that builds it: ``Parallel()`` itself, or
    ``field(default_factory=Parallel)`` read as ``Parallel()``."""
    if type(expr) is ast.Call and type(expr.func) is ast.Name and expr.func.id == "field" and not expr.args:
        kws = {k.arg: k.value for k in expr.keywords}
        fac = kws.get("default_factory")
        if fac is not None and type(fac) is ast.Name and set(kws) <= {"default_factory", "metadata", "repr",
                                                                      "compare", "hash", "init", "kw_only"}:
            return ast.Call(func=ast.Name(id=fac.id, ctx=ast.Load()), args=[], keywords=[])
    return expr
