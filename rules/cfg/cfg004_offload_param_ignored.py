"""CFG004 offload-param-ignored: DeepSpeed offload_param with ZeRO stage < 3 is silently ignored"""

from __future__ import annotations

from parallint.model.diagnostics import Related, Severity
from parallint.model.rule import Example, Rule
from parallint.model.scalars import unknown_reason
from parallint.rules.cfg._common import _tree


class OffloadParamIgnored(Rule):
    code = "CFG004"
    name = "offload-param-ignored"
    severity = Severity.WARNING
    summary = "DeepSpeed offload_param with ZeRO stage < 3 is silently ignored"
    kinds = frozenset({"deepspeed", "neox"})
    doc = """
    ## What it does
    Warns when a DeepSpeed config offloads parameters (`zero_optimization.offload_param` with a
    `cpu` or `nvme` device) while the ZeRO stage is below 3.

    ## Why it matters
    Only ZeRO-3 partitions (and can offload) parameters; with stage 1 or 2 the section is silently
    ignored and the memory the user counted on is not saved.

    ## Example

    ## How to fix
    Use stage 3, or use `offload_optimizer` (which stages 1 and 2 support) instead.
    """
    valid = (Example('{\n  "zero_optimization": {\n    "stage": 3,\n    "offload_param": {"device": "cpu"}\n  }\n}\n',
                     filename="ds_config.json"),
             Example('{\n  "zero_optimization": {\n    "stage": 2,\n    "offload_optimizer": {"device": "cpu"}\n  }\n}\n',
                     filename="ds_config.json"))
    invalid = (Example('{\n  "zero_optimization": {\n    "stage": 2,\n    "offload_param": {"device": "cpu"}\n  }\n}\n',
                       filename="ds_config.json", line=4),)

    def check_file(self, f, ctx):
        tree = _tree(f)
        if tree is None or not tree.is_map:
            return
        zero = tree.get("zero_optimization")
        if zero is None or not zero.is_map:
            return
        stage = zero.get("stage")
        if stage is None or isinstance(stage.value, bool) or not isinstance(stage.value, int):
            return
        if stage.value >= 3:
            return
        off = zero.get("offload_param")
        if off is not None and off.is_map:
            dev = off.get("device")
            if dev is None or not isinstance(dev.value, str) or unknown_reason(dev.value):
                return
            if dev.value.lower() not in ("cpu", "nvme"):
                return
            span = zero.key_spans.get("offload_param", off.span)
            yield self.report(span, f"offload_param ({dev.value}) is ignored with ZeRO stage {stage.value}; "
                                    f"only stage 3 offloads parameters; set zero_optimization.stage to 3 or remove offload_param",
                              [Related.at(stage.span, f"ZeRO stage {stage.value}")])
        legacy = zero.get("cpu_offload_param")
        if legacy is not None and legacy.value is True:
            span = zero.key_spans.get("cpu_offload_param", legacy.span)
            yield self.report(span, f"cpu_offload_param is ignored with ZeRO stage {stage.value}; only stage 3 "
                                    f"offloads parameters; set zero_optimization.stage to 3 or remove cpu_offload_param",
                              [Related.at(stage.span, f"ZeRO stage {stage.value}")])
