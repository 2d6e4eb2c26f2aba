"""CFG001 unknown-config-key: A config key the framework does not know (ignored or rejected), with a did-you-mean"""

from __future__ import annotations

from parallint.model.diagnostics import Severity
from parallint.model.rule import Example
from parallint.rules.cfg._common import _SchemaRule


class UnknownConfigKey(_SchemaRule):
    code = "CFG001"
    name = "unknown-config-key"
    severity = Severity.WARNING
    summary = "A config key the framework does not know (ignored or rejected), with a did-you-mean"
    _which = "unknown"
    fix_safety = "unsafe"
    fix_doc = ("`--unsafe-fixes` renames a key to the one known key it is a close misspelling of (only the "
               "name's characters change); the key may have been meant for another version or framework.")
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
