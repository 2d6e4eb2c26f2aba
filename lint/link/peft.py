"""Evidence of LoRA / QLoRA in an HF training script, for the estimator's PEFT terms.

:func:`evidence` reads a script (text only, never run) with the launch line's flags and says
whether it trains LoRA adapters over a frozen base, and with which rank, targets and base
quantization:

- a literal ``get_peft_model(model, LoraConfig(r=16, target_modules=["q_proj", "v_proj"]))``
  (or the config in a name assigned once), each keyword a literal or a field of the script's
  arguments (``r=model_args.lora_r``) that the launch line gives (``--lora_r 16``); a call under
  ``if model_args.use_peft:`` counts only when the line gives ``--use_peft``;
- TRL's ``get_peft_config(model_args)`` with ``--use_peft --lora_r 16 --lora_target_modules ...``
  on the line (TRL builds the LoraConfig from those fields);
- the frozen base in 4 or 8 bits: a literal ``BitsAndBytesConfig(load_in_4bit=True)`` passed as
  ``quantization_config=`` to ``from_pretrained``, or ``--load_in_4bit`` with TRL's
  ``get_quantization_config(model_args)``.

The result is ``None`` (no PEFT or quantization word at all), ``UNKNOWN`` (PEFT is evident but
its size is not provable: the estimator must not size the job as full fine-tuning) or the facts
to state. Every value not provably reaching the LoraConfig keeps the whole job unknown; what
could only make the figure larger (modules left out of the count, double quantization when it is
not said) is taken at its smaller side, because the MEM rules judge a lower bound.
"""

from __future__ import annotations

import ast
import re

from parallint.model.diagnostics import Span
from parallint.model.facts import Value

#: evidence is evident but not sized
UNKNOWN = "unknown"

#: the words of a script that speak of PEFT or a quantized base
PEFT_WORD = re.compile(r"\b(?:peft|lora\w*|get_peft_model|get_peft_config|prepare_model_for_kbit_training|"
                       r"load_in_[48]bit|BitsAndBytesConfig|quantization_config|get_quantization_config)\b", re.I)
#: the launch-line flags that belong to PEFT / quantization (HF and TRL spellings)
PEFT_FLAGS = frozenset({"use_peft", "lora_r", "lora_rank", "lora_alpha", "lora_dropout", "lora_target_modules",
                        "load_in_4bit", "load_in_8bit", "use_bnb_nested_quant", "bnb_4bit_quant_type",
                        "bnb_4bit_compute_dtype", "bnb_4bit_quant_storage", "lora_task_type", "use_rslora"})
#: LoraConfig keywords that change neither the adapters' size nor what is trained
NEUTRAL = frozenset({"lora_alpha", "task_type", "fan_in_fan_out", "init_lora_weights", "use_rslora",
                     "inference_mode", "lora_dropout", "bias"})
#: target module names and the estimator's name of the linear layer
TARGET_NAMES = {"q_proj": "q", "k_proj": "k", "v_proj": "v", "o_proj": "o", "gate_proj": "gate",
                "up_proj": "up", "down_proj": "down"}
TRUE = {"true", "1", "yes", "y", "t", "on"}
FALSE = {"false", "0", "no", "n", "f", "off"}


class _Field:
    """A field of the script's arguments the launch line gives (``model_args.lora_r`` -> --lora_r)."""

    def __init__(self, name: str, word: Value | None, values: list[Value]) -> None:
        self.name, self.word, self.values = name, word, values


def _flag(flags: dict, name: str, args: list[Value]) -> "_Field | None":
    """The launch line's value(s) of ``--name``: every word after the flag up to the next flag
    (``--lora_target_modules q_proj v_proj``); None when the flag is absent."""
    if name not in flags:
        return None
    word, val = flags[name]
    if val is None:
        return _Field(name, word, [])
    if "=" in str(word.value):
        return _Field(name, word, [val])
    out: list[Value] = []
    seen = False
    for w in args:
        if w is word:
            seen = True
            continue
        if not seen:
            continue
        if not w.known or not isinstance(w.value, str) or w.value.startswith("--"):
            if not w.known:
                out.append(w)
            break
        out.append(w)
    return _Field(name, word, out or [val])


def _truth(f: "_Field | None") -> bool | None:
    """A boolean flag: ``--use_peft`` alone or with true/false; None when absent or unknown."""
    if f is None:
        return None
    if not f.values:
        return True
    v = f.values[0]
    if not v.known:
        return None
    low = str(v.value).strip().lower()
    return True if low in TRUE else False if low in FALSE else None


def _targets(raw) -> str | None:
    """``"q,v"`` for a list of module names every one of which the estimator sizes
    (``q_proj`` ... ``down_proj``, ``all-linear``); None otherwise (``c_attn``, ``lm_head``)."""
    items = [raw] if isinstance(raw, str) else list(raw) if isinstance(raw, (list, tuple)) else None
    if not items:
        return None
    names: list[str] = []
    for it in items:
        if not isinstance(it, str):
            return None
        for part in it.replace(",", " ").split():
            p = part.strip().lower()
            if p in ("all-linear", "all_linear"):
                names += list(TARGET_NAMES.values())
            elif p in TARGET_NAMES:
                names.append(TARGET_NAMES[p])
            else:
                return None
    return ",".join(dict.fromkeys(names)) or None


def _last(func) -> str:
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _span(path: str, node) -> Span:
    return Span(path, node.lineno, node.col_offset + 1)


def _parents(tree) -> dict:
    out = {}
    for n in ast.walk(tree):
        for c in ast.iter_child_nodes(n):
            out[c] = n
    return out


class _Reader:
    """Reads a LoraConfig / BitsAndBytesConfig keyword: a literal, or a field the line gives."""

    def __init__(self, path: str, flags: dict, args: list[Value], text: str) -> None:
        self.path, self.flags, self.args, self.text = path, flags, args, text
        self.used: set[str] = set()

    def value(self, node, want: str):
        """(value, span, source) of a keyword's value, or None when not provable. ``want``: int,
        bool, float, str or targets."""
        try:
            v = ast.literal_eval(node)
            return v, _span(self.path, node), f"{ast.unparse(node)} in {self.path}"
        except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
            pass
        if not (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)):
            return None
        name = node.attr
        if re.search(rf"\.{name}\s*=(?!=)", self.text):
            return None  # the script reassigns the field after parsing
        f = _flag(self.flags, name, self.args)
        if f is None:
            return None
        self.used.add(name)
        src = f"--{name} on the launch line"
        if want == "bool":
            b = _truth(f)
            span = f.values[0].span if f.values else f.word.span if f.word is not None else None
            return None if b is None else (b, span, src)
        if not f.values or any(not w.known for w in f.values):
            return None
        words = [str(w.value) for w in f.values]
        span = f.values[0].span
        if want == "targets":
            return words, span, src
        if len(words) != 1:
            return None
        s = words[0].strip()
        try:
            return (int(s) if want == "int" else float(s) if want == "float" else s), span, src
        except ValueError:
            return None


def _guarded(call, parents, rd: _Reader) -> bool:
    """The call runs: every ``if`` around it tests a field the launch line gives true."""
    node = call
    while node in parents:
        up = parents[node]
        if isinstance(up, ast.If):
            if node in up.orelse:
                return False
            if node is not up.test and not _is_main(up.test):
                got = rd.value(up.test, "bool")
                if got is None or got[0] is not True:
                    return False
        elif isinstance(up, (ast.IfExp, ast.BoolOp, ast.Try, ast.While, ast.ExceptHandler, ast.Lambda)):
            return False
        node = up
    return True


def _is_main(test) -> bool:
    """``__name__ == "__main__"``."""
    return (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == "__name__"
            and len(test.comparators) == 1 and isinstance(test.comparators[0], ast.Constant)
            and test.comparators[0].value == "__main__")


def _config_call(tree, arg, name: str):
    """The ``name(...)`` call ``arg`` is or the one call assigned to the name ``arg`` is."""
    if isinstance(arg, ast.Call) and _last(arg.func) == name:
        return arg
    if not isinstance(arg, ast.Name):
        return None
    found = [n for n in ast.walk(tree) if isinstance(n, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.NamedExpr))
             and any(isinstance(t, ast.Name) and t.id == arg.id
                     for t in (n.targets if isinstance(n, ast.Assign) else [n.target]))]
    if len(found) != 1 or not isinstance(found[0], ast.Assign):
        return None
    v = found[0].value
    return v if isinstance(v, ast.Call) and _last(v.func) == name else None


def _quant(tree, rd: _Reader, parents) -> "tuple[str, Span, str] | str | None":
    """The base's quantization: (base_quant, span, source), None for none, UNKNOWN."""
    bnb = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and _last(n.func) == "BitsAndBytesConfig"]
    loads = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and _last(n.func) == "from_pretrained"]
    passed = [(c, k) for c in loads for k in c.keywords
              if k.arg in ("quantization_config", "load_in_4bit", "load_in_8bit")]
    if not bnb and not passed:
        return None
    if len(bnb) > 1 or len(passed) != 1:
        return UNKNOWN
    call, kw = passed[0]
    if kw.arg in ("load_in_4bit", "load_in_8bit"):
        got = rd.value(kw.value, "bool")
        if got is None:
            return UNKNOWN
        if not got[0]:
            return None if not bnb else UNKNOWN
        return ("nf4" if kw.arg == "load_in_4bit" else "int8"), got[1], got[2]
    cfg = _config_call(tree, kw.value, "BitsAndBytesConfig")
    if cfg is None or not bnb or cfg is not bnb[0] or cfg.args:
        return UNKNOWN
    keys: dict = {}
    for k in cfg.keywords:
        if k.arg is None:
            return UNKNOWN
        if k.arg in ("load_in_4bit", "load_in_8bit", "bnb_4bit_use_double_quant"):
            got = rd.value(k.value, "bool")
        elif k.arg == "bnb_4bit_quant_type":
            got = rd.value(k.value, "str")
        elif k.arg.startswith(("bnb_4bit_compute", "llm_int8_threshold", "bnb_4bit_quant_storage")):
            continue
        else:
            return UNKNOWN
        if got is None:
            return UNKNOWN
        keys[k.arg] = got
    four, eight = keys.get("load_in_4bit"), keys.get("load_in_8bit")
    if four is not None and four[0] and not (eight and eight[0]):
        qt = keys.get("bnb_4bit_quant_type")
        if qt is not None and str(qt[0]).lower() not in ("nf4", "fp4"):
            return UNKNOWN
        dq = keys.get("bnb_4bit_use_double_quant")
        return ("nf4_dq" if dq and dq[0] else "nf4"), four[1], four[2]
    if eight is not None and eight[0] and not (four and four[0]):
        return "int8", eight[1], eight[2]
    return UNKNOWN


def _trl(tree, rd: _Reader, flags: dict, args: list[Value]) -> "dict | str":
    """TRL's ``get_peft_config(model_args)`` / ``get_quantization_config(model_args)``: the line's
    ``--use_peft --lora_r N --lora_target_modules ...`` and ``--load_in_4bit``; ``{}`` (full
    training) when the line, complete, gives none of those flags."""
    use = _flag(flags, "use_peft", args)
    if use is None and not any(n in PEFT_FLAGS for n in flags):
        return {}  # no PEFT or quantization flag: get_peft_config and get_quantization_config give None
    on = _truth(use)
    if on is not True or use is None:
        return UNKNOWN
    rank, targets = _flag(flags, "lora_r", args), _flag(flags, "lora_target_modules", args)
    if rank is None or targets is None or not rank.values or not targets.values:
        return UNKNOWN
    if any(not w.known for w in rank.values + targets.values) or len(rank.values) != 1:
        return UNKNOWN
    try:
        r = int(str(rank.values[0].value))
    except ValueError:
        return UNKNOWN
    tg = _targets([str(w.value) for w in targets.values])
    if tg is None or r <= 0:
        return UNKNOWN
    for name in ("lora_modules_to_save", "use_dora", "lora_task_type"):
        if name in flags:
            return UNKNOWN
    out = {"training.lora_rank": Value(r, rank.values[0].span, True, "", "--lora_r on the launch line"),
           "training.lora_targets": Value(tg, targets.values[0].span, True, "", "--lora_target_modules on the launch line")}
    q4, q8 = _truth(_flag(flags, "load_in_4bit", args)), _truth(_flag(flags, "load_in_8bit", args))
    quant_call = any(isinstance(n, ast.Call) and _last(n.func) == "get_quantization_config" for n in ast.walk(tree))
    if ("load_in_4bit" in flags and q4 is None) or ("load_in_8bit" in flags and q8 is None):
        return UNKNOWN
    if q4 or q8:
        if not quant_call:
            return UNKNOWN
        qt = _flag(flags, "bnb_4bit_quant_type", args)
        if qt is not None and (not qt.values or str(qt.values[0].value).lower() not in ("nf4", "fp4")):
            return UNKNOWN
        word = _flag(flags, "load_in_4bit" if q4 else "load_in_8bit", args)
        assert word is not None
        dq = _truth(_flag(flags, "use_bnb_nested_quant", args))
        # nested quantization when not said off: the smaller figure
        kind = "int8" if not q4 else ("nf4" if dq is False else "nf4_dq")
        out["training.base_quant"] = Value(kind, word.word.span if word.word is not None else rank.values[0].span, True, "",
                                           f"--{word.name} on the launch line")
    out["training.peft"] = Value("qlora" if q4 else "lora", use.word.span if use.word is not None else rank.values[0].span,
                                 True, "", "--use_peft on the launch line (TRL's get_peft_config)")
    return out


def evidence(text: str, path: str, flags: dict, args: list[Value]) -> "tuple[dict | str | None, frozenset[str]]":
    """``{fact key: Value}`` of the LoRA the script trains (``training.peft``, ``lora_rank``,
    ``lora_targets``, ``lora_dropout``, ``base_quant``), ``UNKNOWN`` when PEFT or quantization is
    evident but not provably sized, None when the script and the line show neither; with the
    launch-line flags the answer read (``--use_lora`` of the script's own arguments)."""
    rd = _Reader(path, flags, args, text)
    got = _evidence(text, path, flags, args, rd)
    return got, frozenset(rd.used)


def _evidence(text: str, path: str, flags: dict, args: list[Value], rd: _Reader) -> "dict | str | None":
    flag_words = [n for n in flags if n in PEFT_FLAGS or re.search(r"lora|peft|4bit|8bit|bnb", n)]
    if not PEFT_WORD.search(text) and not flag_words:
        return None
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return UNKNOWN
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)]
    peft_calls = [n for n in calls if _last(n.func) == "get_peft_model"]
    trl_calls = [n for n in calls if _last(n.func) == "get_peft_config"]
    lora_calls = [n for n in calls if _last(n.func) == "LoraConfig"]
    if trl_calls and not peft_calls and not lora_calls:
        got = _trl(tree, rd, flags, args)
        if isinstance(got, str):
            return got
        rest = [n for n in flag_words if n not in PEFT_FLAGS]
        return UNKNOWN if rest else got
    if len(peft_calls) != 1 or len(lora_calls) != 1 or trl_calls:
        return UNKNOWN
    call = peft_calls[0]
    parents = _parents(tree)
    cfg_arg = call.args[1] if len(call.args) > 1 else next(
        (k.value for k in call.keywords if k.arg == "peft_config"), None)
    cfg = _config_call(tree, cfg_arg, "LoraConfig") if cfg_arg is not None else None
    if cfg is None or cfg is not lora_calls[0] or cfg.args or not _guarded(call, parents, rd):
        return UNKNOWN
    out: dict = {}
    kws = {k.arg: k for k in cfg.keywords}
    if None in kws or "r" not in kws or "target_modules" not in kws:
        return UNKNOWN  # PEFT's defaults per model type are not read
    for name, kw in kws.items():
        assert name is not None
        if name == "r":
            got = rd.value(kw.value, "int")
            if got is None or not isinstance(got[0], int) or isinstance(got[0], bool) or got[0] <= 0:
                return UNKNOWN
            out["training.lora_rank"] = Value(got[0], got[1], True, "", got[2])
        elif name == "target_modules":
            got = rd.value(kw.value, "targets")
            tg = _targets(got[0]) if got is not None else None
            if got is None or tg is None:
                return UNKNOWN
            out["training.lora_targets"] = Value(tg, got[1], True, "", got[2])
        elif name == "lora_dropout":
            got = rd.value(kw.value, "float")
            if got is not None and isinstance(got[0], (int, float)) and got[0] > 0:
                out["training.lora_dropout"] = Value(True, got[1], True, "", got[2])
        elif name == "bias":
            got = rd.value(kw.value, "str")
            if got is None or got[0] != "none":
                return UNKNOWN  # trainable biases are not counted
        elif name not in NEUTRAL:
            return UNKNOWN  # modules_to_save, use_dora, layers_to_transform, rank_pattern ...
    q = _quant(tree, rd, parents)
    if q == UNKNOWN:
        return UNKNOWN
    if isinstance(q, tuple):
        out["training.base_quant"] = Value(q[0], q[1], True, "", q[2])
    kind = "qlora" if isinstance(q, tuple) and q[0].startswith("nf4") else "lora"
    out["training.peft"] = Value(kind, _span(path, call), True, "", f"get_peft_model(...) in {path}")
    if any(n not in rd.used for n in flag_words):
        return UNKNOWN  # a PEFT flag on the line that the script's LoraConfig does not read
    return out


def adapters_evident(text: str, flags: dict) -> bool:
    """The script makes LoRA adapters (``get_peft_model`` with a ``LoraConfig``, or TRL's
    ``get_peft_config``) and quantizes nothing (TRL's ``get_quantization_config`` gives None
    without ``--load_in_4bit`` / ``--load_in_8bit``): an unsized job that is LoRA and only LoRA."""
    if re.search(r"\b(?:load_in_[48]bit|BitsAndBytesConfig|prepare_model_for_kbit_training)\b", text) \
            or any(n.startswith(("load_in_", "bnb_")) for n in flags):
        return False
    if re.search(r"\bquantization_config\b", text) and not re.search(r"\bget_quantization_config\(", text):
        return False
    return bool(re.search(r"\bget_peft_model\(", text) and re.search(r"\bLoraConfig\(", text)
                or re.search(r"\bget_peft_config\(", text))


#: the partial-training words a sized PEFT job explains (the LoRA accounting counts them)
def explained(word: str) -> bool:
    return PEFT_WORD.fullmatch(word) is not None


def only_peft(pattern: re.Pattern[str], text: str) -> bool:
    """Every match of ``pattern`` (hfargs' partial-training words) in ``text`` is a PEFT or
    quantization word, or a ``device_map={"": ...}`` that puts the whole model on the process's
    own GPU (TRL's ``get_kbit_device_map()`` is that)."""
    for m in pattern.finditer(text):
        w = m.group(0)
        if explained(w):
            continue
        if w.lower() == "device_map" and re.match(r"device_map\s*=\s*(?:\{\s*[\"'][\"']\s*:|get_kbit_device_map\(\))",
                                                 text[m.start():]):
            continue
        if w.lower() in ("quantization_config",):
            continue
        return False
    return True


#: ``torch_dtype=`` / ``dtype=`` spellings and the precision a frozen base is then kept in
_DTYPES = {"bfloat16": "bf16", "bf16": "bf16", "float16": "fp16", "half": "fp16", "fp16": "fp16",
           "float32": "fp32", "float": "fp32", "fp32": "fp32"}
#: a later cast of the whole model: what it loads in is not what it keeps
_CAST = re.compile(r"\.(?:half|bfloat16|float)\(\s*\)|\.to\([^)]*\b(?:dtype|bfloat16|float16|float32|half)\b")


def base_dtype(text: str, path: str, flags: dict) -> "tuple[str, Span, str] | None":
    """The precision the frozen base of a LoRA job is kept in, when the script says it: every
    ``from_pretrained`` that loads a model (not a tokenizer or config) passes the same literal
    ``torch_dtype=`` (or ``dtype=``): ``torch.bfloat16`` / ``"bfloat16"`` -> bf16, float16 -> fp16,
    float32 -> fp32; (precision, span, source), else None. None too when the model is cast later
    (``.half()``, ``.to(torch.bfloat16)``), when no dtype is said (transformers' default load dtype
    changed between versions), ``"auto"`` (the checkpoint's) or a name, and under ``--deepspeed``
    (its engine casts the module to the bf16/fp16 the run uses): the estimator then keeps the
    training precision's figure. Autocast (``--bf16`` without DeepSpeed) computes in 16 bits
    but keeps the weights it loaded: an fp32 base stays 4 bytes a parameter."""
    if "deepspeed" in flags or _CAST.search(text):
        return None
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    found: list[tuple[str, ast.keyword]] = []
    for n in ast.walk(tree):
        if not (isinstance(n, ast.Call) and _last(n.func) == "from_pretrained"):
            continue
        owner = n.func.value if isinstance(n.func, ast.Attribute) else None
        owner_name = _last(owner) if isinstance(owner, (ast.Attribute, ast.Name)) else ""
        if re.search(r"Tokenizer|Processor|Config$", owner_name):
            continue
        if any(k.arg is None for k in n.keywords):
            return None  # **kwargs: what it holds is not read here
        kw = next((k for k in n.keywords if k.arg in ("torch_dtype", "dtype")), None)
        if kw is None:
            return None
        v = kw.value
        word = (v.attr if isinstance(v, ast.Attribute) and isinstance(v.value, ast.Name) and v.value.id == "torch"
                else v.value if isinstance(v, ast.Constant) and isinstance(v.value, str) else None)
        kind = _DTYPES.get(str(word).lower()) if word is not None else None
        if kind is None:
            return None
        found.append((kind, kw))
    if not found or len({k for k, _ in found}) != 1:
        return None
    kind, first = found[0]
    return kind, _span(path, first), f"from_pretrained(..., {first.arg}=...) in {path}: the frozen base kept in {kind}"
