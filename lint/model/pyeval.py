"""Static value resolution for Python scripts: what an expression evaluates to, when the code shows it.

Known: literals, module and function constants (a name bound exactly once, by a plain assignment),
simple arithmetic, ``dict(...)`` and ``**kwargs`` built from literals, ``int()/float()/str()/bool()``
of a known value, ``len()`` of a literal, argparse defaults flowing through ``args.x``.
Unknown (with why): the environment (``os.environ``, ``os.getenv``), parameters, attributes of
objects, calls, anything bound more than once. Nothing here runs, imports or evaluates user code.

Used by :class:`parallint.model.script.Script` (built by :mod:`parallint.readers.python`, which
imports libcst before this module runs).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import libcst as cst

from parallint.facts import Value

if TYPE_CHECKING:  # pragma: no cover
    from parallint.model.script import Frame, Script

MAX_DEPTH = 12
from parallint.model.pyshared import MULTI  # noqa: E402,F401 - one sentinel for the evaluator and the script

#: environment variables that carry the global rank / local rank
GLOBAL_RANK_ENV = frozenset({"RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"})
LOCAL_RANK_ENV = frozenset({"LOCAL_RANK", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID"})

_STRING_PREFIX = re.compile(r"^[rRbBuUfF]*")


def string_literal(node: cst.CSTNode) -> str | None:
    """The value of a plain (non-f) string literal or an implicit concatenation of them."""
    if isinstance(node, cst.SimpleString):
        try:
            v = node.evaluated_value
        except Exception:  # pragma: no cover - malformed escapes
            return None
        return v if isinstance(v, str) else None
    if isinstance(node, cst.ConcatenatedString):
        a, b = string_literal(node.left), string_literal(node.right)
        if a is None or b is None:
            return None
        return a + b
    return None


def env_name(script: "Script", node: cst.CSTNode) -> str | None:
    """``os.environ["X"]``, ``os.environ.get("X", ...)``, ``os.getenv("X")`` (optionally in int()) -> X."""
    if isinstance(node, cst.Call) and script.qname_in(node.func, {"builtins.int", "int"}) and node.args:
        return env_name(script, node.args[0].value)
    if isinstance(node, cst.Subscript) and script.qname_in(node.value, {"os.environ"}):
        if len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index):
            return string_literal(node.slice[0].slice.value)
    if isinstance(node, cst.Call) and script.qname_in(node.func, {"os.environ.get", "os.getenv"}):
        if node.args and node.args[0].keyword is None:
            return string_literal(node.args[0].value)
    return None


class Evaluator:
    """Resolves expressions of one script. ``frame`` is the scope the expression appears in."""

    def __init__(self, script: "Script") -> None:
        self.script = script

    # ------------------------------------------------------------------ public
    def value(self, node: cst.CSTNode | None, frame: "Frame", depth: int = 0, with_span: bool = True) -> Value:
        """``with_span=False`` leaves the span out (positions cost a pass over the whole file)."""
        span = self.script.span_of(node) if node is not None and with_span else None
        if node is None:
            return Value.unknown("no expression", span)
        try:
            v, source = self._eval(node, frame, depth)
        except _Unknown as u:
            return Value.unknown(u.why, span, u.source)
        except (RecursionError, ArithmeticError, ValueError, TypeError, OverflowError, MemoryError):
            return Value.unknown("cannot evaluate", span)
        return Value(v, span, True, "", source)

    # ------------------------------------------------------------------ internals
    def _eval(self, node: cst.CSTNode, frame: "Frame", depth: int) -> tuple[Any, str]:
        if depth > MAX_DEPTH:
            raise _Unknown("too deep")
        ev = lambda n: self._eval(n, frame, depth + 1)[0]  # noqa: E731
        if isinstance(node, cst.Integer):
            return node.evaluated_value, ""
        if isinstance(node, cst.Float):
            return node.evaluated_value, ""
        if isinstance(node, (cst.SimpleString, cst.ConcatenatedString)):
            s = string_literal(node)
            if s is None:
                raise _Unknown("not a plain string")
            return s, ""
        if isinstance(node, cst.FormattedString):
            parts = []
            for p in node.parts:
                if isinstance(p, cst.FormattedStringText):
                    parts.append(p.value)
                elif isinstance(p, cst.FormattedStringExpression) and p.format_spec is None and p.conversion is None:
                    parts.append(str(ev(p.expression)))
                else:
                    raise _Unknown("formatted string")
            return "".join(parts), ""
        if isinstance(node, cst.Name):
            if node.value in ("True", "False", "None"):
                return {"True": True, "False": False, "None": None}[node.value], ""
            return self._name(node, frame, depth)
        if isinstance(node, cst.UnaryOperation):
            v = ev(node.expression)
            if isinstance(node.operator, cst.Minus):
                return _num(v) * -1, ""
            if isinstance(node.operator, cst.Plus):
                return +_num(v), ""
            if isinstance(node.operator, cst.Not):
                return (not v), ""
            raise _Unknown("operator")
        if isinstance(node, cst.BinaryOperation):
            a, b = ev(node.left), ev(node.right)
            return _binop(node.operator, a, b), ""
        if isinstance(node, (cst.List, cst.Tuple, cst.Set)):
            items = []
            for el in node.elements:
                if isinstance(el, cst.StarredElement):
                    items.extend(list(ev(el.value)))
                else:
                    items.append(ev(el.value))
            if isinstance(node, cst.Tuple):
                return tuple(items), ""
            return (set(items) if isinstance(node, cst.Set) else items), ""
        if isinstance(node, cst.Dict):
            out: dict = {}
            for el in node.elements:
                if isinstance(el, cst.StarredDictElement):
                    d = ev(el.value)
                    if not isinstance(d, dict):
                        raise _Unknown("not a dict")
                    out.update(d)
                else:
                    out[ev(el.key)] = ev(el.value)
            return out, ""
        if isinstance(node, cst.Call):
            return self._call(node, frame, depth)
        if isinstance(node, cst.Attribute):
            return self._attribute(node, frame, depth)
        if isinstance(node, cst.Subscript):
            name = env_name(self.script, node)
            if name is not None:
                raise _Unknown(f"environment variable {name}", f"env:{name}")
            raise _Unknown("subscript")
        raise _Unknown(type(node).__name__)

    def _name(self, node: cst.Name, frame: "Frame", depth: int) -> tuple[Any, str]:
        binding = self.script.binding(node.value, frame)
        if binding is None:
            raise _Unknown(f"{node.value} is not a constant")
        expr, bframe = binding
        v, src = self._eval(expr, bframe, depth + 1)
        return v, src or f"constant {node.value}"

    def _dataclass_field(self, node: cst.Attribute, frame: "Frame", depth: int):
        """``cfg.tp`` where ``cfg = Config(...)`` builds a @dataclass of this file: the keyword
        passed for the field, else its default. None when that is not what the code shows."""
        if not isinstance(node.value, cst.Name):
            return None
        b = self.script.binding(node.value.value, frame)
        if b is None or not isinstance(b[0], cst.Call) or not isinstance(b[0].func, cst.Name):
            return None
        call, cframe = b
        if self.script.attr_bindings.get(f"{node.value.value}.{node.attr.value}"):
            return None  # the field is assigned somewhere: not the default
        classes = self.script.classes.get(call.func.value, [])
        if len(classes) != 1 or not classes[0].dataclass or call.func.value in self.script.import_map:
            return None
        cls, attr = classes[0], node.attr.value
        if any(a.keyword is None for a in call.args):
            return None  # positional fields: the order is not followed here
        for a in call.args:
            if a.keyword is not None and a.keyword.value == attr:
                v, _ = self._eval(a.value, cframe, depth + 1)
                return v, f"{call.func.value}({attr}=...)"
        bs = cls.bindings.get(attr)
        if not bs or len(bs) != 1 or bs[0] is MULTI:
            return None
        v, _ = self._eval(bs[0], cls, depth + 1)
        return v, f"default of {call.func.value}.{attr}"

    def _attribute(self, node: cst.Attribute, frame: "Frame", depth: int) -> tuple[Any, str]:
        got = self._dataclass_field(node, frame, depth)
        if got is not None:
            return got
        # args.x where args came from argparse: the default of --x
        if isinstance(node.value, cst.Name) and self.script.is_args_name(node.value.value, frame):
            arg = self.script.argparse.get(node.attr.value)
            if arg is not None:
                if arg is MULTI:
                    raise _Unknown(f"argument {node.attr.value} defined more than once")
                flag, default, dframe, action, typ = arg
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
        raise _Unknown(f"attribute {node.attr.value}")

    def _call(self, node: cst.Call, frame: "Frame", depth: int) -> tuple[Any, str]:
        script = self.script
        name = env_name(script, node)
        if name is not None:
            raise _Unknown(f"environment variable {name}", f"env:{name}")
        func = node.func
        fname = func.value if isinstance(func, cst.Name) else None
        if fname == "range" and script.is_builtin(func) and 1 <= len(node.args) <= 3:
            xs = []
            for a in node.args:
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
                for a in node.args:
                    if a.keyword is not None:
                        out[a.keyword.value] = self._eval(a.value, frame, depth + 1)[0]
                    elif a.star == "**":
                        d = self._eval(a.value, frame, depth + 1)[0]
                        if not isinstance(d, dict):
                            raise _Unknown("not a dict")
                        out.update(d)
                    else:
                        d = self._eval(a.value, frame, depth + 1)[0]
                        out.update(dict(d))
                return out, ""
            if len(node.args) != 1 or node.args[0].keyword is not None or node.args[0].star:
                raise _Unknown(f"{fname}() call")
            v, src = self._eval(node.args[0].value, frame, depth + 1)
            if fname == "int":
                if isinstance(v, bool):
                    return int(v), src
                if isinstance(v, float):
                    return int(v), src
                return int(v), src
            conv = {"float": float, "str": str, "bool": bool, "len": len, "tuple": tuple, "list": list}[fname]
            return conv(v), src
        if fname is not None and not node.args:
            got = self._returned(fname, depth)
            if got is not None:
                return got
        raise _Unknown("function call")

    def _returned(self, fname: str, depth: int):
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


def _binop(op: cst.BaseBinaryOp, a: Any, b: Any) -> Any:
    if isinstance(op, cst.Add):
        if isinstance(a, str) and isinstance(b, str):
            return a + b
        if isinstance(a, (list, tuple)) and type(a) is type(b):
            return a + b
        return _num(a) + _num(b)
    if isinstance(op, cst.Subtract):
        return _num(a) - _num(b)
    if isinstance(op, cst.Multiply):
        if isinstance(a, (list, tuple, str)) and isinstance(b, int) and not isinstance(b, bool) and 0 <= b <= 4096:
            return a * b
        return _num(a) * _num(b)
    if isinstance(op, cst.FloorDivide):
        return _num(a) // _num(b)
    if isinstance(op, cst.Divide):
        return _num(a) / _num(b)
    if isinstance(op, cst.Modulo):
        if isinstance(a, str):
            raise _Unknown("string formatting")
        return _num(a) % _num(b)
    if isinstance(op, cst.Power):
        a, b = _num(a), _num(b)
        if abs(b) > 64:
            raise _Unknown("huge power")
        return a**b
    raise _Unknown("operator")
