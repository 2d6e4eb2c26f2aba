"""LCH: launchers and schedulers (sbatch, srun, torchrun, deepspeed, accelerate, Kubernetes)."""

from __future__ import annotations

from typing import Iterable

from parallint.model.diagnostics import Diagnostic, Related, Severity
from parallint.model.facts import Value, known_int
from parallint.model.launches import (
    LAUNCH_FILE_KINDS, by_layer, effective_nodes, first, gpus_requested, is_loopback, launches, layer,
    outer_nodes, procs_per_node, related_at,
)
from parallint.model.origin import KUBE_SOURCES as _KUBE_SOURCES
from parallint.model.origin import from_call
from parallint.model.rule import Example, Rule

FORKING = frozenset({"torchrun", "torch.distributed.run", "torch.distributed.launch", "deepspeed", "accelerate",
                     "composer", "colossalai"})
KUBE_SOURCES = _KUBE_SOURCES  # one list: parallint.model.origin (orchestrators that start every node)


# -- helpers (the launch helpers shared with rules/env.py live in parallint.model.launches) ----
def desc(v: Value) -> str:
    return v.source or "stated value"


def unique(diags: Iterable[Diagnostic]) -> Iterable[Diagnostic]:
    """``diags`` without repeats (one position, one message): launches of one file share facts."""
    seen = set()
    for d in diags:
        if (d.span, d.message) not in seen:
            seen.add((d.span, d.message))
            yield d


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


class MoreProcessesThanGpus(Rule):
    code = "LCH002"
    facts = frozenset({
        "hardware.gpus_per_node_requested", "parallel.nodes", "parallel.procs_per_node", "parallel.world_size",
    })
    name = "more-processes-than-gpus"
    severity = Severity.ERROR
    summary = "More processes per node than GPUs requested per node."
    kinds = LAUNCH_FILE_KINDS
    doc = """
    ## What it does
    Compares the processes a launch starts on each node (`torchrun --nproc_per_node`, `deepspeed
    --num_gpus`, srun tasks per node for a plain `python`, Kubeflow `nprocPerNode`) with the GPUs
    requested per node (`#SBATCH --gpus-per-node`, `--gres=gpu[:type]:N`, `--gpus`/`--gpus-per-task`,
    `srun` options, Kubernetes `nvidia.com/gpu` limits).

    ## Why it matters
    Two ranks end up on one GPU: NCCL stops with "Duplicate GPU detected", or the ranks that index
    `cuda:LOCAL_RANK` past the visible devices fail with "invalid device ordinal" — after the job
    has waited in the queue.

    ## Example

    ## How to fix
    Request as many GPUs per node as processes (`--gres=gpu:8`), or start fewer processes.
    """
    valid = (
        Example("""
        #!/bin/bash
        #SBATCH --nodes=2
        #SBATCH --gres=gpu:a100:8
        srun --ntasks-per-node=1 torchrun --nnodes=2 --nproc_per_node=8 train.py
        """, filename="train.sbatch"),
        Example("""
        #!/bin/bash
        #SBATCH --gpus-per-node=8
        srun torchrun --nproc_per_node=$GPUS train.py
        """, filename="train.sbatch"),
    )
    invalid = (
        Example("""
        #!/bin/bash
        #SBATCH --nodes=1
        #SBATCH --gres=gpu:4
        srun --ntasks-per-node=1 torchrun --nproc_per_node=8 train.py
        """, filename="train.sbatch", line=4),
        Example("""
        apiVersion: kubeflow.org/v1
        kind: PyTorchJob
        metadata: {name: too-many}
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
                      command: [python, train.py]
                      resources:
                        limits:
                          nvidia.com/gpu: 4
        """, filename="job.yaml", line=5),
        Example("""
        apiVersion: kubeflow.org/v1
        kind: PyTorchJob
        metadata: {name: small-workers}
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
                      command: [python, train.py]
                      resources: {limits: {nvidia.com/gpu: 8}}
            Worker:
              replicas: 3
              template:
                spec:
                  containers:
                    - name: pytorch
                      image: img
                      command: [python, train.py]
                      resources: {limits: {nvidia.com/gpu: 4}}
        """, filename="job.yaml", line=5),
    )

    def check_file(self, f, ctx) -> Iterable[Diagnostic]:
        seen = set()
        for la in launches(f):
            p = procs_per_node(la)
            pi = known_int(p)
            if pi is None:
                continue
            # the job's GPU request, then every Kubeflow replica type's own (Worker pods run
            # nprocPerNode processes too)
            for g, who in [(gpus_requested(la), "")] + _replica_gpus(la):
                gi = known_int(g)
                if gi is None or gi == 0 or pi <= gi:
                    continue
                key = (p.span, gi)  # one finding per process count and GPU count
                if key in seen:
                    continue
                seen.add(key)
                yield self.report(
                    p.span or la.span,
                    f"{pi} processes per node ({desc(p)}) but only {gi} GPU(s) requested per "
                    f"{who or 'node'} ({desc(g)}): ranks would share a GPU; start {gi} processes per node or "
                    f"request {pi} GPUs",
                    related=related_at(g, f"{desc(g)} = {gi}"),
                )


def _replica_gpus(la) -> list[tuple[Value, str]]:
    """The GPU request of each replica type of the Kubernetes job that runs ``la``."""
    w = la
    while w is not None and not any(k.startswith("gpus.") for k in w.options):
        w = w.wrapper
    if w is None:
        return []
    return [(v, f"{k[5:]} pod") for k, v in w.options.items() if k.startswith("gpus.") and v is not None]


class DoubleLaunch(Rule):
    code = "LCH003"
    facts = frozenset({"parallel.nodes", "parallel.procs_per_node", "parallel.world_size"})
    name = "double-launch"
    severity = Severity.ERROR
    summary = "srun/mpirun starts several tasks per node and each task is a launcher that forks workers."
    kinds = LAUNCH_FILE_KINDS
    doc = """
    ## What it does
    Finds `srun` (or `mpirun`) starting more than one task per node (its own `--ntasks-per-node`, or
    the one it inherits from `#SBATCH`) where each task is `torchrun`, `deepspeed`, `accelerate
    launch` or `torch.distributed.launch` with more than one process per node.

    ## Why it matters
    Every task runs a complete launcher: 8 tasks × `--nproc_per_node=8` is 64 processes per node
    on 8 GPUs, and 8 separate rendezvous that collide on one port. The job hangs or fails with
    address-in-use or duplicate-GPU errors.

    ## Example

    ## How to fix
    Start one launcher per node (`srun --ntasks-per-node=1 torchrun ...`), or let srun start the
    workers itself and run the script with plain `python`.
    """
    valid = (
        Example("""
        #!/bin/bash
        #SBATCH --nodes=2
        #SBATCH --ntasks-per-node=8
        srun --ntasks-per-node=1 torchrun --nnodes=2 --nproc_per_node=8 train.py
        """, filename="train.sbatch"),
        Example("""
        #!/bin/bash
        #SBATCH --nodes=2
        #SBATCH --ntasks-per-node=8
        srun python train.py
        """, filename="train.sbatch"),
    )
    invalid = (
        Example("""
        #!/bin/bash
        #SBATCH --nodes=2
        #SBATCH --ntasks-per-node=8
        #SBATCH --gpus-per-node=8
        srun torchrun --nnodes=2 --nproc_per_node=8 train.py
        """, filename="train.sbatch", line=3),
        Example("""
        #!/bin/bash
        srun -N 2 --ntasks-per-node=4 python -m torch.distributed.run --nproc_per_node 4 train.py
        """, filename="run.sh", line=2),
    )

    def check_file(self, f, ctx) -> Iterable[Diagnostic]:
        for la in launches(f):
            w = la.wrapper
            if la.launcher not in FORKING or w is None or w.launcher not in ("srun", "mpirun"):
                continue
            tpn = w.options.get("ntasks_per_node_effective")
            t = known_int(tpn)
            p = procs_per_node(la)
            pi = known_int(p)
            if t is None or pi is None or t <= 1 or pi <= 1 or layer(p) != "launcher":
                continue
            yield self.report(
                tpn.span or la.span,
                f"{w.launcher} starts {t} tasks per node ({desc(tpn)}) and each runs {la.launcher} with "
                f"{pi} processes: {t * pi} processes per node in {t} separate rendezvous; start one task per "
                f"node (--ntasks-per-node=1) or drop the launcher and let {w.launcher} start the ranks",
                related=related_at(p, f"{desc(p)} = {pi}"),
            )


class DeprecatedLauncher(Rule):
    code = "LCH004"
    name = "deprecated-launcher"
    severity = Severity.WARNING
    summary = "python -m torch.distributed.launch is deprecated; use torchrun."
    kinds = LAUNCH_FILE_KINDS
    doc = """
    ## What it does
    Reports launches through `python -m torch.distributed.launch`.

    ## Why it matters
    The module is deprecated (it prints a FutureWarning) in favour of `torchrun`. Without
    `--use_env` it passes `--local_rank` (or `--local-rank` since PyTorch 2.0) as an argument that
    the script must parse, a frequent source of "unrecognized arguments" crashes when the PyTorch
    version changes.

    ## Example

    ## How to fix
    Use `torchrun --nproc_per_node=8 train.py` and read `LOCAL_RANK` from the environment.
    """
    valid = (
        Example("""
        #!/bin/bash
        torchrun --nproc_per_node=8 train.py
        """, filename="run.sh"),
        Example("""
        #!/bin/bash
        python -m torch.distributed.run --nproc_per_node=8 train.py
        """, filename="run.sh"),
    )
    invalid = (
        Example("""
        #!/bin/bash
        python -m torch.distributed.launch --nproc_per_node=8 train.py
        """, filename="run.sh", line=2),
    )

    def check_file(self, f, ctx) -> Iterable[Diagnostic]:
        for la in launches(f):
            if la.launcher == "torch.distributed.launch":
                yield self.report(la.span, "python -m torch.distributed.launch is deprecated; use torchrun "
                                           "(and read LOCAL_RANK from the environment)")


class PyTorchJobMasterReplicas(Rule):
    code = "LCH005"
    name = "pytorchjob-master-replicas"
    severity = Severity.ERROR
    summary = "Kubeflow PyTorchJob Master.replicas must be 1."
    kinds = frozenset({"kube"})
    doc = """
    ## What it does
    Reports a Kubeflow `PyTorchJob` whose `pytorchReplicaSpecs.Master.replicas` is not 1.

    ## Why it matters
    The Master pod is rank 0 and the rendezvous address of every other pod. The training
    operator's admission webhook rejects the job ("must be 1"); older operators without the webhook
    start several rank-0 pods that fight over the master address.

    ## Example

    ## How to fix
    Set `Master.replicas: 1` and put the other nodes under `Worker.replicas`.
    """
    valid = (
        Example("""
        apiVersion: kubeflow.org/v1
        kind: PyTorchJob
        metadata: {name: ok}
        spec:
          pytorchReplicaSpecs:
            Master:
              replicas: 1
              template:
                spec:
                  containers: [{name: pytorch, image: img, command: [python, train.py]}]
            Worker:
              replicas: 3
              template:
                spec:
                  containers: [{name: pytorch, image: img, command: [python, train.py]}]
        """, filename="job.yaml"),
    )
    invalid = (
        Example("""
        apiVersion: kubeflow.org/v1
        kind: PyTorchJob
        metadata: {name: two-masters}
        spec:
          pytorchReplicaSpecs:
            Master:
              replicas: 2
              template:
                spec:
                  containers: [{name: pytorch, image: img, command: [python, train.py]}]
        """, filename="job.yaml", line=7),
    )

    def check_file(self, f, ctx) -> Iterable[Diagnostic]:
        seen = set()
        for la in launches(f):
            job = la
            while job is not None and job.launcher != "pytorchjob":
                job = job.wrapper
            if job is None or id(job) in seen:
                continue
            seen.add(id(job))
            v = job.options.get("replicas.Master")
            n = known_int(v)
            if n is not None and n != 1:
                yield self.report(v.span, f"PyTorchJob Master.replicas is {n}; it must be 1; set it to 1 and count "
                                          f"the other nodes in Worker.replicas")


class MultiNodeRendezvous(Rule):
    code = "LCH006"
    facts = frozenset({"parallel.nodes"})
    name = "multi-node-rendezvous"
    severity = Severity.ERROR
    summary = "A multi-node launch with a loopback master address or one hard-coded node rank for every node."
    kinds = LAUNCH_FILE_KINDS | {"python"}  # python: the command line of a TorchX component
    doc = """
    ## What it does
    For a launch on more than one node, reports a master/rendezvous address that is loopback
    (`localhost`, `127.0.0.1`, `::1`) in `--master_addr`, `--rdzv_endpoint`, `--main_process_ip` or
    an exported `MASTER_ADDR` used by env:// rendezvous, a `PET_MASTER_ADDR`/`PET_RDZV_ENDPOINT`
    that torchrun reads for its options, or an `os.environ["MASTER_ADDR"] = "localhost"` that the
    job's script always runs — in a shell script, a Kubernetes container env, a SkyPilot task's
    `envs` or a TorchX component's command line; and a literal `--node_rank`/`--machine_rank` in a
    command that srun, mpirun, a Kubernetes replica set or a SkyPilot task runs on every node. A
    variable that the operator sets after the container's own env (`MASTER_ADDR` under Kubeflow's
    PyTorchJob, `PET_*` under its Trainer) is the operator's, and silent. So is a loopback address
    in the first node's own script (`--node_rank=0` written, no srun/mpirun/orchestrator running it
    on every node): one script per node is a common layout, and the first node reaches the
    rendezvous it hosts through loopback while the other nodes' scripts name its address.

    ## Why it matters
    Every node must reach the same rendezvous on the first node; with a loopback address each node
    talks to itself and the job hangs until the rendezvous timeout. With the same node rank on every
    node, the agents collide on rank 0 (pytorch#76367).

    ## Example

    ## How to fix
    Use the first node's hostname (`scontrol show hostnames $SLURM_JOB_NODELIST | head -n1`) and
    `--rdzv_backend=c10d --rdzv_endpoint=$HEAD:29500` so that ranks are assigned by the rendezvous,
    or pass `$SLURM_NODEID` as the node rank.
    """
    valid = (
        Example("""
        #!/bin/bash
        #SBATCH --nodes=2
        HEAD=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n1)
        srun torchrun --nnodes=2 --nproc_per_node=8 --rdzv_backend=c10d --rdzv_endpoint=$HEAD:29500 train.py
        """, filename="train.sbatch"),
        Example("""
        #!/bin/bash
        torchrun --nnodes=1 --nproc_per_node=8 --master_addr=localhost --node_rank=0 train.py
        """, filename="run.sh"),
        Example("""
        #!/bin/bash
        # run on the first node; train_node2.sh runs on the second with its address
        torchrun --nnodes=2 --nproc_per_node=4 --node_rank=0 --master_addr=127.0.0.1 --master_port=29500 train.py
        """, filename="train_node1.sh"),
    )
    invalid = (
        Example("""
        #!/bin/bash
        #SBATCH --nodes=2
        srun torchrun --nnodes=2 --nproc_per_node=8 --master_addr=127.0.0.1 --master_port=29500 train.py
        """, filename="train.sbatch", line=3),
        Example("""
        #!/bin/bash
        #SBATCH --nodes=4
        #SBATCH --ntasks-per-node=1
        srun torchrun --nnodes=4 --nproc_per_node=8 --node_rank=0 --master_addr=$HEAD train.py
        """, filename="train.sbatch", line=4),
        Example("""
        #!/bin/bash
        # the second node's script: loopback is itself, not the first node
        torchrun --nnodes=2 --nproc_per_node=4 --node_rank=1 --master_addr=127.0.0.1 --master_port=29500 train.py
        """, filename="train_node2.sh", line=3),
    )

    def check_file(self, f, ctx) -> Iterable[Diagnostic]:
        return unique(self._multi_node(f))

    def check_job(self, job, ctx) -> Iterable[Diagnostic]:
        """A script of a multi-node job that always sets ``os.environ["MASTER_ADDR"]`` to loopback."""
        la = job.launch
        n = effective_nodes(la) if la is not None else None
        if n is None or n <= 1:
            return
        for v in getattr(job, "loopback_masters", ()):  # found by the linker in the job's scripts
            if v.span is not None:
                yield self.report(v.span, f"the script sets MASTER_ADDR={v.value!r} for a job on {n} nodes: "
                                          f"every node would rendezvous with itself; set it to the first node's "
                                          f"address (e.g. from the scheduler)",
                                  related=related_at(Value(n, la.span), f"{n} nodes"))

    def _multi_node(self, f) -> Iterable[Diagnostic]:
        for la in launches(f):
            n = effective_nodes(la)
            if n is not None and n > 1:
                yield from self._check(la, n)

    def _check(self, la, n: int) -> Iterable[Diagnostic]:
        every_node = la.wrapper is not None and la.wrapper.launcher in ("srun", "mpirun", "pytorchjob", "trainjob",
                                                                        "mpijob", "volcano", "kubejob", "skypilot")
        if every_node and _one_node_step(la.wrapper):
            every_node = False
        # the first node's own script (`--node_rank=0`, one script per node): it reaches the
        # rendezvous it hosts through loopback; the other nodes' scripts name its address
        first_node_only = not every_node and any(_literal_rank(la.options.get(k)) == 0
                                                 for k in ("node_rank", "machine_rank"))
        for key in ("master_addr", "rdzv_endpoint", "main_process_ip"):
            if first_node_only:
                break
            v = la.options.get(key)
            if v is None or not v.known or not isinstance(v.value, str):
                continue
            host = v.value
            if key == "rdzv_endpoint":
                host = host.rsplit(":", 1)[0] if host.count(":") == 1 else host
                host = host.strip("[]")
            if is_loopback(host):
                yield self.report(v.span or la.span,
                                  f"{n} nodes rendezvous at loopback address {v.value!r} ({v.source}): every node "
                                  f"would wait for itself; set it to the first node's address (e.g. from the scheduler)")
        if la.launcher == "python" and la.wrapper is not None:
            v = la.env.get("MASTER_ADDR")
            if v is not None and v.known and is_loopback(str(v.value)):
                yield self.report(v.span or la.span,
                                  f"{n} nodes use env:// rendezvous with MASTER_ADDR={v.value}: the other nodes "
                                  f"cannot reach it; set it to the first node's address (e.g. from the scheduler)")
        if la.launcher in TORCHRUN_FAMILY and not any(k in la.options for k in ("master_addr", "rdzv_endpoint")):
            # torchrun reads PET_<OPTION> for an option not on the line (its `env` action)
            for name in ("PET_MASTER_ADDR", "PET_RDZV_ENDPOINT"):
                v = la.env.get(name)
                if v is None or not v.known or not isinstance(v.value, str):
                    continue
                host = v.value.rsplit(":", 1)[0] if name == "PET_RDZV_ENDPOINT" and v.value.count(":") == 1 else v.value
                if is_loopback(host.strip("[]")):
                    yield self.report(v.span or la.span,
                                      f"{n} nodes rendezvous at loopback address {v.value!r} ({name}, which torchrun "
                                      f"reads for --{name[4:].lower()}): every node would wait for itself; set it to "
                                      f"the first node's address (e.g. from the scheduler)")
        # a literal node rank in a command that every node runs
        if not every_node:
            return
        for key in ("node_rank", "machine_rank"):
            v = la.options.get(key)
            r = _literal_rank(v)
            if v is not None and r is not None:
                yield self.report(v.span or la.span,
                                  f"every one of the {n} nodes runs this command with --{key.replace('_', '-')} {r}: "
                                  f"the node ranks collide; pass each node's own rank (e.g. $SLURM_NODEID under srun)")


TORCHRUN_FAMILY = ("torchrun", "torch.distributed.run", "torch.distributed.launch")


def _literal_rank(v: Value | None) -> int | None:
    """A node rank written as a number on the command line, else None."""
    r = known_int(v) if v is not None else None
    if r is None and v is not None and v.known:
        try:
            r = int(str(v.value))
        except ValueError:
            r = None
    return r


def _one_node_step(w) -> bool:
    """An srun/mpirun that does not run on every node: one task (``--ntasks=1``), one node
    (``--nodes=1``), or named hosts (``--nodelist``/``-w``, ``mpirun -H``/``--host``)."""
    opts = w.options or {}
    if w.launcher == "srun":
        if "nodelist" in opts or "w" in opts:
            return True
        for key in ("ntasks", "nodes"):
            v = opts.get(key)
            if v is not None and v.known and str(v.value).strip() == "1":
                return True
    if w.launcher == "mpirun":
        if any(k in opts for k in ("H", "host", "hosts")):
            return True
        for key in ("np", "n"):
            v = opts.get(key)
            if v is not None and v.known and str(v.value).strip() == "1":
                return True
    return False


class AccelerateProcessesPerMachine(Rule):
    code = "LCH007"
    facts = frozenset({"parallel.nodes", "parallel.world_size"})
    name = "accelerate-processes-per-machine"
    severity = Severity.ERROR
    summary = "accelerate num_processes is the total over all machines: it must be a multiple of num_machines."
    kinds = LAUNCH_FILE_KINDS | {"accelerate"}
    doc = """
    ## What it does
    Checks accelerate's `num_processes` against `num_machines`, from `accelerate launch` options,
    from an accelerate config file, or one from each (the command line overrides the file):
    `num_processes` must be at least `num_machines` and divisible by it.

    ## Why it matters
    `num_processes` is the total across machines; accelerate computes the processes per machine as
    `num_processes // num_machines` without checking (accelerate#2521). Putting the per-node count
    there (`num_processes: 8` on 2 machines of 8 GPUs) silently halves the job; a count that does not
    divide leaves ranks missing and the rendezvous hangs.

    ## Example

    ## How to fix
    Set `num_processes` to machines × GPUs per machine (16 for 2 × 8).
    """
    valid = (
        Example("""
        #!/bin/bash
        accelerate launch --num_machines 2 --num_processes 16 --machine_rank $RANK train.py
        """, filename="run.sh"),
        Example("""
        compute_environment: LOCAL_MACHINE
        distributed_type: MULTI_GPU
        num_machines: 2
        num_processes: 16
        machine_rank: 0
        """, filename="accelerate_config.yaml"),
    )
    invalid = (
        Example("""
        #!/bin/bash
        accelerate launch --multi_gpu --num_machines 2 --num_processes 3 --machine_rank $RANK train.py
        """, filename="run.sh", line=2),
        Example("""
        compute_environment: LOCAL_MACHINE
        distributed_type: MULTI_GPU
        num_machines: 4
        num_processes: 2
        machine_rank: 0
        """, filename="accelerate_config.yaml", line=4),
        Example(files={
            "run.sh": """
            #!/bin/bash
            accelerate launch --config_file accel.yaml --num_processes 6 train.py
            """,
            "accel.yaml": """
            compute_environment: LOCAL_MACHINE
            distributed_type: MULTI_GPU
            num_machines: 4
            num_processes: 32
            machine_rank: 0
            """,
        }, line=2, paths=["run.sh"]),
    )

    def _verdict(self, np_: Value, nm: Value, related_note: bool = False) -> Diagnostic | None:
        p, m = known_int(np_), known_int(nm)
        if p is None or m is None or m <= 0:
            return None
        if p >= m and p % m == 0:
            return None
        why = "fewer processes than machines" if p < m else f"{p} is not divisible by {m}"
        return self.report(
            np_.span,
            f"accelerate num_processes is the total over all machines: {p} processes on {m} machines ({why}); "
            f"set num_processes to {m} × the processes per machine ("
            + (f"{m}" if p < m else f"{p // m * m} or {p // m * m + m}") + ")",
            related=[Related.at(nm.span, f"num_machines = {m}")] if nm.span and nm.span != np_.span else (),
        )

    def check_file(self, f, ctx) -> Iterable[Diagnostic]:
        if f.kind == "accelerate":
            np_, nm = f.facts.get("parallel.world_size"), f.facts.get("parallel.nodes")
            if np_ is not None and nm is not None:
                d = self._verdict(np_, nm)
                if d is not None:
                    yield d
            return
        for la in launches(f):
            if la.launcher != "accelerate":
                continue
            np_ = by_layer(la, "parallel.world_size").get("launcher")
            nm = by_layer(la, "parallel.nodes").get("launcher")
            if np_ is not None and nm is not None:
                d = self._verdict(np_, nm)
                if d is not None:
                    yield d

    def check_job(self, job, ctx) -> Iterable[Diagnostic]:
        la = job.launch
        if la is None or la.launcher != "accelerate":
            return
        cli_np = by_layer(la, "parallel.world_size").get("launcher")
        cli_nm = by_layer(la, "parallel.nodes").get("launcher")
        if cli_np is not None and cli_nm is not None:
            return  # both on the command line: check_file's case
        for cfg in job.of_kind("accelerate"):
            np_ = first(cli_np, cfg.facts.get("parallel.world_size"))
            nm = first(cli_nm, cfg.facts.get("parallel.nodes"))
            if np_ is None or nm is None or (np_ is not cli_np and nm is not cli_nm):
                continue  # both from the config file: reported on the file itself
            d = self._verdict(np_, nm)
            if d is not None:
                yield d
            return


class GpuLimitsRequestsMismatch(Rule):
    code = "LCH008"
    name = "gpu-limits-requests-mismatch"
    severity = Severity.ERROR
    summary = "Kubernetes GPU requests differ from the limits, or are given without limits."
    kinds = frozenset({"kube"})
    doc = """
    ## What it does
    In the pod templates of a Kubernetes training job (PyTorchJob, TrainJob, MPIJob, Volcano and
    batch Jobs), compares `resources.requests` with `resources.limits` for `nvidia.com/gpu` and
    `amd.com/gpu`: both must hold the same number, and a request needs a limit. Values that are not
    plain integers (templated) are not compared.

    ## Why it matters
    GPUs are an extended resource that cannot be overcommitted. The API server rejects the pod
    ("must be equal to nvidia.com/gpu limit", "Limit must be set for non overcommitable
    resources"), so the job never starts; with an operator the job sits with no pods and the error
    is only in the operator's events.

    ## Example

    ## How to fix
    Give the GPU count under `limits` only (Kubernetes sets the request to the limit), or make the
    two equal.
    """
    valid = (
        Example("""
        apiVersion: kubeflow.org/v1
        kind: PyTorchJob
        metadata: {name: ok}
        spec:
          pytorchReplicaSpecs:
            Master:
              replicas: 1
              template:
                spec:
                  containers:
                    - name: pytorch
                      image: img
                      command: [torchrun, --nproc_per_node=8, train.py]
                      resources:
                        limits: {nvidia.com/gpu: 8, memory: 64Gi}
                        requests: {nvidia.com/gpu: "8", memory: 32Gi}
        """, filename="job.yaml"),
    )
    invalid = (
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
                      command: [torchrun, --nproc_per_node=4, train.py]
                      resources:
                        limits:
                          nvidia.com/gpu: 8
                        requests:
                          nvidia.com/gpu: 4
        """, filename="job.yaml", line=18),
        Example("""
        apiVersion: batch/v1
        kind: Job
        metadata: {name: no-limit}
        spec:
          template:
            spec:
              containers:
                - name: train
                  image: img
                  command: [torchrun, --nproc_per_node=8, train.py]
                  resources:
                    requests:
                      nvidia.com/gpu: 8
              restartPolicy: Never
        """, filename="job.yaml", line=13),
    )

    def check_file(self, f, ctx) -> Iterable[Diagnostic]:
        found = []
        jobs = {}
        for la in launches(f):
            while la.wrapper is not None:
                la = la.wrapper
            jobs[id(la)] = la
        for job in jobs.values():
            for g in job.gpu_requests:
                res, lim, req = g.resource, g.limit, g.request
                if req is None:
                    continue
                if lim is None:
                    found.append(self.report(req.span, f"{res} is requested ({req.value if req.known else '?'}) "
                                                       f"without a limit: the API server rejects the pod; set "
                                                       f"the GPUs under resources.limits"))
                    continue
                li, ri = known_int(lim), known_int(req)
                if li is not None and ri is not None and li != ri:
                    found.append(self.report(
                        req.span, f"{res} requests {ri} but limits {li}: GPUs cannot be overcommitted, the API "
                                  f"server rejects the pod; give the count under limits only",
                        related=related_at(lim, f"limits {res} = {li}")))
        return sorted(found, key=lambda d: (d.span.line, d.span.column))


# -- scheduler/launcher contradictions (LCH009-LCH012) ----------------------------------------
def _int_text(v: Value | None) -> int | None:
    """A known option value written as a plain integer (``"8"`` or 8)."""
    if v is None or not v.known:
        return None
    t = str(v.value).strip()
    return int(t) if t.isdigit() else None


class SbatchTooFewTasks(Rule):
    code = "LCH009"
    name = "sbatch-too-few-tasks"
    severity = Severity.WARNING
    summary = "#SBATCH --ntasks is smaller than --nodes × --ntasks-per-node."
    kinds = frozenset({"shell"})
    doc = """
    ## What it does
    Compares the `#SBATCH --ntasks` of a batch script with its `--nodes` × `--ntasks-per-node`,
    when all three are literal numbers.

    ## Why it matters
    With both given, Slurm lets `--ntasks` win and treats `--ntasks-per-node` as a maximum: the job
    gets fewer tasks than the script was written for, and the tasks are not spread one per GPU or
    one per node as intended. An `srun torchrun` then starts launchers on only some nodes, and the
    rendezvous waits for the missing ones until it times out.

    ## Example

    ## How to fix
    Drop `--ntasks` (Slurm derives it), or set it to nodes × tasks per node (32 here).
    """
    valid = (
        Example("""
        #!/bin/bash
        #SBATCH --nodes=4
        #SBATCH --ntasks-per-node=8
        #SBATCH --ntasks=32
        srun python train.py
        """, filename="train.sbatch"),
        Example("""
        #!/bin/bash
        #SBATCH --nodes=2
        #SBATCH --ntasks-per-node=1
        srun torchrun --nnodes 2 --nproc_per_node 8 train.py
        """, filename="train.sbatch"),
    )
    invalid = (
        Example("""
        #!/bin/bash
        #SBATCH --nodes=4
        #SBATCH --ntasks-per-node=8
        #SBATCH --ntasks=8
        srun python train.py
        """, filename="train.sbatch", line=4),
    )

    def check_file(self, f, ctx) -> Iterable[Diagnostic]:
        s = getattr(f.data, "sbatch", None)
        if not isinstance(s, dict):
            return
        nt, tpn, nodes = s.get("ntasks"), s.get("ntasks_per_node"), s.get("nodes")
        a, b, n = _int_text(nt), _int_text(tpn), _int_text(nodes)
        if a is None or b is None or n is None or a >= n * b:
            return
        yield self.report(nt.span, f"#SBATCH --ntasks={a} is fewer than --nodes={n} × --ntasks-per-node={b} = {n * b}: "
                                   f"Slurm starts {a} tasks and treats --ntasks-per-node as a maximum; set --ntasks to {n * b} "
                                   f"or drop it",
                          related=[Related.at(v.span, m) for v, m in ((nodes, f"--nodes={n}"),
                                                                      (tpn, f"--ntasks-per-node={b}")) if v.span])


#: launcher -> (its node rank option, its node count option)
RANK_OPTIONS = {"torchrun": ("node_rank", "nnodes"), "torch.distributed.run": ("node_rank", "nnodes"),
                "torch.distributed.launch": ("node_rank", "nnodes"), "deepspeed": ("node_rank", "num_nodes"),
                "accelerate": ("machine_rank", "num_machines")}


class NodeRankOutOfRange(Rule):
    code = "LCH010"
    name = "node-rank-out-of-range"
    severity = Severity.ERROR
    summary = "--node_rank is not smaller than --nnodes."
    kinds = LAUNCH_FILE_KINDS
    doc = """
    ## What it does
    Reports a literal `--node_rank` (torchrun, `python -m torch.distributed.run`, deepspeed) or
    `--machine_rank` (accelerate) that is not smaller than the node count of the same command
    (`--nnodes`, the upper end of a `MIN:MAX` range; `--num_nodes`; `--num_machines`).

    ## Why it matters
    Node ranks count from 0: with `--nnodes=2` the ranks are 0 and 1. A rank of 2 gives global
    ranks past the world size; the rendezvous never completes (or the process group rejects the
    rank) and every node waits until the timeout.

    ## Example

    ## How to fix
    Number the nodes from 0 to nnodes − 1 (the second node of two is `--node_rank=1`).
    """
    valid = (
        Example("""
        #!/bin/bash
        torchrun --nnodes=2 --node_rank=1 --nproc_per_node=8 --master_addr=10.0.0.1 --master_port=29500 train.py
        """, filename="node1.sh"),
        Example("""
        #!/bin/bash
        torchrun --nnodes=1:4 --node_rank=3 --nproc_per_node=8 --rdzv_endpoint=head:29400 train.py
        """, filename="elastic.sh"),
    )
    invalid = (
        Example("""
        #!/bin/bash
        torchrun --nnodes=2 --node_rank=2 --nproc_per_node=8 --master_addr=10.0.0.1 --master_port=29500 train.py
        """, filename="node2.sh", line=2),
        Example("""
        #!/bin/bash
        accelerate launch --num_machines 2 --machine_rank 2 --num_processes 16 train.py
        """, filename="run.sh", line=2),
    )

    def check_file(self, f, ctx) -> Iterable[Diagnostic]:
        seen = set()
        for la in launches(f):
            names = RANK_OPTIONS.get(la.launcher)
            if names is None:
                continue
            rv, nv = la.options.get(names[0]), la.options.get(names[1])
            r = _int_text(rv)
            if r is None or nv is None or not nv.known:
                continue
            text = str(nv.value).strip()
            m = text.rsplit(":", 1)[-1] if la.launcher != "deepspeed" and ":" in text else text
            n = int(m) if m.isdigit() else None
            if n is None or r < n or (rv.span, nv.span) in seen:
                continue
            seen.add((rv.span, nv.span))
            yield self.report(rv.span or la.span,
                              f"--{names[0]} {r} with --{names[1]} {text}: node ranks run from 0 to {n - 1}; set "
                              f"--{names[0]} below {n} or raise --{names[1]}",
                              related=related_at(nv, f"--{names[1]} {text}"))


class MasterPortOutOfRange(Rule):
    code = "LCH011"
    name = "master-port-out-of-range"
    severity = Severity.ERROR
    summary = "The master/rendezvous port is above 65535."
    kinds = LAUNCH_FILE_KINDS
    doc = """
    ## What it does
    Reports a literal rendezvous port above 65535: `--master_port`, `--main_process_port`
    (accelerate), the port of `--rdzv_endpoint`, and `MASTER_PORT` in the environment of a process
    that reads it (a plain `python` under srun/mpirun).

    ## Why it matters
    TCP ports are 16-bit. The store cannot bind or connect: the job fails at start-up on every
    node, or — for a computed port such as `29500 + $SLURM_JOB_ID` written out by hand — after the
    allocation was granted.

    ## Example

    ## How to fix
    Use a free port between 1024 and 65535 (29500 is the PyTorch default). Port 0 (any free port,
    as in torchtitan's `--rdzv_endpoint=localhost:0`) is fine on one node and is not reported.
    """
    valid = (
        Example("""
        #!/bin/bash
        torchrun --nproc_per_node=8 --master_port=29500 train.py
        """, filename="run.sh"),
        Example("""
        #!/bin/bash
        torchrun --nnodes=2 --nproc_per_node=8 --rdzv_backend=c10d --rdzv_endpoint=$HEAD:$((29500 + 1)) train.py
        """, filename="run.sh"),
    )
    invalid = (
        Example("""
        #!/bin/bash
        torchrun --nproc_per_node=8 --master_port=295000 train.py
        """, filename="run.sh", line=2),
        Example("""
        #!/bin/bash
        deepspeed --num_gpus 8 --master_port 70000 train.py --deepspeed ds.json
        """, filename="run.sh", line=2),
    )

    def check_file(self, f, ctx) -> Iterable[Diagnostic]:
        seen = set()
        for la in launches(f):
            cands = [(la.options.get(k), f"--{k}") for k in ("master_port", "main_process_port")]
            ep = la.options.get("rdzv_endpoint")
            if ep is not None and ep.known and isinstance(ep.value, str) and ep.value.count(":") == 1:
                port = ep.value.rsplit(":", 1)[1]
                cands.append((Value(port, ep.span, True, "", ep.source), "--rdzv_endpoint port"))
            if la.launcher == "python" and la.wrapper is not None:
                cands.append((la.env.get("MASTER_PORT"), "MASTER_PORT"))
            for v, what in cands:
                p = _int_text(v)
                if p is None or p <= 65535 or v.span in seen:
                    continue
                seen.add(v.span)
                yield self.report(v.span or la.span, f"{what} {p} is not a TCP port (0-65535): the rendezvous "
                                                     f"store cannot listen on it; use a port from 1024 to 65535 (e.g. 29500)")


class MasterAddrDiffers(Rule):
    code = "LCH012"
    name = "master-addr-differs"
    severity = Severity.ERROR
    summary = "The per-node commands of one job name different master addresses."
    kinds = LAUNCH_FILE_KINDS
    doc = """
    ## What it does
    In a file that holds the per-node commands of one multi-node job — the same launcher and
    script, the same node count, different literal node ranks — reports a literal
    `--master_addr`/`--main_process_ip`/`--rdzv_endpoint` host that differs from the one of the
    rank-0 command.

    ## Why it matters
    Every node must rendezvous with the same master. Nodes given another address wait for a
    master that never comes (or form a job of their own), and the rest hang until the timeout.
    It typically happens when a command is copied for the next node and its own IP is put in
    `--master_addr`.

    ## Example

    ## How to fix
    Give every node the rank-0 node's address.
    """
    valid = (
        Example("""
        #!/bin/bash
        if [ "$NODE" = 0 ]; then
          torchrun --nnodes=2 --node_rank=0 --nproc_per_node=8 --master_addr=10.0.0.1 train.py
        else
          torchrun --nnodes=2 --node_rank=1 --nproc_per_node=8 --master_addr=10.0.0.1 train.py
        fi
        """, filename="run.sh"),
        Example("""
        #!/bin/bash
        torchrun --nnodes=2 --node_rank=0 --nproc_per_node=8 --master_addr=10.0.0.1 train.py
        torchrun --nnodes=2 --node_rank=0 --nproc_per_node=8 --master_addr=10.0.0.9 eval.py
        """, filename="run.sh"),
    )
    invalid = (
        Example("""
        #!/bin/bash
        if [ "$NODE" = 0 ]; then
          torchrun --nnodes=2 --node_rank=0 --nproc_per_node=8 --master_addr=10.0.0.1 train.py
        else
          torchrun --nnodes=2 --node_rank=1 --nproc_per_node=8 --master_addr=10.0.0.2 train.py
        fi
        """, filename="run.sh", line=5),
    )

    @staticmethod
    def _addr(la) -> Value | None:
        for key in ("master_addr", "main_process_ip", "rdzv_endpoint"):
            v = la.options.get(key)
            if v is not None:
                if not v.known or not isinstance(v.value, str):
                    return None
                host = v.value
                if key == "rdzv_endpoint":
                    host = host.rsplit(":", 1)[0] if host.count(":") == 1 else host
                return Value(host, v.span, True, "", f"--{key}")
        return None

    def check_file(self, f, ctx) -> Iterable[Diagnostic]:
        groups: dict[tuple, list[tuple[int, Value]]] = {}
        for la in launches(f):
            names = RANK_OPTIONS.get(la.launcher)
            if names is None or la.script is None or not la.script.known:
                continue
            r = _int_text(la.options.get(names[0]))
            nv = la.options.get(names[1])
            addr = self._addr(la)
            if r is None or addr is None or nv is None or not nv.known:
                continue
            n = str(nv.value)
            if not (n.isdigit() and int(n) > 1):
                continue
            groups.setdefault((la.launcher, str(la.script.value), n), []).append((r, addr))
        for members in groups.values():
            if len({r for r, _ in members}) < 2:
                continue  # not the per-node commands of one job
            ref = min(members, key=lambda m: m[0])
            for r, addr in members:
                if addr.value != ref[1].value:
                    yield self.report(addr.span, f"node rank {r} rendezvouses at {addr.value!r} but node rank "
                                                 f"{ref[0]} at {ref[1].value!r}: the nodes of one job need one master; set every "
                                                 f"node's master address to {ref[1].value!r}",
                                      related=related_at(ref[1], f"node rank {ref[0]}: {ref[1].value}"))


class MultiNodeDefaultMaster(Rule):
    code = "LCH013"
    name = "multi-node-default-master"
    severity = Severity.ERROR
    summary = "A torchrun on several Slurm or SkyPilot nodes with no master address: torchrun's default is 127.0.0.1."
    kinds = LAUNCH_FILE_KINDS
    doc = """
    ## What it does
    Reports a torchrun (or `python -m torch.distributed.run`/`launch`) with a literal `--nnodes`
    greater than 1, started on every node by `srun` or by a SkyPilot task, that has neither
    `--master_addr` nor `--rdzv_endpoint` (nor `--standalone`), and no `PET_MASTER_ADDR` /
    `PET_RDZV_ENDPOINT` in its environment.

    Only where nothing else can supply the address: Slurm and SkyPilot set no `PET_*` variables.
    Under Kubeflow's PyTorchJob or Trainer, TorchX and other operators that inject `PET_MASTER_ADDR`,
    and in a plain shell script that such an operator may run, the rule is silent; so it is when
    an unexpanded variable sits among torchrun's options (it may carry the address).

    ## Why it matters
    torchrun's `--master_addr` defaults to `127.0.0.1` (with `--rdzv_backend c10d` an empty
    endpoint is `localhost`), and torchrun does not read `MASTER_ADDR` from the environment: an
    exported `MASTER_ADDR` only reaches the workers, after the rendezvous. Every node rendezvouses
    with itself and the job hangs until the rendezvous timeout, after the nodes were allocated.

    ## Example

    ## How to fix
    Pass the first node's address: `--rdzv_backend c10d --rdzv_endpoint $HEAD:29500` (under Slurm
    `HEAD=$(scontrol show hostnames $SLURM_JOB_NODELIST | head -n1)`; under SkyPilot the first line
    of `$SKYPILOT_NODE_IPS`), or `--master_addr $HEAD --node_rank $SLURM_NODEID`.
    """
    valid = (
        Example("""
        #!/bin/bash
        #SBATCH --nodes=2
        #SBATCH --ntasks-per-node=1
        HEAD=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n1)
        srun torchrun --nnodes 2 --nproc_per_node 8 --rdzv_backend c10d --rdzv_endpoint $HEAD:29500 train.py
        """, filename="train.sbatch"),
        Example("""
        #!/bin/bash
        torchrun --nnodes 2 --nproc_per_node 8 --node_rank $NODE_RANK train.py
        """, filename="run.sh"),
        Example("""
        #!/bin/bash
        #SBATCH --nodes=2
        srun torchrun --nnodes 2 --nproc_per_node 8 $DIST_ARGS train.py
        """, filename="train.sbatch"),
    )
    invalid = (
        Example("""
        #!/bin/bash
        #SBATCH --nodes=2
        #SBATCH --ntasks-per-node=1
        export MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n1)
        srun torchrun --nnodes 2 --nproc_per_node 8 --node_rank $SLURM_NODEID train.py
        """, filename="train.sbatch", line=5, doc=True),
        Example("""
        resources:
          accelerators: A100:8
        num_nodes: 2
        run: |
          torchrun --nnodes=$SKYPILOT_NUM_NODES --nproc_per_node=8 --node_rank=$SKYPILOT_NODE_RANK train.py
        """, filename="sky.yaml", line=5),
    )

    def check_file(self, f, ctx) -> Iterable[Diagnostic]:
        text = f.text or ""
        if "PET_MASTER_ADDR" in text or "PET_RDZV_ENDPOINT" in text:
            return  # set somewhere the evaluator may not follow (a sourced file, a function)
        return unique(d for d in (self._check(la) for la in launches(f)) if d is not None)

    def _check(self, la) -> Diagnostic | None:
        if la.launcher not in TORCHRUN_FAMILY or "torchx" in la.options or "opaque" in la.options:
            return None
        if any(k in la.options for k in ("master_addr", "rdzv_endpoint", "standalone")):
            return None
        if any(k in (la.env or {}) for k in ("PET_MASTER_ADDR", "PET_RDZV_ENDPOINT")):
            return None
        nv = la.options.get("nnodes")
        n = _int_text(nv)
        w = la.wrapper
        if nv is None or n is None or n <= 1 or w is None or w.launcher not in ("srun", "skypilot"):
            return None
        if w.wrapper is not None or (w.launcher == "srun" and _one_node_step(w)):
            return None
        where = "srun" if w.launcher == "srun" else "the SkyPilot task"
        return self.report(nv.span or la.span,
                           f"{n} nodes started by {where} with no --master_addr or --rdzv_endpoint: torchrun's "
                           f"default master is 127.0.0.1 (it does not read MASTER_ADDR), so every node would "
                           f"rendezvous with itself; pass --master_addr (or --rdzv_endpoint) with the first node's "
                           f"address",
                           related=related_at(Value(n, w.span), f"{where} starts it on every node"))


RAY_MANIFEST = """\
apiVersion: ray.io/v1
kind: RayJob
metadata:
  name: train
spec:
  entrypoint: python train.py
  rayClusterSpec:
    headGroupSpec:
      rayStartParams: {{}}
      template:
        spec:
          containers:
            - name: ray-head
              image: rayproject/ray:2.9.0
    workerGroupSpecs:
      - replicas: 2
        groupName: gpu-group
        rayStartParams: {{}}
        template:
          spec:
            containers:
              - name: ray-worker
                image: rayproject/ray:2.9.0-gpu
                resources:
                  limits:
                    nvidia.com/gpu: {gpus}
"""
RAY_SCRIPT = """\
from ray.train import ScalingConfig
from ray.train.torch import TorchTrainer


def train_func():
    pass


trainer = TorchTrainer(train_func, scaling_config=ScalingConfig(num_workers={workers}, use_gpu=True,
                                                                resources_per_worker={{"GPU": {per}}}))
trainer.fit()
"""


class RayWorkersExceedCluster(Rule):
    code = "LCH014"
    facts = frozenset({"parallel.world_size", "hardware.gpus_per_process", "hardware.cluster_gpus",
                       "hardware.node_gpus_max"})
    name = "ray-workers-exceed-cluster"
    severity = Severity.ERROR
    summary = "Ray Train workers need more GPUs than the RayJob's own cluster can ever offer."
    kinds = frozenset({"kube"})
    doc = """
    ## What it does
    For a KubeRay `RayJob` that creates its own cluster (`rayClusterSpec`) and runs a Ray Train
    script (`ScalingConfig(num_workers=N, use_gpu=True, resources_per_worker={"GPU": g})` given to a
    `TorchTrainer`), reports a worker that needs more GPUs than the largest pod of the cluster has
    (g > GPUs of any one pod), or workers that together need more GPUs than the whole cluster
    offers (N × g > the head's and every worker group's GPUs, at `maxReplicas` when the autoscaler
    is on, else at `replicas`). A pod's GPUs are its `rayStartParams.num-gpus` when given, else its
    `nvidia.com/gpu` request. Any count that is not a literal keeps the rule silent.

    ## Why it matters
    Each Ray Train worker is one placement-group bundle that must fit on one node. A bundle that
    fits nowhere, or more bundles than the cluster holds, are never placed: the trainer waits for
    resources ("No available node types can fulfill resource request") until someone kills the job,
    while the pods already hold their GPUs.

    ## Example

    ## How to fix
    Ask for at most the GPUs one pod has per worker, and for no more workers than the cluster's
    GPUs allow; or add worker replicas (raise `maxReplicas` with the autoscaler on).
    """
    valid = (
        Example(files={"rayjob.yaml": RAY_MANIFEST.format(gpus=4), "train.py": RAY_SCRIPT.format(workers=8, per=1)}),
        Example(files={"rayjob.yaml": RAY_MANIFEST.format(gpus="$(GPUS)"),
                       "train.py": RAY_SCRIPT.format(workers=16, per=1)}),
    )
    invalid = (
        Example(files={"rayjob.yaml": RAY_MANIFEST.format(gpus=4), "train.py": RAY_SCRIPT.format(workers=4, per=8)},
                doc=True),
        Example(files={"rayjob.yaml": RAY_MANIFEST.format(gpus=4), "train.py": RAY_SCRIPT.format(workers=16, per=1)}),
    )

    def check_job(self, job, ctx) -> Iterable[Diagnostic]:
        la = job.launch
        if la is None or la.launcher != "python":
            return
        w = la.wrapper
        while w is not None and w.launcher != "rayjob":
            w = w.wrapper
        if w is None:
            return
        per = job.facts.get("hardware.gpus_per_process")
        cap, big = job.facts.get("hardware.cluster_gpus"), job.facts.get("hardware.node_gpus_max")
        worlds = [v for v in job.facts.all("parallel.world_size") if v.origin.via == "launcher"]
        g, c, m = known_int(per), known_int(cap), known_int(big)
        if per is None or g is None or g < 1 or c is None or m is None:
            return
        if g > m:
            yield self.report(per.span or la.span,
                              f"each Ray Train worker reserves {g} GPUs but the largest pod of the RayJob's cluster "
                              f"has {m}: no worker can be placed, the trainer waits for resources forever; lower "
                              f"resources_per_worker to at most {m} GPUs or request larger worker pods",
                              related=related_at(big, f"largest pod: {m} GPUs"))
            return
        n = known_int(worlds[0]) if len({known_int(v) for v in worlds}) == 1 else None
        if n is not None and n * g > c:
            yield self.report(worlds[0].span or la.span,
                              f"{n} Ray Train workers × {g} GPUs = {n * g} GPUs, but the RayJob's cluster offers "
                              f"{c}: the workers that do not fit are never placed and the trainer waits forever; "
                              f"lower num_workers to {c // g} or raise the worker group's replicas",
                              related=related_at(cap, f"{c} GPUs in the cluster"))
