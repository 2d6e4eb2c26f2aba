"""LCH014 ray-workers-exceed-cluster: Ray Train workers need more GPUs than the RayJob's own cluster can ever offer."""

from __future__ import annotations

from typing import Iterable

from parallint.model.diagnostics import Diagnostic, Severity
from parallint.model.facts import known_int
from parallint.model.launches import (
    related_at,
)
from parallint.model.rule import Example, Rule
from parallint.rules.lch._common import RAY_MANIFEST, RAY_SCRIPT


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
