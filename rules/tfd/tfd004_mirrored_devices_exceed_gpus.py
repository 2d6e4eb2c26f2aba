"""TFD004 mirrored-devices-exceed-gpus: MirroredStrategy(devices=[...]) names GPUs the job's pod or node does not have"""

from __future__ import annotations

from typing import Iterable

from parallint.model.diagnostics import Diagnostic, Related, Severity
from parallint.model.rule import Example, Rule
from parallint.model.script import job_scripts
from parallint.rules.tfd._common import _PY, device_indices, strategies, tfjob_of
from parallint.rules.tfd._common import tfjob_example as _tfjob

#: wrappers that start several processes a node (each would see the node's GPUs differently)
_FORKERS = frozenset({"srun", "mpirun", "horovodrun", "mpijob"})


def _gpus(job):
    """The GPUs the one TensorFlow process of each pod or node sees, with its Value; None unknown."""
    la = job.launch
    if la is None or la.launcher != "python" or "CUDA_VISIBLE_DEVICES" in (la.env or {}):
        return None
    w = la.wrapper
    while w is not None:
        if w.launcher in _FORKERS:
            return None
        w = w.wrapper
    tj = tfjob_of(job)
    if tj is not None:
        got = [v for k, v in tj.options.items()
               if k.startswith("gpus.") and k.split(".", 1)[1] in ("Chief", "Master", "Worker")]
        types = [k for k in tj.options if k.startswith("replicas.") and k.split(".", 1)[1] in
                 ("Chief", "Master", "Worker")]
        if not got or len(got) != len(types) or not all(v.known for v in got) or len({v.value for v in got}) != 1:
            return None
        return got[0].value, got[0]
    v = job.facts.get("hardware.gpus_per_node_requested")
    if v is None or not v.known or not isinstance(v.value, int) or isinstance(v.value, bool):
        return None
    procs = job.facts.get("parallel.procs_per_node")
    if procs is not None and (not procs.known or procs.value != 1):
        return None
    return v.value, v


class MirroredDevicesExceedGpus(Rule):
    code = "TFD004"
    name = "mirrored-devices-exceed-gpus"
    severity = Severity.ERROR
    summary = "MirroredStrategy(devices=[...]) names GPUs the job's pod or node does not have"
    kinds = _PY
    calls = frozenset({"tf_strategy"})
    facts = frozenset({"hardware.gpus_per_node_requested", "parallel.procs_per_node"})
    doc = """
    ## What it does
    Compares the GPUs a literal `tf.distribute.MirroredStrategy(devices=[...])` list names
    (`"/gpu:0"`, `"GPU:1"`, `"/job:localhost/replica:0/task:0/device:GPU:2"`) with the GPUs its
    process gets: the `nvidia.com/gpu` limit of a Kubeflow TFJob's Chief/Worker pods (when they
    all ask for the same count), or the GPUs per node a scheduler is asked for when one Python
    process runs on each node. Flags a list with more GPUs, or a GPU index past the last one.
    Silent under `CUDA_VISIBLE_DEVICES`, srun, mpirun or Horovod (the GPUs a process sees are not
    the node's), and when any device is not a literal.

    ## Why it matters
    The strategy makes one replica per device it is given. A GPU the pod does not have leaves a
    replica without a device: TensorFlow stops when it places the variables, or (with soft
    placement) runs that replica elsewhere, and the global batch, which counts every replica, is
    not what the script computes.

    ## Example

    ## How to fix
    List only the GPUs the pod has (`/gpu:0` up to its limit minus one), leave `devices` out to
    use them all, or raise the pod's `nvidia.com/gpu` limit.
    """
    valid = [
        Example(files=_tfjob(1, 0, gpus=4, strategy='tf.distribute.MirroredStrategy(devices=["/gpu:0", "/gpu:1", '
                                                       '"/gpu:2", "/gpu:3"])')),
        Example(files=_tfjob(1, 0, gpus=2, strategy="tf.distribute.MirroredStrategy()")),
    ]
    invalid = [
        Example(files=_tfjob(1, 0, gpus=2, strategy='tf.distribute.MirroredStrategy(devices=["/gpu:0", "/gpu:1", '
                                                       '"/gpu:2", "/gpu:3"])'), line=3),
        Example(files={
            "job.sbatch": """
                #!/bin/bash
                #SBATCH --nodes=1
                #SBATCH --gres=gpu:2
                python train.py
            """,
            "train.py": """
                import tensorflow as tf

                strategy = tf.distribute.MirroredStrategy(devices=["/gpu:1", "/gpu:2"])
            """,
        }, line=3),
    ]

    def check_job(self, job, ctx) -> Iterable[Diagnostic]:
        got = _gpus(job)
        if got is None:
            return
        gpus, gv = got
        for _f, s in job_scripts(job):
            for c, kind in strategies(s):
                if kind != "mirrored":
                    continue
                dev = s.arg(c, "devices", 0)
                if dev is None or not dev.known:
                    continue
                idx = device_indices(dev.value)
                if not idx:
                    continue
                uniq = sorted(set(idx))
                if len(uniq) <= gpus and uniq[-1] < gpus:
                    continue
                named = ", ".join(f"/gpu:{i}" for i in uniq)
                why = (f"names {len(uniq)} GPUs ({named})" if len(uniq) > gpus
                       else f"names GPU {uniq[-1]}")
                yield self.report(
                    s.arg_span(c, "devices", 0),
                    f"{c.func_text}(devices=...) {why} but its process gets {gpus} GPU{'s' if gpus != 1 else ''} "
                    f"({gv.source}): the replicas past /gpu:{gpus - 1} have no device of their own; list only "
                    f"/gpu:0 to /gpu:{gpus - 1}, or drop devices= to mirror over every GPU the process has",
                    related=[Related.at(gv.span, f"{gv.source}: {gpus}")] if gv.span is not None else [],
                )
