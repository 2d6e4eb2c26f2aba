"""CFG007 conflicting-deepspeed-settings: DeepSpeed settings that DeepSpeed or accelerate refuse together at start-up"""

from __future__ import annotations

from parallint.model.diagnostics import Related, Severity
from parallint.model.rule import Example, Rule
from parallint.rules.cfg._common import _tree


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
