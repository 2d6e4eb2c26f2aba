"""Hugging Face ``TrainingArguments`` as a YAML/JSON file (per-device batch, accumulation,
precision, ``ddp_find_unused_parameters``, the DeepSpeed config it names)."""

from __future__ import annotations

from pathlib import Path

from parallint.model.facts import FileFacts, Value
from parallint.readers.cfgutil import Emitter, as_bool, as_int, open_config, to_value
KIND = "hftrainargs"


def read(path: str, abspath: Path, text: str) -> FileFacts:
    ff, root = open_config(path, abspath, text, KIND, "", "hf_trainer")
    if root is None:
        return ff
    em = Emitter(ff, root)
    em.framework("hf_trainer")
    emit_training_args(em, "")
    return ff


def emit_training_args(em: Emitter, prefix: str) -> None:
    em.add("training.micro_batch", f"{prefix}per_device_train_batch_size", as_int)
    em.add("training.grad_accum", f"{prefix}gradient_accumulation_steps", as_int)
    em.add("ddp.find_unused_parameters", f"{prefix}ddp_find_unused_parameters", as_bool)
    for key in ("bf16", "fp16"):
        n = em.node(f"{prefix}{key}")
        v = to_value(n, f"{em.name} {prefix}{key}")
        if v is None or not v.known:
            continue
        assert n is not None  # to_value gives None for an absent node
        try:
            if as_bool(v.value):
                em.ff.facts.add("training.precision", Value(key, n.span, True, "", v.source))
        except ValueError:
            pass
    ds = em.node(f"{prefix}deepspeed")
    v = to_value(ds, f"{em.name} {prefix}deepspeed")
    if v is not None and v.known and isinstance(v.value, str):
        em.ff.links.append(v)
