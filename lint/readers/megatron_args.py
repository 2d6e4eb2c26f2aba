"""Megatron-LM (and Megatron-DeepSpeed) command-line flags -> normalized facts.

``flag_facts("--tensor-model-parallel-size", Value("8", span))`` gives ``[("parallel.tp", Value(8))]``.
A boolean flag is passed with ``value=None`` (it was present on the command line) or with a
``Value(True/False)`` (a YAML file whose keys are CLI flags). ``args_facts(words)`` reads a whole
argument list (one :class:`Value` per word, unknown words allowed) and adds what needs several flags
at once: ``model.kv_heads`` only with ``--group-query-attention``, ``parallel.vpp`` from
``--num-layers-per-virtual-pipeline-stage`` when layers and PP are known, and ``framework``.

Nothing here guesses: a value that is unknown (environment variable, command substitution,
placeholder) or not an integer stays unknown.
"""

from __future__ import annotations

from parallint.model.facts import FactMap, Value, known_int

#: flag (without dashes, '-' separated) -> normalized key, for integer-valued flags
INT_FLAGS: dict[str, str] = {
    "tensor-model-parallel-size": "parallel.tp",
    "model-parallel-size": "parallel.tp",  # deprecated alias in older Megatron
    "pipeline-model-parallel-size": "parallel.pp",
    "context-parallel-size": "parallel.cp",
    "expert-model-parallel-size": "parallel.ep",
    "expert-tensor-parallel-size": "parallel.etp",
    "num-virtual-stages-per-pipeline-rank": "parallel.vpp",
    "num-layers": "model.layers",
    "hidden-size": "model.hidden",
    "ffn-hidden-size": "model.ffn",
    "num-attention-heads": "model.heads",
    "kv-channels": "model.head_dim",
    "seq-length": "model.seq_len",
    "vocab-size": "model.vocab",
    "num-experts": "model.num_experts",
    "moe-router-topk": "model.top_k",
    "moe-ffn-hidden-size": "model.moe_ffn",
    "micro-batch-size": "training.micro_batch",
    "global-batch-size": "training.global_batch",
    "zero-stage": "parallel.zero_stage",
}

#: flags that need another flag to mean something; handled in args_facts
CONTEXT_FLAGS = {"num-query-groups", "num-layers-per-virtual-pipeline-stage", "group-query-attention"}

#: flags that only Megatron-style scripts take; any one of them marks the command line as Megatron
MEGATRON_MARKERS = frozenset(
    """tensor-model-parallel-size pipeline-model-parallel-size micro-batch-size global-batch-size
    num-attention-heads use-distributed-optimizer sequence-parallel context-parallel-size
    expert-model-parallel-size num-layers-per-virtual-pipeline-stage
    num-virtual-stages-per-pipeline-rank recompute-granularity recompute-activations
    ffn-hidden-size group-query-attention num-query-groups""".split()
)


def normalize_flag(flag: str) -> str:
    """``--Tensor_Model_Parallel_Size`` -> ``tensor-model-parallel-size``."""
    return flag.strip().lstrip("-").replace("_", "-").lower()


def _flag_on(value: Value | None) -> Value | None:
    """A boolean flag's state: None/True -> known True (with the value's span); False -> None."""
    if value is None:
        return None
    if not value.known:
        return value
    v = value.value
    if isinstance(v, str):
        low = v.strip().lower()
        if low in ("true", "1", "yes", "on"):
            v = True
        elif low in ("false", "0", "no", "off", "null", "none", ""):
            v = False
    if v is True:
        return Value(True, value.span, True, "", value.source)
    if v is False or v is None:
        return Value(False, value.span, True, "", value.source)
    return Value.unknown(f"not a boolean: {v!r}", value.span, value.source)


def flag_facts(flag: str, value: Value | None) -> list[tuple[str, Value]]:
    """The normalized facts one flag states. ``value`` is None for a bare boolean flag."""
    name = normalize_flag(flag)
    src = f"--{name}"
    out: list[tuple[str, Value]] = []

    def mk(v: Value, x) -> Value:
        return Value(x, v.span, True, "", v.source or src)

    if name in INT_FLAGS:
        if value is None:
            return out
        iv = value.as_int() if value.known else value
        if not iv.known and value.known:
            iv = Value.unknown(f"{src} is not an integer: {value.value!r}", value.span, value.source or src)
        out.append((INT_FLAGS[name], iv if not iv.known else mk(iv, iv.value)))
        return out

    # boolean flags ---------------------------------------------------------------------
    present = Value(True, None, True, "", src) if value is None else _flag_on(value)
    if name in ("sequence-parallel", "use-distributed-optimizer", "bf16", "fp16", "swiglu",
                "untie-embeddings-and-output-weights", "disable-bias-linear", "add-bias-linear",
                "recompute-activations", "use-rotary-position-embeddings", "deepspeed",
                "checkpoint-activations", "cpu-offloading", "optimizer-cpu-offload"):
        if present is None:
            return out
        if not present.known:
            key = {
                "sequence-parallel": "parallel.sequence_parallel",
                "use-distributed-optimizer": "parallel.distributed_optimizer",
            }.get(name)
            if key:
                out.append((key, present))
            return out
        on = present.value
        span = present.span
        if name == "sequence-parallel":
            out.append(("parallel.sequence_parallel", Value(on, span, True, "", src)))
        elif name == "use-distributed-optimizer":
            out.append(("parallel.distributed_optimizer", Value(on, span, True, "", src)))
        elif name in ("bf16", "fp16") and on:
            out.append(("training.precision", Value(name, span, True, "", src)))
        elif name == "swiglu" and on:
            out.append(("model.mlp", Value("swiglu", span, True, "", src)))
        elif name == "untie-embeddings-and-output-weights" and on:
            out.append(("model.tied_embeddings", Value(False, span, True, "", src)))
        elif name == "disable-bias-linear" and on:
            out.append(("model.bias", Value(False, span, True, "", src)))
        elif name == "add-bias-linear" and on:
            out.append(("model.bias", Value(True, span, True, "", src)))
        elif name == "recompute-activations" and on:
            out.append(("training.recompute", Value("selective", span, True, "", src)))
        elif name in ("cpu-offloading", "optimizer-cpu-offload") and on:
            out.append(("training.offload", Value(True, span, True, "", src)))
        elif name == "checkpoint-activations" and on:  # Megatron before 2022: full recompute
            out.append(("training.recompute", Value("full", span, True, "", src)))
        elif name == "use-rotary-position-embeddings" and on:
            out.append(("model.position_embeddings", Value("rope", span, True, "", src)))
        return out

    # string-valued flags -----------------------------------------------------------------
    if value is None:
        return out
    if name == "recompute-granularity":
        if not value.known:
            out.append(("training.recompute", value))
        elif str(value.value).strip().lower() in ("selective", "full"):
            out.append(("training.recompute", mk(value, str(value.value).strip().lower())))
    elif name == "normalization" and value.known:
        low = str(value.value).strip().lower()
        if low in ("rmsnorm", "layernorm"):
            out.append(("model.norm", mk(value, low)))
    elif name == "position-embedding-type" and value.known:
        low = str(value.value).strip().lower()
        if low == "rope":
            out.append(("model.position_embeddings", mk(value, "rope")))
        elif low == "learned_absolute":
            out.append(("model.position_embeddings", mk(value, "learned")))
    return out


#: Megatron/DeepSpeed flags whose value names a file the job reads
LINK_FLAGS = frozenset(
    """deepspeed-config deepspeed-config-file config config-file config-path yaml-cfg
    job.config-file""".split()
)

#: integer-valued or string-valued flags we know take exactly one argument
_VALUED = set(INT_FLAGS) | {"num-query-groups", "num-layers-per-virtual-pipeline-stage",
                             "recompute-granularity", "normalization", "position-embedding-type"}
_BOOLEAN = {"sequence-parallel", "use-distributed-optimizer", "bf16", "fp16", "swiglu",
            "untie-embeddings-and-output-weights", "disable-bias-linear", "add-bias-linear",
            "recompute-activations", "use-rotary-position-embeddings", "deepspeed",
            "checkpoint-activations", "cpu-offloading", "optimizer-cpu-offload", "group-query-attention", "use-torch-fsdp2", "use-megatron-fsdp",
            "overlap-moe-expert-parallel-comm"}


def split_flags(words: list[Value]) -> list[tuple[str, Value, Value | None]]:
    """``[(normalized flag, flag word, value word or None)]`` for the ``--flags`` of an argument list.

    ``--x=v`` and ``--x v`` both work; a flag followed by another flag (or nothing) is boolean.
    An unknown word that stands where a flag could be (an unexpanded ``$ARGS``) is skipped.
    """
    out: list[tuple[str, Value, Value | None]] = []
    i = 0
    n = len(words)
    while i < n:
        w = words[i]
        text = w.value if w.known and isinstance(w.value, str) else None
        if text is None or not text.startswith("--") or text == "--":
            i += 1
            continue
        if "=" in text:
            flag, _, rest = text.partition("=")
            name = normalize_flag(flag)
            out.append((name, w, Value(rest, w.span, True, "", f"--{name}")))
            i += 1
            continue
        name = normalize_flag(text)
        nxt = words[i + 1] if i + 1 < n else None
        takes = name not in _BOOLEAN and nxt is not None and (
            not nxt.known or not (isinstance(nxt.value, str) and nxt.value.startswith("--"))
        )
        if name in _BOOLEAN or nxt is None:
            takes = False
        elif name in _VALUED:
            takes = True
        if takes and nxt is not None:
            v = nxt if not nxt.known else Value(nxt.value, nxt.span, True, "", f"--{name}")
            if not nxt.known:
                v = Value.unknown(nxt.why, nxt.span, f"--{name}")
            out.append((name, w, v))
            i += 2
        else:
            out.append((name, w, None))
            i += 1
    return out


def _dashed(flag_word: Value) -> bool:
    """Megatron's argparse only knows the dashed spelling: ``--micro_batch_size`` is some other
    script's option (Colossal-AI, HF examples), not Megatron's."""
    raw = flag_word.value if flag_word.known and isinstance(flag_word.value, str) else ""
    return "_" not in raw.split("=", 1)[0]


def is_megatron(flags: list[tuple[str, Value, Value | None]]) -> bool:
    return any(name in MEGATRON_MARKERS and _dashed(fw) for name, fw, _ in flags)


def args_facts(words: list[Value], require_marker: bool = True) -> FactMap:
    """Facts of a whole Megatron argument list. Empty unless a Megatron-only flag is present
    (``require_marker``), so that ``--num-layers`` of some other script is not read as Megatron's."""
    facts = FactMap()
    flags = split_flags(words)
    if require_marker and not is_megatron(flags):
        return facts
    gqa = False
    query_groups: Value | None = None
    layers_per_vstage: Value | None = None
    first_flag_span = None
    for name, fw, val in flags:
        if require_marker and not _dashed(fw):
            continue
        if first_flag_span is None and name in MEGATRON_MARKERS:
            first_flag_span = fw.span
        if name == "group-query-attention":
            on = Value(True) if val is None else _flag_on(val)
            gqa = on is not None and on.known and on.value is True
            continue
        if name == "num-query-groups":
            query_groups = val
            continue
        if name == "num-layers-per-virtual-pipeline-stage":
            layers_per_vstage = val
            continue
        for key, v in flag_facts(name, val if val is not None else None):
            facts.add(key, _with_span(v, val, fw))
    if gqa and query_groups is not None:
        iv = query_groups.as_int() if query_groups.known else query_groups
        facts.add("model.kv_heads", iv)
    if layers_per_vstage is not None:
        n = known_int(layers_per_vstage)
        if n is not None:
            facts.add("parallel.vpp_layers", Value(n, layers_per_vstage.span, True, "",
                                                   "--num-layers-per-virtual-pipeline-stage"))
        facts.add("parallel.vpp", vpp_from_layers_per_stage(
            facts.int("model.layers"), facts.int("parallel.pp") or 1, layers_per_vstage))
    if first_flag_span is None and flags:
        first_flag_span = flags[0][1].span
    if not facts.all("training.recompute") and first_flag_span is not None and _complete(words, flags):
        # Megatron recomputes nothing unless told to; only said when every word is known
        facts.add("training.recompute", Value("none", first_flag_span, True, "",
                                              "no --recompute-* flag (Megatron's default)"))
    facts.add("framework", Value("megatron", first_flag_span, True, "", "Megatron arguments"))
    return facts


def _complete(words: list[Value], flags: list[tuple[str, Value, Value | None]]) -> bool:
    """Every word is known and none of the flags reads more arguments from a file or from DeepSpeed's
    activation-checkpointing config, so the absence of a flag means the framework's default."""
    if any(not w.known for w in words):
        return False
    return not any(name in LINK_FLAGS or "checkpoint" in name or "recompute" in name
                   for name, _, _ in flags)


def vpp_from_layers_per_stage(layers: int | None, pp: int | None, per_stage: Value) -> Value:
    """Virtual stages per pipeline rank = layers / (PP × layers per virtual stage), when exact."""
    n = known_int(per_stage)
    src = "--num-layers-per-virtual-pipeline-stage"
    if n is None or n <= 0 or layers is None or not pp:
        return Value.unknown("needs --num-layers, --pipeline-model-parallel-size and an integer "
                             "--num-layers-per-virtual-pipeline-stage", per_stage.span, src)
    if layers % (pp * n) != 0:
        return Value.unknown(f"{layers} layers do not split into {pp} x {n}-layer virtual stages",
                             per_stage.span, src)
    return Value(layers // (pp * n), per_stage.span, True, "", src)


def _with_span(v: Value, val: Value | None, flag_word: Value) -> Value:
    """Boolean flags have no value word: give their fact the flag's own span."""
    if v.span is None:
        return Value(v.value, flag_word.span, v.known, v.why, v.source)
    return v
