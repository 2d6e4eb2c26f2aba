"""Small hand-written seed files, one per reader (real-world shaped, not copied): the fuzzer
mutates them, so most inputs are near-valid files that reach deep into each reader."""

PYTHON = '''\
import os
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler


def main(args):
    dist.init_process_group(backend="nccl")
    rank = dist.get_rank()
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    model = DDP(model.cuda(), device_ids=[local_rank], find_unused_parameters=True)
    sampler = DistributedSampler(ds, shuffle=True)
    loader = DataLoader(ds, batch_size=args.bs, sampler=sampler, shuffle=False)
    for epoch in range(3):
        sampler.set_epoch(epoch)
        if rank == 0 and epoch % 2 == 0 or args.debug:
            torch.save(model.state_dict(), f"ckpt_{epoch}.pt")
            dist.barrier()
    dist.destroy_process_group()
'''

SHELL = '''\
#!/bin/bash
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=1
#SBATCH --gpus-per-node=8
export MASTER_ADDR=$(scontrol show hostnames $SLURM_JOB_NODELIST | head -n 1)
GPUS_PER_NODE=8
TP=4; PP=2
ARGS="--tensor-model-parallel-size $TP --pipeline-model-parallel-size $PP --num-layers 24"
f() { echo "$1"; }
for i in 1 2; do echo $i; done
srun torchrun --nnodes 2 --nproc_per_node $GPUS_PER_NODE --rdzv_backend c10d \\
    pretrain_gpt.py $ARGS --micro-batch-size 2 --global-batch-size 64 --deepspeed_config ds.json
deepspeed --num_gpus 8 train.py --deepspeed ds_config.json
accelerate launch --num_processes 8 --config_file acc.yaml train.py
'''

COMMAND_WORDS = [
    "torchrun", "--nproc_per_node", "--nproc-per-node", "8", "--nnodes", "2", "2:4", "--node_rank",
    "--master_addr", "localhost", "--rdzv_backend", "c10d", "--standalone", "python", "-m",
    "torch.distributed.run", "torch.distributed.launch", "--use_env", "deepspeed", "--num_gpus",
    "--num_nodes", "--hostfile", "accelerate", "launch", "--num_processes", "--num_machines",
    "--config_file", "srun", "-N", "--ntasks-per-node", "--gpus-per-node", "mpirun", "-np", "-n",
    "env", "nohup", "exec", "numactl", "uv", "run", "singularity", "composer", "-c", "bash",
    "train.py", "pretrain_gpt.py", "--deepspeed", "ds.json", "--tensor-model-parallel-size",
    "0", "-1", "99999999999999999999", "=", "--", "'", '"', "\\", "a=b", "--x=", "$@", None,
]

MEGATRON_FLAGS = [
    "--tensor-model-parallel-size", "--pipeline-model-parallel-size", "--num-layers", "--hidden-size",
    "--num-attention-heads", "--micro-batch-size", "--global-batch-size", "--seq-length",
    "--sequence-parallel", "--use-distributed-optimizer", "--num-layers-per-virtual-pipeline-stage",
    "--group-query-attention", "--num-query-groups", "--context-parallel-size",
    "--expert-model-parallel-size", "--num-experts", "--recompute-granularity", "--bf16", "--fp16",
    "--ffn-hidden-size", "--vocab-size", "--max-position-embeddings", "--deepspeed",
    "--zero-stage", "--data-parallel-size", "--tensor_model_parallel_size", "--x",
]

DEEPSPEED = '''{
  "train_batch_size": 64,
  "train_micro_batch_size_per_gpu": 2,
  "gradient_accumulation_steps": 4,
  "zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu"}, "overlap_comm": true},
  "bf16": {"enabled": true},
  "fp16": {"enabled": false, "loss_scale": 0},
  "optimizer": {"type": "AdamW", "params": {"lr": 1e-4}},
  // a comment
  "steps_per_print": 10,
}'''

HF_MODEL = '''{"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
 "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 32000,
 "intermediate_size": 11008, "max_position_embeddings": 4096, "tie_word_embeddings": false}'''

HFTA = '''{"output_dir": "out", "per_device_train_batch_size": 4, "gradient_accumulation_steps": 2,
 "ddp_find_unused_parameters": true, "bf16": true, "deepspeed": "ds.json", "fsdp": "full_shard"}'''

NEMO = '''\
trainer:
  devices: 8
  num_nodes: 2
  precision: bf16
  strategy:
    find_unused_parameters: false
model:
  micro_batch_size: 2
  global_batch_size: 128
  tensor_model_parallel_size: 4
  pipeline_model_parallel_size: 2
  sequence_parallel: true
  num_layers: 24
  hidden_size: 2048
  num_attention_heads: 16
  activations_checkpoint_granularity: selective
  encoder_seq_length: 2048
  base: &base {a: 1}
  other: {<<: *base, b: 2}
exp_manager:
  explicit_log_dir: null
'''

MEGATRON_YAML = '''\
MODEL_ARGS:
  --num-layers: 24
  --hidden-size: 1024
  --tensor-model-parallel-size: 2
  --pipeline-model-parallel-size: 2
  --micro-batch-size: 4
  --global-batch-size: 32
  --sequence-parallel: true
ENV_VARS:
  CUDA_DEVICE_MAX_CONNECTIONS: 1
'''

ACCELERATE = '''\
compute_environment: LOCAL_MACHINE
distributed_type: FSDP
num_machines: 2
num_processes: 16
machine_rank: 0
mixed_precision: bf16
fsdp_config:
  fsdp_sharding_strategy: FULL_SHARD
  fsdp_offload_params: false
'''

NEOX = '''\
{
  "pipe_parallel_size": 2,
  "model_parallel_size": 2,
  "num_layers": 24,
  "hidden_size": 2048,
  "num_attention_heads": 16,
  "train_micro_batch_size_per_gpu": 4,
  "zero_optimization": {"stage": 1},
  "seq_length": 2048,
}
'''

NANOTRON = '''\
general:
  project: x
parallelism:
  dp: 2
  pp: 2
  tp: 2
  pp_engine: 1f1b
tokens:
  micro_batch_size: 2
  batch_accumulation_per_replica: 4
  sequence_length: 2048
model:
  model_config:
    num_hidden_layers: 24
    hidden_size: 2048
    num_attention_heads: 16
'''

FOUNDRY = '''\
variables:
  max_seq_len: 2048
global_train_batch_size: 256
device_train_microbatch_size: 8
fsdp_config:
  sharding_strategy: FULL_SHARD
train_loader:
  name: text
'''

TORCHTITAN = '''\
[job]
description = "llama 8b"
[model]
name = "llama3"
flavor = "8B"
[training]
local_batch_size = 1
seq_len = 8192
[parallelism]
data_parallel_replicate_degree = 1
data_parallel_shard_degree = -1
tensor_parallel_degree = 2
pipeline_parallel_degree = 1
context_parallel_degree = 1
[activation_checkpoint]
mode = "selective"
'''

KUBE = '''\
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: train
spec:
  elasticPolicy:
    nProcPerNode: 8
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        spec:
          containers:
            - name: pytorch
              image: x
              command: ["torchrun", "--nproc_per_node", "8", "train.py"]
              resources:
                limits:
                  nvidia.com/gpu: 8
    Worker:
      replicas: 3
      template:
        spec:
          containers:
            - name: pytorch
              args: [--nnodes, "4"]
---
apiVersion: batch/v1
kind: Job
metadata: {name: other}
'''

JOBSPEC = '''\
model:
  layers: 32
  hidden: 4096
  heads: 32
  kv_heads: 8
  vocab: 32000
  seq_len: 4096
parallel:
  tp: 2
  pp: 2
  world_size: 16
  zero_stage: 1
training:
  micro_batch: 1
  global_batch: 64
  precision: bf16
  recompute: selective
hardware:
  gpu: H100-80GB
'''

TOOL_CONFIG = '''\
[tool.parallint]
select = ["DDP", "LAY001"]
ignore = ["PG001"]
extend-exclude = ["build/", "**/gen_*.py"]
fail-level = "warning"
gpu = "A100-80GB"
gpus-per-node = 8
include-tests = false
max-file-size = "4MB"
file-timeout = 10
[tool.parallint.per-file-ignores]
"scripts/*.sh" = ["LCH"]
[[tool.parallint.links]]
launch = "run.sh"
files = ["train.py"]
'''

SKYPILOT = """\
resources:
  accelerators: {A100:8, H100:8}
num_nodes: 2
envs:
  TP: 4
run: |
  torchrun --nnodes=$SKYPILOT_NUM_NODES --nproc_per_node=$SKYPILOT_NUM_GPUS_PER_NODE \\
    --node_rank=$SKYPILOT_NODE_RANK pretrain_gpt.py --tensor-model-parallel-size $TP
"""
TORCHTUNE = """\
model:
  _component_: torchtune.models.llama3_1.llama3_1_8b
tensor_parallel_dim: 2
data_parallel_shard_dim: -1
batch_size: 2
dtype: bf16
"""
LIGHTNING_CLI = """\
trainer:
  devices: 4
  num_nodes: 2
  strategy:
    class_path: lightning.pytorch.strategies.ModelParallelStrategy
    init_args: {data_parallel_size: auto, tensor_parallel_size: 4}
model:
  class_path: model.Llama
"""
RAYJOB = """\
apiVersion: ray.io/v1
kind: RayJob
spec:
  entrypoint: python train.py --tensor-model-parallel-size 2
  runtimeEnvYAML: |
    env_vars: {A: "1"}
  rayClusterSpec:
    workerGroupSpecs:
      - replicas: 2
        template:
          spec:
            containers:
              - name: ray-worker
                resources: {limits: {nvidia.com/gpu: 4}}
"""

TORCHX_COMPONENT = """\
import torchx.specs as specs
from torchx.components.dist import ddp


def trainer(*args: str) -> specs.AppDef:
    return ddp(*args, "--tensor-model-parallel-size", "4", script="train.py", j="2x4")


def role() -> specs.AppDef:
    return specs.AppDef(name="t", roles=[specs.Role(
        name="t", image="i", entrypoint="torchrun", args=["--nnodes", "2", "train.py"], num_replicas=2,
        resource=specs.Resource(cpu=1, gpu=8, memMB=1))])
"""

#: reader target -> (kinds the text is read as, file name, seed texts)
FILES = {
    "python": (("python",), "train.py", (PYTHON, TORCHX_COMPONENT)),
    "torchtitan_py": (("torchtitan_py",), "config_registry.py", (
        "import torchtitan\nfrom torchtitan.config import JobConfig, ParallelismConfig\n\n"
        "def llama3_8b() -> JobConfig:\n    return JobConfig(parallelism=ParallelismConfig(\n"
        "        tensor_parallel_degree=2, data_parallel_shard_degree=-1))\n",)),
    "shell": (("shell",), "run.sh", (SHELL,)),
    "makefile": (("makefile",), "Makefile", ("train:\n\ttorchrun --nproc_per_node 8 train.py\n",)),
    "json_configs": (("deepspeed", "hf_model", "hftrainargs", "neox"), "config.json",
                     (DEEPSPEED, HF_MODEL, HFTA, NEOX)),
    "yaml_configs": (("nemo", "megatron_yaml", "accelerate", "neox", "nanotron", "foundry", "hftrainargs"),
                     "config.yaml", (NEMO, MEGATRON_YAML, ACCELERATE, NANOTRON, FOUNDRY)),
    "toml_configs": (("torchtitan",), "config.toml", (TORCHTITAN,)),
    "kube": (("kube",), "job.yaml", (KUBE,)),
    "jobspec": (("jobspec",), "job.yaml", (JOBSPEC,)),
    # launchers (helper breadth): SkyPilot task, torchtune and LightningCLI configs, KubeRay RayJob
    "launchers": (("skypilot", "torchtune", "lightning_cli", "kube"), "task.yaml", (SKYPILOT, TORCHTUNE,
                                                                                   LIGHTNING_CLI, RAYJOB)),
}
