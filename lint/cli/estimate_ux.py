"""``estimate``/``plan`` conveniences: bundled presets (``--preset``, ``parallint presets``), GPU
names checked with a did-you-mean, and, when no layout fits, the smallest GPU count that does."""

from __future__ import annotations

import difflib


def gpu_error(name: str) -> str | None:
    """None when ``name`` is a GPU of the catalogue, else a one-line message with suggestions."""
    from parallint.estimator.gpus import _norm, catalogue, resolve_gpu

    g = resolve_gpu(name)
    if g is not None and not _size_disagrees(name, g):
        return None
    names = [g.name for g in catalogue()]
    keys = {}
    for g in catalogue():
        for alias in (g.name, *g.aliases):
            keys.setdefault(_norm(alias), g.name)
    close = difflib.get_close_matches(_norm(name), list(keys), n=3, cutoff=0.5)
    hint = list(dict.fromkeys(keys[k] for k in close))
    if hint:
        return f"unknown GPU '{name}' (did you mean {' or '.join(repr(h) for h in hint)}?)"
    return f"unknown GPU '{name}' (known: {', '.join(names)})"


def preset_error(name: str) -> str | None:
    from parallint.estimator.spec import preset_name, presets

    if preset_name(name) is not None:
        return None
    close = difflib.get_close_matches(name.lower(), list(presets()), n=3, cutoff=0.5)
    hint = f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else " (see 'parallint presets')"
    return f"unknown preset '{name}'{hint}"


def preset_spec(name: str, config: dict | None = None) -> tuple[str, dict]:
    """(job name, job spec) of a bundled model preset."""
    from parallint.estimator.spec import preset_name

    canonical = preset_name(name) or name
    spec: dict = {"model": {"preset": canonical}}
    if config and config.get("gpu"):
        spec["hardware"] = {"gpu": config["gpu"]}
    return f"preset {canonical}", spec


def presets_table() -> str:
    from parallint.estimator.params import ShapeError, count_params
    from parallint.estimator.spec import presets

    rows = []
    for name, shape in presets().items():
        try:
            n = count_params(dict(shape))
            size = f"{n / 1e9:.1f}B" if n >= 1e9 else f"{n / 1e6:.0f}M"
        except (ShapeError, ValueError, TypeError, KeyError):
            size = "?"
        moe = f", {shape['num_experts']} experts" if shape.get("num_experts") else ""
        rows.append((name, size, f"{shape.get('layers')} layers, hidden {shape.get('hidden')}, "
                                 f"{shape.get('heads')} heads, seq {shape.get('seq_len')}{moe}"))
    w0 = max(len(r[0]) for r in rows)
    w1 = max(len(r[1]) for r in rows)
    return "".join(f"{a:<{w0}}  {b:>{w1}}  {c}\n" for a, b, c in rows)


def smallest_fit(spec: dict, gpus: int, gpu: str, headroom: float, gpus_per_node: int | None = None,
                 limit: int = 1 << 16, budget: int = 48):
    """(GPU count, best layout) for the smallest count above ``gpus`` at which some layout fits
    (counts tried: multiples of a node, then powers of two), or None within ``limit``."""
    from parallint.estimator.gpus import resolve_gpu
    from parallint.engine.layouts import plan

    g = resolve_gpu(gpu)
    node = gpus_per_node or (g.gpus_per_node if g else 8) or 8
    counts = set()
    n = node
    while n <= limit:
        if n > gpus:
            counts.add(n)
        n = n + node if n < 16 * node else n * 2
    p = 1
    while p <= limit:
        if p > gpus:
            counts.add(p)
        p *= 2
    for n in sorted(counts)[:budget]:
        try:
            layouts = plan(spec, n, gpu, headroom, gpus_per_node=gpus_per_node)
        except (ValueError, ZeroDivisionError):
            continue
        if layouts:
            return n, layouts[0]
    return None


def _size_disagrees(name: str, gpu) -> bool:
    """A typed name that states a memory size (``...40GB``, or a typo such as ``4OGB``) the
    catalogue entry it fell back to does not have: ``A100-41GB`` is not the A100-80GB."""
    import re

    from parallint.estimator.gpus import GIB, _index, _norm

    if _norm(name) in _index():
        return False
    low = name.lower()
    if not re.search(r"[0-9o]{2,3}\s*gi?b?\b", low[3:]):  # after the family token's start
        return False
    size = re.search(r"(\d{2,3})\s*gi?b?\b", low)
    return size is None or int(size.group(1)) != round(gpu.memory_bytes / GIB)
