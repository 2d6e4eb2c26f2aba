"""CFG002 invalid-config-value: A config value of the wrong type or outside its allowed values"""

from __future__ import annotations

from parallint.model.diagnostics import Severity
from parallint.model.rule import Example
from parallint.rules.cfg._common import _SchemaRule


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
