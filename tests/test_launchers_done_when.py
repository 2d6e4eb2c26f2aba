"""Issue 14's "done when", in one place: every launcher parallint reads has a pair of examples shaped
like its own documentation, written again by hand: one correct (silent), one with a planted
TP×PP×DP mismatch that LAY001 reports through that launcher. Both go through the command line,
``parallint check DIR --format json``, the way a user runs it (one run over every pair's folder;
each pair sits in its own folder, so nothing links across pairs).

And BAT003 on the commonest HF Trainer setup: ``--deepspeed ds.json --gradient_accumulation_steps 2``
where the config says 4.
"""

from __future__ import annotations

import json

import pytest

from conftest import run_cli, write_tree
from test_launchers_hfargs import DS as DS_ACCUM  # the HF Trainer + DeepSpeed accumulation case
from test_launchers_hfargs import HF_SCRIPT
from test_launchers_python import SUBMITIT
from test_launchers_wrappers import RUN_TRAIN
from test_launchers_wrappers import TOML as _WRAPPER_TOML

MEGATRON_SCRIPT = "import torch.distributed as dist\n\ndist.init_process_group('nccl')\n"

# -- SkyPilot: docs "Distributed multi-node jobs" (torchrun on every node) -------------------
SKY = """\
name: gpt-pretrain

resources:
  accelerators: {acc}

num_nodes: 2

setup: |
  pip install -r requirements.txt

run: |
  MASTER_ADDR=$(echo "$SKYPILOT_NODE_IPS" | head -n1)
  torchrun \\
    --nnodes=$SKYPILOT_NUM_NODES \\
    --nproc_per_node=$SKYPILOT_NUM_GPUS_PER_NODE \\
    --master_addr=$MASTER_ADDR \\
    --master_port=8008 \\
    --node_rank=${{SKYPILOT_NODE_RANK}} \\
    pretrain_gpt.py --tensor-model-parallel-size 4 --pipeline-model-parallel-size 2 --num-layers 32
"""

# -- Ray: KubeRay's RayJob sample running a Ray Train script ---------------------------------
RAYJOB = """\
apiVersion: ray.io/v1
kind: RayJob
metadata:
  name: rayjob-gpt
spec:
  entrypoint: python ray_train.py --tensor-model-parallel-size 4 --pipeline-model-parallel-size 2 --num-layers 24
  shutdownAfterJobFinishes: true
  runtimeEnvYAML: |
    env_vars:
      CUDA_DEVICE_MAX_CONNECTIONS: "1"
  rayClusterSpec:
    rayVersion: "2.9.0"
    headGroupSpec:
      rayStartParams:
        dashboard-host: "0.0.0.0"
      template:
        spec:
          containers:
            - name: ray-head
              image: rayproject/ray:2.9.0
    workerGroupSpecs:
      - replicas: 2
        minReplicas: 1
        maxReplicas: 2
        groupName: gpu-group
        rayStartParams: {{}}
        template:
          spec:
            containers:
              - name: ray-worker
                image: rayproject/ray:2.9.0-gpu
                resources:
                  limits:
                    nvidia.com/gpu: 4
"""
RAY_TRAIN = """\
import ray.train.torch
from ray.train import ScalingConfig
from ray.train.torch import TorchTrainer


def train_func():
    model = ray.train.torch.prepare_model(None)


scaling_config = ScalingConfig(num_workers={workers}, use_gpu=True)
trainer = TorchTrainer(train_func, scaling_config=scaling_config)
result = trainer.fit()
"""
# Ray Train in Python alone: "Get started with PyTorch" + a device mesh in the training function
RAY_TRAIN_MESH = """\
import ray.train.torch
from ray.train import ScalingConfig
from ray.train.torch import TorchTrainer
from torch.distributed.device_mesh import init_device_mesh


def train_func():
    mesh = init_device_mesh("cuda", ({dp}, 2), mesh_dim_names=("dp", "tp"))


scaling_config = ScalingConfig(num_workers=8, use_gpu=True, resources_per_worker={{"GPU": 1}})
trainer = TorchTrainer(train_func, scaling_config=scaling_config)
result = trainer.fit()
"""

# -- submitit: README "An example is worth a thousand words", with nodes and GPUs ------------
# (SUBMITIT, shared with test_launchers_python)

# -- TorchX: "torchx run dist.ddp" quickstart and the .torchxconfig of the same component ----
TORCHX_RUN = "torchx run -s local_cwd dist.ddp -j {j} --script pretrain_gpt.py -- " \
             "--tensor-model-parallel-size 4 --pipeline-model-parallel-size 2 --num-layers 32\n"
TORCHXCONFIG = "[cli:run]\ncomponent = dist.ddp\nscheduler = local_cwd\n\n[component:dist.ddp]\nj = {j}\n"
TORCHX_CFG_RUN = "torchx run dist.ddp --script pretrain_gpt.py -- " \
                 "--tensor-model-parallel-size 4 --pipeline-model-parallel-size 2 --num-layers 32\n"

# a TorchX component in Python ("Component Best Practices": extend dist.ddp with the app's config)
TORCHX_COMPONENT = """\
import torchx.specs as specs
from torchx.components.dist import ddp


def trainer(*script_args: str, image: str = "gpt-trainer:latest") -> specs.AppDef:
    return ddp(
        *script_args,
        "--tensor-model-parallel-size", "4",
        "--pipeline-model-parallel-size", "2",
        "--num-layers", "32",
        script="pretrain_gpt.py",
        image=image,
        j="{j}",
    )
"""

# -- torchtune: recipes/full_finetune_multinode.slurm and its config --------------------------
TUNE_CONFIG = """\
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
dtype: bf16
"""
TUNE_SLURM = """\
#!/bin/bash
#SBATCH --job-name=llama3-70b-fft
#SBATCH --nodes=2
#SBATCH --ntasks=2
#SBATCH --gpus-per-task=8

nodes=( $( scontrol show hostnames $SLURM_JOB_NODELIST ) )
head_node=${nodes[0]}
srun tune run --nnodes 2 --nproc_per_node 8 --rdzv_id 101 --rdzv_backend c10d --rdzv_endpoint "$head_node:29500" \\
    full_finetune_distributed --config 70B_full_multinode.yaml
"""

# -- NeMo-Run: NeMo's "Quickstart with NeMo-Run" (local executor, torchrun) ------------------
NEMO_RUN = """\
import nemo_run as run
from nemo.collections import llm


def configure_recipe():
    recipe = llm.nemotron3_4b.pretrain_recipe(
        dir="/checkpoints/nemotron",
        name="nemotron_pretraining",
        tensor_parallelism=4,
        num_nodes=1,
        num_gpus_per_node=8,
        max_steps=100,
    )
    recipe.trainer.strategy.pipeline_model_parallel_size = {pp}
    return recipe


def local_executor_torchrun(devices: int = 8) -> run.LocalExecutor:
    return run.LocalExecutor(ntasks_per_node=8, launcher="torchrun")


if __name__ == "__main__":
    run.run(configure_recipe(), executor=local_executor_torchrun(), name="nemotron3_4b_pretraining")
"""

# -- Lightning CLI: "Tensor Parallelism" with the LightningCLI config file -------------------
LIGHTNING_CONFIG = """\
seed_everything: 42
trainer:
  accelerator: cuda
  devices: 4
  num_nodes: 2
  precision: bf16-true
  strategy:
    class_path: lightning.pytorch.strategies.ModelParallelStrategy
    init_args:
      data_parallel_size: {dp}
      tensor_parallel_size: 2
  max_steps: 100
model:
  class_path: model.Llama
"""
LIGHTNING_MAIN = "from lightning.pytorch.cli import LightningCLI\n\nLightningCLI()\n"

# -- Fabric: "fabric run" and the docs' "Tensor Parallelism" ModelParallelStrategy -----------
FABRIC_SCRIPT = """\
import lightning as L
from lightning.fabric.strategies import ModelParallelStrategy

strategy = ModelParallelStrategy(data_parallel_size=2, tensor_parallel_size=4)
fabric = L.Fabric(accelerator="cuda", strategy=strategy)
fabric.launch()
"""

# -- HF Trainer on the command line: run_clm.py with DeepSpeed AutoTP ------------------------
DS_AUTOTP = """\
{
  "train_micro_batch_size_per_gpu": "auto",
  "gradient_accumulation_steps": "auto",
  "bf16": {"enabled": "auto"},
  "zero_optimization": {"stage": 1},
  "tensor_parallel": {"autotp_size": 4}
}
"""
HF_RUN = """\
#!/bin/bash
torchrun --nproc_per_node {n} run_clm.py \\
    --model_name_or_path gpt2 \\
    --output_dir /tmp/test-clm \\
    --per_device_train_batch_size 4 \\
    --deepspeed ds_config.json \\
    --bf16
"""

# -- an environment-prefixed wrapper: torchtitan's run_train.sh called with NGPU=... ----------
# (RUN_TRAIN and the debug config shared with test_launchers_wrappers, here with TP 2)
TITAN_TOML = _WRAPPER_TOML.replace("tensor_parallel_degree = 4", "tensor_parallel_degree = 2")
assert "tensor_parallel_degree = 2" in TITAN_TOML

# -- Python launch code: the PyTorch DDP tutorial's mp.spawn, and os.environ ------------------
SPAWN = """\
import os

import torch.distributed as dist
import torch.multiprocessing as mp
from torch.distributed.device_mesh import init_device_mesh


def setup(rank, world_size):
    os.environ["MASTER_ADDR"] = "localhost"
    os.environ["MASTER_PORT"] = "12355"
    dist.init_process_group("nccl", rank=rank, world_size=world_size)


def demo(rank, world_size):
    setup(rank, world_size)
    mesh = init_device_mesh("cuda", ({dp}, 2), mesh_dim_names=("dp", "tp"))


if __name__ == "__main__":
    mp.spawn(demo, args=(4,), nprocs=4, join=True)
"""
ENVIRON = """\
import os

import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh

os.environ["MASTER_ADDR"] = "localhost"
os.environ["MASTER_PORT"] = "29500"
os.environ["WORLD_SIZE"] = "{world}"
dist.init_process_group("nccl")
mesh = init_device_mesh("cuda", (2, 2), mesh_dim_names=("dp", "tp"))
"""

# Megatron-core's tutorial shape under mp.spawn and under os.environ: the parallel state asks for
# TP x PP, which must divide the world the launch code starts (LAY001)
SPAWN_MCORE = """\
import os

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from megatron.core import parallel_state


def initialize_distributed(rank, world_size):
    os.environ["MASTER_ADDR"] = "localhost"
    os.environ["MASTER_PORT"] = "12355"
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=world_size)
    parallel_state.initialize_model_parallel(tensor_model_parallel_size=2, pipeline_model_parallel_size={pp})


if __name__ == "__main__":
    mp.spawn(initialize_distributed, args=(4,), nprocs=4)
"""
ENVIRON_MCORE = """\
import os

import torch.distributed as dist
from megatron.core import parallel_state

os.environ["MASTER_ADDR"] = "localhost"
os.environ["MASTER_PORT"] = "29500"
os.environ["WORLD_SIZE"] = "{world}"
dist.init_process_group("nccl")
parallel_state.initialize_model_parallel(tensor_model_parallel_size=2, pipeline_model_parallel_size=2)
"""


#: launcher -> (correct files, planted files, the path LAY001 reports in the planted folder)
PAIRS: dict[str, tuple[dict[str, str], dict[str, str], str]] = {
    "skypilot": ({"task.yaml": SKY.format(acc="A100:8"), "pretrain_gpt.py": MEGATRON_SCRIPT},
                 {"task.yaml": SKY.format(acc="A100:6"), "pretrain_gpt.py": MEGATRON_SCRIPT}, "task.yaml"),
    "rayjob": ({"rayjob.yaml": RAYJOB, "ray_train.py": RAY_TRAIN.format(workers=8)},
               {"rayjob.yaml": RAYJOB, "ray_train.py": RAY_TRAIN.format(workers=6)}, "rayjob.yaml"),
    "ray-train-python": ({"train.py": RAY_TRAIN_MESH.format(dp=4)}, {"train.py": RAY_TRAIN_MESH.format(dp=3)},
                         "train.py"),
    "submitit": ({"submit.py": SUBMITIT.format(pp=2)}, {"submit.py": SUBMITIT.format(pp=4)}, "submit.py"),
    "torchx-cli": ({"run.sh": TORCHX_RUN.format(j="2x4"), "pretrain_gpt.py": MEGATRON_SCRIPT},
                   {"run.sh": TORCHX_RUN.format(j="3x4"), "pretrain_gpt.py": MEGATRON_SCRIPT}, "run.sh"),
    "torchxconfig": ({".torchxconfig": TORCHXCONFIG.format(j="2x4"), "run.sh": TORCHX_CFG_RUN,
                      "pretrain_gpt.py": MEGATRON_SCRIPT},
                     {".torchxconfig": TORCHXCONFIG.format(j="1x6"), "run.sh": TORCHX_CFG_RUN,
                      "pretrain_gpt.py": MEGATRON_SCRIPT}, "run.sh"),
    "torchx-component": ({"component.py": TORCHX_COMPONENT.format(j="2x4"), "pretrain_gpt.py": MEGATRON_SCRIPT},
                         {"component.py": TORCHX_COMPONENT.format(j="1x4"), "pretrain_gpt.py": MEGATRON_SCRIPT},
                         "component.py"),
    "torchtune": ({"70B_full_multinode.yaml": TUNE_CONFIG.format(tp=8), "full_finetune_multinode.slurm": TUNE_SLURM},
                  {"70B_full_multinode.yaml": TUNE_CONFIG.format(tp=6), "full_finetune_multinode.slurm": TUNE_SLURM},
                  "70B_full_multinode.yaml"),
    "nemo-run": ({"pretrain.py": NEMO_RUN.format(pp=2)}, {"pretrain.py": NEMO_RUN.format(pp=4)}, "pretrain.py"),
    "lightning-cli": ({"config.yaml": LIGHTNING_CONFIG.format(dp=4), "main.py": LIGHTNING_MAIN,
                       "run.sh": "python main.py fit --config config.yaml\n"},
                      {"config.yaml": LIGHTNING_CONFIG.format(dp=2), "main.py": LIGHTNING_MAIN,
                       "run.sh": "python main.py fit --config config.yaml\n"}, "config.yaml"),
    "fabric": ({"train.py": FABRIC_SCRIPT, "run.sh": "fabric run --accelerator=cuda --devices=4 --num-nodes=2 train.py\n"},
               {"train.py": FABRIC_SCRIPT, "run.sh": "fabric run --accelerator=cuda --devices=4 --num-nodes=1 train.py\n"},
               "train.py"),
    "hf-trainer": ({"run_clm.py": HF_SCRIPT, "ds_config.json": DS_AUTOTP, "run.sh": HF_RUN.format(n=8)},
                   {"run_clm.py": HF_SCRIPT, "ds_config.json": DS_AUTOTP, "run.sh": HF_RUN.format(n=6)},
                   "ds_config.json"),
    "env-prefix-wrapper": ({"run_train.sh": RUN_TRAIN, "llama3_debug.toml": TITAN_TOML,
                            "launch.sh": "#!/bin/bash\nCUDA_VISIBLE_DEVICES=0,1,2,3 NGPU=4 ./run_train.sh\n"},
                           {"run_train.sh": RUN_TRAIN, "llama3_debug.toml": TITAN_TOML,
                            "launch.sh": "#!/bin/bash\nCUDA_VISIBLE_DEVICES=0,1,2 NGPU=3 ./run_train.sh\n"},
                           "llama3_debug.toml"),
    "mp-spawn": ({"ddp_tutorial.py": SPAWN.format(dp=2)}, {"ddp_tutorial.py": SPAWN.format(dp=4)}, "ddp_tutorial.py"),
    "os-environ": ({"single.py": ENVIRON.format(world=4)}, {"single.py": ENVIRON.format(world=6)}, "single.py"),
    "mp-spawn-megatron-core": ({"run_simple_mcore.py": SPAWN_MCORE.format(pp=2)},
                               {"run_simple_mcore.py": SPAWN_MCORE.format(pp=4)}, "run_simple_mcore.py"),
    "os-environ-megatron-core": ({"single.py": ENVIRON_MCORE.format(world=8)},
                                 {"single.py": ENVIRON_MCORE.format(world=6)}, "single.py"),
}


@pytest.fixture(scope="module")
def findings(tmp_path_factory):
    """One ``parallint check DIR --format json`` over every pair; findings by folder."""
    root = tmp_path_factory.mktemp("launchers")
    for name, (good, bad, _) in PAIRS.items():
        write_tree(root / name / "correct", good)
        write_tree(root / name / "planted", bad)
    p = run_cli("check", ".", "--format", "json", cwd=root)
    assert p.returncode in (0, 1), p.stderr
    out: dict[str, list[tuple[str, str]]] = {}
    for d in json.loads(p.stdout):
        name, which, rest = d["path"].split("/", 2)
        out.setdefault(f"{name}/{which}", []).append((d["code"], rest))
    return out


@pytest.mark.parametrize("launcher", sorted(PAIRS))
def test_correct_example_is_silent(findings, launcher):
    assert findings.get(f"{launcher}/correct", []) == []


#: plain-PyTorch scripts state their layout as a device mesh: its mismatch with the world the
#: script's own launcher starts is LAY007's (LAY001 is the frameworks' TP×PP×DP rule: Ray Train's
#: ScalingConfig reaches it through the RayJob pair, mp.spawn and os.environ through the
#: Megatron-core pairs)
MESH = {"ray-train-python": "LAY007", "mp-spawn": "LAY007", "os-environ": "LAY007"}


@pytest.mark.parametrize("launcher", sorted(PAIRS))
def test_planted_mismatch_reported_through_the_launcher(findings, launcher):
    code = MESH.get(launcher, "LAY001")
    got = findings.get(f"{launcher}/planted", [])
    assert (code, PAIRS[launcher][2]) in got, got
    assert {c for c, _ in got} == {code}, got




def test_bat003_hf_trainer_deepspeed_accumulation_end_to_end(tmp_path):
    files = {"run_clm.py": HF_SCRIPT, "ds.json": DS_ACCUM,
             "run.sh": "#!/bin/bash\ndeepspeed --num_gpus 8 run_clm.py --output_dir out --bf16 \\\n"
                       "    --deepspeed ds.json --gradient_accumulation_steps 2\n"}
    write_tree(tmp_path, files)
    p = run_cli("check", ".", "--format", "json", "--select", "BAT003", cwd=tmp_path)
    assert p.returncode == 1, p.stderr
    (d,) = json.loads(p.stdout)
    assert (d["code"], d["path"], d["line"]) == ("BAT003", "ds.json", 3)
    assert "2" in d["message"] and "4" in d["message"]
    assert [(r["path"], r["line"]) for r in d["related"]] == [("run.sh", 3)]
    files["run.sh"] = files["run.sh"].replace("--gradient_accumulation_steps 2", "--gradient_accumulation_steps 4")
    write_tree(tmp_path, files)
    p = run_cli("check", ".", "--format", "json", "--select", "BAT003", cwd=tmp_path)
    assert p.returncode == 0 and json.loads(p.stdout) == [], p.stdout
