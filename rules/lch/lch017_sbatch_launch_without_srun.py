"""LCH017 sbatch-launch-without-srun: A multi-node batch script starts training without srun, so only the first node runs it."""

from __future__ import annotations

import re
from typing import Iterable

from parallint.model.diagnostics import Diagnostic, Severity
from parallint.model.facts import Value, known_int
from parallint.model.launches import related_at
from parallint.model.rule import Example, Rule

#: launchers that start the ranks of the node they run on, and only those
_PER_NODE = frozenset({"torchrun", "torch.distributed.run", "torch.distributed.launch", "accelerate", "python"})

#: a word that starts commands on other nodes (or names a helper that may): then the file may
#: reach every node some other way, and the rule stays silent
_REMOTE = re.compile(r"(?<![\w.-])(?:srun|mpirun|mpiexec|pdsh|pdcp|clush|pssh|parallel-ssh|ssh|salloc|sbcast|"
                     r"deepspeed|ray|horovodrun|submitit|charmrun|aprun|jsrun|flux)(?![\w-])")


def _code_text(text: str) -> str:
    """The script without its comment lines (``#SBATCH`` directives and remarks)."""
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))


def _distributed_script(job) -> bool:
    """The job's Python script sets up torch.distributed itself (``python train.py`` is then one
    rank of a job that needs the others)."""
    from parallint.model.script import script_of

    for f in job.files:
        if f.kind == "python":
            s = script_of(f)
            if s is not None and (s.is_distributed() or s.runs_setup("ds_init_distributed")):
                return True
    return False


class SbatchLaunchWithoutSrun(Rule):
    code = "LCH017"
    calls = frozenset({"ddp", "ds_init_distributed", "fsdp", "fully_shard", "init_device_mesh", "init_process_group"})
    facts = frozenset({"parallel.nodes"})
    name = "sbatch-launch-without-srun"
    severity = Severity.ERROR
    summary = "A multi-node batch script starts training without srun, so only the first node runs it."
    kinds = frozenset({"shell"})
    doc = """
    ## What it does
    In a batch script whose `#SBATCH --nodes` asks for more than one node, reports a training
    launch that runs directly in the script rather than through `srun`: `torchrun`,
    `python -m torch.distributed.run`/`launch`, `accelerate launch`, or `python train.py` when the
    script sets up torch.distributed itself. The rule is silent when the file uses anything that
    starts commands on other nodes (`srun`, `mpirun`, `pdsh`, `ssh`, the `deepspeed` launcher with
    its hostfile, Ray, ...), when the node count is unknown or a range, and when the launch sits
    under a wrapper the reader resolved.

    ## Why it matters
    sbatch runs the script once, on the first node of the allocation. A launcher there starts the
    ranks of that node only: `torchrun --nnodes=2` waits at the rendezvous for a second node that
    never joins until the timeout, a `python train.py` that reads the Slurm world size waits for
    ranks that were never started, and with `--nnodes=1` the other nodes sit idle for the whole
    job while it is billed for all of them.

    ## Example

    ## How to fix
    Start one launcher per node with srun: `srun --ntasks-per-node=1 torchrun --nnodes=$SLURM_NNODES ...`,
    or let srun start every rank (`srun python train.py` with `--ntasks-per-node` = GPUs per node).
    """
    valid = (
        Example("""
        #!/bin/bash
        #SBATCH --nodes=2
        #SBATCH --ntasks-per-node=1
        #SBATCH --gpus-per-node=8
        srun torchrun --nnodes=2 --nproc_per_node=8 --rdzv_backend=c10d --rdzv_endpoint=$HEAD:29500 train.py
        """, filename="train.sbatch"),
        # the command line is run on every node through a helper that uses srun
        Example("""
        #!/bin/bash
        #SBATCH --nodes=2
        CMD="torchrun --nnodes=2 --nproc_per_node=8 train.py"
        srun bash -c "$CMD"
        """, filename="train.sbatch"),
        # one node: the batch host is the whole allocation
        Example("""
        #!/bin/bash
        #SBATCH --nodes=1
        #SBATCH --gpus-per-node=8
        torchrun --nproc_per_node=8 train.py
        """, filename="train.sbatch"),
        # the deepspeed launcher reaches the other nodes itself (hostfile, pdsh)
        Example("""
        #!/bin/bash
        #SBATCH --nodes=2
        deepspeed --hostfile hostfile --num_nodes 2 --num_gpus 8 train.py
        """, filename="train.sbatch"),
    )
    invalid = (
        Example("""
        #!/bin/bash
        #SBATCH --nodes=2
        #SBATCH --ntasks-per-node=1
        #SBATCH --gpus-per-node=8
        export MASTER_ADDR=$(scontrol show hostnames $SLURM_JOB_NODELIST | head -n 1)
        torchrun --nnodes=2 --nproc_per_node=8 --rdzv_backend=c10d --rdzv_endpoint=$MASTER_ADDR:29500 train.py
        """, filename="train.sbatch", line=6),
        Example(files={
            "train.sbatch": "#!/bin/bash\n#SBATCH --nodes=4\n#SBATCH --ntasks-per-node=8\n#SBATCH --gres=gpu:8\n"
                            "module load cuda\npython train.py --epochs 3\n",
            "train.py": "import os\nimport torch.distributed as dist\n"
                        "dist.init_process_group('nccl', rank=int(os.environ['SLURM_PROCID']),\n"
                        "                        world_size=int(os.environ['SLURM_NTASKS']))\n",
        }, paths=("train.sbatch",), line=6),
    )

    def check_file(self, f, ctx) -> Iterable[Diagnostic]:
        return ()

    def check_job(self, job, ctx) -> Iterable[Diagnostic]:
        la = job.launch
        f = job.root
        if la is None or f is None or f.kind != "shell" or la.wrapper is not None or la.launcher not in _PER_NODE:
            return
        data = getattr(f, "data", None)
        if not getattr(data, "sbatch", None):
            return  # not a batch script
        nodes = la.scheduler.get("nodes") if isinstance(getattr(la, "scheduler", None), dict) else None
        n = known_int(nodes)
        if n is None or n <= 1 or nodes is None or "SBATCH" not in (nodes.source or ""):
            return
        if _REMOTE.search(_code_text(f.text or "")):
            return  # something in the file reaches the other nodes
        if la.launcher == "python" and not _distributed_script(job):
            return  # a one-process step (preprocessing, evaluation) on the batch host is fine
        what = "python" if la.launcher == "python" else la.launcher
        yield self.report(
            la.span,
            f"the batch script asks for {n} nodes but runs {what} directly, without srun: sbatch runs the "
            f"script on the first node only, so the other {n - 1} node(s) start no rank and the job waits for "
            f"them (or leaves them idle); start it with `srun --ntasks-per-node=1 {what} ...` (one launcher per "
            f"node)" if what != "python" else
            f"the batch script asks for {n} nodes but runs a distributed `python` script directly, without srun: "
            f"sbatch runs it once, on the first node, and the ranks of the other nodes are never started; start "
            f"it with `srun python ...` (one task per GPU)",
            related=related_at(Value(n, nodes.span), f"#SBATCH --nodes {n}"),
        )
