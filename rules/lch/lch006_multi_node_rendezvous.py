"""LCH006 multi-node-rendezvous: A multi-node launch with a loopback master address or one hard-coded node rank for every node."""

from __future__ import annotations

from typing import Iterable

from parallint.model.diagnostics import Diagnostic, Severity
from parallint.model.facts import Value, known_int
from parallint.model.launches import (
    LAUNCH_FILE_KINDS, effective_nodes, is_loopback, launches, related_at,
)
from parallint.model.rule import Example, Rule
from parallint.rules.lch._common import TORCHRUN_FAMILY, _one_node_step, unique


def _literal_rank(v: Value | None) -> int | None:
    """A node rank written as a number on the command line, else None."""
    r = known_int(v) if v is not None else None
    if r is None and v is not None and v.known:
        try:
            r = int(str(v.value))
        except ValueError:
            r = None
    return r


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
