"""What the ENV rules share."""

from __future__ import annotations

from typing import Iterable

from parallint.model.facts import Value


def _env_items(la) -> Iterable[tuple[str, Value]]:
    seen = set()
    w = la
    while w is not None:
        for k, v in w.env.items():
            if k not in seen:
                seen.add(k)
                yield k, v
        w = w.wrapper


# -- the job's GPU architecture (ENV006-ENV009) ------------------------------------------------
class JobGpu:
    """The one GPU type a job provably runs on: its catalogue name, compute capability, the first
    CUDA that targets it, and where it is stated (None: ``[tool.parallint] gpu``)."""

    __slots__ = ("name", "capability", "min_cuda", "value")

    def __init__(self, name: str, capability: str, min_cuda: str, value: "Value | None") -> None:
        self.name, self.capability, self.min_cuda, self.value = name, capability, min_cuda, value

    def cc(self) -> tuple[int, int]:
        major, _, minor = self.capability.partition(".")
        return int(major), int(minor or 0)


def _arch_of(text: object) -> "tuple[str, dict[str, str]] | None":
    from parallint.estimator.gpus import resolve_gpu
    from parallint.model.versions import gpu_arch

    if not isinstance(text, str) or not text.strip():
        return None
    g = resolve_gpu(text)
    if g is not None:
        arch = gpu_arch(g.name)
        return (g.name, arch) if arch else None
    arch = gpu_arch(text.strip())
    return (arch["name"], arch) if arch else None


def job_gpu(job, ctx) -> "JobGpu | None":
    """The job's GPU: every stated ``hardware.gpu`` of the job is known and of one architecture
    in parallint's table, else the configured ``gpu`` when the job states none; else None."""
    vals = job.facts.all("hardware.gpu")
    if vals:
        if any(not v.known for v in vals):
            return None
        archs = [_arch_of(v.value) for v in vals]
        if any(a is None for a in archs) or len({a[1].get("capability") for a in archs if a}) != 1:
            return None
        name, arch = archs[0]  # type: ignore[misc]
        at = next((v for v in vals if v.span is not None), vals[0])
        return JobGpu(name, arch["capability"], arch.get("min_cuda", ""), at)
    cfg = getattr(ctx, "config", None) or {}
    hit = _arch_of(cfg.get("gpu")) if isinstance(cfg, dict) else None
    if hit is None:
        return None
    return JobGpu(hit[0], hit[1]["capability"], hit[1].get("min_cuda", ""), None)


def gpu_where(gpu: JobGpu, job):
    """Where a finding about the job's GPU goes: the GPU's statement, else the launch line, else
    the job's root file."""
    if gpu.value is not None and gpu.value.span is not None:
        return gpu.value.span
    la = job.launch
    if la is not None:
        return la.span
    return job.root.span(1)


def gpu_said(gpu: JobGpu) -> str:
    how = f"{gpu.value.source}" if gpu.value is not None and gpu.value.source else "[tool.parallint] gpu"
    return f"{gpu.name} (compute capability {gpu.capability}, {how})"
