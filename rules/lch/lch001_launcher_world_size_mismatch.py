"""LCH001 launcher-world-size-mismatch: Two launch layers disagree on the number of nodes or processes per node."""

from __future__ import annotations

from typing import Iterable

from parallint.model.diagnostics import Diagnostic, Severity
from parallint.model.facts import known_int
from parallint.model.launches import (
    LAUNCH_FILE_KINDS, by_layer, first, launches, layer,
    outer_nodes, related_at,
)
from parallint.model.origin import from_call
from parallint.model.rule import Example, Rule
from parallint.rules.lch._common import desc, unique


# -- rules ------------------------------------------------------------------------------------
class LauncherWorldSizeMismatch(Rule):
    code = "LCH001"
    facts = frozenset({"parallel.nodes", "parallel.procs_per_node"})
    name = "launcher-world-size-mismatch"
    severity = Severity.ERROR
    summary = "Two launch layers disagree on the number of nodes or processes per node."
    kinds = LAUNCH_FILE_KINDS | {"accelerate"}
    doc = """
    ## What it does
    Compares the node count (and processes per node) stated by each layer of a launch: `#SBATCH
    --nodes`/`-N`, `srun --nodes`, Kubeflow replicas (`Master` + `Worker`), `TrainJob numNodes`,
    `nprocPerNode`, and the launcher's own `torchrun --nnodes`/`--nproc_per_node`, `deepspeed
    --num_nodes`, `accelerate --num_machines` (or `num_machines` in its config file), and a
    Lightning script's `Trainer(num_nodes=..., devices=...)` against the srun tasks or the torchrun
    counts that start it. Reported at
    the launcher's value with the scheduler's as a related location. A launcher that the batch script
    starts directly (not through `srun`) runs on the first node only, so there only a count larger
    than the allocation is reported: a one-node step inside a bigger allocation is legitimate.

    ## Why it matters
    The rendezvous waits for `--nnodes` agents. With fewer nodes allocated than the launcher
    expects, the job hangs until the rendezvous timeout; with more, the extra nodes idle (and are
    billed) or form a second, separate job.

    ## Example

    ## How to fix
    Derive the launcher's count from the allocation (`--nnodes=$SLURM_NNODES`, omit `--nnodes` under
    the Kubeflow operator) or make the two numbers agree.
    """
    valid = (
        Example("""
        #!/bin/bash
        #SBATCH --nodes=4
        #SBATCH --ntasks-per-node=1
        srun torchrun --nnodes=$SLURM_NNODES --nproc_per_node=8 train.py
        """, filename="train.sbatch"),
        Example("""
        #!/bin/bash
        #SBATCH --nodes=4
        NNODES=${NNODES:-$SLURM_JOB_NUM_NODES}
        srun torchrun --nnodes=$NNODES --nproc_per_node=8 train.py
        """, filename="train.sbatch"),
        Example("""
        apiVersion: kubeflow.org/v1
        kind: PyTorchJob
        metadata: {name: ok}
        spec:
          nprocPerNode: "8"
          pytorchReplicaSpecs:
            Master:
              replicas: 1
              template:
                spec:
                  containers:
                    - name: pytorch
                      image: img
                      command: [torchrun, --nnodes=2, --nproc_per_node=8, train.py]
            Worker:
              replicas: 1
              template:
                spec:
                  containers:
                    - name: pytorch
                      image: img
                      command: [torchrun, --nnodes=2, --nproc_per_node=8, train.py]
        """, filename="job.yaml"),
        Example("""
        #!/bin/bash
        #SBATCH --nodes=4
        srun torchrun --nnodes=4 --nproc_per_node=8 train.py
        # a one-node evaluation on the batch host after training
        torchrun --nnodes=1 --nproc_per_node=8 evaluate.py
        """, filename="train.sbatch"),
        Example(files={
            "train.sbatch": """
            #!/bin/bash
            #SBATCH --nodes=2
            #SBATCH --ntasks-per-node=8
            srun python train.py
            """,
            "train.py": """
            import lightning as L

            from model import Model

            trainer = L.Trainer(accelerator="gpu", devices=8, num_nodes=2, strategy="ddp")
            trainer.fit(Model())
            """,
        }, paths=["train.sbatch"]),
        Example("""
        #!/bin/bash
        # the torchrun runs on every node of an elastic 1..4 allocation
        #SBATCH --nodes=4
        srun torchrun --nnodes=1:4 --nproc_per_node=8 train.py
        """, filename="run.sh"),
    )
    invalid = (
        Example("""
        #!/bin/bash
        #SBATCH --nodes=4
        #SBATCH --ntasks-per-node=1
        srun torchrun --nnodes=2 --nproc_per_node=8 train.py
        """, filename="train.sbatch", line=4),
        Example("""
        #!/bin/bash
        #SBATCH -N 2
        NUM_NODES=4
        deepspeed --num_nodes $NUM_NODES --num_gpus 8 train.py --deepspeed_config ds.json
        """, filename="run.sh", line=3),
        Example("""
        apiVersion: kubeflow.org/v1
        kind: PyTorchJob
        metadata: {name: mismatch}
        spec:
          pytorchReplicaSpecs:
            Master:
              replicas: 1
              template:
                spec:
                  containers:
                    - name: pytorch
                      image: img
                      command: [torchrun, --nnodes=4, --nproc_per_node=8, train.py]
            Worker:
              replicas: 1
              template:
                spec:
                  containers:
                    - name: pytorch
                      image: img
                      command: [torchrun, --nnodes=4, --nproc_per_node=8, train.py]
        """, filename="job.yaml", line=13),
        Example(files={
            "launch.sbatch": """
            #!/bin/bash
            #SBATCH --nodes=2
            #SBATCH --ntasks-per-node=1
            srun accelerate launch --config_file accel.yaml train.py
            """,
            "accel.yaml": """
            compute_environment: LOCAL_MACHINE
            distributed_type: MULTI_GPU
            num_machines: 4
            num_processes: 32
            machine_rank: 0
            main_training_function: main
            """,
        }, line=3, paths=["launch.sbatch"]),
        Example(files={
            "train.sbatch": """
            #!/bin/bash
            #SBATCH --nodes=2
            #SBATCH --ntasks-per-node=8
            #SBATCH --gres=gpu:8
            srun python train.py
            """,
            "train.py": """
            import lightning as L

            from model import Model

            trainer = L.Trainer(accelerator="gpu", devices=8, num_nodes=4, strategy="ddp")
            trainer.fit(Model())
            """,
        }, line=5, paths=["train.sbatch"]),
    )

    def check_file(self, f, ctx) -> Iterable[Diagnostic]:
        return unique(d for la in launches(f) for d in self._check_launch(la))

    def _check_launch(self, la) -> Iterable[Diagnostic]:
        lay = by_layer(la, "parallel.nodes")
        own = lay.get("launcher")
        srun = lay.get("srun")
        sched = lay.get("scheduler")
        kube = lay.get("kube")
        outer = first(srun, sched, kube)
        # A launcher that srun or a Kubernetes replica set starts runs on every node it is given, so
        # any difference matters. One started directly by the batch script runs on the first node
        # only: fewer nodes than allocated may be a deliberate single-node step, more never works.
        on_every_node = srun is not None or kube is not None or (
            la.wrapper is not None and la.wrapper.launcher == "srun")
        if own is not None and outer is not None and own.value != outer.value and (
                on_every_node or own.value > outer.value):
            yield self.report(
                own.span or la.span,
                f"{desc(own)} is {own.value} but {desc(outer)} gives {outer.value} node(s): the "
                f"rendezvous {'waits for nodes that never join' if own.value > outer.value else 'leaves allocated nodes idle'}; "
                f"set {desc(own)} to {outer.value}",
                related=related_at(outer, f"{desc(outer)} = {outer.value}"),
            )
        if srun is not None and sched is not None and srun.value > sched.value:
            yield self.report(
                srun.span or la.span,
                f"srun asks for {srun.value} nodes but the allocation (#SBATCH --nodes) has {sched.value}; "
                f"set srun --nodes to {sched.value} or less",
                related=related_at(sched, f"#SBATCH --nodes = {sched.value}"),
            )
        pl = by_layer(la, "parallel.procs_per_node")
        pown, pkube = pl.get("launcher"), pl.get("kube")
        if pown is not None and pkube is not None and pown.value != pkube.value:
            yield self.report(
                pown.span or la.span,
                f"{desc(pown)} is {pown.value} but {desc(pkube)} is {pkube.value}: the operator computes "
                f"WORLD_SIZE from its own value",
                related=related_at(pkube, f"{desc(pkube)} = {pkube.value}"),
            )

    def check_job(self, job, ctx) -> Iterable[Diagnostic]:
        la = job.launch
        if la is None:
            return
        yield from self._lightning(job, la)
        if la.launcher == "accelerate":
            yield from self._accelerate_config(job, la)

    def _lightning(self, job, la) -> Iterable[Diagnostic]:
        """Lightning ``Trainer(num_nodes=, devices=)`` in the script against the launch that starts it:
        srun's nodes and tasks per node for a plain ``python`` (Lightning's SLURM mode), torchrun's
        --nnodes/--nproc_per_node otherwise."""
        if la.launcher not in ("python", "torchrun", "torch.distributed.run"):
            return
        if la.launcher == "python" and (la.wrapper is None or la.wrapper.launcher != "srun"):
            return
        nodes = by_layer(la, "parallel.nodes")
        procs = by_layer(la, "parallel.procs_per_node")
        if la.launcher == "python":
            n_launch = first(nodes.get("srun"), nodes.get("scheduler"))
            p_launch = first(procs.get("srun"), procs.get("scheduler"))
        else:
            n_launch, p_launch = nodes.get("launcher"), procs.get("launcher")
        for pf in job.of_kind("python"):
            for key, launch_v, what in (("parallel.nodes", n_launch, "num_nodes"),
                                        ("parallel.procs_per_node", p_launch, "devices")):
                if launch_v is None:
                    continue
                for v in pf.facts.known(key):
                    if not from_call(v, "Trainer"):
                        continue
                    n = known_int(v)
                    if n is not None and n != launch_v.value:
                        yield self.report(
                            v.span,
                            f"Trainer({what}={n}) but the launch gives {launch_v.value} ({desc(launch_v)}): "
                            f"Lightning and the launcher disagree on the world size; set {what} to {launch_v.value}",
                            related=related_at(launch_v, f"{desc(launch_v)} = {launch_v.value}"),
                        )

    def _accelerate_config(self, job, la) -> Iterable[Diagnostic]:
        """accelerate: num_machines from its config file (when the command line does not override it)
        against the allocation."""
        if "num_machines" in la.options:
            return
        outer = outer_nodes(la)
        if outer is None:
            return
        on_every_node = layer(outer) != "scheduler" or (la.wrapper is not None and la.wrapper.launcher == "srun")
        for cfg in job.of_kind("accelerate"):
            v = cfg.facts.get("parallel.nodes")
            n = known_int(v)
            if n is not None and n != outer.value and (on_every_node or n > outer.value):
                yield self.report(
                    v.span,
                    f"accelerate num_machines is {n} but {desc(outer)} gives {outer.value} node(s); set "
                    f"num_machines to {outer.value}",
                    related=related_at(outer, f"{desc(outer)} = {outer.value}"),
                )
