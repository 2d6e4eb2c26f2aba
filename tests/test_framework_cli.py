"""Frameworks whose launch line sets the world and the batch (``parallint.link.frameworkcli``),
end to end through the CLI: detectron2's ``SOLVER.IMS_PER_BATCH`` against ``--num-gpus ×
--num-machines`` and verl's ``data.train_batch_size × rollout.n`` against ``trainer.n_gpus_per_node
× trainer.nnodes`` (BAT002), each reconstruction with its clean twin."""

from __future__ import annotations

import pytest

from conftest import write_tree

D2_TRAIN = """\
from detectron2.config import get_cfg
from detectron2.engine import DefaultTrainer, default_argument_parser, default_setup, launch


def setup(args):
    cfg = get_cfg()
    cfg.merge_from_file(args.config_file)
    cfg.merge_from_list(args.opts)
    cfg.freeze()
    default_setup(cfg, args)
    return cfg


def main(args):
    cfg = setup(args)
    trainer = DefaultTrainer(cfg)
    trainer.resume_or_load(resume=args.resume)
    return trainer.train()


if __name__ == "__main__":
    args = default_argument_parser().parse_args()
    print("Command Line Args:", args)
    launch(
        main,
        args.num_gpus,
        num_machines=args.num_machines,
        machine_rank=args.machine_rank,
        dist_url=args.dist_url,
        args=(args,),
    )
"""
D2_BASE = "MODEL:\n  META_ARCHITECTURE: GeneralizedRCNN\nSOLVER:\n  IMS_PER_BATCH: 16\n  BASE_LR: 0.02\n{extra}"
D2_CHILD = '_BASE_: "../Base-RCNN-FPN.yaml"\nMODEL:\n  MASK_ON: True\nSOLVER:\n  STEPS: (210000, 250000)\n'


def _d2(tmp_path, line: str, extra: str = "", script: str = D2_TRAIN):
    (tmp_path / ".git").mkdir()
    write_tree(tmp_path, {
        "tools/train_net.py": script,
        "configs/Base-RCNN-FPN.yaml": D2_BASE.format(extra=extra),
        "configs/COCO/mask_rcnn_R_50_FPN_3x.yaml": D2_CHILD,
        "scripts/train.sh": "#!/bin/bash\nset -e\n" + line + "\n",
    })


@pytest.mark.parametrize("line,found", [
    # the config's base gives 16 images per step; 6 GPUs do not divide it (a real report's shape)
    ("python tools/train_net.py --num-gpus 6 --config-file configs/COCO/mask_rcnn_R_50_FPN_3x.yaml", True),
    ("python tools/train_net.py --num-gpus 8 --config-file configs/COCO/mask_rcnn_R_50_FPN_3x.yaml", False),
    # the trailing options override the config
    ("python tools/train_net.py --num-gpus 4 --config-file configs/COCO/mask_rcnn_R_50_FPN_3x.yaml "
     "SOLVER.IMS_PER_BATCH 6 SOLVER.BASE_LR 0.0075", True),
    ("python tools/train_net.py --num-gpus 4 --config-file configs/COCO/mask_rcnn_R_50_FPN_3x.yaml "
     "SOLVER.IMS_PER_BATCH 8 SOLVER.BASE_LR 0.01", False),
    # two machines of 4 GPUs: 8 processes
    ("python tools/train_net.py --num-gpus 4 --num-machines 2 --machine-rank 0 --dist-url tcp://10.0.0.1:29500 "
     "--config-file configs/COCO/mask_rcnn_R_50_FPN_3x.yaml SOLVER.IMS_PER_BATCH 12", True),
    ("python tools/train_net.py --num-gpus 4 --num-machines 2 --machine-rank 0 --dist-url tcp://10.0.0.1:29500 "
     "--config-file configs/COCO/mask_rcnn_R_50_FPN_3x.yaml SOLVER.IMS_PER_BATCH 16", False),
])
def test_detectron2_batch_against_the_gpus(cli, tmp_path, line, found):
    _d2(tmp_path, line)
    res = cli("check", "--no-cache", "--select", "BAT002", ".", cwd=tmp_path)
    assert res.returncode == (1 if found else 0), res.stdout + res.stderr
    assert ("BAT002" in res.stdout) is found
    if found:
        assert "must be divisible by the number of gpus" in res.stdout


def test_detectron2_finding_points_at_the_base_config(cli, tmp_path):
    _d2(tmp_path, "python tools/train_net.py --num-gpus 6 --config-file configs/COCO/mask_rcnn_R_50_FPN_3x.yaml")
    res = cli("check", "--no-cache", "--select", "BAT002", ".", cwd=tmp_path)
    assert "configs/Base-RCNN-FPN.yaml:4:" in res.stdout and "scripts/train.sh:3" in res.stdout, res.stdout


@pytest.mark.parametrize("line,extra,script", [
    # evaluation only: no training loader is built
    ("python tools/train_net.py --num-gpus 6 --eval-only --config-file configs/COCO/mask_rcnn_R_50_FPN_3x.yaml", "", D2_TRAIN),
    # REFERENCE_WORLD_SIZE makes DefaultTrainer rescale the batch to the world
    ("python tools/train_net.py --num-gpus 6 --config-file configs/COCO/mask_rcnn_R_50_FPN_3x.yaml", "  REFERENCE_WORLD_SIZE: 8\n", D2_TRAIN),
    # a word parallint cannot read may be any option
    ("python tools/train_net.py --num-gpus 6 --config-file configs/COCO/mask_rcnn_R_50_FPN_3x.yaml $EXTRA", "", D2_TRAIN),
    ("python tools/train_net.py --num-gpus 6 --config-file $CFG", "", D2_TRAIN),
    # the script sets the batch itself
    ("python tools/train_net.py --num-gpus 6 --config-file configs/COCO/mask_rcnn_R_50_FPN_3x.yaml", "",
     D2_TRAIN.replace("    cfg.freeze()\n", "    cfg.SOLVER.IMS_PER_BATCH = 2 * args.num_gpus\n    cfg.freeze()\n")),
    # its own parser: the options may mean something else
    ("python tools/train_net.py --num-gpus 6 --config-file configs/COCO/mask_rcnn_R_50_FPN_3x.yaml", "",
     D2_TRAIN.replace("args = default_argument_parser().parse_args()",
                      "parser = default_argument_parser()\n    parser.add_argument('--x')\n    args = parser.parse_args()")),
])
def test_detectron2_silent_when_the_batch_may_not_reach_the_assert(cli, tmp_path, line, extra, script):
    _d2(tmp_path, line, extra, script)
    res = cli("check", "--no-cache", "--select", "BAT002", ".", cwd=tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr


VERL = """\
#!/bin/bash
set -x
export VLLM_ATTENTION_BACKEND=XFORMERS

python3 -m verl.trainer.main_ppo \\
    algorithm.adv_estimator=grpo \\
    data.train_files=$HOME/data/gsm8k/train.parquet \\
    data.val_files=$HOME/data/gsm8k/test.parquet \\
    data.train_batch_size={batch} \\
    data.max_prompt_length=512 \\
    actor_rollout_ref.model.path=Qwen/Qwen2.5-3B-Instruct \\
    actor_rollout_ref.actor.ppo_mini_batch_size=64 \\
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=8 \\
    actor_rollout_ref.rollout.tensor_model_parallel_size=2 \\
    actor_rollout_ref.rollout.name=vllm \\
{extra}    trainer.logger='["console"]' \\
    trainer.n_gpus_per_node={gpus} \\
    trainer.nnodes={nodes} \\
    trainer.total_epochs=15{tail}
"""


def _verl(tmp_path, batch=128, gpus=8, nodes=1, extra="", tail=""):
    (tmp_path / ".git").mkdir()
    write_tree(tmp_path, {"examples/run_grpo.sh": VERL.format(batch=batch, gpus=gpus, nodes=nodes, extra=extra, tail=tail)})


@pytest.mark.parametrize("kw,found", [
    (dict(batch=100), True),              # 100 prompts over 8 GPUs
    (dict(batch=96), False),
    (dict(batch=128, gpus=6), True),      # six GPUs per node
    (dict(batch=120, gpus=6), False),
    (dict(batch=100, extra="    actor_rollout_ref.rollout.n=4 \\\n"), False),   # 400 responses over 8
    (dict(batch=100, extra="    actor_rollout_ref.rollout.n=5 \\\n"), True),    # 500 over 8
    (dict(batch=100, nodes=2, gpus=8, extra="    actor_rollout_ref.rollout.n=5 \\\n"), True),  # 500 over 16
    (dict(batch=96, nodes=2, gpus=8, extra="    actor_rollout_ref.rollout.n=4 \\\n"), False),
])
def test_verl_batch_against_the_gpus(cli, tmp_path, kw, found):
    _verl(tmp_path, **kw)
    res = cli("check", "--no-cache", "--select", "BAT002", ".", cwd=tmp_path)
    assert res.returncode == (1 if found else 0), res.stdout + res.stderr
    if found:
        assert "examples/run_grpo.sh:9:" in res.stdout and "validate_config" in res.stdout, res.stdout


MEGATRON = ("    actor_rollout_ref.actor.strategy=megatron \\\n"
            "    actor_rollout_ref.actor.megatron.tensor_model_parallel_size=2 \\\n"
            "    actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=2 \\\n")


@pytest.mark.parametrize("batch,found", [(36, True), (32, False)])
def test_verl_megatron_actor_batch_against_dp_times_micro(cli, tmp_path, batch, found):
    # 16 GPUs / (TP 2 × PP 2) = DP 4; × micro 8 = 32
    _verl(tmp_path, batch=batch, nodes=2, extra=MEGATRON)
    res = cli("check", "--no-cache", "--select", "BAT002", ".", cwd=tmp_path)
    assert res.returncode == (1 if found else 0), res.stdout + res.stderr
    if found:
        assert "data-parallel size 4 × ppo_micro_batch_size_per_gpu 8 = 32" in res.stdout, res.stdout


@pytest.mark.parametrize("kw", [
    dict(tail=" $@"),                                                        # may override any key
    dict(tail=" ${EXTRA_ARGS}"),
    dict(extra="    actor_rollout_ref.actor.use_dynamic_bsz=True \\\n"),     # verl skips the check
    dict(gpus="$GPUS_PER_NODE"),
    dict(extra="    actor_rollout_ref.rollout.n=$N \\\n"),
])
def test_verl_silent_when_a_value_is_not_known(cli, tmp_path, kw):
    _verl(tmp_path, **dict(dict(batch=100), **kw))
    res = cli("check", "--no-cache", "--select", "BAT002", ".", cwd=tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr


def test_verl_other_config_is_silent(cli, tmp_path):
    (tmp_path / ".git").mkdir()
    write_tree(tmp_path, {"run.sh": "#!/bin/bash\npython3 -m verl.trainer.main_ppo --config-name=ppo_megatron_trainer "
                                    "data.train_batch_size=100 trainer.n_gpus_per_node=8\n"})
    res = cli("check", "--no-cache", "--select", "BAT002", ".", cwd=tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr


ORL = """\
#!/bin/bash
set -x
deepspeed {launcher}--module openrlhf.cli.train_sft \\
   --max_len 2048 \\
   --dataset Open-Orca/OpenOrca \\
   --input_key question \\
   --output_key response \\
   {train} 256 \\
   {micro} {mb} \\
   --pretrain meta-llama/Meta-Llama-3-8B \\
   --save_path ./checkpoint/llama3-8b-sft \\
   --zero_stage 2 \\
   --bf16 \\
   --flash_attn{extra}
"""
OLD = ("--train_batch_size", "--micro_train_batch_size")
NEW = ("--train.batch_size", "--train.micro_batch_size")


@pytest.mark.parametrize("launcher,flags,mb,extra,found", [
    ("--num_gpus 6 ", OLD, 2, "", True),          # 256 over 6 GPUs × micro 2: DeepSpeed's batch identity fails
    ("--num_gpus 8 ", OLD, 2, "", False),
    ("--num_gpus 6 ", NEW, 2, "", True),          # the newer release's spellings
    ("--num_gpus 8 ", NEW, 4, "", False),
    ("--num_gpus 3 ", OLD, 4, "", True),          # 256 over 3 × 4
    ("", OLD, 2, "", False),                      # every GPU of the node: not known
    ("--num_gpus 6 ", OLD, 2, " \\\n   --ring_attn_size 2", False),  # ring attention rescales the batch
    ("--num_gpus 6 ", OLD, 2, " $EXTRA", False),
])
def test_openrlhf_batch_against_the_deepspeed_world(cli, tmp_path, launcher, flags, mb, extra, found):
    (tmp_path / ".git").mkdir()
    write_tree(tmp_path, {"scripts/train_sft.sh": ORL.format(launcher=launcher, train=flags[0], micro=flags[1],
                                                            mb=mb, extra=extra)})
    res = cli("check", "--no-cache", "--select", "BAT001", ".", cwd=tmp_path)
    assert res.returncode == (1 if found else 0), res.stdout + res.stderr
    if found:
        assert "scripts/train_sft.sh:8:" in res.stdout and "is not divisible by micro batch" in res.stdout, res.stdout


VERL_ROLLOUT = """#!/bin/bash
python3 -m verl.trainer.main_ppo \\
    algorithm.adv_estimator=grpo \\
    data.train_batch_size=16 \\
    actor_rollout_ref.model.path=Qwen/Qwen2.5-7B-Instruct-1M \\
    actor_rollout_ref.rollout.name=vllm \\
    actor_rollout_ref.rollout.tensor_model_parallel_size=2 \\
    actor_rollout_ref.rollout.n=16 \\
    trainer.n_gpus_per_node={gpus} \\
    trainer.nnodes=1{tail}
"""


def test_verl_rollout_tp_against_the_gpus_of_the_job(tmp_path):
    """verl#1191 ("rollout world_size: 1 is not divisible by infer_tp: 2"): one GPU with a rollout
    TP of 2 is LAY014; two GPUs are fine, and a `$@` that may override any key is silent."""
    import json
    import subprocess
    import sys

    def lay014(gpus, tail=""):
        (tmp_path / "run_grpo.sh").write_text(VERL_ROLLOUT.format(gpus=gpus, tail=tail))
        r = subprocess.run([sys.executable, "-m", "parallint", "check", ".", "--no-cache", "--format", "json",
                            "--exit-zero"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
        return [(d["path"], d["line"]) for d in json.loads(r.stdout) if d["code"] == "LAY014"]

    (tmp_path / ".git").mkdir(exist_ok=True)
    assert lay014(1) == [("run_grpo.sh", 7)]
    assert lay014(2) == []
    assert lay014(1, ' \\\n    "$@"') == []
