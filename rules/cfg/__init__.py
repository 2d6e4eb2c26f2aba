"""CFG — config hygiene: unknown keys and invalid values (validated against the framework schemas
in ``schemas/``), fp16 together with bf16, ignored offload settings, duplicate keys.

CFG006, CFG008: Megatron command-line flags checked against Megatron's own argument table and
its argument validation.

One rule a file (``cfgNNN_<name>.py``); the helpers its rules share are in ``_common``.
"""
