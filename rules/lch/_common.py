"""What the LCH rules share."""

from __future__ import annotations

from typing import Iterable

from parallint.model.diagnostics import Diagnostic
from parallint.model.facts import Value


# -- helpers (the launch helpers shared with the ENV rules live in parallint.model.launches) ----
def desc(v: Value) -> str:
    return v.source or "stated value"


def unique(diags: Iterable[Diagnostic]) -> Iterable[Diagnostic]:
    """``diags`` without repeats (one position, one message): launches of one file share facts."""
    seen = set()
    for d in diags:
        if (d.span, d.message) not in seen:
            seen.add((d.span, d.message))
            yield d


TORCHRUN_FAMILY = ("torchrun", "torch.distributed.run", "torch.distributed.launch")


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


# -- scheduler/launcher contradictions (LCH009-LCH012) ----------------------------------------
def _int_text(v: Value | None) -> int | None:
    """A known option value written as a plain integer (``"8"`` or 8)."""
    if v is None or not v.known:
        return None
    t = str(v.value).strip()
    # more than 12 digits is no real count (and int() would hit Python's digit limit)
    return int(t) if t.isdigit() and len(t.lstrip("0")) <= 12 else None


#: launcher -> (its node rank option, its node count option)
RANK_OPTIONS = {"torchrun": ("node_rank", "nnodes"), "torch.distributed.run": ("node_rank", "nnodes"),
                "torch.distributed.launch": ("node_rank", "nnodes"), "deepspeed": ("node_rank", "num_nodes"),
                "accelerate": ("machine_rank", "num_machines")}


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
