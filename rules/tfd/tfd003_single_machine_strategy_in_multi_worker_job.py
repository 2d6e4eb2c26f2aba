"""TFD003 single-machine-strategy-in-multi-worker-job: a MirroredStrategy script run by a TFJob of several workers, where each pod trains alone"""

from __future__ import annotations

from typing import Iterable

from parallint.model.diagnostics import Diagnostic, Related, Severity
from parallint.model.rule import Example, Rule
from parallint.model.script import job_scripts
from parallint.rules.tfd._common import _PY, MULTI_MACHINE, strategies, tfjob_pods
from parallint.rules.tfd._common import tfjob_example as _tfjob


class SingleMachineStrategyInMultiWorkerJob(Rule):
    code = "TFD003"
    name = "single-machine-strategy-in-multi-worker-job"
    severity = Severity.ERROR
    summary = "a MirroredStrategy script run by a TFJob of several workers, where each pod trains alone"
    kinds = _PY
    calls = frozenset({"tf_strategy"})
    doc = """
    ## What it does
    Flags `tf.distribute.MirroredStrategy` (or `CentralStorageStrategy`) in a script that a
    Kubeflow TFJob starts on more than one pod (Chief + Worker replicas above 1, or PS
    replicas), when no script of the job creates a multi-worker strategy
    (`MultiWorkerMirroredStrategy`, `ParameterServerStrategy`, `TPUStrategy`) or uses Horovod.

    ## Why it matters
    The operator gives every pod a `TF_CONFIG` naming the whole cluster, but only a multi-worker
    strategy reads it. A `MirroredStrategy` mirrors over the GPUs of its own pod: each pod trains
    its own copy of the model on its own data, no gradient crosses pods, the run is no faster
    than one pod, and the pods overwrite each other's checkpoints. Nothing fails.

    ## Example

    ## How to fix
    Use `tf.distribute.MultiWorkerMirroredStrategy()` (it reads `TF_CONFIG`; each pod's GPUs
    are its local replicas), or give the TFJob one replica.
    """
    valid = [
        Example(files=_tfjob(1, 3, strategy="tf.distribute.MultiWorkerMirroredStrategy()")),
        Example(files=_tfjob(1, 0)),  # one pod: MirroredStrategy over its GPUs is the recipe
    ]
    invalid = [
        Example(files=_tfjob(1, 3), line=3),
    ]

    def check_job(self, job, ctx) -> Iterable[Diagnostic]:
        pods = tfjob_pods(job)
        if pods is None:
            return
        n, vals, n_ps, ps_vals = pods
        if n <= 1 and n_ps == 0:
            return
        scripts = job_scripts(job)
        found = []
        for _f, s in scripts:
            if "horovod" in s.imports:
                return
            for c, kind in strategies(s):
                if kind in MULTI_MACHINE:
                    return
                if kind in ("mirrored", "central") and s.paths(c.frame) is not None:
                    found.append(c)
        counted = " + ".join(f"{v.source.split(' ')[1].split('.')[0]} {v.value}" for v in vals
                             if v.source.startswith("TFJob "))
        pods_text = f"{n} training pods ({counted})" + (f" and {n_ps} parameter servers" if n_ps else "")
        related = [Related.at(v.span, f"{v.source}: {v.value}") for v in vals + ps_vals if v.span is not None]
        for c in found[:1]:
            yield self.report(
                c.span,
                f"{c.func_text}() mirrors over the GPUs of one pod, but the TFJob starts {pods_text}: each pod "
                "trains its own copy of the model and none sees the others' gradients; use "
                "tf.distribute.MultiWorkerMirroredStrategy() (it reads the TF_CONFIG the operator sets)",
                related=related,
            )
