"""Reader for a hand-written job-spec file (YAML or JSON, ``schemas/job.schema.json``).

The file is the normalized job of DESIGN.md written out::

    model: {preset: llama-2-7b, seq_len: 4096}
    parallel: {world_size: 16, tp: 2}
    training: {micro_batch: 1, recompute: selective}
    hardware: {gpu: A100-80GB}

Every known value becomes a fact under its own key (``parallel.tp``...); placeholders,
environment references and ``auto`` stay unknown. A file that does not parse or does not satisfy
the schema gets SYN001 at the offending value. The file is a job on its own
(``standalone_job``); the whole spec is kept in ``FileFacts.data`` as :class:`JobSpecData` for the
estimator, which also reads the keys that are not facts (``training.flash_attention``...).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from parallint.model.facts import FACT_KEYS, FileFacts, Value
from parallint.readers.cfgutil import as_bool, load_tree, new_facts, syn001, to_value, unknown_reason
from parallint.readers.yamlpos import PNode
from parallint.util.record import EqRecord

KIND = "jobspec"
SECTIONS = ("model", "parallel", "training", "hardware")


class JobSpecData(EqRecord):
    _fields = ("spec", "valid")
    spec: dict  # the spec with unknown values removed
    valid: bool

    def __init__(self, spec: dict, valid: bool) -> None:
        self.spec = spec
        self.valid = valid


#: keys whose value may literally be the word "none" (generic readers take it for "unset")
_NONE_IS_A_VALUE = frozenset({"training.recompute"})


def _is_literal_none(dotted: str, v: Any) -> bool:
    return dotted in _NONE_IS_A_VALUE and isinstance(v, str) and v.strip().lower() == "none"


def _clean(node: PNode, dotted: str = "") -> Any:
    """Plain value with unknown scalars (placeholders, env, auto) dropped (None)."""
    if node.is_map:
        return {k: _clean(v, f"{dotted}.{k}" if dotted else k) for k, v in node.items()}
    if node.is_seq:
        return [_clean(v, dotted) for v in node.value]
    v = node.value
    if _is_literal_none(dotted, v):
        return "none"
    return None if unknown_reason(v) else v


#: job-spec facts whose values are words or booleans; every other one is a number
_TEXT_FACTS = frozenset({"model.preset", "model.mlp", "model.norm", "model.position_embeddings",
                         "model.moe_layer_freq", "parallel.fsdp", "parallel.pp_layout", "training.recompute",
                         "training.precision", "training.optimizer", "training.grad_dtype", "hardware.gpu",
                         "framework"})
_BOOL_FACTS = frozenset({"model.tied_embeddings", "model.bias", "parallel.sequence_parallel",
                         "parallel.distributed_optimizer", "training.offload", "ddp.find_unused_parameters"})


def _number(v: Any) -> int | float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ValueError(v)
    return v


def _node_at(root: PNode, path: list) -> PNode:
    node = root
    for p in path:
        nxt = None
        if isinstance(p, int) and node.is_seq and 0 <= p < len(node.value):
            nxt = node.value[p]
        elif isinstance(p, str):
            nxt = node.get(p)
        if nxt is None:
            break
        node = nxt
    return node


def read(path: str, abspath: Path, text: str) -> FileFacts:
    ff = new_facts(path, abspath, KIND, text)
    ff.standalone_job = True
    root = load_tree(ff)
    if root is None:
        ff.data = JobSpecData({}, False)
        return ff
    if not root.is_map:
        syn001(ff, "a job spec must be a mapping with model/parallel/training/hardware sections",
               root.span.line, root.span.column)
        ff.data = JobSpecData({}, False)
        return ff

    spec = _clean(root)
    valid = True
    try:
        errors = validate_with_paths(spec)
    except Exception as exc:  # a broken schema install must not crash the run
        errors = [([], f"cannot validate: {exc}")]
    for where, message in errors:
        node = _node_at(root, where)
        span = node.span
        if message.startswith("unknown key") and where:
            parent = _node_at(root, where[:-1])
            span = parent.key_spans.get(str(where[-1]), span)
        dotted = ".".join(str(p) for p in where) or "(top level)"
        syn001(ff, f"invalid job spec at {dotted}: {message}", span.line, span.column)
        valid = False
    from parallint.estimator.spec import preset

    name = (spec.get("model") or {}).get("preset") if isinstance(spec.get("model"), dict) else None
    if name and preset(str(name)) is None:
        node = root.path("model.preset") or root
        syn001(ff, f"unknown model preset {name!r}", node.span.line, node.span.column)
        valid = False

    for section in SECTIONS:
        sec = root.get(section)
        if sec is None or not sec.is_map:
            continue
        for key, node in sec.items():
            fact = f"{section}.{key}"
            if fact not in FACT_KEYS or node.is_map or (node.is_seq and fact != "model.moe_layer_freq"):
                continue  # a section or list where a number belongs: the schema error says so
            source = f"{ff.path.rsplit('/', 1)[-1]} {fact}"
            v: Value | None
            if _is_literal_none(fact, node.value):
                v = Value("none", node.span, True, "", source)
            else:
                v = to_value(node, source)
                if v is not None and v.known and fact in _BOOL_FACTS:
                    v = v.map(as_bool)
                elif v is not None and v.known and fact not in _TEXT_FACTS:
                    v = v.map(_number)  # a word where a number belongs is unknown (the schema error says why)
            if v is not None:
                ff.facts.add(fact, v)
    ff.data = JobSpecData(spec if valid else {}, valid)
    return ff


def validate_with_paths(spec: Any) -> list[tuple[list, str]]:
    import json

    import jsonschema

    from parallint.estimator.spec import _schema_text

    validator = jsonschema.Draft202012Validator(json.loads(_schema_text()))
    out = []
    for e in sorted(validator.iter_errors(spec), key=lambda e: [str(p) for p in e.absolute_path]):
        path = list(e.absolute_path)
        if e.validator == "additionalProperties" and isinstance(e.instance, dict):
            allowed = set((e.schema or {}).get("properties", {}))
            extra = [k for k in e.instance if k not in allowed]
            if extra:
                path = path + [extra[0]]
                out.append((path, f"unknown key {extra[0]!r}"))
                continue
        out.append((path, e.message))
    return out
