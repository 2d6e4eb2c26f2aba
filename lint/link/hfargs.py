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
    return PARSER_RE.search(text) is not None and ARGS_RE.search(text) is not None


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


def cli_facts(args: list[Value], script_text: str, path: str, abspath: Path, text: str) -> FileFacts | None:
    """The TrainingArguments facts of an HF script's argument list, as an ``hftrainargs`` file."""
    flags, complete, config = split(args)
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
                                    f"TrainingArguments default {name}={default} (no --{name} on the launch line)",
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
                                                 "TrainingArguments default fp16=False, bf16=False (neither --fp16 "
                                                 "nor --bf16 on the launch line)", Origin(How.DEFAULT)))
    ds = flags.get("deepspeed")
    if ds is not None and ds[1] is not None and ds[1].known and ds[1].value:
        ff.links.append(Value(str(ds[1].value), ds[1].span, True, "", "--deepspeed on the launch line"))
    if not len(ff.facts):
        return None
    ff.facts.add("framework", Value("hf_trainer", first, True, "", "HfArgumentParser over TrainingArguments"))
    return ff


def attach(job, launch, script: FileFacts | None) -> None:
    """Add the TrainingArguments a launch passes to its HF script (``script``, the job's file the
    linker resolved) to ``job`` (a no-op otherwise)."""
    if launch is None or launch.script is None or not launch.args:
        return
    root_file = job.root
    if script is None or script.kind != "python" or not is_hf_cli_script(script.text or ""):
        return
    line = launch.span.line if launch.span is not None else 0
    # a distinct abspath: this is the launch line's view, not the launch file itself
    ff = cli_facts(launch.args, script.text, root_file.path, Path(f"{root_file.abspath}#L{line}"), "")
    if ff is None:
        return
    job.files.append(ff)
    for key, vs in ff.facts.items():
        if key == "framework":
            continue
        for v in vs:
            if v.known and "default" in v.source:
                continue  # defaults speak only for the Trainer's side (BAT003), not as job facts
            job.facts.add(key, v)
