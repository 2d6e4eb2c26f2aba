"""KubeRay manifests: ``RayJob`` (``spec.entrypoint``, ``spec.rayClusterSpec``) and ``RayCluster``.

A Ray cluster is capacity, not a process layout: Ray Train places ``ScalingConfig(num_workers=N)``
workers on whatever GPUs the worker groups offer, so the world size comes from the script
(:mod:`parallint.pylaunch`), never from ``replicas``. What the manifest states for certain: the GPUs
each worker pod requests (``nvidia.com/gpu``), when every GPU worker group requests the same
number, and the GPU model its node selector names. The ``entrypoint`` is a command line like a
container's: the launch found there has the Ray job as its wrapper.
"""

from __future__ import annotations

from pathlib import Path

from parallint.facts import Value
from parallint.launch import Launch
from parallint.readers.orchestrator import as_outer_layer, shell_launches


def _groups(spec):
    """(name, replicas node, pod spec) of the worker groups."""
    out = []
    groups = spec.get("workerGroupSpecs") if spec is not None else None
    if groups is None or not groups.is_seq:
        return out
    for g in groups.value:
        if not g.is_map:
            continue
        name = g.get("groupName")
        tmpl = g.get("template")
        pod = tmpl.get("spec") if tmpl is not None and tmpl.is_map else None
        out.append((name.value if name is not None else "worker", g.get("replicas"), pod))
    return out


def manifest_launches(doc, path: str, abspath: Path) -> list[Launch]:
    from parallint.readers import kubepod as kube

    spec = doc.get("spec")
    if spec is None or not spec.is_map:
        return []
    kind = doc.get("kind").value
    cluster = spec.get("rayClusterSpec") if kind == "RayJob" else spec
    job = Launch("rayjob" if kind == "RayJob" else "raycluster", doc.span)
    gpus: list[Value] = []
    product = None
    for name, _replicas, pod in _groups(cluster if cluster is not None and cluster.is_map else None):
        c = kube._main_container(pod, "ray-worker")
        g = kube._gpu_request(c, f"Ray workerGroupSpecs[{name}]") if c is not None else None
        if g is not None:
            gpus.append(g)
        if product is None:
            product = kube._gpu_product(pod)
    known = {v.value for v in gpus if v.known and v.value}
    if len(known) == 1 and all(v.known for v in gpus):
        v = next(v for v in gpus if v.known and v.value)
        job.facts.add("hardware.gpus_per_node_requested", v)
    if product is not None:
        job.facts.add("hardware.gpu", product)
    as_outer_layer(job)
    ep = spec.get("entrypoint") if kind == "RayJob" else None
    if ep is None or not isinstance(ep.value, str) or not ep.value.strip():
        return [job]
    env = {k: Value.unknown(f"{k} is set by Ray", None, k) for k in ("RAY_ADDRESS",)}
    rt = spec.get("runtimeEnvYAML")
    if rt is not None:
        env_vars = _runtime_env(rt)
        if env_vars is None:
            return [job]  # an environment parallint cannot read: the entrypoint's values are not certain
        env.update(env_vars)
    ev_launches = shell_launches(ep, env, job, path, abspath)
    return ev_launches or [job]


def _runtime_env(node) -> dict[str, Value] | None:
    """``runtimeEnvYAML: | env_vars: {...}`` -> the variables (None when it cannot be read)."""
    import yaml

    if not isinstance(node.value, str) or len(node.value) > 100_000:
        return None
    try:
        data = yaml.safe_load(node.value)
    except yaml.YAMLError:
        return None
    if data is None:
        return {}
    if not isinstance(data, dict):
        return None
    ev = data.get("env_vars") or {}
    if not isinstance(ev, dict):
        return None
    out = {}
    for k, v in ev.items():
        if isinstance(v, (str, int, float)) and not isinstance(v, bool):
            out[str(k)] = Value(str(v), node.span, True, "", f"runtimeEnvYAML env_vars.{k}")
        else:
            out[str(k)] = Value.unknown(f"runtimeEnvYAML env_vars.{k} is not a string", node.span, str(k))
    return out
