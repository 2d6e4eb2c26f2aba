"""Hugging Face ``TrainingArguments`` given on the launch line.

A script built on ``HfArgumentParser`` (or TRL's ``TrlParser``, alignment-handbook's
``H4ArgumentParser``) over ``TrainingArguments``/``SFTConfig``/... takes its Trainer settings as
flags: ``torchrun ... train.py --per_device_train_batch_size 4 --gradient_accumulation_steps 2
--bf16 --deepspeed ds.json``. :func:`attach` reads those flags of a linked job's launch into a
file of kind ``hftrainargs`` whose values point at the words of the launch line, so BAT003 and the
other job rules compare them with the DeepSpeed config the same way as a YAML of training
arguments.

Where a flag is absent the dataclass default applies (``per_device_train_batch_size`` 8,
``gradient_accumulation_steps`` 1), but only when that is certain: every word of the command is
known (no ``$ARGS`` that may carry the flag), no config file is handed to the parser
(``--config x.yaml`` or a positional ``x.yaml``/``x.json``), and the script neither redefines the
field nor assigns it after parsing. The script is only read as text, never run.
"""

from __future__ import annotations

import re
from pathlib import Path

from parallint.model.facts import FileFacts, Value
from parallint.model.origin import How, Origin

PARSER_RE = re.compile(r"\b(?:HfArgumentParser|TrlParser|H4ArgumentParser)\b")
ARGS_RE = re.compile(r"\b(?:TrainingArguments|Seq2SeqTrainingArguments|SFTConfig|DPOConfig|GRPOConfig|"
                     r"RewardConfig|KTOConfig|ORPOConfig|CPOConfig|PPOConfig|RLOOConfig|GKDConfig)\b")
#: flag -> (fact key, dataclass default or None)
INT_ARGS = {
    "per_device_train_batch_size": ("training.micro_batch", 8),
    "gradient_accumulation_steps": ("training.grad_accum", 1),
}
BOOL_ARGS = ("fp16", "bf16", "ddp_find_unused_parameters")
TRUE = {"true", "1", "yes", "y", "t", "on"}
FALSE = {"false", "0", "no", "n", "f", "off"}
CONFIG_SUFFIXES = (".yaml", ".yml", ".json")


def is_hf_cli_script(text: str) -> bool:
    """The script parses TrainingArguments (or a TRL config) from its command line."""
    # every name PARSER_RE takes holds "Parser": a plain substring test rules out most files at once
    return "Parser" in text and PARSER_RE.search(text) is not None and ARGS_RE.search(text) is not None


def _redefines(text: str, name: str) -> bool:
    """The script changes a field's default or value itself (a dataclass field, ``set_defaults``,
    an assignment to ``args.<name>``, a ``replace(..., name=...)``)."""
    return re.search(rf"(?:^\s*{name}\s*:|\.{name}\s*=(?!=)|\b{name}\s*=(?!=)|set_defaults)", text, re.M) is not None


def _norm(flag: str) -> str:
    return flag[2:].replace("-", "_")


def split(args: list[Value]) -> tuple[dict[str, tuple[Value, Value | None]], bool, bool]:
    """``{flag: (flag word, value or None)}`` of the ``--flags``; whether every word is known; whether
    a config file is given to the parser."""
    out: dict[str, tuple[Value, Value | None]] = {}
    complete = True
    config = False
    i, n = 0, len(args)
    while i < n:
        w = args[i]
        text = w.value if w.known and isinstance(w.value, str) else None
        if text is None:
            complete = False
            i += 1
            continue
        if not text.startswith("--") or text == "--":
            if text.lower().endswith(CONFIG_SUFFIXES):
                config = True
            i += 1
            continue
        if "=" in text:
            flag, _, rest = text.partition("=")
            out[_norm(flag)] = (w, Value(rest, w.span, True, "", flag))
            i += 1
            continue
        name = _norm(text)
        nxt = args[i + 1] if i + 1 < n else None
        if nxt is not None and not nxt.known:
            complete = False  # `--bf16 $EXTRA`: a value, or more flags
        if nxt is not None and (not nxt.known or not str(nxt.value).startswith("--")):
            out[name] = (w, Value(nxt.value, nxt.span, nxt.known, nxt.why, text) if nxt.known
                         else Value.unknown(nxt.why, nxt.span, text))
            i += 2
        else:
            out[name] = (w, None)
            i += 1
    if "config" in out or "config_file" in out:
        config = True
    return out, complete, config


def cli_facts(args: list[Value], script_text: str, path: str, abspath: Path, text: str,
              parts: "tuple[dict[str, tuple[Value, Value | None]], bool, bool] | None" = None,
              where: str = "") -> FileFacts | None:
    """The TrainingArguments facts of an HF script's argument list, as an ``hftrainargs`` file
    (``parts``: what :func:`split` gives for ``args``, when the caller has it already; ``where``:
    the file the arguments come from, when not the launch line)."""

    def absent(name: str) -> str:
        return f"no {name} in {where}" if where else f"no --{name} on the launch line"

    flags, complete, config = split(args) if parts is None else parts
    ff = FileFacts(path=path, abspath=abspath, kind="hftrainargs", text=text)
    first = next(iter(flags.values()))[0].span if flags else None
    for name, (key, default) in INT_ARGS.items():
        if _redefines(script_text, name):
            continue
        if name in flags:
            fw, val = flags[name]
            src = f"--{name} on the launch line"
            if val is None:
                continue
            if not val.known:
                ff.facts.add(key, Value.unknown(val.why, val.span, src))
                continue
            s = str(val.value).strip()
            if re.fullmatch(r"\d+", s):
                ff.facts.add(key, Value(int(s), val.span, True, "", src))
            else:
                ff.facts.add(key, Value.unknown(f"--{name} {s!r} is not a fixed integer", val.span, src))
        elif complete and not config and first is not None:
            ff.facts.add(key, Value(default, first, True, "",
                                    f"TrainingArguments default {name}={default} ({absent(name)})",
                                    Origin(How.DEFAULT)))
    for name in BOOL_ARGS:
        if name not in flags or _redefines(script_text, name):
            continue
        fw, val = flags[name]
        src = f"--{name} on the launch line"
        if val is None:
            on, span = True, fw.span
        elif not val.known:
            if name == "ddp_find_unused_parameters":
                ff.facts.add("ddp.find_unused_parameters", Value.unknown(val.why, val.span, src))
            continue
        else:
            low = str(val.value).strip().lower()
            if low not in TRUE | FALSE:
                continue
            on, span = low in TRUE, val.span
        if name == "ddp_find_unused_parameters":
            ff.facts.add("ddp.find_unused_parameters", Value(on, span, True, "", src))
        elif on:
            ff.facts.add("training.precision", Value(name, span, True, "", src))
    if (complete and not config and first is not None and "fp16" not in flags and "bf16" not in flags
            and not _redefines(script_text, "fp16") and not _redefines(script_text, "bf16")):
        # neither flag on a complete argument list: the Trainer runs in fp32 (fp16=bf16=False)
        ff.facts.add("training.precision", Value("fp32", first, True, "",
                                                 "TrainingArguments default fp16=False, bf16=False ("
                                                 + (f"neither fp16 nor bf16 in {where})" if where else
                                                    "neither --fp16 nor --bf16 on the launch line)"),
                                                 Origin(How.DEFAULT)))
    ds = flags.get("deepspeed")
    if ds is not None and ds[1] is not None and ds[1].known and ds[1].value:
        ff.links.append(Value(str(ds[1].value), ds[1].span, True, "", "--deepspeed on the launch line"))
    if not len(ff.facts):
        return None
    ff.facts.add("framework", Value("hf_trainer", first, True, "", "HfArgumentParser over TrainingArguments"))
    return ff


#: the launch-line flags that can name the model the script loads
MODEL_FLAGS = ("model_name_or_path", "model_name", "model_path", "base_model", "model_id")
#: launchers whose processes run the script's Trainer with only what the launch line says
#: (accelerate reads a default config the tree does not show)
PLAIN_LAUNCHERS = ("torchrun", "torch.distributed.launch", "torch.distributed.run", "deepspeed", "python")
#: the script trains part of the model, quantizes it, or places it itself: states not sized here
PARTIAL_SCRIPT = re.compile(
    r"\b(?:peft|lora\w*|get_peft_model|prepare_model_for_kbit_training|load_in_[48]bit|BitsAndBytesConfig|"
    r"quantiz\w*|requires_grad_?\s*(?:=|\()\s*False|freez\w*|frozen|adapters?|device_map|"
    r"FullyShardedDataParallel|fully_shard|deepspeed\.initialize|offload\w*|optimizers\s*=|"
    r"create_optimizer\w*|vision|multimodal|llava|mamba|rwkv)\b", re.I)
PARTIAL_FLAG = re.compile(r"lora|peft|adapter|quant|4bit|8bit|bits|freez|finetuning_type|trainable|offload|"
                          r"device_map|vision|fsdp_config|accelerator_config", re.I)
#: the weights may be loaded in 16 bits: Adam's moments then live in 16 bits, with no fp32 master
HALF_LOAD = re.compile(r"\btorch_dtype\b|\bdtype\s*=|\.half\(\)|\.bfloat16\(\)|\.to\([^)]*(?:bfloat16|float16|half)")
ADAM = {"adamw_torch", "adamw_hf", "adamw_torch_fused", "adamw_apex_fused", "adamw_anyprecision", "adamw_torch_xla",
        "adamw_torch_npu_fused"}


def _literal_model(script: FileFacts) -> Value | None:
    """The hub id of ``from_pretrained("org/name")`` when every ``from_pretrained`` call of the
    script loads that one literal id and parallint's hub table knows it (the tokenizer loading the
    same id is fine); None otherwise (a name in a variable, two ids, an id not in the table)."""
    from parallint.estimator.spec import hub_shape
    from parallint.model.diagnostics import Span

    text = script.text or ""
    calls = len(re.findall(r"\bfrom_pretrained\(", text))
    lits = list(re.finditer(r"\bfrom_pretrained\(\s*[\"']([\w.-]+/[\w.-]+)[\"']\s*[,)]", text))
    if not lits or len(lits) != calls or len({m.group(1) for m in lits}) != 1:
        return None
    hub_id = lits[0].group(1)
    if hub_shape(hub_id) is None:
        return None
    # the note points at the model's load, not the tokenizer's
    m = next((m for m in lits if re.search(r"(?:Model|For\w+)\s*\.\s*$", text[max(0, m.start() - 80):m.start()])),
             lits[0])
    at = m.start(1)
    line = text.count("\n", 0, at) + 1
    column = at - (text.rfind("\n", 0, at) + 1) + 1
    return Value(hub_id, Span(script.path, line, column), True, "", f"from_pretrained in {script.path}")


#: :func:`_lora`'s answer when the script trains part of the model in a way not sized here
UNSIZED: dict = {}
#: :func:`_lora`'s answer when the only partial training is a LoRA (PEFT evidence) whose rank or
#: target modules are not provable: the model is stated with an unknown ``training.peft``, so that
#: the MEM rules can say what to verify instead of sizing it
PEFT_UNSIZED: dict = {}


def _lora(text: str, path: str, flags: dict, args: list[Value]) -> dict:
    """The PEFT facts of a script and its flags (``{}`` for full training), or :data:`UNSIZED`
    when it trains, quantizes or places part of the model in a way parallint does not size: any
    partial-training word (hfargs' ``PARTIAL_SCRIPT``, ``PARTIAL_FLAG``) not explained by a LoRA
    whose rank and targets are provable (``parallint.link.peft``)."""
    from parallint.link import peft

    got, used = peft.evidence(text, path, flags, args)
    if got is None:
        if PARTIAL_SCRIPT.search(text) or any(PARTIAL_FLAG.search(n) for n in flags):
            return UNSIZED
        return {}
    if not peft.only_peft(PARTIAL_SCRIPT, text):
        return UNSIZED
    if any(PARTIAL_FLAG.search(n) and n not in peft.PEFT_FLAGS and n not in used for n in flags):
        return UNSIZED
    if not isinstance(got, dict):
        return PEFT_UNSIZED if got == peft.UNKNOWN and peft.adapters_evident(text, flags) else UNSIZED
    return got


def _unsized_peft(text: str, path: str, fallback) -> Value:
    """``training.peft`` unknown, at the script's ``get_peft_model`` / ``LoraConfig`` /
    ``get_peft_config`` (its why names what is not provable)."""
    from parallint.model.diagnostics import Span

    m = re.search(r"\b(?:get_peft_model|get_peft_config|LoraConfig)\(", text)
    span = fallback
    if m is not None:
        span = Span(path, text.count("\n", 0, m.start()) + 1, m.start() - (text.rfind("\n", 0, m.start()) + 1) + 1)
    return Value.unknown("no literal r= and target_modules in the LoraConfig, nor --lora_r and "
                         "--lora_target_modules on the launch line that it reads",
                         span, f"LoRA in {path}")


def _add_base_dtype(target, lora: dict, text: str, path: str, flags: dict) -> None:
    """A sized LoRA's frozen base precision (``training.base_dtype``), when the script says it."""
    if not lora:
        return
    from parallint.link import peft

    got = peft.base_dtype(text, path, flags)
    if got is not None:
        target.facts.add("training.base_dtype", Value(got[0], got[1], True, "", got[2]))


#: the facts of the model and how its states are kept that the launch line's view gives the job
MODEL_STATE_KEYS = ("training.master_weights", "training.optimizer", "parallel.fsdp", "parallel.zero_stage",
                    "training.peft", "training.lora_rank", "training.lora_targets", "training.lora_dropout",
                    "training.base_quant", "training.base_dtype")


def _model_facts(job, launch, script: FileFacts, flags: dict, view: FileFacts, read, root: Path | None,
                 resolve, where: str = "", args: "list[Value] | None" = None) -> None:
    """The model a complete launch line names (``--model_name_or_path``) and how its states are
    kept, added to ``view`` (the launch line's file) when every setting that could shrink them is
    known: a hub id in parallint's table (``lint/data/hub_models.yaml``) or a local folder with a
    ``config.json`` inside the repository; the script loads that name with ``from_pretrained``;
    no PEFT, quantization, freezing, device map, offload or optimizer the Trainer does not make;
    ``--fsdp`` read; a ``--deepspeed`` config the job holds, else ZeRO unknown."""
    text = script.text or ""
    if launch.launcher not in PLAIN_LAUNCHERS:
        return
    lora = _lora(text, script.path, flags, args or [])
    if lora is UNSIZED:
        return
    unsized = lora is PEFT_UNSIZED
    name = next((n for n in MODEL_FLAGS if n in flags and flags[n][1] is not None), None)
    if _redefines(text, "fsdp") or _redefines(text, "deepspeed") or _redefines(text, "optim"):
        return
    if name is None:  # no model on the line: one literal hub id that every from_pretrained loads
        val = _literal_model(script)
        if val is None:
            return
        name = "model"
    else:
        if re.search(rf"\.{name}\s*=(?!=)", text):
            return
        if not re.search(rf"from_pretrained\(\s*[\w.]*\b{name}\b", text):
            return  # the value is not provably the model the script loads
        val = flags[name][1]
    if not val.known or not isinstance(val.value, str):
        return
    optim = flags.get("optim")
    if optim is not None:
        ov = optim[1]
        if ov is None or not ov.known or str(ov.value).lower() not in ADAM | {"sgd"}:
            return  # 8-bit Adam, Adafactor, Lion ...: optimizer states not sized here
        view.facts.add("training.optimizer", Value("sgd" if str(ov.value).lower() == "sgd" else "adamw",
                                                   ov.span, True, "", "--optim on the launch line"))
    fsdp = flags.get("fsdp")
    if fsdp is not None:
        fv = fsdp[1]
        if fv is None or not fv.known:
            return
        mode = str(fv.value).lower()
        if "offload" in mode:
            return
        src = "--fsdp on the launch line"
        if "full_shard" in mode or ("hybrid_shard" in mode and "zero2" not in mode):
            view.facts.add("parallel.fsdp", Value(True, fv.span, True, "", src))
        elif "shard_grad_op" in mode or "hybrid_shard_zero2" in mode:
            view.facts.add("parallel.zero_stage", Value(2, fv.span, True, "", src))
        elif mode.strip() not in ("", "no_shard", "false"):
            return
    ds = flags.get("deepspeed")
    if ds is not None and not any(f.kind == "deepspeed" for f in job.files):
        span = ds[1].span if ds[1] is not None else ds[0].span
        view.facts.add("parallel.zero_stage", Value.unknown("the --deepspeed config is not read", span,
                                                            "--deepspeed on the launch line"))
    dtype = flags.get("torch_dtype")
    if HALF_LOAD.search(text) or (dtype is not None and not (
            dtype[1] is not None and dtype[1].known and str(dtype[1].value).lower() in ("float32", "fp32"))):
        view.facts.add("training.master_weights", Value(
            False, val.span, True, "", "the script may load the weights in 16 bits (torch_dtype): "
            "pure 16-bit states counted, the smaller figure"))
    for key, v in lora.items():
        view.facts.add(key, v)
    _add_base_dtype(view, lora, text, script.path, flags)
    if unsized:
        view.facts.add("training.peft", _unsized_peft(text, script.path, val.span))
    from parallint.estimator.spec import hub_shape

    hub = hub_shape(val.value)
    if hub is not None:
        hub_id, shape = hub
        src = (f"{name} {hub_id} in {where}" if where and name != "model" else
               f"--{name} {hub_id} on the launch line" if name != "model" else
               f"from_pretrained(\"{hub_id}\") in {script.path}") + " (its config.json in parallint's hub table)"
        for key, v in shape.items():
            view.facts.add(f"model.{key}", Value(v, val.span, True, "", src))
        return
    if read is None or root is None or resolve is None:
        return
    cfg = resolve(Value(f"{val.value.rstrip('/')}/config.json", val.span, True, "", ""),
                       job.root.abspath.parent, root)
    if cfg is None or any(f.abspath == cfg for f in job.files):
        return
    from parallint.util.boundary import inside_repository

    if not inside_repository(cfg, job.root.abspath):
        return
    linked = read(cfg)
    if linked is None or linked.kind != "hf_model":
        return
    job.files.append(linked)
    job.facts.extend(linked.facts)


def _imported_cli(job, script: FileFacts) -> FileFacts | None:
    """The repository module whose function the launched script calls to parse the launch line
    (``from fastchat.train.train import train`` then ``train()``: the HfArgumentParser is there).
    Only when exactly one module of the job's import graph (``Job.imported``) imported by the
    script itself parses HF arguments, and the script calls a name it imports from that module.

    Indexed: the script's called imports are gathered once (kept on the Script, which many launches
    start) and resolved to paths (memoized), and only a path that is one of the job's HF-argument
    files is loaded (to see that it defines a called name): the other modules the script imports
    are never parsed here."""
    from parallint.model.script import script_of

    s = script_of(script)
    tree = getattr(s, "_module", None) if s is not None else None
    if tree is None or s is None or s.abspath is None:
        return None
    seen = s._cli_imports  # a script that many launches start is walked once
    if seen is None or seen[0] is not tree:
        seen = s._cli_imports = (tree, _called_imports(tree))
    wanted: dict = {}  # the job's files that parse HF arguments, by path
    for f in job.files:
        if f.kind == "python" and getattr(f, "abspath", None) is not None and is_hf_cli_script(f.text or ""):
            wanted.setdefault(f.abspath, f)
    if not wanted:
        return None
    from parallint.readers.pyparser_import import resolve

    found = []
    for names, module, level in seen[1]:
        path = resolve(s.abspath, module, level)  # memoized; records its probes as load_module does
        if path is None or path == s.abspath or path not in wanted:
            continue  # load_module would give None, or a module that is none of those files
        got = s.module_loader(s.abspath, module, level) if s.module_loader else None
        if got is None:
            continue
        mod = got[1]
        target = wanted.get(mod.abspath)
        if target is None:
            continue
        if not any(n in mod.functions for n in names):
            continue
        found.append(target)
    return found[0] if len({id(f) for f in found}) == 1 else None


def _called_imports(tree) -> list:
    """(names, module, level) of every ``from ... import`` in ``tree`` that binds a name the
    script calls (``name(...)``), in source order."""
    import ast

    from parallint.model.pyshared import walk

    called: set[str] = set()
    imports = []
    for n in walk(tree):
        t = type(n)
        if t is ast.Call and type(n.func) is ast.Name:
            called.add(n.func.id)
        elif t is ast.ImportFrom:
            imports.append(n)
    out = []
    for st in imports:
        names = {a.asname or a.name for a in st.names} & called
        if not names:
            continue
        out.append((names, st.module or "", st.level))
    return out


#: the script parses a whole file of arguments: ``parser.parse_yaml_file(...)`` / ``parse_json_file``
FILE_PARSE = re.compile(r"\bparse_(yaml|json)_file\s*\(")
#: ... the one launch-line word: ``sys.argv[1]`` (``sys.argv[-1]``)
ARGV_ONE = re.compile(r"\bsys\.argv\s*\[\s*-?1\s*\]")


def _file_form(job, launch, script: FileFacts, read=None, root: Path | None = None, resolve=None) -> FileFacts | None:
    """The job's TrainingArguments file when the launch line is the one-argument form
    ``sft.py args.yaml`` (``args.json``) and the script provably parses that word as a file of its
    kind (``parse_yaml_file(sys.argv[1])``, the ``sys.argv[1].endswith(".yaml")`` idiom); None
    otherwise."""
    args = launch.args
    if not args or not args[0].known or not isinstance(args[0].value, str):
        return None
    if len(args) > 1 and _overrides(args[1:], script.text or "") is None:
        return None
    word = args[0].value
    kind = "json" if word.lower().endswith(".json") else "yaml" if word.lower().endswith((".yaml", ".yml")) else ""
    text = script.text or ""
    if not kind or kind not in {m.group(1) for m in FILE_PARSE.finditer(text)} or not ARGV_ONE.search(text):
        return None
    if len(args) > 1 and kind != "yaml":
        return None
    want = word.replace("\\", "/").lstrip("./")
    found = [f for f in job.files if f.kind == "hftrainargs" and "#" not in str(f.abspath)
             and (f.path == want or f.path.endswith("/" + want) or str(f.abspath).endswith("/" + want))]
    if len(found) == 1:
        return found[0]
    if found or resolve is None or root is None:
        return None
    return _read_args_file(job, args[0], read, root, resolve)


#: ``parser.parse_yaml_and_args(sys.argv[1], sys.argv[2:])`` (alignment-handbook's H4ArgumentParser and
#: its copies): the YAML file, then ``--key=value`` words that replace its keys
YAML_AND_ARGS = re.compile(r"\bparse_yaml_and_args\s*\([^\n]*sys\.argv\s*\[\s*2\s*:\s*\]")
#: the keys an override may replace with what parallint reads of it still exact: integers (the
#: boolean keys are cast by each copy of parse_yaml_and_args its own way) and keys parallint does
#: not read; a new DeepSpeed config, a model or PEFT word is not followed (the launch-line path)
OVERRIDE_NOT_READ = re.compile(r"^(?:bf16|fp16|ddp_find_unused_parameters|deepspeed|fsdp\w*|optim|torch_dtype|"
                               r"config\w*)$")


def _overrides(words: list[Value], text: str) -> "dict[str, tuple[Value, Value]] | None":
    """``{key: (word, value)}`` of the ``--key=value`` words after ``sft.py args.yaml`` when the
    script hands them to ``parse_yaml_and_args(sys.argv[1], sys.argv[2:])``; None when it does
    not, or a word is unknown, not of that form (``--key value`` fails there) or replaces a key
    whose reading is not exact (:data:`OVERRIDE_NOT_READ`, the model and PEFT words)."""
    if not YAML_AND_ARGS.search(text):
        return None
    out: dict[str, tuple[Value, Value]] = {}
    for w in words:
        if not w.known or not isinstance(w.value, str) or not w.value.startswith("--") or "=" not in w.value:
            return None
        key, _, rest = w.value.partition("=")
        name = key.strip("-")
        if not name or name in out or OVERRIDE_NOT_READ.match(name) or name in MODEL_FLAGS \
                or PARTIAL_FLAG.search(name):
            return None
        out[name] = (Value(name, w.span, True, "", key), Value(rest, w.span, True, "", key))
    return out


def _read_args_file(job, word: Value, read, root: Path, resolve) -> FileFacts | None:
    """The file the one launch-line word names, read as TrainingArguments (the script parses it as
    such whatever keys it holds, so the sniffer's guess does not decide) inside the repository,
    with the DeepSpeed config it names."""
    target = resolve(word, job.root.abspath.parent, root)
    if target is None or any(getattr(f, "abspath", None) == target for f in job.files):
        return None
    from parallint.util.boundary import read_inside

    raw = read_inside(target, job.root.abspath, 1_000_000)
    if raw is None:
        return None
    import os

    from parallint.readers import hftrainargs

    try:
        shown = os.path.relpath(target, Path.cwd()).replace(os.sep, "/")
    except ValueError:
        shown = str(target)
    f = hftrainargs.read(shown, target, raw.decode("utf-8", errors="replace"))
    if f.diagnostics and not len(f.facts):
        return None
    job.files.append(f)
    job.facts.extend(f.facts)
    for link in f.links:
        if read is None:
            break
        ds = resolve(link, target.parent, root)
        if ds is not None and not any(getattr(x, "abspath", None) == ds for x in job.files):
            linked = read(ds)
            if linked is not None:
                job.files.append(linked)
                job.facts.extend(linked.facts)
    return f


def _file_flags(f: FileFacts) -> "dict[str, tuple[Value, Value | None]] | None":
    """The top-level keys of a TrainingArguments file as :func:`split` gives flags: ``{name: (key,
    value)}`` with the spans of the file; None when it is not one flat mapping parallint reads."""
    from parallint.model.diagnostics import Span

    text = f.text or ""
    try:
        if str(f.path).lower().endswith(".json"):
            import json

            data = json.loads(text)
            if not isinstance(data, dict):
                return None
            lines = text.splitlines()
            out: dict[str, tuple[Value, Value | None]] = {}
            for k, v in data.items():
                if isinstance(v, (dict, list)):
                    continue
                line = next((n for n, ln in enumerate(lines, 1) if f'"{k}"' in ln), 1)
                span = Span(f.path, line, 1)
                word = "true" if v is True else "false" if v is False else str(v)
                out[k] = (Value(k, span, True, "", k), Value(word, span, True, "", k))
            return out
        import yaml

        root = yaml.compose(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except Exception:  # noqa: BLE001 - an unreadable file is an unknown one
        return None
    if not isinstance(root, yaml.MappingNode):
        return None
    out = {}
    for k, v in root.value:
        if not isinstance(k, yaml.ScalarNode) or not isinstance(v, yaml.ScalarNode):
            continue
        ks = Span(f.path, k.start_mark.line + 1, k.start_mark.column + 1)
        vs = Span(f.path, v.start_mark.line + 1, v.start_mark.column + 1)
        out[str(k.value)] = (Value(str(k.value), ks, True, "", str(k.value)), Value(str(v.value), vs, True, "", str(k.value)))
    return out


def _attach_file(job, launch, script: FileFacts, args_file: FileFacts, read, root, resolve) -> None:
    """``sft.py args.yaml``: the file is the job's whole TrainingArguments. What it leaves out is
    the dataclass default (BAT003 compares those too) and the model it names gives the shape, on
    the conditions of a complete launch line."""
    flags = _file_flags(args_file)
    if flags is None:
        return
    over = _overrides(launch.args[1:], script.text or "") if len(launch.args) > 1 else {}
    if over is None:
        return
    flags.update(over)
    parts = (flags, True, False)
    ff = cli_facts([], script.text, args_file.path, args_file.abspath, args_file.text or "", parts, args_file.path)
    if ff is None:
        return
    stale = {key for name, (key, _) in INT_ARGS.items() if name in over}
    if stale:  # the launch line's --key=value replaces what the file says
        _replace(job, args_file, ff, stale)
    _model_facts(job, launch, script, flags, ff, read, root, resolve, where=args_file.path)
    copy = FileFacts(path=args_file.path, abspath=args_file.abspath, kind=args_file.kind, text=args_file.text,
                     links=args_file.links, data=args_file.data, diagnostics=args_file.diagnostics,
                     standalone_job=args_file.standalone_job)
    for key, vs in args_file.facts.items():
        for v in vs:
            if key not in stale:
                copy.facts.add(key, v)
    for key in stale:
        for v in ff.facts.all(key):
            copy.facts.add(key, v)
    have = set(copy.facts.keys())
    for key, vs in ff.facts.items():
        for v in vs:
            if v.origin.how is How.DEFAULT and key not in have:
                copy.facts.add(key, v)  # the Trainer's side: what the file leaves to the dataclass
            elif key not in have and (key.startswith("model.") or key in MODEL_STATE_KEYS):
                copy.facts.add(key, v)
                job.facts.add(key, v)
    job.files = [copy if x is args_file else x for x in job.files]


def _replace(job, args_file: FileFacts, ff: FileFacts, keys: set[str]) -> None:
    """The job's facts with the file's values of ``keys`` replaced by the launch line's (``ff``)."""
    from parallint.model.facts import FactMap

    new = FactMap()
    for key, vs in job.facts.items():
        for v in vs:
            if key in keys and v.span is not None and v.span.path == args_file.path:
                continue
            new.add(key, v)
    for key in keys:
        for v in ff.facts.all(key):
            new.add(key, v)
    job.facts = new


#: optimizers whose states parallint sizes (``torch.optim``), by the call's last name
PLAIN_OPTIMIZERS = {"AdamW": "adamw", "Adam": "adamw", "SGD": "sgd"}
#: LlamaConfig's defaults (transformers), for the fields a literal ``LlamaConfig(...)`` leaves out
LLAMA_DEFAULTS = {"vocab_size": 32000, "hidden_size": 4096, "intermediate_size": 11008, "num_hidden_layers": 32,
                  "num_attention_heads": 32, "num_key_value_heads": None, "tie_word_embeddings": False}
LLAMA_FIELDS = {"vocab_size": "vocab", "hidden_size": "hidden", "intermediate_size": "ffn",
                "num_hidden_layers": "layers", "num_attention_heads": "heads", "num_key_value_heads": "kv_heads",
                "tie_word_embeddings": "tied_embeddings"}


def _llama_config(script: FileFacts, tree) -> tuple[dict, Value] | None:
    """The shape of the one ``LlamaConfig(...)`` of the script whose every keyword is a literal,
    when the model is built from it (``LlamaForCausalLM(config)``, ``from_config(config)``)."""
    import ast

    from parallint.model.diagnostics import Span

    made = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and _last(n.func) == "LlamaConfig"]
    if len(made) != 1:
        return None
    call = made[0]
    if call.args or any(k.arg is None for k in call.keywords):
        return None
    fields = dict(LLAMA_DEFAULTS)
    for k in call.keywords:
        try:
            v = ast.literal_eval(k.value)
        except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
            return None
        if k.arg in ("mlp_bias", "attention_bias", "head_dim") or (k.arg == "hidden_act" and v != "silu"):
            return None  # biases, a head width or an MLP the table's shape does not carry
        if k.arg in ("hidden_act", "rope_scaling", "rope_theta", "max_position_embeddings", "rms_norm_eps",
                     "initializer_range", "pad_token_id", "bos_token_id", "eos_token_id", "use_cache",
                     "attention_dropout", "torch_dtype", "pretraining_tp"):
            continue
        if k.arg not in fields:
            return None
        fields[k.arg] = v
    builders = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and (
        _last(n.func) == "LlamaForCausalLM" or (_last(n.func) == "from_config"))]
    if len(builders) != 1:
        return None
    shape: dict = {LLAMA_FIELDS[k]: v for k, v in fields.items() if v is not None}
    shape.setdefault("kv_heads", shape["heads"])
    shape["mlp"] = "swiglu"
    if not all(isinstance(shape[k], int) and not isinstance(shape[k], bool) and shape[k] > 0
               for k in ("vocab", "hidden", "ffn", "layers", "heads", "kv_heads")):
        return None
    span = Span(script.path, call.lineno, call.col_offset + 1)
    return shape, Value("LlamaConfig", span, True, "", f"LlamaConfig(...) in {script.path}")


def _last(func) -> str:
    import ast

    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _script_model(job, launch, script: FileFacts) -> None:
    """A script that names its model itself (``from_pretrained("meta-llama/Llama-2-70b-hf")``,
    ``AutoConfig.from_pretrained`` then ``from_config``, a literal ``LlamaConfig(...)``) and
    provably trains all of it with an optimizer parallint sizes (``torch.optim`` AdamW, Adam, SGD
    over ``model.parameters()``, or the HF Trainer's own): the job gets the shape, on the
    conditions of :func:`_model_facts` (no PEFT, quantization, freezing, device map, offload,
    sharding; a plain launcher)."""
    import ast

    text = script.text or ""
    if launch.launcher not in PLAIN_LAUNCHERS or is_hf_cli_script(text):
        return
    lora = _lora(text, script.path, {}, [])
    if lora is UNSIZED or lora is PEFT_UNSIZED:  # the info of an unsized LoRA: launch-line jobs only
        return
    if any(k.startswith("model.") for k in job.facts.keys()):
        return  # the job states its model elsewhere
    if _redefines(text, "fsdp") or _redefines(text, "deepspeed") or _redefines(text, "optim") or \
            re.search(r"\b(?:ZeroRedundancyOptimizer|DeepSpeed|deepspeed|accelerate|Accelerator|fabric|Fabric)\b", text):
        return
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return
    from parallint.model.diagnostics import Span

    optim = None
    optim_at: Span | None = None
    trainer = False
    imported = re.search(r"from\s+torch\.optim\s+import", text) is not None
    for n in ast.walk(tree):
        if not isinstance(n, ast.Call):
            continue
        name = _last(n.func)
        dotted = ast.unparse(n.func)
        if name in ("Trainer", "SFTTrainer", "Seq2SeqTrainer"):
            trainer = True
            continue
        torch_optim = (dotted.startswith(("torch.optim.", "optim.")) or (imported and dotted == name)) and \
            "lr_scheduler" not in dotted and name[:1].isupper()
        if not torch_optim and re.search(r"Adam|SGD|Lion|Adafactor|Optimizer|Lamb|LAMB|Sophia|Muon", name):
            return  # an optimizer parallint does not size (8-bit Adam, Adafactor, a fused or sharded one)
        if not torch_optim:
            continue
        kind = PLAIN_OPTIMIZERS.get(name)
        first = n.args[0] if n.args else None
        if kind is None or not (isinstance(first, ast.Call) and _last(first.func) == "parameters" and not first.args):
            return  # another optimizer, parameter groups, a filtered list: not provably every parameter
        if optim is not None and optim != kind:
            return
        optim = kind
        optim_at = Span(script.path, n.lineno, n.col_offset + 1)
    if optim is None and not trainer:
        return  # not provably training
    lit = _literal_model(script)
    if lit is not None:
        from parallint.estimator.spec import hub_shape

        hub = hub_shape(lit.value)
        if hub is None:
            return
        hub_id, shape = hub
        span, src = lit.span, f"from_pretrained(\"{hub_id}\") in {script.path} (its config.json in parallint's hub table)"
    else:
        if "from_pretrained(" in text:
            return
        got = _llama_config(script, tree)
        if got is None:
            return
        shape, v = got
        span, src = v.span, v.source
    for key, val in shape.items():
        job.facts.add(f"model.{key}", Value(val, span, True, "", src))
    for key, val in lora.items():
        job.facts.add(key, val)
    _add_base_dtype(job, lora, text, script.path, {})
    if optim is not None:
        job.facts.add("training.optimizer", Value(optim, optim_at or span, True, "", f"torch.optim in {script.path}"))
    if HALF_LOAD.search(text):
        job.facts.add("training.master_weights", Value(
            False, span, True, "", "the script may load the weights in 16 bits (torch_dtype): "
            "pure 16-bit states counted, the smaller figure"))


def attach(job, launch, script: FileFacts | None, read=None, root: Path | None = None, resolve=None) -> None:
    """Add the TrainingArguments a launch passes to its HF script (``script``, the job's file the
    linker resolved) to ``job`` (a no-op otherwise), and the model it names (``read`` reads a
    local model folder's ``config.json`` inside ``root``, found with the linker's ``resolve``)."""
    if launch is not None and launch.script is not None and script is not None and script.kind == "python" \
            and not is_hf_cli_script(script.text or ""):
        _script_model(job, launch, script)  # the script names its model itself
    if launch is None or launch.script is None or not launch.args:
        return
    root_file = job.root
    if script is not None and script.kind == "python" and not is_hf_cli_script(script.text or ""):
        script = _imported_cli(job, script)  # FastChat's train_mem.py: `from ...train import train`
    if script is None or script.kind != "python" or not is_hf_cli_script(script.text or ""):
        return
    args_file = _file_form(job, launch, script, read, root, resolve)
    if args_file is not None:  # sft.py args.yaml
        _attach_file(job, launch, script, args_file, read, root, resolve)
        return
    line = launch.span.line if launch.span is not None else 0
    # a distinct abspath: this is the launch line's view, not the launch file itself
    parts = split(launch.args)
    ff = cli_facts(launch.args, script.text, root_file.path, Path(f"{root_file.abspath}#L{line}"), "", parts)
    if ff is None:
        return
    flags, complete, config = parts
    if complete and not config:
        _model_facts(job, launch, script, flags, ff, read, root, resolve, args=launch.args)
    job.files.append(ff)
    for key, vs in ff.facts.items():
        if key == "framework":
            continue
        for v in vs:
            if v.known and "default" in v.source:
                continue  # defaults speak only for the Trainer's side (BAT003), not as job facts
            job.facts.add(key, v)
