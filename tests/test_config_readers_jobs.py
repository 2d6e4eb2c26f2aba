"""Config rules on whole jobs, through the real engine: a launch file plus the configs it names,
standalone configs, unknown values, and no finding reported twice."""

from __future__ import annotations

import textwrap
from pathlib import Path

from parallint.discover.settings import Config
from parallint.engine.runner import check_paths

from conftest import write_tree

ROOT = Path(__file__).resolve().parents[1]
MY_CODES = ("LAY0", "BAT0", "CFG0", "PIP004")


def findings(tmp_path: Path, files: dict[str, str], paths=(".",)):
    write_tree(tmp_path, {k: textwrap.dedent(v).lstrip("\n") for k, v in files.items()})
    result = check_paths(list(paths), Config(None, tmp_path, {}), cwd=tmp_path)
    assert not result.errors, result.errors
    return sorted((d.path, d.span.line, d.code) for d in result.diagnostics if d.code.startswith(MY_CODES))


def test_examples_produce_their_findings():
    result = check_paths(["examples/deepspeed_batch", "examples/nemo_tp_pp", "examples/torchtitan"],
                         Config(None, ROOT, {}), cwd=ROOT)
    got = sorted((d.path, d.span.line, d.code) for d in result.diagnostics)
    assert got == [
        ("examples/deepspeed_batch/ds_config.json", 2, "BAT001"),
        ("examples/nemo_tp_pp/conf/megatron_gpt_config.yaml", 14, "LAY001"),
        ("examples/torchtitan/llama3_8b.toml", 25, "LAY001"),
    ]
    bat = next(d for d in result.diagnostics if d.code == "BAT001")
    assert "64" in bat.message and any(r.path.endswith("launch.sh") for r in bat.related)


NEMO = """
    trainer:
      devices: 8
      num_nodes: 1
    model:
      micro_batch_size: 1
      global_batch_size: 64
      tensor_model_parallel_size: 4
      pipeline_model_parallel_size: 4
    """


def test_config_in_a_launch_job_is_reported_once(tmp_path):
    got = findings(tmp_path, {
        "run.sh": "python megatron_gpt_pretraining.py --config-path conf --config-name gpt.yaml\n",
        "megatron_gpt_pretraining.py": "print('hi')\n",
        "conf/gpt.yaml": NEMO,
    })
    assert got == [("conf/gpt.yaml", 7, "LAY001")]


def test_megatron_command_line_layout(tmp_path):
    got = findings(tmp_path, {
        "train.sh": """
            #!/bin/bash
            #SBATCH --nodes=2
            #SBATCH --ntasks-per-node=1
            srun torchrun --nnodes 2 --nproc_per_node 8 pretrain_gpt.py \\
                --tensor-model-parallel-size 8 --pipeline-model-parallel-size 3 \\
                --num-layers 30 --hidden-size 6656 --num-attention-heads 52 \\
                --micro-batch-size 1 --global-batch-size 32
            """,
        "pretrain_gpt.py": "import sys\nprint(sys.argv)\n",
    })
    codes = {c for _, _, c in got}
    # 16 GPUs / (TP 8 × PP 3): not divisible; 52 heads / TP 8: not divisible
    assert {"LAY001", "LAY003"} <= codes
    assert all(p == "train.sh" for p, _, _ in got)


def test_unknown_world_size_stays_silent(tmp_path):
    got = findings(tmp_path, {
        "run.sh": "torchrun --nproc_per_node $NGPU -m torchtitan.train --job.config_file llama.toml\n",
        "llama.toml": "[job]\ndescription = 'x'\n[model]\nflavor = '8B'\n[parallelism]\n"
                      "data_parallel_shard_degree = 4\ntensor_parallel_degree = 4\n",
    })
    assert got == []


def test_torchtitan_inferred_shard(tmp_path):
    toml = "[job]\ndescription = 'x'\n[model]\nflavor = '8B'\n[parallelism]\ndata_parallel_shard_degree = -1\n" \
           "tensor_parallel_degree = {tp}\n"
    ok = findings(tmp_path / "a", {"run.sh": "torchrun --nproc_per_node 8 -m torchtitan.train --job.config_file llama.toml\n",
                                   "llama.toml": toml.format(tp=4)})
    bad = findings(tmp_path / "b", {"run.sh": "torchrun --nproc_per_node 8 -m torchtitan.train --job.config_file llama.toml\n",
                                    "llama.toml": toml.format(tp=3)})
    assert ok == [] and bad == [("llama.toml", 7, "LAY001")]


def test_deepspeed_with_hostfile_has_no_known_world(tmp_path):
    files = {
        "launch.sh": "deepspeed --hostfile hosts --num_gpus 8 train.py --deepspeed_config ds.json\n",
        "train.py": "import deepspeed\n",
        "ds.json": '{\n  "train_batch_size": 32,\n  "train_micro_batch_size_per_gpu": 2,\n  "gradient_accumulation_steps": 4\n}\n',
    }
    assert findings(tmp_path, files) == []  # 32 = 2 × 4 × DP holds for DP 4: unknown nodes, no finding


def test_deepspeed_identity_impossible_for_any_dp(tmp_path):
    got = findings(tmp_path, {"ds.json": '{\n  "train_batch_size": 30,\n  "train_micro_batch_size_per_gpu": 4\n}\n'})
    assert got == [("ds.json", 2, "BAT001")]


def test_hf_args_linked_to_deepspeed(tmp_path):
    got = findings(tmp_path, {
        "args.yaml": "output_dir: out\nper_device_train_batch_size: 4\ngradient_accumulation_steps: 8\ndeepspeed: ds.json\n",
        "ds.json": '{\n  "train_micro_batch_size_per_gpu": 4,\n  "gradient_accumulation_steps": 2,\n'
                   '  "zero_optimization": {"stage": 2}\n}\n',
    })
    assert got == [("ds.json", 3, "BAT003")]
