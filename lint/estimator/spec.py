"""The normalized job spec (DESIGN.md "The normalized job spec"): presets, defaults, facts -> spec.

A spec is a plain dict with the sections ``model``, ``parallel``, ``training`` and ``hardware``
(validated by ``schemas/job.schema.json``) and an optional ``estimator`` section
(``accounting: zero|megatron``). :func:`normalize` fills in presets and the defaults the estimator
needs; :func:`spec_from_facts` builds a spec from a job's :class:`~parallint.model.facts.FactMap`.
"""

from __future__ import annotations

from functools import lru_cache

from parallint.model import vocab

TYPE_CHECKING = False  # typing is not imported at run time (start-up, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Any

SECTIONS = vocab.SECTIONS


@lru_cache(maxsize=1)
def presets() -> dict[str, dict]:
    import importlib.resources

    import yaml

    text = importlib.resources.files("parallint.data").joinpath("presets.yaml").read_text("utf-8")
    return yaml.safe_load(text) or {}


def _preset_key(name: str) -> str:
    return "".join(ch for ch in str(name).lower() if ch.isalnum())


def preset_name(name: str) -> str | None:
    """The catalogue's own spelling of preset ``name`` (``Llama2_7B`` -> ``llama-2-7b``), or None."""
    want = _preset_key(name)
    return next((key for key in presets() if _preset_key(key) == want), None)


def preset(name: str) -> dict | None:
    """The shape of a named preset (``gpt2-xl``, ``llama-2-7b``, ``Llama2_7B``...), or None."""
    want = _preset_key(name)
    for key, shape in presets().items():
        if _preset_key(key) == want:
            return dict(shape)
    return None


def _int(v: Any) -> int | None:
    """An integer from an int, an integral float or a digit string; else None."""
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, str) and v.strip().isdigit():
        return int(v.strip())
    return v if isinstance(v, int) else None


def _posint(v: Any) -> int | None:
    i = _int(v)
    return i if i is not None and i > 0 else None


def _bool(v: Any) -> bool | None:
    if isinstance(v, bool):
        return v
    if isinstance(v, int) and v in (0, 1):
        return bool(v)
    if isinstance(v, str) and v.strip().lower() in ("true", "false", "yes", "no", "1", "0"):
        return v.strip().lower() in ("true", "yes", "1")
    return None


_MODEL_INTS = ("param_count", "layers", "hidden", "heads", "kv_heads", "head_dim", "ffn", "vocab",
               "seq_len", "max_position_embeddings", "num_experts", "top_k", "moe_ffn",
               "shared_expert_ffn", "largest_layer_params", "num_labels", "type_vocab_size")
_BOOLS = {"model": ("tied_embeddings", "bias"),
          "parallel": ("sequence_parallel", "distributed_optimizer", "fsdp"),
          "training": ("flash_attention",)}


def normalize(spec: dict) -> dict:
    """A copy of ``spec`` with presets expanded and the estimator's defaults filled in.

    Adds ``training.num_microbatches`` (from ``grad_accum`` or ``global_batch / (micro x DP)``) and
    ``_assumptions`` (what was defaulted, in words).
    """
    out: dict[str, Any] = {k: dict(spec.get(k) or {}) for k in SECTIONS}
    out["estimator"] = dict(spec.get("estimator") or {})
    if isinstance(spec.get("framework"), str):
        out["framework"] = spec["framework"]
    assumptions: list[str] = []
    model, par, tr = out["model"], out["parallel"], out["training"]
    for k in _MODEL_INTS:  # "24" from a text config is 24; anything else non-integral is dropped
        if k in model and model[k] is not None and not isinstance(model[k], int):
            model[k] = _int(model[k])
    for section, keys in _BOOLS.items():
        for k in keys:
            if k in out[section] and out[section][k] is not None:
                out[section][k] = _bool(out[section][k])
    name = model.get("preset")
    if name:
        shape = preset(name)
        if shape is not None:
            for k, v in shape.items():
                model.setdefault(k, v)
    if model.get("vocab") is None and all(model.get(k) for k in ("layers", "hidden", "heads")) \
            and not model.get("param_count"):
        model["vocab"] = 0  # e.g. Megatron takes it from the tokenizer files
        assumptions.append("vocabulary size unknown: embeddings and logits not counted")
    for k in ("tp", "pp", "cp", "ep", "vpp"):
        par[k] = _posint(par.get(k)) or 1
    dp = _posint(par.get("dp"))
    world = _posint(par.get("world_size"))
    if world is None:
        nodes, gpn = _posint(par.get("nodes")), _posint(par.get("gpus_per_node"))
        if nodes and gpn:
            world = nodes * gpn
    if dp is None and world is not None and world % (par["tp"] * par["pp"] * par["cp"]) == 0:
        dp = world // (par["tp"] * par["pp"] * par["cp"])
    par["dp"] = dp
    if world is not None:
        par["world_size"] = world
    zs = _int(par.get("zero_stage"))
    par["zero_stage"] = zs if zs is not None and 0 <= zs <= 3 else 0
    rc = str(tr.get("recompute") or "none").lower()
    tr["recompute"] = rc if rc in ("none", "selective", "full") else "none"
    if not tr.get("precision"):
        assumptions.append("precision not stated: assumed bf16 mixed precision")
    if not tr.get("optimizer"):
        assumptions.append("optimizer not stated: assumed Adam")
    for k in ("global_batch", "grad_accum", "num_microbatches"):
        if k in tr:
            tr[k] = _posint(tr[k])
    micro = _posint(tr.get("micro_batch"))
    tr["micro_batch"] = micro
    nmb = _posint(tr.get("num_microbatches")) or _posint(tr.get("grad_accum"))
    gb = _posint(tr.get("global_batch"))
    if nmb is None and gb and micro and dp and gb % (micro * dp) == 0:
        nmb = gb // (micro * dp)
    tr["num_microbatches"] = nmb
    out["_assumptions"] = assumptions
    return out


def validate(spec: Any) -> list[str]:
    """Schema violations of a hand-written job spec, as ``"path: message"`` strings."""
    import json

    import jsonschema

    schema = json.loads(_schema_text())
    validator = jsonschema.Draft202012Validator(schema)
    errs = []
    for e in sorted(validator.iter_errors(spec), key=lambda e: list(e.absolute_path)):
        where = ".".join(str(p) for p in e.absolute_path) or "(top level)"
        errs.append(f"{where}: {e.message}")
    return errs


@lru_cache(maxsize=1)
def _schema_text() -> str:
    import importlib.resources

    return importlib.resources.files("parallint.schemas").joinpath("job.schema.json").read_text("utf-8")


# --------------------------------------------------------------------------- facts -> spec
#: the facts copied into a spec, section -> names: derived from the declared vocabulary
_FACT_FIELDS = vocab.SPEC_FACT_FIELDS


def spec_fields(facts, config: dict | None = None, notes: dict[str, str] | None = None) -> dict:
    """The job-spec fields a job's facts state (plus ``framework``), whatever the model shape.

    Only known values are used; unknown ones are left out. ``notes``, when given, receives
    ``"section.key" -> why`` for every field that is not a fact copied as stated: derived
    (``gpus_per_node`` from processes per node, ``dp`` from HSDP degrees, ZeRO 3 from FSDP, fp32
    gradients for Megatron), taken from the configuration, or dropped (not a positive degree, an
    unknown preset).
    """
    config = config or {}
    notes = {} if notes is None else notes
    spec: dict[str, Any] = {k: {} for k in SECTIONS}
    for section, names in _FACT_FIELDS.items():
        for name in names:
            v = facts.get(f"{section}.{name}")
            if v is not None and v.known and v.value is not None:
                spec[section][name] = v.value
    par = spec["parallel"]
    ppn = facts.get("parallel.procs_per_node")
    if ppn is not None and "gpus_per_node" not in par:
        par["gpus_per_node"] = ppn.value
        notes["parallel.gpus_per_node"] = f"derived: processes per node ({_where(ppn)})"
    if "dp" not in par:  # torchtitan style: dp_replicate x dp_shard (-1 = inferred: unknown)
        r, s = facts.get("parallel.dp_replicate"), facts.get("parallel.dp_shard")
        rv = _posint(r.value) if r is not None else 1
        sv = _posint(s.value) if s is not None else None
        if rv and sv:
            par["dp"] = rv * sv
            notes["parallel.dp"] = f"derived: dp_replicate {rv} × dp_shard {sv} ({_where(s)})"
            if sv > 1 and "zero_stage" not in par:
                par["zero_stage"] = 3
                notes["parallel.zero_stage"] = f"derived: dp_shard {sv} > 1 shards like ZeRO-3 ({_where(s)})"
    for k in ("world_size", "nodes", "gpus_per_node", "dp", "tp", "pp", "vpp", "cp", "ep", "etp",
              "zero_stage"):
        if k in par and _posint(par[k]) is None and not (k == "zero_stage" and par[k] == 0):
            notes[f"parallel.{k}"] = f"dropped: {par[k]!r} is not a positive degree"
            del par[k]
    if par.get("fsdp") is True and (par.get("zero_stage") or 0) < 3:
        par["zero_stage"] = 3
        notes["parallel.zero_stage"] = f"derived: FSDP full shard ({_where(facts.get('parallel.fsdp'))})"
    fw = facts.get("framework")
    if fw is not None and isinstance(fw.value, str):
        spec["framework"] = fw.value  # lets `plan` offer the framework's options
    tr = spec["training"]
    if fw is not None and str(fw.value).lower() in ("megatron", "nemo") and "grad_dtype" not in tr \
            and str(tr.get("precision", "bf16")).lower() == "bf16":
        tr["grad_dtype"] = "fp32"  # Megatron accumulates bf16 training's main grads in fp32
        notes["training.grad_dtype"] = f"derived: {fw.value} keeps bf16 training's main gradients in fp32"
    if not spec["hardware"].get("gpu") and config.get("gpu"):
        spec["hardware"]["gpu"] = config["gpu"]
        notes["hardware.gpu"] = "configuration: gpu"
    if not par.get("gpus_per_node") and _posint(config.get("gpus-per-node")):
        par["gpus_per_node"] = config["gpus-per-node"]
        notes["parallel.gpus_per_node"] = "configuration: gpus-per-node"
    model = spec["model"]
    if model.get("preset") and preset(model["preset"]) is None:
        notes["model.preset"] = f"dropped: {model['preset']!r} is not one of parallint's presets"
        del model["preset"]
    return spec


def _where(v) -> str:
    if v is None:
        return "?"
    loc = f"{v.span.path}:{v.span.line} " if getattr(v, "span", None) else ""
    return f"{loc}{v.source}".strip()


def _copied(x: Any) -> Any:
    """A deep copy of a plain spec (dicts, lists, scalars), without importing ``copy``."""
    if isinstance(x, dict):
        return {k: _copied(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_copied(v) for v in x]
    return x


def spec_from_facts(facts, config: dict | None = None) -> dict | None:
    """The job spec a job's facts state, or None when the model shape (or size) is unknown.

    Only known values are used; unknown ones are left out (the estimator then assumes nothing
    that could raise its figure when called with ``lower_bound=True``).
    """
    spec = spec_fields(facts, config)
    model = spec["model"]
    has_shape = all(model.get(k) is not None for k in ("layers", "hidden", "heads"))
    if not (has_shape or _posint(model.get("param_count")) or model.get("preset")):
        return None
    return _copied(spec)


def spec_for_job(job, config: dict | None = None) -> dict | None:
    """The spec of a linked job: a job-spec file's own content, else :func:`spec_from_facts`."""
    config = config or {}
    root = getattr(job, "root", None)
    data = getattr(root, "data", None)
    if getattr(root, "kind", None) == "jobspec" and data is not None and getattr(data, "valid", False):
        spec = _copied(data.spec)
        if not (spec.get("hardware") or {}).get("gpu") and config.get("gpu"):
            spec.setdefault("hardware", {})["gpu"] = config["gpu"]
        return spec
    return spec_from_facts(job.facts, config)
