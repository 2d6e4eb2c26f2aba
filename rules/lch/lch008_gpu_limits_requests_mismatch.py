"""LCH008 gpu-limits-requests-mismatch: Kubernetes GPU requests differ from the limits, or are given without limits."""

from __future__ import annotations

from typing import Iterable

from parallint.model.diagnostics import Diagnostic, Severity
from parallint.model.facts import known_int
from parallint.model.launches import (
    launches, related_at,
)
from parallint.model.rule import Example, Rule


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
