"""TFD005 tf-config-cluster-invalid: a literal TF_CONFIG TensorFlow refuses, or whose cluster is not the job that runs it"""

from __future__ import annotations

import ast
from typing import Iterable

from parallint.model.diagnostics import Diagnostic, Related, Severity
from parallint.model.launches import LAUNCH_FILE_KINDS, launches
from parallint.model.rule import Example, Rule
from parallint.model.script import job_scripts, script_of
from parallint.rules.tfd._common import (
    _PY, frame_node, parse_tf_config, script_tf_configs, strategies, tf_config_problems, tfjob_pods, trainers_of,
)
from parallint.rules.tfd._common import tfjob_example as _tfjob

_SCRIPT = """\
import tensorflow as tf

strategy = tf.distribute.MultiWorkerMirroredStrategy()
with strategy.scope():
    model = tf.keras.Sequential([tf.keras.layers.Dense(10)])
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
model.fit(train_ds, epochs=3)
"""


def _launch(tf_config: str) -> dict[str, str]:
    return {"run_worker.sh": f"#!/bin/bash\nexport TF_CONFIG='{tf_config}'\npython train.py\n", "train.py": _SCRIPT}


def _in_script(workers: int, chief: int = 1, index: str = "0") -> dict[str, str]:
    hosts = ", ".join(f'"worker-{i}:2222"' for i in range(workers))
    files = _tfjob(chief, 2, strategy="tf.distribute.MultiWorkerMirroredStrategy()")
    files["train.py"] = ("import json\nimport os\n\nimport tensorflow as tf\n\n"
                         'os.environ["TF_CONFIG"] = json.dumps({\n'
                         f'    "cluster": {{"chief": ["chief-0:2222"], "worker": [{hosts}]}},\n'
                         f'    "task": {{"type": "worker", "index": {index}}},\n'
                         "})\n" + files["train.py"].split("\n", 2)[2])
    return files


def _env_values(la):
    seen: set[str] = set()
    w = la
    while w is not None:
        for k, v in (w.env or {}).items():
            if k not in seen:
                seen.add(k)
                yield k, v
        w = w.wrapper


class TfConfigClusterInvalid(Rule):
    code = "TFD005"
    name = "tf-config-cluster-invalid"
    severity = Severity.ERROR
    summary = "a literal TF_CONFIG TensorFlow refuses, or whose cluster is not the job that runs it"
    kinds = LAUNCH_FILE_KINDS | _PY
    calls = frozenset({"tf_strategy"})
    needles = ("TF_CONFIG",)
    doc = """
    ## What it does
    Reads a `TF_CONFIG` written as a literal: exported in a launch script
    (`export TF_CONFIG='{"cluster": ..., "task": ...}'`), set in a Kubernetes container's `env`,
    or assigned in the script (`os.environ["TF_CONFIG"] = json.dumps({...})` with a dict the
    code shows). Flags what TensorFlow's cluster validation refuses: more than one `chief`, a
    task type (`chief`, `worker`, `ps`) the cluster does not list, a task index past the tasks
    of its type. In a script run by a Kubeflow TFJob, flags a cluster whose chief + worker
    tasks are not the TFJob's Chief + Worker replicas, and a `ParameterServerStrategy` job
    whose cluster lists no `ps` or no `worker` task.

    ## Why it matters
    `MultiWorkerMirroredStrategy` and `ParameterServerStrategy` validate `TF_CONFIG` when they
    are created: the job stops with `ValueError` on every pod ("The `task_id` 2 exceeds the
    maximum id of worker", "`task_type` 'ps' not found in cluster_spec", "There must be at most
    one 'chief' job", "There must be at least one ps"). A script that writes its own
    `TF_CONFIG` inside a TFJob replaces the one the operator gives each pod: with another
    cluster size the workers wait for tasks that never start, or leave pods out of training.

    ## Example

    ## How to fix
    Give each task an index below the count of its type and at most one chief. Inside a
    TFJob, drop the hand-written `TF_CONFIG` and let the operator set it (one per pod).
    """
    valid = [
        Example(files=_launch('{"cluster": {"worker": ["host1:12345", "host2:12345"]}, '
                              '"task": {"type": "worker", "index": 1}}')),
        # the chief is a task of its own: worker indices count from 0 after it
        Example(files=_launch('{"cluster": {"chief": ["host0:2222"], "worker": ["host1:2222"]}, '
                              '"task": {"type": "chief", "index": 0}}')),
        Example(files=_in_script(2)),  # Chief 1 + Worker 2, as the TFJob starts
    ]
    invalid = [
        Example(files=_launch('{"cluster": {"worker": ["host1:12345", "host2:12345"]}, '
                              '"task": {"type": "worker", "index": 2}}'), line=2, doc=True),
        Example(files=_launch('{"cluster": {"chief": ["h0:2222", "h1:2222"], "worker": ["h2:2222"]}, '
                              '"task": {"type": "worker", "index": 0}}'), line=2),
        Example(files=_in_script(4), line=6),  # 5 tasks in the script, 3 pods in the TFJob
    ]

    def check_file(self, f, ctx) -> Iterable[Diagnostic]:
        if f.kind == "python":
            s = script_of(f)
            if s is None:
                return
            for cfg, node, _frame in script_tf_configs(s):
                for p in tf_config_problems(cfg):
                    yield self.report(s.span_of(node), f"TF_CONFIG: {p}; " + _FIX)
            return
        seen: set[object] = set()
        for la in launches(f):
            for name, v in _env_values(la):
                if name != "TF_CONFIG" or not v.known or v.span in seen:
                    continue
                seen.add(v.span)
                parsed = parse_tf_config(v.value)
                if parsed is None:
                    continue
                for p in tf_config_problems(parsed):
                    yield self.report(v.span or la.span, f"TF_CONFIG: {p}; " + _FIX)

    def check_job(self, job, ctx) -> Iterable[Diagnostic]:
        pods = tfjob_pods(job)
        if pods is None:
            return
        n, vals, n_ps, ps_vals = pods
        related = tuple(Related.at(v.span, f"{v.source}: {v.value}") for v in vals + ps_vals if v.span is not None)
        for _f, s in job_scripts(job):
            for cfg, node, frame in script_tf_configs(s):
                if s.paths(frame) is None or _conditional(s, node, frame):
                    continue  # `if "TF_CONFIG" not in os.environ:`: a fallback the operator's value skips
                got = trainers_of(cfg)
                cluster = cfg["cluster"]
                got_ps = len(cluster["ps"]) if isinstance(cluster.get("ps"), list) else 0
                if got is None or (got == n and got_ps == n_ps):
                    if any(k == "ps" for _c, k in strategies(s)) and (got_ps == 0 or not cluster.get("worker")):
                        yield self.report(
                            s.span_of(node),
                            "ParameterServerStrategy needs ps and worker tasks but the TF_CONFIG the script "
                            "writes lists " + ", ".join(f"{len(v)} {k}" for k, v in sorted(cluster.items())) +
                            " (\"There must be at least one ps\"); " + _FIX, related=related)
                    continue
                said = f"{got} chief + worker task{'s' if got != 1 else ''}" + (f" and {got_ps} ps" if got_ps or n_ps else "")
                pods_text = f"{n} training pod{'s' if n != 1 else ''}" + (f" and {n_ps} ps" if got_ps or n_ps else "")
                yield self.report(
                    s.span_of(node),
                    f"the script writes a TF_CONFIG of {said}, but the TFJob starts {pods_text}: it replaces the "
                    "cluster the operator gives each pod, so the workers wait for tasks that never start or "
                    "leave pods out; drop the hand-written TF_CONFIG and let the TFJob operator set it",
                    related=related)


def _conditional(s, node, frame) -> bool:
    """The assignment runs under an ``if``, ``try`` or loop of its own frame."""
    root = frame_node(s, frame)
    if root is None:
        return True
    here = (node.lineno, node.col_offset)
    for n in ast.walk(root):
        if isinstance(n, ast.If | ast.Try | ast.For | ast.While) and n is not root:
            if (n.lineno, n.col_offset) < here <= (n.end_lineno or n.lineno, n.end_col_offset or 0):
                return True
    return False


_FIX = ("TensorFlow's MultiWorkerMirroredStrategy and ParameterServerStrategy stop with ValueError when "
        "they read it; fix the task index and the task lists so each task names one entry of its type")
