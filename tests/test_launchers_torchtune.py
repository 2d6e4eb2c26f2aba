"""torchtune: `tune run [torchrun options] RECIPE --config CFG [key=value]` and the recipe config."""

from __future__ import annotations

from parallint.discover.settings import Config
from parallint.engine.runner import build_jobs, check_paths

from conftest import write_tree

# shaped like torchtune's recipes/configs/llama3_3/70B_full_multinode.yaml, reduced
CONFIG = """\
output_dir: /tmp/torchtune/llama3_3_70B/full
model:
  _component_: torchtune.models.llama3_3.llama3_3_70b
tokenizer:
  _component_: torchtune.models.llama3.llama3_tokenizer
  path: /tmp/Llama-3.3-70B-Instruct/original/tokenizer.model
tensor_parallel_dim: {tp}
tensor_parallel_plan:
  _component_: torchtune.models.llama3.base_llama_tp_plan
data_parallel_shard_dim: -1
data_parallel_replicate_dim: 1
batch_size: 4
gradient_accumulation_steps: 1
dtype: bf16
"""
# shaped like torchtune's recipes/full_finetune_multinode.slurm
SLURM = """\
#!/bin/bash
#SBATCH --job-name=llama3-70b-fft
#SBATCH --nodes=2
#SBATCH --ntasks=2
#SBATCH --gpus-per-task=8

nodes=( $( scontrol show hostnames $SLURM_JOB_NODELIST ) )
head_node=${nodes[0]}
srun tune run --nnodes 2 --nproc_per_node 8 --rdzv_id 101 --rdzv_backend c10d --rdzv_endpoint "$head_node:29500" \\
    full_finetune_distributed --config 70B_full_multinode.yaml output_dir=/mnt/out
"""


def _codes(tmp_path, files, path, select=("LAY001",)):
    write_tree(tmp_path, files)
    res = check_paths([path], Config(None, tmp_path, {"select": list(select)}), cwd=tmp_path)
    assert not res.errors, res.errors
    return [(d.code, d.span.path, d.span.line) for d in res.diagnostics]


def test_multinode_doc_example_is_silent(tmp_path):
    files = {"70B_full_multinode.yaml": CONFIG.format(tp=8), "full_finetune_multinode.slurm": SLURM}
    assert _codes(tmp_path, files, "full_finetune_multinode.slurm") == []
    (job,) = [j for j in build_jobs(["full_finetune_multinode.slurm"], Config(None, tmp_path, {}), cwd=tmp_path)
              if j.launch is not None]
    assert job.launch.launcher == "torchrun" and job.int("parallel.tp") == 8
    assert job.int("parallel.nodes") == 2 and job.int("parallel.procs_per_node") == 8


def test_planted_tp_mismatch_reported_through_tune_run(tmp_path):
    files = {"my_config.yaml": CONFIG.format(tp=8),
             "run.sh": "tune run --nproc_per_node 4 full_finetune_distributed --config my_config.yaml\n"}
    assert _codes(tmp_path, files, "run.sh") == [("LAY001", "my_config.yaml", 7)]
    files["run.sh"] = "tune run --nproc_per_node 8 full_finetune_distributed --config my_config.yaml\n"
    assert _codes(tmp_path, files, "run.sh") == []


def test_override_on_the_command_line_beats_the_config(tmp_path):
    files = {"my_config.yaml": CONFIG.format(tp=8),
             "run.sh": "tune run --nproc_per_node 4 full_finetune_distributed --config my_config.yaml "
                       "tensor_parallel_dim=2\n"}
    assert _codes(tmp_path, files, "run.sh") == []
    files["run.sh"] = files["run.sh"].replace("tensor_parallel_dim=2", "tensor_parallel_dim=3")
    assert _codes(tmp_path, files, "run.sh") == [("LAY001", "run.sh", 1)]


def test_unknown_override_unlinks_the_config(tmp_path):
    files = {"my_config.yaml": CONFIG.format(tp=8),
             "run.sh": "tune run --nproc_per_node 4 full_finetune_distributed --config my_config.yaml "
                       "tensor_parallel_dim=$TP\n"}
    assert _codes(tmp_path, files, "run.sh") == []


def test_without_torchrun_options_one_process(tmp_path):
    files = {"my_config.yaml": CONFIG.format(tp=2),
             "run.sh": "tune run lora_finetune_single_device --config my_config.yaml\n"}
    assert _codes(tmp_path, files, "run.sh") == [("LAY001", "my_config.yaml", 7)]
    (job,) = [j for j in build_jobs(["run.sh"], Config(None, tmp_path, {}), cwd=tmp_path) if j.launch is not None]
    assert job.launch.launcher == "python" and job.int("parallel.world_size") == 1


def test_builtin_names_link_inside_the_torchtune_tree(tmp_path):
    files = {"recipes/configs/llama3_3/70B_full.yaml": CONFIG.format(tp=8),
             "recipes/full_finetune_distributed.py": "import torch.distributed as dist\ndist.init_process_group('nccl')\n",
             "pyproject.toml": "[project]\nname='t'\n",
             "run.sh": "tune run --nproc_per_node 4 full_finetune_distributed --config llama3_3/70B_full\n"}
    write_tree(tmp_path, files)
    (job,) = [j for j in build_jobs(["run.sh"], Config(None, tmp_path, {}), cwd=tmp_path) if j.launch is not None]
    assert [f.path for f in job.files] == ["run.sh", "recipes/full_finetune_distributed.py",
                                           "recipes/configs/llama3_3/70B_full.yaml"]
