"""Settle a JSON Schema validation without jsonschema when the answer is plain.

Importing jsonschema costs more than reading a config file (~70-140 ms at start-up, see issue 12),
and almost every config is valid. :func:`settles` decides, with the subset of Draft 2020-12 that
parallint's schemas use, whether an instance is valid; only when it is not provably valid (a
violation to explain, or a keyword or value outside the subset) does the caller load jsonschema
and produce the exact errors, as before. So the answer never changes, only who gives it.

Each check returns ``True`` (valid, exactly as jsonschema would judge), ``False`` (invalid, the
same) or ``None`` (not decided here). Unknown keywords, references outside the document and
unusual Python values give ``None``.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False  # typing is not imported at run time (start-up, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Any, Callable, Optional

    #: ``tolerate(key, known, schema) -> bool``: an extra key of a closed object (``additionalProperties:
    #: false``) that the caller would not report anyway; consulted only outside ``anyOf``/``oneOf``/
    #: ``not``/``if``, where an error is the caller's to explain
    Tolerate = Callable[[str, "list[str]", "dict[str, Any]"], bool]

#: keywords that only annotate (jsonschema's Draft 2020-12 validator asserts none of them; ``format``
#: is an annotation unless a format checker is passed, and parallint passes none)
_ANNOTATIONS = frozenset({"$schema", "$id", "$comment", "$defs", "definitions", "title", "description",
                          "default", "examples", "deprecated", "readOnly", "writeOnly", "format",
                          "$anchor"})

_JSON_SCALARS = (str, int, float, bool, type(None))


def _is_number(x: object) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _is_type(x: object, t: str) -> Optional[bool]:
    if t == "object":
        return isinstance(x, dict)
    if t == "array":
        return isinstance(x, list)
    if t == "string":
        return isinstance(x, str)
    if t == "boolean":
        return isinstance(x, bool)
    if t == "null":
        return x is None
    if t == "number":
        return _is_number(x)
    if t == "integer":
        return (isinstance(x, int) and not isinstance(x, bool)) or (isinstance(x, float) and x.is_integer())
    return None


def _equal(a: object, b: object) -> Optional[bool]:
    """jsonschema's ``equal``: booleans are not numbers, 1 == 1.0, containers compare deeply."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if _is_number(a) or _is_number(b):
        return _is_number(a) and _is_number(b) and a == b
    if isinstance(a, str) or isinstance(b, str):
        return isinstance(a, str) and isinstance(b, str) and a == b
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return False
        return _all(_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        if set(a) != set(b):
            return False
        return _all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, (list, dict)) and isinstance(b, (list, dict)):
        return False
    return None


def _all(results: Any) -> Optional[bool]:
    unsure = False
    for r in results:
        if r is False:
            return False
        if r is None:
            unsure = True
    return None if unsure else True


class _Checker:
    def __init__(self, root: Any, tolerate: Optional[Tolerate]) -> None:
        self.root = root
        self.tolerate = tolerate

    def ref(self, ref: object) -> Any:
        if not isinstance(ref, str) or not ref.startswith("#/"):
            return None
        node = self.root
        for part in ref[2:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            if not isinstance(node, dict) or part not in node:
                return None
            node = node[part]
        return node

    def check(self, schema: Any, x: Any, outer: bool, depth: int = 0) -> Optional[bool]:
        if depth > 64:
            return None
        if schema is True:
            return True
        if schema is False:
            return False
        if not isinstance(schema, dict):
            return None
        unsure = False
        for kw, val in schema.items():
            if kw in _ANNOTATIONS or kw.startswith("x-") or kw in ("then", "else"):
                continue
            r = self.keyword(kw, val, schema, x, outer, depth)
            if r is False:
                return False
            if r is None:
                unsure = True
        return None if unsure else True

    def keyword(self, kw: str, val: Any, schema: dict[str, Any], x: Any, outer: bool, depth: int) -> Optional[bool]:
        d = depth + 1
        if kw == "type":
            types = [val] if isinstance(val, str) else val
            if not isinstance(types, list):
                return None
            res = [_is_type(x, t) for t in types]
            return True if True in res else (None if None in res else False)
        if kw == "enum":
            if not isinstance(val, list):
                return None
            res = [_equal(x, e) for e in val]
            return True if True in res else (None if None in res else False)
        if kw == "const":
            return _equal(x, val)
        if kw in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
            if not _is_number(x):
                return True
            if not _is_number(val):
                return None
            ok: bool = {"minimum": x >= val, "maximum": x <= val,
                        "exclusiveMinimum": x > val, "exclusiveMaximum": x < val}[kw]
            return ok
        if kw in ("minLength", "maxLength"):
            if not isinstance(x, str):
                return True
            if not isinstance(val, int):
                return None
            return len(x) >= val if kw == "minLength" else len(x) <= val
        if kw == "pattern":
            if not isinstance(x, str):
                return True
            if not isinstance(val, str):
                return None
            try:
                return re.search(val, x) is not None
            except re.error:
                return None
        if kw in ("minItems", "maxItems"):
            if not isinstance(x, list):
                return True
            if not isinstance(val, int):
                return None
            return len(x) >= val if kw == "minItems" else len(x) <= val
        if kw == "items":
            if not isinstance(x, list):
                return True
            if "prefixItems" in schema:
                return None
            return _all(self.check(val, item, outer, d) for item in x)
        if kw == "required":
            if not isinstance(x, dict):
                return True
            if not isinstance(val, list):
                return None
            return all(k in x for k in val)
        if kw == "properties":
            if not isinstance(x, dict):
                return True
            if not isinstance(val, dict):
                return None
            return _all(self.check(sub, x[k], outer, d) for k, sub in val.items() if k in x)
        if kw == "additionalProperties":
            if not isinstance(x, dict):
                return True
            if "patternProperties" in schema:
                return None
            props = schema.get("properties") or {}
            if not isinstance(props, dict):
                return None
            extra = [k for k in x if k not in props]
            if not extra:
                return True
            if val is False:
                if outer and self.tolerate is not None and all(
                        isinstance(k, str) and self.tolerate(k, list(props), schema) for k in extra):
                    return True
                return False
            return _all(self.check(val, x[k], outer, d) for k in extra)
        if kw == "$ref":
            target = self.ref(val)
            return None if target is None else self.check(target, x, outer, d)
        if kw == "allOf":
            if not isinstance(val, list):
                return None
            return _all(self.check(s, x, False, d) for s in val)
        if kw == "anyOf":
            if not isinstance(val, list):
                return None
            res = [self.check(s, x, False, d) for s in val]
            return True if True in res else (None if None in res else False)
        if kw == "oneOf":
            if not isinstance(val, list):
                return None
            res = [self.check(s, x, False, d) for s in val]
            return None if None in res else res.count(True) == 1
        if kw == "not":
            r = self.check(val, x, False, d)
            return None if r is None else not r
        if kw == "if":
            r = self.check(val, x, False, d)
            if r is None:
                return None
            branch = schema.get("then" if r else "else", True)
            return self.check(branch, x, outer, d)
        return None  # a keyword outside the subset


def _plain(x: Any, depth: int = 0) -> bool:
    """Only JSON values (dict with str keys, list, str, numbers, bool, None), not too deep."""
    if depth > 200:
        return False
    if isinstance(x, dict):
        return all(isinstance(k, str) and _plain(v, depth + 1) for k, v in x.items())
    if isinstance(x, list):
        return all(_plain(v, depth + 1) for v in x)
    if isinstance(x, float):
        return x == x and x not in (float("inf"), float("-inf"))
    return isinstance(x, _JSON_SCALARS)


def settles(schema: Any, instance: Any, tolerate: Optional[Tolerate] = None) -> bool:
    """True when ``instance`` is valid against ``schema`` (jsonschema would report no error), or
    its only errors are extra keys of closed objects that ``tolerate`` accepts; False when it is
    not, or when that cannot be decided here (the caller then asks jsonschema)."""
    if not _plain(instance):
        return False
    try:
        return _Checker(schema, tolerate).check(schema, instance, True) is True
    except RecursionError:
        return False
