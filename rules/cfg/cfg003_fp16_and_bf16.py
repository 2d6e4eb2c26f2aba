"""CFG003 fp16-and-bf16: fp16 and bf16 are both enabled"""

from __future__ import annotations

from parallint.model.diagnostics import Related, Severity
from parallint.model.rule import Example, Rule


class Fp16AndBf16(Rule):
    code = "CFG003"
    facts = frozenset({"training.precision"})
    name = "fp16-and-bf16"
    severity = Severity.ERROR
    summary = "fp16 and bf16 are both enabled"
    kinds = frozenset({"deepspeed", "neox", "megatron_yaml", "hftrainargs"})
    doc = """
    ## What it does
    Flags a config (DeepSpeed `fp16.enabled` and `bf16.enabled`, Megatron `--fp16` and `--bf16`,
    HF `fp16: true` and `bf16: true`) or a launch command that enables both half-precision modes.

    ## Why it matters
    They are mutually exclusive; DeepSpeed stops with "bfloat16 and fp16 modes cannot be
    simultaneously enabled", Megatron and the HF Trainer refuse it too.

    ## Example

    ## How to fix
    Keep one of them (bf16 on Ampere and newer GPUs).
    """
    valid = (Example('{\n  "train_batch_size": 16,\n  "fp16": {"enabled": false},\n  "bf16": {"enabled": true}\n}\n',
                     filename="ds_config.json"),
             Example('{\n  "train_batch_size": 16,\n  "fp16": {"enabled": "auto"},\n  "bf16": {"enabled": "auto"}\n}\n',
                     filename="ds_config.json"))
    invalid = (Example('{\n  "train_batch_size": 16,\n  "fp16": {"enabled": true},\n  "bf16": {"enabled": true}\n}\n',
                       filename="ds_config.json", line=4),
               Example(files={"run.sh": "torchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size 2 --fp16 --bf16\n",
                              "pretrain_gpt.py": "import sys\nprint(sys.argv)\n"}, line=1))

    def _check(self, values):
        fp16 = [v for v in values if v.known and v.value == "fp16" and v.span is not None]
        bf16 = [v for v in values if v.known and v.value == "bf16" and v.span is not None]
        if fp16 and bf16:
            at, other = max(fp16[0], bf16[0], key=lambda v: (v.span.line, v.span.column)), None
            other = fp16[0] if at is bf16[0] else bf16[0]
            yield self.report(at.span, "fp16 and bf16 are both enabled; they are mutually exclusive; disable one of them "
                                        "(bf16 where the GPUs support it)",
                              [Related.at(other.span, f"{other.value} enabled here")])

    def check_file(self, f, ctx):
        yield from self._check(f.facts.all("training.precision"))

    def check_job(self, job, ctx):
        launch = getattr(job, "launch", None)
        facts = getattr(launch, "facts", None)
        if facts is None or not hasattr(facts, "all"):
            return
        vals = [v for v in facts.all("training.precision")
                if v.span is not None and not any(f.path == v.span.path and f.kind in self.kinds for f in job.files)]
        yield from self._check(vals)
