r"""Which framework a structured file (``.json``, ``.yaml``/``.yml``, ``.toml``) belongs to.

Cheap text checks on the keys the formats are known by; no parser runs unless the text needs it.
Returns one of the config kinds, or None when the file is not ours (it is then not read at all).

The text is untrusted, so every regex here runs in linear time: line-anchored patterns match
spaces and tabs (``[ \t]``), never ``\s`` (which also matches newlines and made a run of blank
lines backtrack for minutes), and no two adjacent quantifiers can share characters.
"""

from __future__ import annotations

import functools
import re

STRUCTURED_KINDS = (
    "deepspeed", "nemo", "megatron_yaml", "torchtitan", "accelerate", "neox", "foundry",
    "nanotron", "hf_model", "hftrainargs", "kube", "jobspec", "torchtune", "skypilot", "lightning_cli",
)

MAX_SNIFF = 2_000_000  # bytes of text looked at


def _top_keys(text: str) -> set[str]:
    """Top-level keys of a YAML mapping (column 0 ``key:``)."""
    return set(_TOP_KEY.findall(text))


def _has(text: str, *words: str) -> bool:
    return any(w in text for w in words)


_TOP_KEY = re.compile(r"^([A-Za-z_][\w.\-]*)[ \t]*:", re.M)


@functools.cache  # compiled at the first use, not at import (start-up)
def _json_key() -> re.Pattern[str]:
    return re.compile(r'"([A-Za-z_][\w.\-]*)"[ \t\r\n]*:')


_YAML_KEY = re.compile(r"^[ \t]*(?:-[ \t]*)?[\"']?([A-Za-z_][\w.\-]*)[\"']?[ \t]*:", re.M)


def _json_keys(text: str) -> set[str]:
    return set(_json_key().findall(text))


def _section(text: str, key: str) -> bool:
    """Whether top-level ``key`` opens a mapping (a block below it, or ``{...}``), not a scalar
    (``parallel: true`` in a GLUE fine-tuning config is a switch, not a job spec's section)."""
    return re.search(rf"^{key}[ \t]*:[ \t]*(?:#[^\n]*)?\r?\n(?:[ \t]*(?:#[^\n]*)?\r?\n)*[ \t]+[^\s#]|^{key}[ \t]*:[ \t]*\{{",
                     text, re.M) is not None


def _yaml_keys(text: str) -> set[str]:
    return set(_YAML_KEY.findall(text))


_DS_KEYS = {"train_batch_size", "train_micro_batch_size_per_gpu", "zero_optimization",
            "gradient_accumulation_steps", "zero_allow_untested_optimizer", "fp16", "bf16",
            "steps_per_print", "wall_clock_breakdown"}
_DS_STRONG = {"train_micro_batch_size_per_gpu", "zero_optimization", "train_batch_size",
              "zero_allow_untested_optimizer", "steps_per_print"}
_NEOX_KEYS = {"pipe_parallel_size", "pipe-parallel-size", "model_parallel_size", "model-parallel-size",
              "num_layers", "num-layers"}
_HFTA_KEYS = {"per_device_train_batch_size", "per_device_eval_batch_size", "ddp_find_unused_parameters",
              "output_dir", "evaluation_strategy", "eval_strategy", "save_strategy", "logging_steps"}
_HFM_KEYS = {"num_hidden_layers", "n_layer", "num_layers", "hidden_size", "n_embd", "d_model",
             "num_attention_heads", "n_head", "vocab_size"}
_FOUNDRY_KEYS = {"global_train_batch_size", "device_train_microbatch_size", "device_train_batch_size",
                 "max_seq_len"}
_ACC_KEYS = {"compute_environment", "distributed_type", "num_processes", "num_machines",
             "mixed_precision", "machine_rank", "main_training_function", "use_cpu"}


@functools.cache  # compiled at the first use, not at import (start-up)
def _meg_mark() -> re.Pattern[str]:
    return re.compile(r"^[ \t]*--[a-z][a-z0-9-]*[ \t]*:", re.M)


def sniff_structured(path: str, text: str) -> str | None:
    name = path.replace("\\", "/").rsplit("/", 1)[-1].lower()
    if name == "pyproject.toml":
        return None
    text = text[:MAX_SNIFF]
    low = name
    if low.endswith(".toml"):
        return _sniff_toml(text)
    if low.endswith(".json"):
        return _sniff_json(text)
    if low.endswith((".yaml", ".yml")):
        return _sniff_yaml(text)
    return None


def _sniff_toml(text: str) -> str | None:
    if re.search(r"^[ \t]*\[(parallelism|experimental)\]", text, re.M) and re.search(r"^[ \t]*\[(training|job|model)\]", text, re.M):
        return "torchtitan"
    if re.search(r"^[ \t]*\[training\]", text, re.M) and re.search(
        r"^[ \t]*(data_parallel_(shard_|replicate_)?degree|tensor_parallel_degree|pipeline_parallel_degree)[ \t]*=", text, re.M
    ):
        return "torchtitan"
    if re.search(r"^[ \t]*\[job\]", text, re.M) and re.search(r"^[ \t]*\[model\]", text, re.M) and "flavor" in text:
        return "torchtitan"
    return None


def _sniff_json(text: str) -> str | None:
    keys = _json_keys(text)
    if keys & _NEOX_KEYS and any("-" in k for k in keys) and not keys & {"architectures", "model_type"}:
        return "neox"
    if keys & {"pipe_parallel_size", "pipe-parallel-size"}:
        return "neox"
    if keys & {"per_device_train_batch_size", "ddp_find_unused_parameters"} or (
        "output_dir" in keys and keys & _HFTA_KEYS - {"output_dir"}
    ):
        return "hftrainargs"
    if keys & _DS_STRONG or len(keys & _DS_KEYS) >= 2:
        if not keys & {"architectures", "model_type"} or not _json_top_keys(text) & {
            "architectures", "model_type"}:
            return "deepspeed"
    if keys & _HFM_KEYS and len(text) < 1_000_000:
        top = _json_top_keys(text)
        if top & {"architectures", "model_type"} and top & _HFM_KEYS or {
            "num_hidden_layers", "num_attention_heads", "hidden_size"} <= top:
            return "hf_model"
    return None


def _json_top_keys(text: str) -> set[str]:
    import json

    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return set()
    return set(data) if isinstance(data, dict) else set()


def _sniff_yaml(text: str) -> str | None:
    top = _top_keys(text)
    if re.search(r"^apiVersion[ \t]*:", text, re.M) and re.search(r"^kind[ \t]*:", text, re.M):
        return "kube"
    if "run" in top and top & {"resources", "num_nodes"} and re.search(r"^run[ \t]*:[ \t]*[|>\w'\"$]", text, re.M):
        return "skypilot"  # a SkyPilot task: `run:` is a shell script, not a mapping
    if re.search(r"^[ \t]*_component_[ \t]*:[ \t]*torchtune\.", text, re.M):
        return "torchtune"
    if "trainer" in top and re.search(r"^[ \t]+class_path[ \t]*:", text, re.M) and not re.search(
            r"tensor_model_parallel_size|exp_manager|nemo\.", text) and (
            re.search(r"^[ \t]+(devices|num_nodes|strategy|accelerator)[ \t]*:", text, re.M)):
        return "lightning_cli"  # a LightningCLI config: trainer/model/data with class_path entries
    if "MODEL_ARGS" in top and (_meg_mark().search(text) or re.search(r"^[ \t]+(trainer|model)\.[\w.]+[ \t]*:", text, re.M)):
        return "megatron_yaml"
    if top & {"compute_environment", "distributed_type"} and (
        len(top & _ACC_KEYS) >= 2 or top & {"fsdp_config", "deepspeed_config", "parallelism_config"}
    ):
        return "accelerate"
    # a job spec has a model section and at least one of the others (a lone `model:` is any
    # framework's config: diffusion, timm, ...)
    if "model" in top and top & {"parallel", "training", "hardware"} and (
            top <= {"model", "parallel", "training", "hardware", "name", "estimator"} or (
            any(_section(text, k) for k in ("parallel", "hardware") if k in top)
            and not top & {"trainer", "parallelism"})):
        return "jobspec"
    if "parallelism" in top and ("tokens" in top or "general" in top) and re.search(r"^[ \t]+(dp|tp|pp)[ \t]*:", text, re.M):
        return "nanotron"
    keys = _yaml_keys(text)
    if keys & {"pipe_parallel_size", "pipe-parallel-size"} or (
        keys & {"model_parallel_size", "model-parallel-size"} and keys & {"num_layers", "num-layers"}
        and "trainer" not in top
    ):
        return "neox"
    if "trainer" in top and ("model" in top or "exp_manager" in top) and keys & {
        "tensor_model_parallel_size", "devices", "num_nodes", "micro_batch_size", "global_batch_size"
    }:
        return "nemo"
    if keys & _FOUNDRY_KEYS and top & {"train_loader", "fsdp_config", "variables"}:
        return "foundry"
    if keys & {"per_device_train_batch_size", "ddp_find_unused_parameters"}:
        return "hftrainargs"
    return None


def sniff_python(path: str, text: str) -> str | None:
    """``torchtitan_py`` for a torchtitan config registry (dataclass configs built in Python)."""
    head = text[:MAX_SNIFF]
    if "torchtitan" not in head:
        return None
    if re.search(r"\bParallelismConfig\s*\(|\b\w*Trainer\.Config\b|\bJobConfig\s*\(", head) and (
        path.replace("\\", "/").endswith("config_registry.py")
        or re.search(r"->\s*(\w*Trainer\.Config|JobConfig)\b", head)
    ):
        return "torchtitan_py"
    return None
