"""BAT — batch arithmetic: DeepSpeed's batch identity, global batch divisibility, and DeepSpeed
values that contradict the HF Trainer / accelerate values they are checked against."""

from __future__ import annotations

from parallint.model.diagnostics import Severity
from parallint.model.facts import FactMap, known_int
from parallint.model.world import dp_size
from parallint.model.rule import Example, Rule

from parallint.model.factrule import FactRule, Finding, View, src, world_of

_TRAIN_PY = "import deepspeed\nimport torch\n\nmodel = torch.nn.Linear(8, 8)\nengine, *_ = deepspeed.initialize(model=model, config='ds_config.json')\n"


def _ds(tb=None, mb=None, gas=None, extra: str = "") -> str:
    lines = []
    if tb is not None:
        lines.append(f'  "train_batch_size": {tb}')
    if mb is not None:
        lines.append(f'  "train_micro_batch_size_per_gpu": {mb}')
    if gas is not None:
        lines.append(f'  "gradient_accumulation_steps": {gas}')
    lines.append('  "zero_optimization": {"stage": 1}')
    if extra:
        lines.append(extra)
    return "{\n" + ",\n".join(lines) + "\n}\n"


class DeepspeedBatchIdentity(FactRule):
    code = "BAT001"
    facts = frozenset({
        "parallel.cp", "parallel.pp", "parallel.sp", "parallel.tp", "training.grad_accum", "training.micro_batch",
        "training.train_batch_size",
    })
    name = "deepspeed-batch-identity"
    severity = Severity.ERROR
    summary = "DeepSpeed train_batch_size != micro batch × gradient accumulation × data-parallel size"
    doc = """
    ## What it does
    Checks DeepSpeed's batch identity `train_batch_size == train_micro_batch_size_per_gpu ×
    gradient_accumulation_steps × DP`, where DP is the data-parallel size (world / (TP×PP×SP)).
    Without a known world size it still fires when no data-parallel size at all could satisfy
    it (e.g. `train_batch_size` not divisible by the micro batch). `"auto"` values are unknown.

    ## Why it matters
    DeepSpeed asserts it inside every worker: "Check batch related parameters. train_batch_size
    is not equal to micro_batch_per_gpu * gradient_acc_step * world_size 8 != 2 * 1 * 1".

    ## Example

    ## How to fix
    Make the three agree with the launcher's GPU count, or give only two of them (or `"auto"`)
    and let DeepSpeed derive the third.
    """
    valid = (
        Example(files={"launch.sh": "deepspeed --num_gpus 8 train.py --deepspeed_config ds_config.json\n",
                       "train.py": _TRAIN_PY, "ds_config.json": _ds(64, 2, 4)}),
        Example(_ds("\"auto\"", 4, "\"auto\""), filename="ds_config.json"),
    )
    invalid = (
        Example(files={"launch.sh": "deepspeed --num_gpus 8 train.py --deepspeed_config ds_config.json\n",
                       "train.py": _TRAIN_PY, "ds_config.json": _ds(32, 2, 4)}, line=2),
        Example(_ds(30, 4), filename="ds_config.json", line=2),
    )

    def findings(self, view: View):
        if not view.fw("deepspeed", "neox"):
            return
        tb_v, mb_v, ga_v = (view.v("training.train_batch_size"), view.v("training.micro_batch"),
                            view.v("training.grad_accum"))
        tb, mb, ga = (known_int(tb_v), known_int(mb_v), known_int(ga_v))
        if tb is None or tb <= 0:
            return
        assert tb_v is not None  # known_int(None) is None
        if (mb is not None and mb <= 0) or (ga is not None and ga <= 0):
            return
        dp, dp_rel = dp_size(view.facts, view.world, sp=True)
        rel = [(mb_v, f"micro batch {mb}"), (ga_v, f"gradient accumulation {ga}")]
        rel = [r for r, i in zip(rel, (mb, ga)) if i is not None]
        if dp is not None:
            if mb is not None and ga is not None:
                if mb * ga * dp != tb:
                    yield Finding(tb_v, f"train_batch_size {tb} != micro batch {mb} × gradient accumulation "
                                        f"{ga} × data-parallel size {dp} = {mb * ga * dp}; {_batch_fix(tb, mb, ga, dp)}", rel + dp_rel)
                return
            known = mb if mb is not None else ga
            if known is not None and tb % (known * dp):
                what = "micro batch" if mb is not None else "gradient accumulation"
                yield Finding(tb_v, f"train_batch_size {tb} is not divisible by {what} {known} × data-parallel "
                                    f"size {dp}: the missing value cannot be an integer; set train_batch_size to "
                                    f"{_multiple(known * dp, tb)}", rel + dp_rel)
            return
        # no world size: only what no data-parallel size can fix
        prod = (mb or 1) * (ga or 1)
        if (mb is not None or ga is not None) and tb % prod:
            parts = " × ".join(x for x in (f"micro batch {mb}" if mb is not None else "",
                                            f"gradient accumulation {ga}" if ga is not None else "") if x)
            yield Finding(tb_v, f"train_batch_size {tb} is not divisible by {parts} = {prod}: no "
                                f"data-parallel size satisfies DeepSpeed's batch identity; set train_batch_size to "
                                f"{_multiple(prod, tb)}", rel)


class GlobalBatchNotDivisible(FactRule):
    code = "BAT002"
    facts = frozenset({
        "parallel.cp", "parallel.dp_replicate", "parallel.dp_shard", "parallel.pp", "parallel.sp", "parallel.tp",
        "training.global_batch", "training.micro_batch",
    })
    name = "global-batch-not-divisible"
    severity = Severity.ERROR
    summary = "The global batch is not divisible by micro batch × data-parallel size"
    doc = """
    ## What it does
    For Megatron, NeMo and torchtitan, checks `global_batch % (micro_batch × DP) == 0`, with DP =
    world / (TP×PP×CP) (torchtitan: dp_replicate × dp_shard). Without a known world size it fires
    only when the global batch is not even divisible by the micro batch.

    ## Why it matters
    The number of micro-batches per step must be an integer; Megatron's microbatch calculator
    stops at start-up ("global batch size (30) is not divisible by micro batch size (4) times data
    parallel size (2)").

    ## Example

    ## How to fix
    Choose a global batch that is a multiple of micro batch × DP.
    """
    valid = (Example("trainer:\n  devices: 8\n  num_nodes: 1\nmodel:\n  micro_batch_size: 2\n  global_batch_size: 64\n"
                     "  tensor_model_parallel_size: 2\n  pipeline_model_parallel_size: 1\n", filename="conf/gpt.yaml"),)
    invalid = (
        Example("trainer:\n  devices: 8\n  num_nodes: 1\nmodel:\n  micro_batch_size: 2\n  global_batch_size: 36\n"
                "  tensor_model_parallel_size: 2\n  pipeline_model_parallel_size: 1\n", filename="conf/gpt.yaml", line=6),
        Example("ENV_VARS:\n  NCCL_DEBUG: WARN\nMODEL_ARGS:\n  --micro-batch-size: 4\n  --global-batch-size: 30\n"
                "  --num-attention-heads: 8\n", filename="model_config.yaml", line=5),
    )

    def findings(self, view: View):
        if not view.fw("megatron", "nemo", "torchtitan") or view.fw("deepspeed", "neox"):
            return
        gb_v, mb_v = view.v("training.global_batch"), view.v("training.micro_batch")
        gb, mb = known_int(gb_v), known_int(mb_v)
        if gb is None or mb is None or gb <= 0 or mb <= 0:
            return
        assert gb_v is not None  # known_int(None) is None
        if view.fw("torchtitan"):
            dp, dp_rel = _torchtitan_dp(view)
        else:
            dp, dp_rel = dp_size(view.facts, view.world, sp=False)
        if dp is not None:
            if gb % (mb * dp):
                yield Finding(gb_v, f"global batch {gb} is not divisible by micro batch {mb} × data-parallel "
                                    f"size {dp} = {mb * dp}; set the global batch size to {_multiple(mb * dp, gb)}",
                              [(mb_v, f"micro batch {mb}")] + dp_rel)
            return
        if gb % mb:
            yield Finding(gb_v, f"global batch {gb} is not divisible by micro batch {mb}; set the global batch size "
                                f"to {_multiple(mb, gb)}",
                          [(mb_v, f"micro batch {mb}")])


def _torchtitan_dp(view: View) -> tuple[int | None, list]:
    w = view.world_int
    rep = view.i("parallel.dp_replicate") or 1
    shard = view.i("parallel.dp_shard")
    if shard is None:
        if w is None:
            return None, []
        others = rep
        for k in ("parallel.cp", "parallel.tp", "parallel.pp"):
            i = view.i(k)
            if i is None and view.stated(k):
                return None, []
            others *= i or 1
        if w % others:
            return None, []
        shard = w // others // rep
        return rep * shard, [(view.world, f"world size {w}")]
    return rep * shard, [(view.v("parallel.dp_shard"), f"dp_shard {shard}")]


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
    `train_batch_size` against per-device batch × accumulation × world size.

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
    }, paths=("args.yaml",)),)
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
    )

    def check_file(self, f, ctx):
        return ()

    def check_job(self, job, ctx):
        ds_files = [f for f in job.files if f.kind == "deepspeed"]
        hf_files = [f for f in job.files if f.kind in ("hftrainargs", "accelerate")]
        if not ds_files or not hf_files:
            return
        found = []
        for ds in ds_files:
            for hf in hf_files:
                found.extend(self._compare(ds.facts, hf.facts, job))
        yield from self._emit(found)

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
                other = next(iter(hfp.values()))
                yield Finding(dsp[mode], f"DeepSpeed enables {mode} but {src(other)} trains in {other.value}; enable the "
                                             f"same precision in both (or set it to \"auto\" in the DeepSpeed config)",
                              [(other, str(other.value))])
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


MAX_RAMP_STEPS = 100_000


def rampup_batch_sizes(start: int, incr: int, samples: int, gbs: int) -> list[int] | None:
    """The global batch sizes Megatron's ``RampupBatchsizeNumMicroBatches`` goes through before it
    reaches ``gbs`` (in order, without repeats), replaying its ``update(consumed_samples)``: the
    batch is ``start + int(consumed / (samples / increments)) * incr`` while ``consumed <=
    samples``, and consumed samples grow by the batch of each step. None when the ramp is not
    well formed (Megatron's own asserts) or too long to replay."""
    if start <= 0 or incr <= 0 or samples < 0 or gbs < start or (gbs - start) % incr:
        return None
    increments = (gbs - start) // incr
    if increments == 0 or increments > MAX_RAMP_STEPS:
        return None
    per = samples / increments
    if per <= 0:
        return None
    out: list[int] = []
    consumed = 0
    for _ in range(2 * MAX_RAMP_STEPS):
        if consumed > samples:
            break
        k = int(consumed / per)
        bs = start + k * incr
        if not out or out[-1] != bs:
            out.append(bs)
        # jump to the first step past this increment's samples
        nxt = (k + 1) * per
        n = max(1, -(-int(nxt - consumed) // bs))
        consumed += n * bs
        while consumed <= samples and int(consumed / per) == k:
            consumed += bs
    return [b for b in out if b < gbs]


def _rampup(la):
    """``--rampup-batch-size START INCR SAMPLES`` of a launch: (values, flag word) or None."""
    args = list(getattr(la, "args", None) or ())
    for i, a in enumerate(args):
        if not (a.known and isinstance(a.value, str)):
            continue
        flag, eq, rest = a.value.partition("=")
        if flag != "--rampup-batch-size":
            continue
        words = rest.split() if eq else [w.value if w.known else None for w in args[i + 1:i + 4]]
        if len(words) != 3 or any(w is None or not str(w).isdigit() for w in words):
            return None
        return [int(w) for w in words], a
    return None


class RampupBatchNotDivisible(Rule):
    code = "BAT004"
    facts = frozenset({
        "parallel.cp", "parallel.pp", "parallel.sp", "parallel.tp", "training.global_batch", "training.micro_batch",
    })
    name = "rampup-batch-not-divisible"
    severity = Severity.ERROR
    summary = "A global batch size along Megatron's --rampup-batch-size ramp is not divisible by micro batch × DP"
    kinds = frozenset()
    facts = frozenset({"parallel.cp", "parallel.pp", "parallel.sp", "parallel.tp", "training.global_batch",
                       "training.micro_batch", "framework"})
    doc = """
    ## What it does
    For a Megatron command line with `--rampup-batch-size START INCR SAMPLES`, replays Megatron's
    batch-size ramp (`RampupBatchsizeNumMicroBatches`: the batch grows by INCR every
    `SAMPLES / ((GLOBAL - START) / INCR)` consumed samples, and consumed samples grow by the batch of
    each step) and checks every global batch size the run goes through below `--global-batch-size`
    against `--micro-batch-size` × DP, DP = world / (TP×PP×CP). Also reports a ramp whose span
    `GLOBAL - START` is not a multiple of INCR. Without a known world size it checks divisibility by
    the micro batch alone. The final global batch is BAT002's.

    ## Why it matters
    Megatron asserts at every step of the ramp: "current global batch size (24) is not divisible by
    micro-batch-size (2) times data parallel size (8)" — partway into training, after the job has
    already run for hours (Megatron-LM releases since late 2025 ignore the flag with a deprecation
    warning and use `--step-batch-size-schedule`; Megatron-DeepSpeed and earlier Megatron-LM run it).

    ## Example

    ## How to fix
    Choose START and INCR as multiples of micro batch × DP (here 32 32), or drop the ramp.
    """
    valid = (
        Example("""
        #!/bin/bash
        torchrun --nnodes 1 --nproc_per_node 8 pretrain_gpt.py \\
            --tensor-model-parallel-size 2 --micro-batch-size 2 \\
            --global-batch-size 256 --rampup-batch-size 32 16 100000
        """, filename="run.sh"),
    )
    invalid = (
        Example("""
        #!/bin/bash
        torchrun --nnodes 2 --nproc_per_node 8 pretrain_gpt.py \\
            --tensor-model-parallel-size 1 --micro-batch-size 2 \\
            --global-batch-size 1536 --rampup-batch-size 24 24 1000000
        """, filename="run.sh", line=4),
        Example("""
        #!/bin/bash
        torchrun --nnodes 1 --nproc_per_node 8 pretrain_gpt.py \\
            --tensor-model-parallel-size 2 --micro-batch-size 4 \\
            --global-batch-size 512 --rampup-batch-size 32 50 100000
        """, filename="run.sh", line=4),
    )

    def check_job(self, job, ctx):
        from parallint.model.factrule import job_view

        la = getattr(job, "launch", None)
        if la is None or getattr(job.root, "kind", "") not in ("shell", "makefile", "kube"):
            return
        found = _rampup(la)
        if found is None:
            return
        (start, incr, samples), word = found
        view = job_view(job, getattr(ctx, "config", {}) or {})
        if not view.fw("megatron") or view.fw("neox"):
            return
        gb_v, mb_v = view.v("training.global_batch"), view.v("training.micro_batch")
        gb, mb = known_int(gb_v), known_int(mb_v)
        if gb is None or mb is None or gb <= 0 or mb <= 0:
            return
        if gb >= start and (gb - start) % incr:
            yield self.report(word.span, f"--rampup-batch-size goes from {start} in steps of {incr} but the "
                                         f"global batch {gb} is not on that ramp ({gb} - {start} is not a "
                                         f"multiple of {incr}): Megatron asserts at start-up; set the global batch size to "
                                         f"{start} plus a multiple of {incr} ({_on_ramp(start, incr, gb)})")
            return
        sizes = rampup_batch_sizes(start, incr, samples, gb)
        if not sizes:
            return
        dp, _ = dp_size(view.facts, view.world, sp=False)
        div = mb * dp if dp is not None else mb
        what = f"micro batch {mb} × data-parallel size {dp} = {div}" if dp is not None else f"micro batch {mb}"
        bad = next((b for b in sizes if b % div), None)
        if bad is None:
            return
        yield self.report(word.span, f"the batch-size ramp reaches a global batch of {bad}, which is not "
                                     f"divisible by {what}: Megatron asserts when the ramp gets there; make the ramp's start "
                                     f"and increment multiples of {div}")


def _multiple(k: int, near: int) -> str:
    """'a multiple of k (lo or hi)': the multiples of k next to ``near``, for a fix clause."""
    lo = near // k * k
    choices = [x for x in (lo, lo + k) if x > 0]
    return f"a multiple of {k} ({' or '.join(map(str, choices))})"


def _on_ramp(start: int, incr: int, gb: int) -> str:
    lo = start + (gb - start) // incr * incr
    return " or ".join(str(x) for x in (lo, lo + incr) if x > 0)


def _batch_fix(tb: int, mb: int, ga: int, dp: int) -> str:
    """What makes train_batch_size == micro × accumulation × DP: the batch, else the accumulation."""
    alts = [f"set train_batch_size to {mb * ga * dp}"]
    if tb % (mb * dp) == 0:
        alts.append(f"gradient_accumulation_steps to {tb // (mb * dp)}")
    elif tb % (ga * dp) == 0:
        alts.append(f"train_micro_batch_size_per_gpu to {tb // (ga * dp)}")
    return " or ".join(alts)
