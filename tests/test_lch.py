"""LCH rules beyond their examples: what stays silent (unknowns, legitimate layouts) and what fires."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from parallint.discover.settings import Config
from parallint.readers import kube, shell
from parallint.engine.runner import check_paths

from conftest import rule_family, write_tree

lch = rule_family("lch")


def sh(text: str):
    return shell.read("run.sh", Path("/nonexistent/run.sh"), textwrap.dedent(text).lstrip("\n"))


def run(rule, ff):
    return list(rule().check_file(ff, None))


def engine(tmp_path: Path, files: dict[str, str], codes: str):
    write_tree(tmp_path, {k: textwrap.dedent(v).lstrip("\n") for k, v in files.items()})
    res = check_paths(["."], Config(None, tmp_path, {}), cwd=tmp_path)
    assert not res.errors, res.errors
    return [d for d in res.diagnostics if d.code.startswith(codes)]


@pytest.mark.parametrize("line", [
    "srun torchrun --nnodes $NNODES --nproc_per_node 8 train.py",
    "srun torchrun --nnodes ${SLURM_NNODES:-2} --nproc_per_node 8 train.py",
    "srun torchrun --nnodes <NUM_NODES> --nproc_per_node 8 train.py",
    "srun torchrun --nnodes $(cat nodes.txt) --nproc_per_node 8 train.py",
    "srun torchrun --nnodes=1:8 --nproc_per_node 8 train.py",
])
def test_lch001_silent_on_unknown_node_counts(line):
    ff = sh(f"#!/bin/bash\n#SBATCH --nodes=4\n{line}\n")
    assert run(lch.LauncherWorldSizeMismatch, ff) == []


def test_lch001_srun_subset_of_allocation_is_fine_but_more_is_not():
    ok = sh("#!/bin/bash\n#SBATCH --nodes=4\nsrun -N 1 torchrun --nnodes 1 --nproc_per_node 8 prep.py\n")
    assert run(lch.LauncherWorldSizeMismatch, ok) == []
    bad = sh("#!/bin/bash\n#SBATCH --nodes=2\nsrun -N 4 torchrun --nnodes 4 --nproc_per_node 8 train.py\n")
    found = run(lch.LauncherWorldSizeMismatch, bad)
    assert len(found) == 1 and "srun asks for 4 nodes" in found[0].message
    assert found[0].related and found[0].related[0].line == 2


def test_lch001_reports_at_launcher_value_with_scheduler_related():
    ff = sh("#!/bin/bash\n#SBATCH -N 4\nN=2\nsrun torchrun --nnodes $N --nproc_per_node 8 train.py\n")
    (d,) = run(lch.LauncherWorldSizeMismatch, ff)
    assert d.span.line == 3 and d.related[0].line == 2 and "2" in d.message and "4" in d.message


def test_lch001_kube_nproc_mismatch():
    text = textwrap.dedent("""
        apiVersion: kubeflow.org/v1
        kind: PyTorchJob
        metadata: {name: j}
        spec:
          nprocPerNode: "4"
          pytorchReplicaSpecs:
            Master:
              replicas: 1
              template:
                spec:
                  containers: [{name: pytorch, image: i, command: [torchrun, --nproc_per_node=8, t.py]}]
        """).lstrip()
    ff = kube.read("job.yaml", Path("/nonexistent/job.yaml"), text)
    (d,) = run(lch.LauncherWorldSizeMismatch, ff)
    assert "nprocPerNode" in d.message and d.span.line == 11


def test_lch002_uses_srun_request_over_sbatch_and_ignores_cpu_jobs():
    ok = sh("#!/bin/bash\n#SBATCH --gres=gpu:4\nsrun --gres=gpu:8 torchrun --nproc_per_node 8 t.py\n")
    assert run(lch.MoreProcessesThanGpus, ok) == []
    cpu = sh("#!/bin/bash\ntorchrun --nproc_per_node 8 t.py\n")
    assert run(lch.MoreProcessesThanGpus, cpu) == []
    tasks = sh("#!/bin/bash\n#SBATCH --nodes=1\n#SBATCH --ntasks-per-node=8\n#SBATCH --gpus-per-node=4\nsrun python t.py\n")
    (d,) = run(lch.MoreProcessesThanGpus, tasks)
    assert d.span.line == 3


def test_lch003_inherited_vs_overridden_tasks():
    bad = sh("#!/bin/bash\n#SBATCH --ntasks-per-node=4\nsrun deepspeed --num_gpus 4 t.py\n")
    assert len(run(lch.DoubleLaunch, bad)) == 1
    ok = sh("#!/bin/bash\n#SBATCH --ntasks-per-node=4\nsrun --ntasks=2 -N 2 deepspeed --num_gpus 4 t.py\n")
    assert run(lch.DoubleLaunch, ok) == []
    unknown = sh("#!/bin/bash\nsrun --ntasks-per-node=$TASKS torchrun --nproc_per_node 8 t.py\n")
    assert run(lch.DoubleLaunch, unknown) == []


def test_lch006_loopback_only_when_multi_node():
    single = sh("torchrun --nnodes=1 --master_addr=localhost --nproc_per_node 8 t.py\n")
    assert run(lch.MultiNodeRendezvous, single) == []
    unknown_nodes = sh("torchrun --nnodes=$N --master_addr=localhost --nproc_per_node 8 t.py\n")
    assert run(lch.MultiNodeRendezvous, unknown_nodes) == []
    rdzv = sh("torchrun --nnodes=2 --rdzv_endpoint=localhost:29400 --nproc_per_node 8 t.py\n")
    assert len(run(lch.MultiNodeRendezvous, rdzv)) == 1
    env = sh("#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=8\nexport MASTER_ADDR=127.0.0.1\nsrun python t.py\n")
    (d,) = run(lch.MultiNodeRendezvous, env)
    assert d.span.line == 4


def test_lch006_node_rank_only_when_every_node_runs_the_line():
    by_hand = sh("torchrun --nnodes=2 --node_rank=0 --master_addr=node0 --nproc_per_node 8 t.py\n")
    assert run(lch.MultiNodeRendezvous, by_hand) == []
    srun = sh("#!/bin/bash\n#SBATCH --nodes=2\nsrun torchrun --nnodes=2 --node_rank=$SLURM_NODEID t.py\n")
    assert run(lch.MultiNodeRendezvous, srun) == []


def test_lch004_and_lch005_and_lch007_engine(tmp_path):
    found = engine(tmp_path, {
        "a.sh": "#!/bin/bash\npython -m torch.distributed.launch --nproc_per_node 2 t.py\n",
        "acc.yaml": "compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\nnum_machines: 2\n"
                    "num_processes: 8\nmachine_rank: 0\n",
        "b.sh": "#!/bin/bash\naccelerate launch --num_machines 3 --num_processes 8 t.py\n",
    }, "LCH")
    assert sorted((d.code, d.path, d.span.line) for d in found) == [("LCH004", "a.sh", 2), ("LCH007", "b.sh", 2)]


def test_lch006_one_node_srun_steps_started_per_node_by_hand():
    """awsome-distributed-training's composer recipe: one `srun --nodelist=$NODE --ntasks=1` per node,
    the node rank from a C-style loop: no collision."""
    text = """#!/bin/bash
#SBATCH --nodes=2
NNODES=2
NODES=( $(scontrol show hostnames $SLURM_JOB_NODELIST) )
run() {
    srun --nodelist=${NODE} --ntasks=1 composer --world_size 16 --nproc 8 --node_rank ${NODE_RANK} \\
        --master_addr ${HEAD} train.py
}
NODE_RANK=1
for (( NODE_RANK=1; NODE_RANK<${NNODES}; NODE_RANK++ ))
do
    NODE=${NODES[$NODE_RANK]}
    run &
done
NODE_RANK=0
run
"""
    assert run(lch.MultiNodeRendezvous, sh(text)) == []
    every = sh("#!/bin/bash\n#SBATCH --nodes=2\nsrun composer --world_size 16 --nproc 8 --node_rank 0 t.py\n")
    assert len(run(lch.MultiNodeRendezvous, every)) == 1


def test_c_style_loop_variable_is_unknown_in_the_body():
    ff = sh("N=3\nfor (( N=1; N<4; N++ )); do torchrun --nproc_per_node $N t.py; done\n"
            "torchrun --nproc_per_node $N t.py\n")
    assert [v.known for la in ff.launches for v in la.facts.all("parallel.procs_per_node")] == [False, False]
