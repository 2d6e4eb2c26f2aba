"""Launchers that live inside a Python script: submitit, NeMo-Run, Lightning Fabric, mp.spawn and
os.environ (parallint.link.pylaunch). Ray Train has its own file (test_launchers_ray.py)."""

from __future__ import annotations

from parallint.discover.settings import Config
from parallint.link.pylaunch import scan
from parallint.engine.runner import build_jobs, check_paths

from conftest import write_tree

# shaped like submitit's docs (README "An example is worth a thousand words", with nodes/GPUs)
SUBMITIT = """\
import submitit

executor = submitit.AutoExecutor(folder="log_test")
executor.update_parameters(timeout_min=60, slurm_partition="dev", nodes=2, gpus_per_node=8, tasks_per_node=8)
function = submitit.helpers.CommandFunction([
    "python", "pretrain_gpt.py",
    "--tensor-model-parallel-size", "8",
    "--pipeline-model-parallel-size", "{pp}",
    "--num-layers", "32",
])
job = executor.submit(function)
print(job.result())
"""
# shaped like NeMo's docs "Quickstart with NeMo-Run" (pretraining with a local executor)
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
    recipe.trainer.val_check_interval = 100
    return recipe


def local_executor_torchrun() -> run.LocalExecutor:
    return run.LocalExecutor(ntasks_per_node=8, launcher="torchrun")


def run_pretraining():
    recipe = configure_recipe()
    run.run(recipe, executor=local_executor_torchrun(), name="nemotron3_4b_pretraining")


if __name__ == "__main__":
    run_pretraining()
"""


def _diags(tmp_path, files, path, select=("LAY001",)):
    write_tree(tmp_path, files)
    res = check_paths([path], Config(None, tmp_path, {"select": list(select)}), cwd=tmp_path)
    assert not res.errors, res.errors
    return [(d.code, d.span.path, d.span.line) for d in res.diagnostics]


def _job(tmp_path, files, path):
    write_tree(tmp_path, files)
    (job,) = [j for j in build_jobs([path], Config(None, tmp_path, {}), cwd=tmp_path) if j.root.path == path]
    return job


def test_submitit_doc_shape_silent_and_read(tmp_path):
    files = {"submit.py": SUBMITIT.format(pp=2)}
    assert _diags(tmp_path, files, "submit.py") == []
    job = _job(tmp_path, files, "submit.py")
    assert job.world_size().value == 16 and job.int("parallel.tp") == 8


def test_submitit_planted_mismatch(tmp_path):
    assert _diags(tmp_path, {"submit.py": SUBMITIT.format(pp=4)}, "submit.py") == [("LAY001", "submit.py", 7)]


def test_submitit_values_from_arguments_stay_unknown(tmp_path):
    text = SUBMITIT.format(pp=4).replace("nodes=2", "nodes=args.nodes")
    assert _diags(tmp_path, {"submit.py": text}, "submit.py") == []


# a submitted function that builds its own device mesh (issue 22: the task count fixes the world)
SUBMITIT_MESH = """\
import submitit
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh


def train():
    dist.init_process_group("nccl")
    mesh = init_device_mesh("cuda", ({replicate}, 4), mesh_dim_names=("replicate", "shard"))


def main():
    executor = submitit.AutoExecutor(folder="logs")
    executor.update_parameters(nodes=2, tasks_per_node=8, gpus_per_node=8, timeout_min=60)
    executor.submit(train)


if __name__ == "__main__":
    main()
"""


def test_submitit_task_count_fixes_the_mesh_world(tmp_path):
    assert _diags(tmp_path / "a", {"launch.py": SUBMITIT_MESH.format(replicate=4)}, "launch.py", ("LAY007",)) == []
    assert _diags(tmp_path / "b", {"launch.py": SUBMITIT_MESH.format(replicate=2)}, "launch.py", ("LAY007",)) == \
        [("LAY007", "launch.py", 8)]
    # the task count from an argument: no world, silent
    text = SUBMITIT_MESH.format(replicate=2).replace("tasks_per_node=8", "tasks_per_node=args.gpus")
    assert _diags(tmp_path / "c", {"launch.py": text}, "launch.py", ("LAY007",)) == []


def test_nemo_run_doc_shape_silent_and_planted(tmp_path):
    assert _diags(tmp_path, {"pretrain.py": NEMO_RUN.format(pp=2)}, "pretrain.py") == []
    assert _diags(tmp_path, {"pretrain.py": NEMO_RUN.format(pp=4)}, "pretrain.py") == [("LAY001", "pretrain.py", 9)]


def test_nemo_run_executor_disagreeing_with_recipe_states_no_nodes(tmp_path):
    text = NEMO_RUN.format(pp=4).replace("run.LocalExecutor(ntasks_per_node=8, launcher=\"torchrun\")",
                                         "run.SlurmExecutor(account='a', nodes=2, ntasks_per_node=8)")
    job = _job(tmp_path, {"pretrain.py": text}, "pretrain.py")
    assert job.int("parallel.nodes") is None


def test_fabric_spawn_and_environ_facts():
    fab = scan("f.py", "from lightning.fabric import Fabric\nfabric = Fabric(accelerator='cuda', devices=4)\n")
    assert fab.facts.int("parallel.procs_per_node") == 4 and fab.facts.int("parallel.nodes") == 1
    sp = scan("s.py", "import torch.multiprocessing as mp\n\ndef run(rank): pass\n\nmp.spawn(run, nprocs=4, join=True)\n")
    assert sp.facts.int("parallel.procs_per_node") == 4
    env = scan("e.py", "import os\nos.environ['WORLD_SIZE'] = '2'\nos.environ['MASTER_ADDR'] = 'localhost'\n")
    assert env.facts.int("parallel.world_size") == 2
    loop = scan("l.py", "import torch.multiprocessing as mp\nfor n in (1, 2):\n    mp.spawn(f, nprocs=n)\n")
    assert loop is None or loop.facts.get("parallel.procs_per_node") is None
    assert scan("x.py", "def f(:\n  spawn") is None


def test_spawn_world_only_without_node_counts(tmp_path):
    script = ("import torch.distributed as dist\nimport torch.multiprocessing as mp\n\n\ndef worker(rank):\n"
              "    dist.init_process_group('nccl', rank=rank, world_size=4)\n\n\nmp.spawn(worker, nprocs=4)\n")
    job = _job(tmp_path, {"train.py": script}, "train.py")
    assert job.int("parallel.world_size") == 4
    multi = script.replace("world_size=4", "world_size=args.nnodes * 4")
    job = _job(tmp_path, {"train.py": multi}, "train.py")
    assert job.int("parallel.procs_per_node") == 4 and job.get("parallel.world_size") is None


MEGATRON_LINE = "python pretrain_gpt.py --tensor-model-parallel-size 2 --num-layers 24 --micro-batch-size 1\n"
PLAIN = "import torch.distributed as dist\n\ndist.init_process_group('nccl')\n"


def test_plain_python_is_one_process(tmp_path):
    files = {"run.sh": MEGATRON_LINE, "pretrain_gpt.py": PLAIN}
    assert _diags(tmp_path, files, "run.sh") == [("LAY001", "run.sh", 1)]
    job = _job(tmp_path, files, "run.sh")
    assert job.int("parallel.world_size") == 1


def test_plain_python_world_needs_certainty(tmp_path):
    # a script that starts processes, an environment that makes it part of a job, a scheduler
    assert _diags(tmp_path, {"run.sh": MEGATRON_LINE,
                             "pretrain_gpt.py": PLAIN + "import subprocess\nsubprocess.run(['torchrun'])\n"}, "run.sh") == []
    assert _diags(tmp_path, {"run.sh": "export WORLD_SIZE=$N\n" + MEGATRON_LINE, "pretrain_gpt.py": PLAIN}, "run.sh") == []
    assert _diags(tmp_path, {"run.sh": "#SBATCH --nodes=2\n" + MEGATRON_LINE, "pretrain_gpt.py": PLAIN}, "run.sh") == []
    assert _diags(tmp_path, {"run.sh": MEGATRON_LINE.replace("pretrain_gpt.py", "missing.py"),
                             "pretrain_gpt.py": PLAIN}, "run.sh") == []


def test_alternative_executors_chosen_at_run_time_state_nothing(tmp_path):
    text = NEMO_RUN.format(pp=4).replace(
        "def local_executor_torchrun() -> run.LocalExecutor:\n",
        "def slurm_executor(nodes):\n    return run.SlurmExecutor(account='a', nodes=nodes, ntasks_per_node=8)\n\n\n"
        "def local_executor_torchrun() -> run.LocalExecutor:\n")
    text = text.replace("num_nodes=1,\n", "num_nodes=args.nodes,\n")
    job = _job(tmp_path, {"pretrain.py": text}, "pretrain.py")
    assert job.int("parallel.nodes") is None
    assert _diags(tmp_path, {"pretrain.py": text}, "pretrain.py") == []
