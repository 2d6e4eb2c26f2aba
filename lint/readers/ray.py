"""KubeRay manifests: ``RayJob`` (``spec.entrypoint``, ``spec.rayClusterSpec``) and ``RayCluster``.

A Ray cluster is capacity, not a process layout: Ray Train places ``ScalingConfig(num_workers=N)``
workers on whatever GPUs the worker groups offer, so the world size comes from the script
(:mod:`parallint.link.pylaunch`), never from ``replicas``. What the manifest states for certain: the GPUs
each worker pod requests (``nvidia.com/gpu``), when every GPU worker group requests the same
number, and the GPU model its node selector names. The ``entrypoint`` is a command line like a
container's: the launch found there has the Ray job as its wrapper.
"""

from __future__ import annotations

from pathlib import Path

from parallint.model.facts import Value
from parallint.model.launch import Launch
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
    if cluster is not None and cluster.is_map:
        _capacity(job, cluster, doc.span)
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


def _pod_gpus(group, container_name: str, source: str) -> int | None:
    """The GPUs Ray counts on one pod of a group: ``rayStartParams.num-gpus`` when given, else the
    container's ``nvidia.com/gpu`` request (0 when it requests none); None when not a literal."""
    from parallint.readers import kubepod as kube

    params = group.get("rayStartParams")
    if params is not None and params.is_map and params.get("num-gpus") is not None:
        v = kube._int(params.get("num-gpus"), f"{source} rayStartParams.num-gpus")
        return v.value if v is not None and v.known else None
    tmpl = group.get("template")
    pod = tmpl.get("spec") if tmpl is not None and tmpl.is_map else None
    c = kube._main_container(pod, container_name)
    if c is None:
        return None
    g = kube._gpu_request(c, source)
    if g is None:
        return 0
    return g.value if g.known else None


def _capacity(job: Launch, cluster, span) -> None:
    """``hardware.cluster_gpus`` (head + every worker group at its largest size: ``maxReplicas`` with
    the autoscaler on, else ``replicas``; × ``numOfHosts``) and ``hardware.node_gpus_max`` (the
    largest pod). Any count that is not a literal leaves both unknown."""
    from parallint.readers import kubepod as kube

    head = cluster.get("headGroupSpec")
    head_gpus = _pod_gpus(head, "ray-head", "Ray headGroupSpec") if head is not None and head.is_map else 0
    auto = cluster.get("enableInTreeAutoscaling")
    autoscaling = auto is not None and auto.value is True
    if head_gpus is None or (auto is not None and not isinstance(auto.value, bool)):
        return
    total, largest = head_gpus, head_gpus
    groups = cluster.get("workerGroupSpecs")
    for g in (groups.value if groups is not None and groups.is_seq else []):
        if not g.is_map:
            return
        name = g.get("groupName")
        source = f"Ray workerGroupSpecs[{name.value if name is not None else 'worker'}]"
        per_pod = _pod_gpus(g, "ray-worker", source)
        key = "maxReplicas" if autoscaling else "replicas"
        n = kube._int(g.get(key), f"{source} {key}") if g.get(key) is not None else (
            None if autoscaling else Value(1, g.span, True, "", f"{source} replicas (default 1)"))
        hosts = kube._int(g.get("numOfHosts"), f"{source} numOfHosts") if g.get("numOfHosts") is not None else \
            Value(1, g.span, True, "", "numOfHosts (default 1)")
        if per_pod is None or n is None or hosts is None or not n.known or not hosts.known:
            return
        total += per_pod * n.value * hosts.value
        largest = max(largest, per_pod)
    job.facts.add("hardware.cluster_gpus", Value(total, span, True, "",
                                                 f"the Ray cluster's GPUs (head and worker groups at "
                                                 f"{'maxReplicas' if autoscaling else 'replicas'})"))
    job.facts.add("hardware.node_gpus_max", Value(largest, span, True, "", "the Ray cluster's largest pod"))


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
