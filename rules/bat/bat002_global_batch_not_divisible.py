"""BAT002 global-batch-not-divisible: The global batch is not divisible by micro batch × data-parallel size"""

from __future__ import annotations

from parallint.model.diagnostics import Severity
from parallint.model.factrule import FactRule, Finding, View, src
from parallint.model.facts import Value, known_int
from parallint.model.origin import How
from parallint.model.rule import Example
from parallint.model.world import dp_size
from parallint.rules.bat._common import _multiple


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


def _named(gb_v: Value, gb: int) -> str:
    """``data.train_batch_size 100``, or ``data.train_batch_size 100 × actor_rollout_ref.rollout.n 5 = 500``."""
    return f"{src(gb_v)} = {gb}" if gb_v.origin.how is How.DERIVED else f"{src(gb_v)} {gb}"


def _verl_fix(gb_v: Value, k: int, gb: int) -> str:
    if gb_v.origin.how is How.DERIVED:  # train_batch_size × rollout.n
        return f"set data.train_batch_size so that the product is {_multiple(k, gb)}"
    return f"set data.train_batch_size to {_multiple(k, gb)}"


def _cli_frameworks(view: View):
    """detectron2 and verl, whose launch line sets the world and the batch
    (``parallint.link.frameworkcli``): each asserts the division at start-up."""
    gb_v, w_v = view.v("training.global_batch"), view.world
    gb, w = known_int(gb_v), known_int(w_v)
    if gb is None or w is None or gb <= 0 or w <= 0 or gb_v is None:
        return
    if view.fw("detectron2"):
        if gb % w:
            yield Finding(gb_v, f"SOLVER.IMS_PER_BATCH {gb} is not divisible by the {w} GPUs ({src(w_v)}): "
                                f"detectron2 stops with \"Total batch size ({gb}) must be divisible by the number "
                                f"of gpus ({w})\"; set SOLVER.IMS_PER_BATCH to {_multiple(w, gb)}",
                          [(w_v, f"{w} GPUs")])
        return
    mb_v = view.v("training.micro_batch")
    if mb_v is None:  # FSDP actor: the batch must divide over the GPUs
        if gb % w:
            yield Finding(gb_v, f"{_named(gb_v, gb)} is not divisible by the {w} GPUs ({src(w_v)}): verl's "
                                f"validate_config stops with \"real_train_batch_size ({gb}) must be divisible by "
                                f"minimal possible batch size ({w})\"; {_verl_fix(gb_v, w, gb)}",
                          [(w_v, f"{w} GPUs")])
        return
    mb = known_int(mb_v)
    dp, rel = dp_size(view.facts, w_v, sp=False)
    if mb is None or dp is None or mb <= 0:
        return
    if gb % (dp * mb):
        yield Finding(gb_v, f"{_named(gb_v, gb)} is not divisible by the Megatron actor's data-parallel size {dp} × "
                            f"ppo_micro_batch_size_per_gpu {mb} = {dp * mb}: verl's validate_config stops with "
                            f"\"real_train_batch_size ({gb}) must be divisible by minimal possible batch size "
                            f"({dp * mb})\"; {_verl_fix(gb_v, dp * mb, gb)}",
                      [(mb_v, f"ppo_micro_batch_size_per_gpu {mb}")] + rel)


_D2_FILES = {
    "tools/train_net.py": (
        "from detectron2.config import get_cfg\n"
        "from detectron2.engine import DefaultTrainer, default_argument_parser, launch\n\n\n"
        "def main(args):\n    cfg = get_cfg()\n    cfg.merge_from_file(args.config_file)\n"
        "    cfg.merge_from_list(args.opts)\n    return DefaultTrainer(cfg).train()\n\n\n"
        "if __name__ == \"__main__\":\n    args = default_argument_parser().parse_args()\n"
        "    launch(main, args.num_gpus, num_machines=args.num_machines, dist_url=args.dist_url, args=(args,))\n"),
    "configs/retinanet.yaml": "MODEL:\n  META_ARCHITECTURE: RetinaNet\nSOLVER:\n  IMS_PER_BATCH: 16\n",
}
_D2_SH = ("#!/bin/bash\npython tools/train_net.py --num-gpus {gpus} --config-file configs/retinanet.yaml \\\n"
          "    OUTPUT_DIR out \\\n    SOLVER.IMS_PER_BATCH 12\n")
_VERL_SH = ("#!/bin/bash\npython3 -m verl.trainer.main_ppo \\\n    data.train_batch_size={batch} \\\n"
            "    actor_rollout_ref.actor.ppo_mini_batch_size=32 \\\n    trainer.n_gpus_per_node=8 \\\n"
            "    trainer.nnodes=1\n")


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

    Two frameworks whose launch line sets the world and the batch are checked the way they check
    themselves at start-up:

    - **detectron2** (`tools/train_net.py --num-gpus N --num-machines M --config-file c.yaml
      SOLVER.IMS_PER_BATCH B`, a script on detectron2's `default_argument_parser` and `launch`):
      `B % (N × M) == 0`, B from the trailing options, else the config and its `_BASE_` files.
      Silent with `--eval-only`, when the script names `IMS_PER_BATCH` or `REFERENCE_WORLD_SIZE`
      itself, when `SOLVER.REFERENCE_WORLD_SIZE` is set (detectron2 then rescales the batch to
      the world), or when a config cannot be read.
    - **verl** (`python3 -m verl.trainer.main_ppo` with Hydra overrides): `data.train_batch_size ×
      actor_rollout_ref.rollout.n` divisible by `trainer.n_gpus_per_node × trainer.nnodes`
      (FSDP actor), or by the Megatron actor's DP × `ppo_micro_batch_size_per_gpu`. Only when
      the line gives the batch and the GPUs per node, sets no `use_dynamic_bsz`, names no other
      config and holds no word parallint cannot read (a trailing `$@` may override any key).

    ## Why it matters
    The number of micro-batches per step must be an integer; Megatron's microbatch calculator
    stops at start-up ("global batch size (30) is not divisible by micro batch size (4) times data
    parallel size (2)").

    ## Example

    ## How to fix
    Choose a global batch that is a multiple of micro batch × DP (detectron2: of the GPUs).
    """
    valid = (Example(_D2_SH.format(gpus=4), filename="train.sh", files=_D2_FILES),
             Example(_VERL_SH.format(batch=96), filename="run_grpo.sh"),
             Example("trainer:\n  devices: 8\n  num_nodes: 1\nmodel:\n  micro_batch_size: 2\n  global_batch_size: 64\n"
                     "  tensor_model_parallel_size: 2\n  pipeline_model_parallel_size: 1\n", filename="conf/gpt.yaml"),)
    invalid = (
        Example(_D2_SH.format(gpus=8), filename="train.sh", files=_D2_FILES, line=4),
        Example(_VERL_SH.format(batch=100), filename="run_grpo.sh", line=3),
        Example("trainer:\n  devices: 8\n  num_nodes: 1\nmodel:\n  micro_batch_size: 2\n  global_batch_size: 36\n"
                "  tensor_model_parallel_size: 2\n  pipeline_model_parallel_size: 1\n", filename="conf/gpt.yaml", line=6, doc=True),
        Example("ENV_VARS:\n  NCCL_DEBUG: WARN\nMODEL_ARGS:\n  --micro-batch-size: 4\n  --global-batch-size: 30\n"
                "  --num-attention-heads: 8\n", filename="model_config.yaml", line=5),
    )

    def findings(self, view: View):
        if view.fw("detectron2", "verl"):
            yield from _cli_frameworks(view)
            return
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
