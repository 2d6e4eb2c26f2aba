"""Pod-spec helpers shared by the Kubernetes readers (Kubeflow jobs in :mod:`parallint.readers.kube`,
KubeRay manifests in :mod:`parallint.readers.ray`): integers and quantities, the main container, its
GPU request and the GPU model a pod selects."""

from __future__ import annotations

import re

from parallint.readers import cmdline
from parallint.model.facts import Value


def _int(node, source: str) -> Value | None:
    """A Kubernetes integer or quantity: 8, "8"; anything else is unknown."""
    if node is None:
        return None
    v = node.value
    if isinstance(v, bool):
        return Value.unknown(f"{source} is not an integer", node.span, source)
    if isinstance(v, int):
        return Value(v, node.span, True, "", source)
    if isinstance(v, str) and v.strip().isdigit():
        return Value(int(v.strip()), node.span, True, "", source)
    return Value.unknown(f"{source} {v!r} is not a fixed integer", node.span, source)


def _gpu_request(container, source: str) -> Value | None:
    res = container.get("resources") if container is not None else None
    if res is None:
        return None
    for section in ("limits", "requests"):
        sec = res.get(section)
        if sec is not None and sec.is_map:
            for key in ("nvidia.com/gpu", "amd.com/gpu"):
                node = sec.get(key)
                if node is not None:
                    return _int(node, f"{source} resources.{section}.{key}")
    return None


def _gpu_product(pod_spec) -> Value | None:
    if pod_spec is None:
        return None
    sel = pod_spec.get("nodeSelector")
    if sel is not None and sel.is_map:
        for key in ("nvidia.com/gpu.product", "cloud.google.com/gke-accelerator", "node.kubernetes.io/instance-type",
                    "karpenter.k8s.aws/instance-gpu-name"):
            node = sel.get(key)
            if node is not None and isinstance(node.value, str):
                name = _gpu_from_label(node.value)
                if name:
                    return Value(name, node.span, True, "", f"nodeSelector {key}")
    return None


def _gpu_from_label(text: str) -> str | None:
    for tok in re.split(r"[\s_]+", text.strip()):
        for cand in (tok, tok.lower().removeprefix("nvidia-").removeprefix("tesla-")):
            n = cmdline.gpu_name(cand)
            if n:
                return n
    low = text.lower()
    m = re.search(r"(a100|h100|h200|b200|gb200|v100|l40s|l4|a10g|t4)(?:[-_ ]?(?:sxm\d?|pcie))?(?:[-_ ]?(\d+)gb)?", low)
    if m:
        return m.group(1) + (f"-{m.group(2)}gb" if m.group(2) else "")
    return None


def _pod_spec(template):
    if template is None:
        return None
    return template.get("spec")


def _containers(pod_spec):
    if pod_spec is None:
        return []
    cs = pod_spec.get("containers")
    if cs is None or not cs.is_seq:
        return []
    return [c for c in cs.value if c.is_map]


def _main_container(pod_spec, preferred: str = "pytorch"):
    cs = _containers(pod_spec)
    for c in cs:
        n = c.get("name")
        if n is not None and n.value == preferred:
            return c
    return cs[0] if cs else None
