"""LCH005 pytorchjob-master-replicas: Kubeflow PyTorchJob Master.replicas must be 1."""

from __future__ import annotations

from typing import Iterable

from parallint.model.diagnostics import Diagnostic, Severity
from parallint.model.facts import known_int
from parallint.model.launches import (
    launches,
)
from parallint.model.rule import Example, Rule


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
