"""What the CFG rules share."""

from __future__ import annotations

import functools

from parallint.model.diagnostics import Span
from parallint.model.fixes import Fix, replace_at
from parallint.model.rule import Rule
from parallint.model.scalars import unknown_reason

TYPE_CHECKING = False  # typing is not imported at run time (start-up, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Any, Iterator
if TYPE_CHECKING:
    pass


SCHEMAS = {"deepspeed": "deepspeed.schema.json", "accelerate": "accelerate.schema.json",
           "torchtitan": "torchtitan.schema.json"}


PYTORCHJOB = "pytorchjob.schema.json"


@functools.lru_cache(maxsize=None)
def load_schema(name: str) -> dict:
    import json

    from parallint.data import read_text

    return json.loads(read_text("parallint.schemas", name))


def _tree(f):
    data = getattr(f, "data", None)
    return getattr(data, "tree", None)


def _trees(f) -> list[tuple[Any, str]]:
    """(positioned tree, schema file) pairs to validate for one file."""
    if f.kind in SCHEMAS:
        t = _tree(f)
        return [(t, SCHEMAS[f.kind])] if t is not None and t.is_map else []
    if f.kind == "kube":
        out = []
        for d in getattr(f.data, "documents", None) or ():  # every document of the manifest (kube reader)
            if d.is_map and d.plain().get("kind") == "PyTorchJob" and d.plain().get("apiVersion") == "kubeflow.org/v1":
                out.append((d, PYTORCHJOB))
        return out
    return []


def _node_at(tree, path) -> Any:
    node = tree
    for p in path:
        if node is None:
            return None
        if isinstance(p, int) and node.is_seq:
            node = node.value[p] if p < len(node.value) else None
        else:
            node = node.get(str(p))
    return node


def _dotted(path) -> str:
    return ".".join(str(p) for p in path)


def schema_problems(tree, schema_name: str) -> Iterator[tuple[str, Span, str]]:
    """('unknown' | 'invalid', span, message) for one positioned tree."""
    for kind, span, msg, _fix in schema_findings(tree, schema_name):
        yield kind, span, msg


def schema_findings(tree, schema_name: str) -> Iterator[tuple[str, Span, str, Fix | None]]:
    """('unknown' | 'invalid', span, message, the fix it proposes) for one positioned tree."""
    from parallint.model.schemacheck import settles

    schema = load_schema(schema_name)
    instance = tree.plain()
    if settles(schema, instance, _unreported_extra_key):  # valid: jsonschema is not even imported
        return
    from jsonschema import Draft202012Validator

    validator = Draft202012Validator(schema)
    seen: set = set()
    for err in validator.iter_errors(instance):
        for kind, span, msg, fix in _explain(err, tree, unknown_reason):
            if (kind, span) not in seen:
                seen.add((kind, span))
                yield kind, span, msg, fix


def _unreported_extra_key(key: str, known: list, schema: dict) -> bool:
    """An extra key of a closed object that _explain would not report: the framework tolerates
    unknown keys there and the key is no misspelling of a known one."""
    import difflib

    return not schema.get("x-parallint-strict") and not difflib.get_close_matches(key, known, n=1, cutoff=0.85)


def _explain(err, tree, unknown_reason):
    import difflib

    path = list(err.absolute_path)
    if err.validator == "additionalProperties" and isinstance(err.instance, dict):
        known = list((err.schema.get("properties") or {}).keys())
        strict = bool(err.schema.get("x-parallint-strict"))
        node = _node_at(tree, path)
        for key in err.instance:
            if key in known:
                continue
            near = difflib.get_close_matches(key, known, n=1, cutoff=0.85)
            if not near and not strict:
                continue
            # a close key the object already holds is no rename (EVA's gradient_accumulation_dtype
            # beside gradient_accumulation_steps): the name is wrong, the replacement unknown
            guess = difflib.get_close_matches(key, [k for k in known if k not in err.instance], n=1, cutoff=0.85)
            where = _dotted(path) or "top level"
            span = node.key_spans.get(key) if node is not None else None
            if span is None:
                continue
            hint = (f"; rename it to '{guess[0]}'" if guess else
                    "; remove it or correct its name (`parallint rule CFG001` names the framework's schema)")
            what = "silently ignored" if not strict else "rejected"
            fix = None
            if guess:
                fix = Fix(f"rename '{key}' to '{guess[0]}'", safe=False, data=f"{key}\x00{guess[0]}")
            yield "unknown", span, f"unknown key '{key}' in {where} ({what} by the framework){hint}", fix
        return
    if err.validator in ("anyOf", "oneOf", "allOf") and err.context:
        # a composite failed; explain with the instance itself
        pass
    inst = err.instance
    if isinstance(inst, (str,)) and unknown_reason(inst):
        return
    if inst is None and err.validator in ("type", "anyOf"):
        return
    if isinstance(inst, (dict, list)) and err.validator not in ("type",):
        return
    node = _node_at(tree, path)
    if node is None:
        return
    key = _dotted(path) or "value"
    if err.validator == "enum":
        allowed = ", ".join(repr(x) for x in err.validator_value if x is not None and x is not False)
        close = difflib.get_close_matches(str(inst), [str(x) for x in err.validator_value if isinstance(x, str)], n=1)
        msg = f"{key} = {inst!r} is not one of {allowed}; " + (f"set it to {close[0]!r}" if close else "set it to one of them")
    elif err.validator in ("minimum", "maximum"):
        bound = "at least" if err.validator == "minimum" else "at most"
        msg = f"{key} = {inst!r} is out of range ({err.validator} {err.validator_value}); set it to {bound} {err.validator_value}"
    elif err.validator == "const":
        msg = f"{key} = {inst!r}; set it to {err.validator_value!r}"
    elif err.validator == "not":
        msg = f"{key} = {inst!r} is not allowed; choose another value"
    elif err.validator == "anyOf":
        kinds = []
        for sub in err.validator_value:
            if sub.get("x-parallint-unnamed"):
                continue  # accepted, but not what a fix should suggest (steps_per_print: inf)
            if "const" in sub:
                kinds.append(repr(sub["const"]))
            elif "type" in sub:
                t = sub["type"]
                kinds.append(("a non-negative " if sub.get("minimum") == 0 else "a positive " if sub.get("minimum") == 1 else "")
                             + (t if isinstance(t, str) else "/".join(t)))
        msg = f"{key} = {inst!r}; set it to {' or '.join(_a(k) for k in kinds) or 'another value'}"
    elif err.validator == "type":
        t = err.validator_value
        msg = f"{key} = {inst!r}; set it to {_a(t) if isinstance(t, str) else ' or '.join(_a(x) for x in t)}"
    else:
        msg = f"{key}: {err.message}; fix the value"
    yield "invalid", node.span, msg, None


def _a(kind: str) -> str:
    """A JSON Schema type name with its article ('an integer'); other words unchanged."""
    names = {"integer": "an integer", "string": "a string", "boolean": "a boolean (true or false)",
             "number": "a number", "object": "a mapping", "array": "a list", "null": "null"}
    return names.get(kind, kind)


class _SchemaRule(Rule):
    kinds = frozenset(SCHEMAS) | {"kube"}
    _which = ""

    def check_file(self, f, ctx):
        for tree, name in _trees(f):
            try:
                problems = list(schema_findings(tree, name))
            except RecursionError:
                continue
            for kind, span, msg, fix in problems:
                if kind == self._which:
                    yield self.report(span, msg, fix=fix)

    def apply_fix(self, diag, text):
        """The key renamed: only the characters of its name change (quotes and all else kept)."""
        old, _, new = diag.fix.data.partition("\x00")
        return replace_at(text, diag.span.path, diag.span, old, new)


def _megatron_command(job):
    """(launch, its Megatron flags, the flags its script accepts) for a job launched from a shell,
    Makefile or Kubernetes command line with Megatron flags and a known argument table; else None."""
    la = job.launch
    if la is None or getattr(job.root, "kind", "") not in ("shell", "makefile", "kube"):
        return None
    flags = getattr(la, "megatron_flags", None)
    table = getattr(la, "megatron_table", None)  # the flags the launched script accepts (linker)
    if not flags or table is None:
        return None
    return la, flags, table
