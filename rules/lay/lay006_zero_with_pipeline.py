"""LAY006 zero-with-pipeline: DeepSpeed ZeRO stage 2 or 3 combined with pipeline parallelism"""

from __future__ import annotations

from parallint.model.diagnostics import Related, Severity
from parallint.model.factrule import FactRule, Finding, View
from parallint.model.facts import Value
from parallint.model.rule import Example


class ZeroWithPipeline(FactRule):
    code = "LAY006"
    facts = frozenset({"parallel.pp", "parallel.zero_stage"})
    name = "zero-with-pipeline"
    severity = Severity.ERROR
    summary = "DeepSpeed ZeRO stage 2 or 3 combined with pipeline parallelism"
    doc = """
    ## What it does
    Flags a DeepSpeed (or gpt-neox) job that uses ZeRO stage ≥ 2 together with more than one
    pipeline stage: a DeepSpeed config's stage with the job's PP, a Megatron-DeepSpeed launch
    (`--deepspeed`, without `--no-pipeline-parallel`) whose `--pipeline-model-parallel-size` is
    above 1 with `--zero-stage` 2 or 3 or a linked DeepSpeed config at stage 2 or 3, and a
    script that builds a DeepSpeed `PipelineModule(num_stages=N)` trained with such a config.

    ## Why it matters
    DeepSpeed's pipeline engine refuses it at start-up: "ZeRO-2 and ZeRO-3 are incompatible with
    pipeline parallelism". The job fails after the GPUs are allocated.

    gpt-neox uses the pipeline engine for every `pipe_parallel_size` of 1 or more, so a neox
    config with `pipe_parallel_size: 1` and ZeRO stage 2 or 3 fails the same way (its README:
    "set pipe-parallel-size to 0 if you want to use ZeRO stage 2 or more").

    ## Example

    ## How to fix
    Use ZeRO stage 0 or 1 with pipeline parallelism, or drop the pipeline (gpt-neox:
    `pipe_parallel_size: 0`).
    """
    valid = (Example('{\n  "pipe_parallel_size": 2,\n  "model_parallel_size": 1,\n  "num_layers": 24,\n'
                     '  "zero_optimization": {"stage": 1}\n}\n', filename="neox.yml"),
             Example('{\n  "pipe_parallel_size": 0,\n  "model_parallel_size": 1,\n  "num_layers": 24,\n'
                     '  "zero_optimization": {"stage": 2}\n}\n', filename="neox.yml"),
             # --no-pipeline-parallel: Megatron-DeepSpeed runs without DeepSpeed's pipeline engine
             Example(files={
                 "run.sh": "deepspeed --num_gpus 8 pretrain_gpt.py --tensor-model-parallel-size 2 \\\n"
                           "    --pipeline-model-parallel-size 2 --num-layers 24 --micro-batch-size 1 \\\n"
                           "    --deepspeed --deepspeed_config $DS_CONFIG --zero-stage 2 --no-pipeline-parallel\n",
                 "pretrain_gpt.py": "import deepspeed\nprint(deepspeed.__version__)\n",
             }, paths=("run.sh",)),
             Example(files={
                 "train.py": "import deepspeed\nfrom deepspeed.pipe import PipelineModule\n"
                             "net = PipelineModule(layers=layers, num_stages=4, loss_fn=loss_fn)\n"
                             "engine, _, _, _ = deepspeed.initialize(model=net, config=\"ds.json\")\n",
                 "ds.json": '{\n  "train_batch_size": 32,\n  "zero_optimization": {"stage": 1}\n}\n',
             }, paths=("train.py",)))
    invalid = (
        Example('{\n  "pipe_parallel_size": 2,\n  "model_parallel_size": 1,\n  "num_layers": 24,\n'
                '  "zero_optimization": {"stage": 2}\n}\n', filename="neox.yml", line=5),
        Example('{\n  "pipe_parallel_size": 1,\n  "model_parallel_size": 1,\n  "num_layers": 24,\n'
                '  "zero_optimization": {"stage": 2}\n}\n', filename="neox.yml", line=5),
        Example(files={
            "run.sh": "deepspeed --num_gpus 8 pretrain_gpt.py --tensor-model-parallel-size 2 \\\n"
                      "    --pipeline-model-parallel-size 2 --num-layers 24 --micro-batch-size 2 \\\n"
                      "    --global-batch-size 64 --deepspeed --deepspeed_config ds_config.json\n",
            "pretrain_gpt.py": "import deepspeed\nprint(deepspeed.__version__)\n",
            "ds_config.json": '{\n  "train_batch_size": 64,\n  "train_micro_batch_size_per_gpu": 2,\n'
                              '  "zero_optimization": {"stage": 2}\n}\n',
        }, line=4),
        # Megatron-DeepSpeed with the stage on its own flag (the config is written by a heredoc)
        Example(files={
            "run.sh": "deepspeed --num_gpus 8 pretrain_gpt.py --tensor-model-parallel-size 2 \\\n"
                      "    --pipeline-model-parallel-size 2 --num-layers 24 --micro-batch-size 1 \\\n"
                      "    --global-batch-size 64 --deepspeed --deepspeed_config $DS_CONFIG --zero-stage 2\n",
            "pretrain_gpt.py": "import deepspeed\nprint(deepspeed.__version__)\n",
        }, paths=("run.sh",), line=3),
        # DeepSpeed's PipelineModule with four stages, trained with a ZeRO-2 config
        Example(files={
            "train.py": "import deepspeed\nfrom deepspeed.pipe import PipelineModule\ndeepspeed.init_distributed()\n"
                        "net = PipelineModule(layers=layers, num_stages=4, loss_fn=loss_fn)\n"
                        "engine, _, _, _ = deepspeed.initialize(model=net, config=\"ds.json\")\n",
            "ds.json": '{\n  "train_batch_size": 32,\n  "train_micro_batch_size_per_gpu": 4,\n'
                       '  "zero_optimization": {"stage": 2}\n}\n',
        }, paths=("train.py",), line=4),
    )

    def check_file(self, f, ctx):
        yield from super().check_file(f, ctx)
        if f.kind == "neox":
            yield from self._neox_single_stage(f)

    def _neox_single_stage(self, f):
        """gpt-neox runs DeepSpeed's pipeline engine for every ``pipe_parallel_size`` ≥ 1, one
        stage included (``is_pipe_parallel``); only 0 gives the plain engine ZeRO-2/3 need. PP > 1
        is the fact check's; this is the ``pipe_parallel_size: 1`` case, stated in this file."""
        tree = getattr(getattr(f, "data", None), "tree", None)
        if tree is None or not tree.is_map:
            return
        key = next((k for k in ("pipe_parallel_size", "pipe-parallel-size") if tree.get(k) is not None), None)
        z = f.facts.get("parallel.zero_stage")
        if key is None or z is None or z.span is None:
            return
        pipe = Value(tree.get(key).value).as_int()
        stage = z.as_int()
        if not (pipe.known and stage.known):
            return
        pipe, stage = pipe.value, stage.value
        if pipe == 1 and stage >= 2:
            yield self.report(z.span, f"ZeRO stage {stage} with pipe_parallel_size 1: gpt-neox still runs "
                                      f"DeepSpeed's pipeline engine for one stage, which refuses ZeRO-2/3; "
                                      f"set pipe_parallel_size to 0",
                              [Related.at(tree.key_spans.get(key, tree.get(key).span), "pipe_parallel_size 1")])

    def findings(self, view: View):
        # Megatron-DeepSpeed launched with --deepspeed runs PP > 1 on DeepSpeed's pipeline engine
        # (unless --no-pipeline-parallel turns the pipeline off)
        mds = view.fw("megatron") and "deepspeed" in view.launch_flags and "no-pipeline-parallel" not in view.launch_flags
        if not (view.fw("deepspeed", "neox") or mds):
            return
        z, pp = view.i("parallel.zero_stage"), view.i("parallel.pp")
        if z is None or pp is None:
            return
        z_v = view.v("parallel.zero_stage")
        assert z_v is not None  # view.i gave an int for the same key
        if z >= 2 and pp > 1:
            yield Finding(z_v, f"ZeRO stage {z} is incompatible with DeepSpeed "
                                                        f"pipeline parallelism (PP {pp}); set the ZeRO stage to 0 or 1, or PP to 1",
                          [(view.v("parallel.pp"), f"PP {pp}")])
