"""parallint's memory estimator: pure Python, no torch, no GPU.

Public API (imported lazily, so ``import parallint.estimator`` costs nothing)::

    from parallint.estimator import estimate, count_params
    from parallint.engine.layouts import plan  # the enumeration filtered by the real layout rules
    est = estimate({"model": {"preset": "llama-2-7b"}, "parallel": {"world_size": 8},
                    "training": {"micro_batch": 1}, "hardware": {"gpu": "A100-80GB"}})
    est.total, est.fits, est.to_json()
    count_params({"layers": 12, "hidden": 768, "heads": 12, "vocab": 50257, "seq_len": 1024})
    plan(spec, gpus=32, gpu="H100-80GB")  # -> [Layout, ...] best first

Modules: ``params`` (exact parameter counts), ``memory`` (per-GPU bytes of the most loaded rank),
``gpus`` (the GPU catalogue), ``spec`` (the normalized job spec, presets, facts -> spec),
``plan`` (candidate layouts and their memory; ``parallint.engine.layouts.plan`` filters them with the
LAY/BAT rules).
"""

from __future__ import annotations

_EXPORTS = {
    "estimate": "parallint.estimator.memory",
    "Estimate": "parallint.estimator.memory",
    "count_params": "parallint.estimator.params",
    "count_active_params": "parallint.estimator.params",
    "ShapeError": "parallint.estimator.params",
    "Layout": "parallint.estimator.plan",
    "resolve_gpu": "parallint.estimator.gpus",
    "spec_from_facts": "parallint.estimator.spec",
    "spec_for_job": "parallint.estimator.spec",
    "normalize": "parallint.estimator.spec",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        import importlib

        value = getattr(importlib.import_module(_EXPORTS[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'parallint.estimator' has no attribute {name!r}")
