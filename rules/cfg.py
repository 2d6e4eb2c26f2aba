"""CFG — config hygiene: unknown keys and invalid values (validated against the framework schemas
in ``schemas/``), fp16 together with bf16, ignored offload settings, duplicate keys."""

from __future__ import annotations

import functools

from parallint.model.diagnostics import Related, Severity, Span
from parallint.model.scalars import unknown_reason
from parallint.model.rule import Example, Rule

TYPE_CHECKING = False  # typing is not imported at run time (start-up, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Any, Iterator

SCHEMAS = {"deepspeed": "deepspeed.schema.json", "accelerate": "accelerate.schema.json",
           "torchtitan": "torchtitan.schema.json"}
PYTORCHJOB = "pytorchjob.schema.json"
DUP_KINDS = frozenset({"deepspeed", "nemo", "megatron_yaml", "accelerate", "neox", "foundry", "nanotron",
                       "hf_model", "hftrainargs"})


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
    from parallint.model.schemacheck import settles

    schema = load_schema(schema_name)
    instance = tree.plain()
    if settles(schema, instance, _unreported_extra_key):  # valid: jsonschema is not even imported
        return
    from jsonschema import Draft202012Validator

    validator = Draft202012Validator(schema)
    seen: set = set()
    for err in validator.iter_errors(instance):
        for kind, span, msg in _explain(err, tree, unknown_reason):
            if (kind, span) not in seen:
                seen.add((kind, span))
                yield kind, span, msg


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
            guess = difflib.get_close_matches(key, known, n=1, cutoff=0.85)
            if not guess and not strict:
                continue
            where = _dotted(path) or "top level"
            span = node.key_spans.get(key) if node is not None else None
            if span is None:
                continue
            hint = (f"; rename it to '{guess[0]}'" if guess else
                    "; remove it or correct its name (`parallint rule CFG001` names the framework's schema)")
            what = "silently ignored" if not strict else "rejected"
            yield "unknown", span, f"unknown key '{key}' in {where} ({what} by the framework){hint}"
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
    yield "invalid", node.span, msg


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
                problems = list(schema_problems(tree, name))
            except RecursionError:
                continue
            for kind, span, msg in problems:
                if kind == self._which:
                    yield self.report(span, msg)


class UnknownConfigKey(_SchemaRule):
    code = "CFG001"
    name = "unknown-config-key"
    severity = Severity.WARNING
    summary = "A config key the framework does not know (ignored or rejected), with a did-you-mean"
    _which = "unknown"
    doc = """
    ## What it does
    Validates DeepSpeed configs, accelerate configs, torchtitan TOML job configs and Kubeflow
    PyTorchJobs against the framework's documented fields (`schemas/`) and reports keys the
    framework does not know, with the closest known key. Where the framework tolerates extra keys
    (DeepSpeed's top level, torchtitan's extensible sections) only keys that look like a
    misspelling of a known one are reported; where it rejects them (DeepSpeed `zero_optimization`,
    `fp16`, `bf16`, offload sections; accelerate's top level; PyTorchJob `spec`) every unknown key is.

    ## Why it matters
    A misspelled `train_micro_batch_size_per_gpu` is silently ignored by DeepSpeed, which then
    derives a different micro batch; a misspelled `zero_optimization` key stops the job inside
    every worker.

    ## Example

    ## How to fix
    Use the suggested key (or remove it).
    """
    valid = (Example('{\n  "train_micro_batch_size_per_gpu": 4,\n  "gradient_accumulation_steps": 2,\n'
                     '  "zero_optimization": {"stage": 2, "overlap_comm": true}\n}\n', filename="ds_config.json"),
             Example('{\n  "train_micro_batch_size_per_gpu": 4,\n  "my_script_setting": 3\n}\n', filename="ds_config.json"))
    invalid = (
        Example('{\n  "train_micro_batch_size_per_gpus": 4,\n  "gradient_accumulation_steps": 2,\n'
                '  "zero_optimization": {"stage": 2}\n}\n', filename="ds_config.json", line=2),
        Example('{\n  "train_batch_size": 16,\n  "zero_optimization": {\n    "stage": 2,\n    "overlap_com": true\n  }\n}\n',
                filename="ds_config.json", line=5),
        Example("compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\nnum_processes: 8\nnum_machine: 1\n"
                "mixed_precision: bf16\n", filename="accelerate.yaml", line=4),
    )


class InvalidConfigValue(_SchemaRule):
    code = "CFG002"
    name = "invalid-config-value"
    severity = Severity.ERROR
    summary = "A config value of the wrong type or outside its allowed values"
    _which = "invalid"
    doc = """
    ## What it does
    Validates the values of DeepSpeed, accelerate, torchtitan and Kubeflow PyTorchJob configs
    against the framework's documented types and ranges (`schemas/`): a ZeRO stage outside 0–3,
    a batch size that is not a positive integer or `"auto"`, an unknown `distributed_type` or
    `mixed_precision`, a non-integer parallel degree. Placeholders, `"auto"` where allowed and
    interpolations are never reported.

    ## Why it matters
    The framework rejects the value when the workers start (pydantic validation in DeepSpeed,
    enum parsing in accelerate, dataclass parsing in torchtitan).

    ## Example

    ## How to fix
    Use one of the allowed values.
    """
    valid = (Example('{\n  "train_batch_size": "auto",\n  "zero_optimization": {"stage": 3}\n}\n', filename="ds_config.json"),)
    invalid = (
        Example('{\n  "train_batch_size": 16,\n  "zero_optimization": {"stage": 4}\n}\n', filename="ds_config.json", line=3),
        Example("compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\nnum_processes: 8\n"
                "mixed_precision: bfloat16\n", filename="accelerate.yaml", line=4),
    )


class Fp16AndBf16(Rule):
    code = "CFG003"
    facts = frozenset({"training.precision"})
    name = "fp16-and-bf16"
    severity = Severity.ERROR
    summary = "fp16 and bf16 are both enabled"
    kinds = frozenset({"deepspeed", "neox", "megatron_yaml", "hftrainargs"})
    doc = """
    ## What it does
    Flags a config (DeepSpeed `fp16.enabled` and `bf16.enabled`, Megatron `--fp16` and `--bf16`,
    HF `fp16: true` and `bf16: true`) or a launch command that enables both half-precision modes.

    ## Why it matters
    They are mutually exclusive; DeepSpeed stops with "bfloat16 and fp16 modes cannot be
    simultaneously enabled", Megatron and the HF Trainer refuse it too.

    ## Example

    ## How to fix
    Keep one of them (bf16 on Ampere and newer GPUs).
    """
    valid = (Example('{\n  "train_batch_size": 16,\n  "fp16": {"enabled": false},\n  "bf16": {"enabled": true}\n}\n',
                     filename="ds_config.json"),
             Example('{\n  "train_batch_size": 16,\n  "fp16": {"enabled": "auto"},\n  "bf16": {"enabled": "auto"}\n}\n',
                     filename="ds_config.json"))
    invalid = (Example('{\n  "train_batch_size": 16,\n  "fp16": {"enabled": true},\n  "bf16": {"enabled": true}\n}\n',
                       filename="ds_config.json", line=4),
               Example(files={"run.sh": "torchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size 2 --fp16 --bf16\n",
                              "pretrain_gpt.py": "import sys\nprint(sys.argv)\n"}, line=1))

    def _check(self, values):
        fp16 = [v for v in values if v.known and v.value == "fp16" and v.span is not None]
        bf16 = [v for v in values if v.known and v.value == "bf16" and v.span is not None]
        if fp16 and bf16:
            at, other = max(fp16[0], bf16[0], key=lambda v: (v.span.line, v.span.column)), None
            other = fp16[0] if at is bf16[0] else bf16[0]
            yield self.report(at.span, "fp16 and bf16 are both enabled; they are mutually exclusive; disable one of them "
                                        "(bf16 where the GPUs support it)",
                              [Related.at(other.span, f"{other.value} enabled here")])

    def check_file(self, f, ctx):
        yield from self._check(f.facts.all("training.precision"))

    def check_job(self, job, ctx):
        launch = getattr(job, "launch", None)
        facts = getattr(launch, "facts", None)
        if facts is None or not hasattr(facts, "all"):
            return
        vals = [v for v in facts.all("training.precision")
                if v.span is not None and not any(f.path == v.span.path and f.kind in self.kinds for f in job.files)]
        yield from self._check(vals)


class OffloadParamIgnored(Rule):
    code = "CFG004"
    name = "offload-param-ignored"
    severity = Severity.WARNING
    summary = "DeepSpeed offload_param with ZeRO stage < 3 is silently ignored"
    kinds = frozenset({"deepspeed", "neox"})
    doc = """
    ## What it does
    Warns when a DeepSpeed config offloads parameters (`zero_optimization.offload_param` with a
    `cpu` or `nvme` device) while the ZeRO stage is below 3.

    ## Why it matters
    Only ZeRO-3 partitions (and can offload) parameters; with stage 1 or 2 the section is silently
    ignored and the memory the user counted on is not saved.

    ## Example

    ## How to fix
    Use stage 3, or use `offload_optimizer` (which stages 1 and 2 support) instead.
    """
    valid = (Example('{\n  "zero_optimization": {\n    "stage": 3,\n    "offload_param": {"device": "cpu"}\n  }\n}\n',
                     filename="ds_config.json"),
             Example('{\n  "zero_optimization": {\n    "stage": 2,\n    "offload_optimizer": {"device": "cpu"}\n  }\n}\n',
                     filename="ds_config.json"))
    invalid = (Example('{\n  "zero_optimization": {\n    "stage": 2,\n    "offload_param": {"device": "cpu"}\n  }\n}\n',
                       filename="ds_config.json", line=4),)

    def check_file(self, f, ctx):
        tree = _tree(f)
        if tree is None or not tree.is_map:
            return
        zero = tree.get("zero_optimization")
        if zero is None or not zero.is_map:
            return
        stage = zero.get("stage")
        if stage is None or isinstance(stage.value, bool) or not isinstance(stage.value, int):
            return
        if stage.value >= 3:
            return
        off = zero.get("offload_param")
        if off is not None and off.is_map:
            dev = off.get("device")
            if dev is None or not isinstance(dev.value, str) or unknown_reason(dev.value):
                return
            if dev.value.lower() not in ("cpu", "nvme"):
                return
            span = zero.key_spans.get("offload_param", off.span)
            yield self.report(span, f"offload_param ({dev.value}) is ignored with ZeRO stage {stage.value}; "
                                    f"only stage 3 offloads parameters; set zero_optimization.stage to 3 or remove offload_param",
                              [Related.at(stage.span, f"ZeRO stage {stage.value}")])
        legacy = zero.get("cpu_offload_param")
        if legacy is not None and legacy.value is True:
            span = zero.key_spans.get("cpu_offload_param", legacy.span)
            yield self.report(span, f"cpu_offload_param is ignored with ZeRO stage {stage.value}; only stage 3 "
                                    f"offloads parameters; set zero_optimization.stage to 3 or remove cpu_offload_param",
                              [Related.at(stage.span, f"ZeRO stage {stage.value}")])


class DuplicateKey(Rule):
    code = "CFG005"
    name = "duplicate-key"
    severity = Severity.ERROR
    summary = "A key repeated in one JSON/YAML mapping"
    kinds = DUP_KINDS
    doc = """
    ## What it does
    Reports a key that appears twice in the same mapping of a JSON or YAML config.

    ## Why it matters
    DeepSpeed rejects duplicate keys when it loads its config; YAML and JSON loaders elsewhere
    silently keep the last one, so the value the author reads first is not the one used. A key
    repeated with the same value (outside DeepSpeed) is reported as a warning: it runs, but a
    later edit to only one of the copies is lost.

    ## Example

    ## How to fix
    Keep one occurrence.
    """
    valid = (Example('{\n  "train_batch_size": 16,\n  "fp16": {"enabled": true}\n}\n', filename="ds_config.json"),)
    invalid = (
        Example('{\n  "train_batch_size": 16,\n  "fp16": {"enabled": true},\n  "train_batch_size": 32\n}\n',
                filename="ds_config.json", line=4),
        Example("trainer:\n  devices: 8\n  num_nodes: 1\nmodel:\n  micro_batch_size: 1\n  tensor_model_parallel_size: 2\n"
                "  micro_batch_size: 2\n", filename="conf/gpt.yaml", line=7),
    )

    def check_file(self, f, ctx):
        tree = _tree(f)
        if tree is None:
            return
        lines = (f.text or "").splitlines()
        nodes = [("", tree)] + list(tree.walk())
        for path, node in nodes:
            for key, first, again in getattr(node, "duplicates", ()) or ():
                if (first.line, first.column) < (node.span.line, node.span.column):
                    continue  # the first one came in through a `<<: *anchor` merge: an override, not a repeat
                where = f" in {path}" if path else ""
                a, b = _inline_value(lines, first), _inline_value(lines, again)
                if a is not None and a == b and f.kind != "deepspeed":  # DeepSpeed refuses even these
                    yield self.report(again, f"duplicate key '{key}'{where} (first at line {first.line}), with "
                                             f"the same value {b}: the loader keeps one, and an edit to only "
                                             f"one of them is silently lost; remove the repeat",
                                      [Related.at(first, f"first '{key}'")], severity=Severity.WARNING)
                    continue
                what = f": {a} at line {first.line}, then {b}" if a is not None and b is not None else ""
                yield self.report(again, f"duplicate key '{key}'{where} (first at line {first.line}){what}; "
                                         f"the frameworks reject it or silently keep the last value; remove one of them",
                                  [Related.at(first, f"first '{key}'")])


def _inline_value(lines: list[str], key_span) -> str | None:
    """The scalar written after a key on its own line (``key: value`` / ``"key": value,``), comments
    and a trailing comma dropped; None when the value is a block, a flow collection or not on that line."""
    if key_span is None or not (1 <= key_span.line <= len(lines)):
        return None
    line = lines[key_span.line - 1]
    end = key_span.end_column if key_span.end_line == key_span.line and key_span.end_column else 0
    rest = line[end - 1:] if end > 0 else line[key_span.column - 1:].split(":", 1)[-1]
    rest = rest.lstrip().lstrip('"').lstrip("'").lstrip()
    if not rest.startswith(":"):
        return None
    rest = rest[1:]
    for marker in (" #", "\t#", " //"):
        i = rest.find(marker)
        if i >= 0:
            rest = rest[:i]
    rest = rest.strip().rstrip(",").strip()
    if not rest or rest[0] in "{[|>&*" or rest.startswith("!!"):
        return None
    return rest


#: DeepSpeed's compressed-communication optimizers (names as DeepSpeed lower-cases them)
_NO_ZERO_OPTIMIZERS = {"onebitadam": "1-bit Adam", "zerooneadam": "0/1 Adam", "onebitlamb": "1-bit LAMB"}
#: accelerate ``deepspeed_config`` keys that conflict with ``deepspeed_config_file``
#: (``DeepSpeedPlugin._deepspeed_config_checks``)
_ACCELERATE_DS_FIELDS = ("gradient_accumulation_steps", "gradient_clipping", "zero_stage",
                         "offload_optimizer_device", "offload_param_device", "offload_param_nvme_path",
                         "offload_optimizer_nvme_path", "zero3_save_16bit_model")


def _int_of(node) -> int | None:
    if node is None or isinstance(node.value, bool) or not isinstance(node.value, int):
        return None
    return node.value


class ConflictingDeepSpeedSettings(Rule):
    code = "CFG007"
    name = "conflicting-deepspeed-settings"
    severity = Severity.ERROR
    summary = "DeepSpeed settings that DeepSpeed or accelerate refuse together at start-up"
    kinds = frozenset({"deepspeed", "neox", "accelerate"})
    doc = """
    ## What it does
    Flags combinations that DeepSpeed, or accelerate's DeepSpeed plugin, rejects when the workers
    start:
    - a compressed-communication optimizer (`optimizer.type` `OneBitAdam`, `ZeroOneAdam`,
      `OneBitLamb`, any case) with `zero_optimization.stage` 1 or more (DeepSpeed and gpt-neox
      configs);
    - partial optimizer offload (`offload_optimizer.ratio` below 1) with a ZeRO stage other than 3;
    - an accelerate config with `distributed_type: DEEPSPEED` whose `deepspeed_config` names a
      `deepspeed_config_file` and also sets one of the fields that file must hold
      (`zero_stage`, `gradient_accumulation_steps`, `gradient_clipping`, the offload devices and
      NVMe paths, `zero3_save_16bit_model`).
    Values parallint cannot resolve keep it silent.

    ## Why it matters
    Each stops every worker after the GPUs are allocated: "1bit-Adam is not compatible with ZeRO"
    (and the 0/1 Adam and 1-bit LAMB variants), "Partial offloading only supported for ZeRO Stage
    3", and accelerate's "When using `deepspeed_config_file`, the following accelerate config
    variables will be ignored".

    ## Example

    ## How to fix
    Use ZeRO stage 0 with a 1-bit optimizer (or keep ZeRO and use `Adam`/`AdamW`); use ZeRO-3 for
    partial offload; move the listed fields into the DeepSpeed config file and remove them from
    the accelerate config.
    """
    valid = (
        Example('{\n  "train_batch_size": 64,\n  "optimizer": {"type": "OneBitAdam", "params": {"lr": 1e-4}},\n'
                '  "zero_optimization": {"stage": 0}\n}\n', filename="ds_config.json"),
        Example('{\n  "train_batch_size": 64,\n  "optimizer": {"type": "AdamW", "params": {"lr": 1e-4}},\n'
                '  "zero_optimization": {"stage": 2}\n}\n', filename="ds_config.json"),
        Example("compute_environment: LOCAL_MACHINE\ndistributed_type: DEEPSPEED\ndeepspeed_config:\n"
                "  deepspeed_config_file: ds_zero3.json\n  zero3_init_flag: true\nnum_machines: 1\nnum_processes: 8\n",
                filename="accelerate_ds.yaml"),
    )
    invalid = (
        Example('{\n  "train_batch_size": 64,\n  "optimizer": {"type": "OneBitAdam", "params": {"lr": 1e-4}},\n'
                '  "zero_optimization": {"stage": 2}\n}\n', filename="ds_config.json", line=3),
        Example("compute_environment: LOCAL_MACHINE\ndistributed_type: DEEPSPEED\ndeepspeed_config:\n"
                "  deepspeed_config_file: ds_zero3.json\n  zero_stage: 3\n  zero3_init_flag: true\n"
                "num_machines: 1\nnum_processes: 8\n", filename="accelerate_ds.yaml", line=5),
    )

    def check_file(self, f, ctx):
        tree = _tree(f)
        if tree is None or not tree.is_map:
            return
        if f.kind == "accelerate":
            yield from self._accelerate(tree)
            return
        zero = tree.get("zero_optimization") or tree.get("zero-optimization")
        if zero is None or not zero.is_map:
            return
        stage_n = zero.get("stage")
        stage = _int_of(stage_n)
        opt = tree.get("optimizer")
        typ = opt.get("type") if opt is not None and opt.is_map else None
        if typ is not None and isinstance(typ.value, str) and stage is not None and stage >= 1:
            what = _NO_ZERO_OPTIMIZERS.get(typ.value.strip().lower())
            if what is not None:
                yield self.report(typ.span, f"{what} ({typ.value}) is not compatible with ZeRO: DeepSpeed refuses "
                                            f"ZeRO stage {stage} with it at start-up; set zero_optimization.stage to 0 or use "
                                            f"another optimizer",
                                  [Related.at(stage_n.span, f"ZeRO stage {stage}")])
        off = zero.get("offload_optimizer")
        ratio = off.get("ratio") if off is not None and off.is_map else None
        if ratio is not None and isinstance(ratio.value, (int, float)) and not isinstance(ratio.value, bool) \
                and ratio.value < 1 and stage is not None and stage != 3:
            yield self.report(ratio.span, f"partial optimizer offload (ratio {ratio.value}) needs ZeRO stage 3; "
                                          f"DeepSpeed refuses it with stage {stage}; set zero_optimization.stage to 3 or remove "
                                          f"offload_optimizer.ratio",
                              [Related.at(stage_n.span, f"ZeRO stage {stage}")])

    def _accelerate(self, tree):
        dt = tree.get("distributed_type")
        ds = tree.get("deepspeed_config")
        if dt is None or not isinstance(dt.value, str) or dt.value.strip().upper() != "DEEPSPEED":
            return
        if ds is None or not ds.is_map:
            return
        cf = ds.get("deepspeed_config_file")
        if cf is None or cf.value in (None, "", "none", "None"):
            return
        for key in _ACCELERATE_DS_FIELDS:
            if ds.get(key) is None:
                continue
            yield self.report(ds.key_spans.get(key, ds.get(key).span),
                              f"deepspeed_config.{key} next to deepspeed_config_file: accelerate refuses the "
                              f"pair at start-up (\"When using `deepspeed_config_file`, the following accelerate "
                              f"config variables will be ignored\"); set it in the DeepSpeed config file",
                              [Related.at(ds.key_spans.get("deepspeed_config_file", cf.span), "deepspeed_config_file")])
