"""BAT003 deepspeed-trainer-mismatch: A DeepSpeed config value contradicts the HF TrainingArguments / accelerate value"""

from __future__ import annotations

from parallint.model.diagnostics import Severity
from parallint.model.factrule import FactRule, Finding, View, src, world_of
from parallint.model.facts import FactMap, known_int
from parallint.model.rule import Example


class DeepspeedTrainerMismatch(FactRule):
    code = "BAT003"
    facts = frozenset({
        "training.grad_accum", "training.micro_batch", "training.precision", "training.train_batch_size",
    })
    name = "deepspeed-trainer-mismatch"
    severity = Severity.ERROR
    summary = "A DeepSpeed config value contradicts the HF TrainingArguments / accelerate value"
    doc = """
    ## What it does
    Compares the non-`"auto"` values of a DeepSpeed config with the HF `TrainingArguments` (or
    accelerate config) of the same job: micro batch, gradient accumulation, fp16/bf16, and
    `train_batch_size` against per-device batch × accumulation × world size. Where a flag is
    absent from a complete launch line, the Trainer's default stands in (`fp16=False`,
    `bf16=False`, `gradient_accumulation_steps=1`, `per_device_train_batch_size=8`), so
    `fp16.enabled: true` with no `--fp16` is a mismatch. accelerate's DeepSpeed plugin
    (`deepspeed_config: gradient_accumulation_steps` in the accelerate config) is compared with
    the launch line's `--gradient_accumulation_steps` the same way.

    ## Why it matters
    The HF integration refuses to start: "Please correct the following DeepSpeed config values
    that mismatch TrainingArguments values: - ds train_micro_batch_size_per_gpu=16 vs hf
    per_device_train_batch_size=8". It runs inside the workers, after allocation.

    ## Example

    ## How to fix
    Set the DeepSpeed values to `"auto"` so the Trainer fills them in, or make them equal.
    """
    valid = (Example(files={
        "args.yaml": "output_dir: out\nper_device_train_batch_size: 8\ngradient_accumulation_steps: 2\nbf16: true\n"
                     "deepspeed: ds_config.json\n",
        "ds_config.json": '{\n  "train_micro_batch_size_per_gpu": "auto",\n  "gradient_accumulation_steps": 2,\n'
                          '  "bf16": {"enabled": "auto"},\n  "zero_optimization": {"stage": 2}\n}\n',
    }, paths=("args.yaml",)),
        # --fp16 given: the precisions agree
        Example(files={
            "run.sh": "deepspeed --num_gpus 8 train.py --output_dir out --fp16 --deepspeed ds.json\n",
            "train.py": "from transformers import HfArgumentParser, Trainer, TrainingArguments\n\n"
                        "parser = HfArgumentParser(TrainingArguments)\n"
                        "(training_args,) = parser.parse_args_into_dataclasses()\n"
                        "Trainer(model=None, args=training_args).train()\n",
            "ds.json": '{\n  "train_micro_batch_size_per_gpu": "auto",\n  "fp16": {"enabled": true}\n}\n',
        }, paths=("run.sh",)),
        # more arguments come from "$@": the Trainer's precision is unknown
        Example(files={
            "run.sh": "deepspeed --num_gpus 8 train.py --output_dir out --deepspeed ds.json \"$@\"\n",
            "train.py": "from transformers import HfArgumentParser, Trainer, TrainingArguments\n\n"
                        "parser = HfArgumentParser(TrainingArguments)\n"
                        "(training_args,) = parser.parse_args_into_dataclasses()\n"
                        "Trainer(model=None, args=training_args).train()\n",
            "ds.json": '{\n  "train_micro_batch_size_per_gpu": "auto",\n  "fp16": {"enabled": true}\n}\n',
        }, paths=("run.sh",)),
    )
    invalid = (Example(files={
        "args.yaml": "output_dir: out\nper_device_train_batch_size: 8\ngradient_accumulation_steps: 2\nbf16: true\n"
                     "deepspeed: ds_config.json\n",
        "ds_config.json": '{\n  "train_micro_batch_size_per_gpu": 16,\n  "gradient_accumulation_steps": 2,\n'
                          '  "bf16": {"enabled": "auto"},\n  "zero_optimization": {"stage": 2}\n}\n',
    }, paths=("args.yaml",), line=2),
        # the commonest real setup: an HfArgumentParser script given its TrainingArguments as flags
        Example(files={
            "run.sh": "deepspeed --num_gpus 8 train.py --output_dir out --bf16 \\\n"
                      "    --deepspeed ds_config.json --gradient_accumulation_steps 2\n",
            "train.py": "from transformers import HfArgumentParser, Trainer, TrainingArguments\n\n"
                        "parser = HfArgumentParser(TrainingArguments)\n"
                        "(training_args,) = parser.parse_args_into_dataclasses()\n"
                        "Trainer(model=None, args=training_args).train()\n",
            "ds_config.json": '{\n  "train_micro_batch_size_per_gpu": "auto",\n  "gradient_accumulation_steps": 4,\n'
                              '  "bf16": {"enabled": "auto"}\n}\n',
        }, paths=("run.sh",), line=3),
        # fp16 in the DeepSpeed config, no --fp16: the Trainer's default fp16=False contradicts it
        Example(files={
            "run.sh": "deepspeed --num_gpus 8 train.py --output_dir out --deepspeed ds.json\n",
            "train.py": "from transformers import HfArgumentParser, Trainer, TrainingArguments\n\n"
                        "parser = HfArgumentParser(TrainingArguments)\n"
                        "(training_args,) = parser.parse_args_into_dataclasses()\n"
                        "Trainer(model=None, args=training_args).train()\n",
            "ds.json": '{\n  "train_micro_batch_size_per_gpu": "auto",\n  "fp16": {"enabled": true}\n}\n',
        }, paths=("run.sh",), line=3),
        # accelerate's DeepSpeed plugin accumulates 4 steps, the launch line asks the Trainer for 2
        Example(files={
            "run.sh": "accelerate launch --config_file accel.yaml train.py --output_dir out \\\n"
                      "    --gradient_accumulation_steps 2\n",
            "train.py": "from transformers import HfArgumentParser, Trainer, TrainingArguments\n\n"
                        "parser = HfArgumentParser(TrainingArguments)\n"
                        "(training_args,) = parser.parse_args_into_dataclasses()\n"
                        "Trainer(model=None, args=training_args).train()\n",
            "accel.yaml": "compute_environment: LOCAL_MACHINE\ndistributed_type: DEEPSPEED\ndeepspeed_config:\n"
                          "  gradient_accumulation_steps: 4\n  zero_stage: 2\nnum_processes: 8\nnum_machines: 1\n",
        }, paths=("run.sh",), line=4),
    )

    def check_file(self, f, ctx):
        return ()

    def check_job(self, job, ctx):
        ds_files = [f for f in job.files if f.kind == "deepspeed"]
        hf_files = [f for f in job.files if f.kind in ("hftrainargs", "accelerate")]
        found = []
        for ds in ds_files:
            for hf in hf_files:
                found.extend(self._compare(ds.facts, hf.facts, job))
        # accelerate's DeepSpeed plugin (deepspeed_config in the accelerate config, no JSON file)
        # against the TrainingArguments of the launch line
        for acc in (f for f in job.files if f.kind == "accelerate"):
            for hf in (f for f in job.files if f.kind == "hftrainargs"):
                found.extend(self._compare_plugin(acc.facts, hf.facts))
        yield from self._emit(found)

    @staticmethod
    def _compare_plugin(acc: FactMap, hf: FactMap):
        a, b = acc.get("training.grad_accum"), hf.get("training.grad_accum")
        if a is None or b is None or "deepspeed_config" not in (a.source or ""):
            return
        ai, bi = known_int(a), known_int(b)
        if ai is not None and bi is not None and ai != bi:
            yield Finding(a, f"accelerate's DeepSpeed plugin sets gradient_accumulation_steps={ai}, but the Trainer's "
                             f"is {bi} ({src(b)}); the HF integration refuses the mismatch; make them equal",
                          [(b, f"gradient accumulation {bi}")])

    def findings(self, view: View):
        return ()

    def _compare(self, ds: FactMap, hf: FactMap, job):
        for key, dsname, hfname in (("training.micro_batch", "train_micro_batch_size_per_gpu", "per-device batch size"),
                                    ("training.grad_accum", "gradient_accumulation_steps", "gradient accumulation")):
            a, b = ds.get(key), hf.get(key)
            if a is None:
                continue  # nothing to compare (known_int(None) is None: the check below would not fire)
            ai, bi = known_int(a), known_int(b)
            if ai is not None and bi is not None and ai != bi:
                yield Finding(a, f"DeepSpeed {dsname}={ai} contradicts the {hfname} {bi} of {src(b)}; set both "
                                 f"to the same value (or {dsname} to \"auto\")",
                              [(b, f"{hfname} {bi}")])
        dsp = {str(v.value): v for v in ds.known("training.precision")}
        hfp = {str(v.value): v for v in hf.known("training.precision")}
        for mode in ("fp16", "bf16"):
            if mode in dsp and hfp and mode not in hfp and ("fp16" in hfp or "bf16" in hfp):
                other = next(v for k, v in hfp.items() if k in ("fp16", "bf16"))
                yield Finding(dsp[mode], f"DeepSpeed enables {mode} but {src(other)} trains in {other.value}; enable the "
                                             f"same precision in both (or set it to \"auto\" in the DeepSpeed config)",
                              [(other, str(other.value))])
            elif mode in dsp and set(hfp) == {"fp32"}:
                other = hfp["fp32"]
                yield Finding(dsp[mode], f"DeepSpeed enables {mode} but the Trainer runs in fp32 ({src(other)}); the HF "
                                         f"integration refuses the mismatch; pass --{mode} or set {mode}.enabled to "
                                         f"\"auto\"", [(other, "fp32")])
        tb = ds.get("training.train_batch_size")
        mb, ga = known_int(hf.get("training.micro_batch")), known_int(hf.get("training.grad_accum"))
        w = job.world_size() if hasattr(job, "world_size") else None
        launch = getattr(job, "launch", None)
        if launch is not None and isinstance(getattr(launch, "facts", None), FactMap):
            lw = world_of(launch.facts)
            w = lw if lw is not None else w
        wi = known_int(w)
        if known_int(tb) is not None and mb is not None and wi is not None:
            expect = mb * (ga or 1) * wi
            assert tb is not None  # known_int(None) is None
            if ga is not None and expect != known_int(tb):
                yield Finding(tb, f"DeepSpeed train_batch_size={known_int(tb)} but the Trainer computes "
                                  f"{mb} × {ga} × {known_int(w)} = {expect}; set train_batch_size to {expect} (or \"auto\")",
                              [(hf.get("training.micro_batch"), f"per-device batch {mb}"), (w, f"world size {known_int(w)}")])
