"""SkyPilot task YAML: ``num_nodes``, ``resources.accelerators``, ``envs`` and the ``run`` shell.

The task becomes a wrapper :class:`Launch` (``skypilot``) whose facts are what the task states:
nodes (``num_nodes``, default 1), GPUs per node and the GPU model (``accelerators: A100:8``; a list
or a mapping of choices gives the count only when every choice has the same count, the model only
when there is one choice). The ``run`` script is evaluated by the shell evaluator with the task's
``envs`` and the variables SkyPilot defines from the task (``SKYPILOT_NUM_NODES``,
``SKYPILOT_NUM_GPUS_PER_NODE``); ``SKYPILOT_NODE_RANK`` and ``SKYPILOT_NODE_IPS`` differ per node and
stay unknown. A launcher found there (torchrun, deepspeed, accelerate ...) is returned with the task
as its ``wrapper``, so its facts sit next to the task's, each with its own source.
"""

from __future__ import annotations

import re
from pathlib import Path

from parallint.readers.cmdline import gpu_name
from parallint.model.diagnostics import Span
from parallint.model.facts import FileFacts, Value
from parallint.model.launch import Launch
from parallint.readers.orchestrator import as_outer_layer, shell_launches
from parallint.readers.shell import syn001

KIND = "skypilot"
RUNTIME = ("SKYPILOT_NODE_RANK", "SKYPILOT_NODE_IPS", "SKYPILOT_TASK_ID", "SKYPILOT_CLUSTER_INFO",
           "SKYPILOT_SETUP_NODE_RANK", "SKYPILOT_SETUP_NODE_IPS", "SKYPILOT_SERVE_REPLICA_ID")
ACC_RE = re.compile(r"^\s*([A-Za-z][\w.\-]*)\s*(?::\s*(\d+(?:\.\d+)?))?\s*$")


def _choice(text: str, span: Span) -> tuple[str, Value] | None:
    """``A100:8`` -> (name, count); a bare name counts 1 (SkyPilot's default)."""
    m = ACC_RE.match(text)
    if not m:
        return None
    raw = m.group(2)
    if raw is None:
        return m.group(1), Value(1, span, True, "", "SkyPilot resources.accelerators (count 1 by default)")
    if "." in raw and not raw.endswith(".0"):
        return m.group(1), Value.unknown(f"a fractional GPU count {raw}", span, "SkyPilot resources.accelerators")
    return m.group(1), Value(int(float(raw)), span, True, "", "SkyPilot resources.accelerators")


def _accelerators(node) -> list[tuple[str, Value]] | None:
    """The accelerator choices of ``resources.accelerators`` (None when unreadable)."""
    if node is None or node.value is None:
        return []
    if isinstance(node.value, str):
        c = _choice(node.value, node.span)
        return [c] if c else None
    if node.is_seq:
        out = []
        for item in node.value:
            if not isinstance(item.value, str):
                return None
            c = _choice(item.value, item.span)
            if c is None:
                return None
            out.append(c)
        return out
    if node.is_map:
        out = []
        for name, val in node.value.items():
            if val is None or val.value is None:  # `{A100:8, H100:8}` parses as keys without values
                c = _choice(str(name), node.key_spans.get(name, node.span))
            elif isinstance(val.value, int) and not isinstance(val.value, bool):
                c = (str(name), Value(val.value, val.span, True, "", "SkyPilot resources.accelerators"))
            else:
                return None
            if c is None:
                return None
            out.append(c)
        return out
    return None


def _resources(task, job: Launch) -> Value | None:
    """GPU facts of ``resources`` (also the first of ``any_of``/``ordered`` when all agree)."""
    res = task.get("resources")
    if res is None or not res.is_map:
        return None
    acc = res.get("accelerators")
    if acc is None:
        return None
    choices = _accelerators(acc)
    if not choices:
        return Value.unknown("resources.accelerators not readable", acc.span, "SkyPilot resources.accelerators")
    counts = {c.value if c.known else None for _, c in choices}
    if len(counts) == 1 and None not in counts:
        gpn = choices[0][1]
        job.facts.add("hardware.gpus_per_node_requested", gpn)
    else:
        gpn = Value.unknown("several accelerator choices with different counts", acc.span,
                            "SkyPilot resources.accelerators")
    if len(choices) == 1:
        name = gpu_name(choices[0][0])
        if name:
            job.facts.add("hardware.gpu", Value(name, choices[0][1].span, True, "", "SkyPilot resources.accelerators"))
    return gpn


def _env(task) -> dict[str, Value]:
    env: dict[str, Value] = {}
    node = task.get("envs")
    if node is None or not node.is_map:
        return env
    for name, val in node.value.items():
        if val is None or val.value is None:
            env[name] = Value.unknown(f"{name} is passed with `sky launch --env`", node.key_spans.get(name), name)
        elif isinstance(val.value, (dict, list)):
            env[name] = Value.unknown(f"{name} is not a string", val.span, name)
        else:
            text = str(val.value) if not isinstance(val.value, bool) else str(val.value).lower()
            env[name] = Value(text, val.span, True, "", name)
    return env


def task_launches(task, path: str, abspath: Path) -> list[Launch]:
    job = Launch("skypilot", task.span)
    n = task.get("num_nodes")
    if n is None:
        nodes = Value(1, task.span, True, "", "SkyPilot num_nodes (default 1)")
    elif isinstance(n.value, int) and not isinstance(n.value, bool) and n.value > 0:
        nodes = Value(n.value, n.span, True, "", "SkyPilot num_nodes")
    else:
        nodes = Value.unknown(f"num_nodes {n.value!r} is not a fixed integer", n.span, "SkyPilot num_nodes")
    job.facts.add("parallel.nodes", nodes)
    job.options["num_nodes"] = nodes
    gpn = _resources(task, job)
    as_outer_layer(job)
    env = _env(task)
    env["SKYPILOT_NUM_NODES"] = Value(str(nodes.value), nodes.span, True, "", "SKYPILOT_NUM_NODES") \
        if nodes.known else Value.unknown(nodes.why, nodes.span, "SKYPILOT_NUM_NODES")
    if gpn is not None:
        env["SKYPILOT_NUM_GPUS_PER_NODE"] = Value(str(gpn.value), gpn.span, True, "", "SKYPILOT_NUM_GPUS_PER_NODE") \
            if gpn.known else Value.unknown(gpn.why, gpn.span, "SKYPILOT_NUM_GPUS_PER_NODE")
    else:
        env["SKYPILOT_NUM_GPUS_PER_NODE"] = Value.unknown("no accelerators requested", task.span,
                                                          "SKYPILOT_NUM_GPUS_PER_NODE")
    for k in RUNTIME:
        env[k] = Value.unknown(f"{k} differs per node (set by SkyPilot)", None, k)
    job.env = dict(env)
    run = task.get("run")
    if run is None or not isinstance(run.value, str):
        return [job]
    out = shell_launches(run, env, job, path, abspath)
    return out or [job]



def read(path: str, abspath: Path, text: str) -> FileFacts:
    from parallint.readers import yamlpos

    ff = FileFacts(path=path, abspath=abspath, kind=KIND, text=text)
    try:
        docs = yamlpos.load_all(text, path)
    except Exception as exc:  # noqa: BLE001 - yaml errors, limits, odd input: SYN001
        line, col = yamlpos.error_position(exc)
        ff.diagnostics.append(syn001(path, f"invalid YAML at line {line}, column {col}", line, col))
        return ff
    for doc in docs:
        run = doc.get("run") if doc.is_map else None
        if not doc.is_map or (run is None and doc.get("resources") is None) or (
                run is not None and not isinstance(run.value, str)):
            continue  # a config header document (`config:` overrides), an empty one, not a task
        try:
            ff.launches.extend(task_launches(doc, path, abspath))
        except (AttributeError, TypeError, ValueError, KeyError, RecursionError) as exc:
            ff.diagnostics.append(syn001(path, f"cannot read SkyPilot task: {type(exc).__name__}",
                                         doc.span.line, doc.span.column))
    for la in ff.launches:
        ff.links.extend(la.links)
    if len(ff.launches) == 1:
        ff.standalone_job = True
    return ff
