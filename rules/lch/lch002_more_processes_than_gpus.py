"""LCH002 more-processes-than-gpus: More processes per node than GPUs requested per node."""

from __future__ import annotations

from typing import Iterable

from parallint.model.diagnostics import Diagnostic, Severity
from parallint.model.facts import Value, known_int
from parallint.model.launches import (
    LAUNCH_FILE_KINDS, gpus_requested, launches, procs_per_node, related_at,
)
from parallint.model.rule import Example, Rule
from parallint.rules.lch._common import desc


def _replica_gpus(la) -> list[tuple[Value, str]]:
    """The GPU request of each replica type of the Kubernetes job that runs ``la``."""
    w = la
    while w is not None and not any(k.startswith("gpus.") for k in w.options):
        w = w.wrapper
    if w is None:
        return []
    return [(v, f"{k[5:]} pod") for k, v in w.options.items() if k.startswith("gpus.") and v is not None]


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
