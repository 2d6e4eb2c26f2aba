"""PG002 backend-device-mismatch: gloo for CUDA training (slow), or nccl in a script that never uses CUDA (error)"""

from __future__ import annotations

from typing import Iterable

from parallint.model.diagnostics import Diagnostic, Severity
from parallint.model.rule import Example, Rule
from parallint.model.script import script_of
from parallint.rules.pg._common import _PY, _backend, _is_none


def _nccl_subgroup(s) -> bool:
    """The script also creates NCCL process groups (``dist.new_group(ranks, backend="nccl")``): the
    default gloo group then carries CPU messages on purpose, and the GPU collectives run on the
    NCCL groups."""
    for c in s.methods("new_group"):
        for k in c.node.keywords:
            if k.arg == "backend" and "nccl" in s.code(k.value).lower():
                return True
    return False


class BackendDeviceMismatch(Rule):
    code = "PG002"
    calls = frozenset({"ddp", "init_process_group", "set_device"})
    name = "backend-device-mismatch"
    severity = Severity.WARNING
    summary = "gloo for CUDA training (slow), or nccl in a script that never uses CUDA (error)"
    kinds = _PY
    doc = """
    ## What it does
    Flags `init_process_group("gloo")` in a script that trains on CUDA (it sets a CUDA device or
    gives DDP `device_ids`), and, as an error, `init_process_group("nccl")` in a script that wraps a
    model in DDP but never mentions CUDA or a device at all. A gloo default group next to
    `new_group(..., backend="nccl")` groups is a deliberate split (CPU control messages on gloo,
    GPU collectives on NCCL) and is left alone.

    ## Why it matters
    gloo all-reduces CUDA tensors through host memory: many times slower than NCCL. NCCL only
    works on CUDA tensors: a CPU model under NCCL fails at the first all-reduce.

    ## Example

    ## How to fix
    Use `nccl` for GPU training and `gloo` for CPU training, or pick by device:
    `"nccl" if torch.cuda.is_available() else "gloo"`.
    """
    valid = [
        Example("""
            import torch
            import torch.distributed as dist
            dist.init_process_group("nccl")
            torch.cuda.set_device(local_rank)
        """),
        Example("""
            import torch
            import torch.distributed as dist
            backend = "nccl" if torch.cuda.is_available() else "gloo"
            dist.init_process_group(backend)
            torch.cuda.set_device(local_rank)
        """),
        Example("""
            import torch.distributed as dist
            from torch.nn.parallel import DistributedDataParallel as DDP
            dist.init_process_group("gloo")
            model = DDP(model)
        """),
        # a host process and GPU workers: gloo default group for control messages, NCCL for the model
        Example("""
            import torch
            import torch.distributed as dist
            dist.init_process_group(backend="gloo", rank=rank, world_size=world_size, store=store)
            torch.cuda.set_device(gpu_ids[rank - 1])
            mp_group = dist.new_group(ranks=list(range(1, world_size)), backend="nccl")
        """),
    ]
    invalid = [
        Example("""
            import torch
            import torch.distributed as dist
            dist.init_process_group(backend="gloo")
            torch.cuda.set_device(local_rank)
        """, line=3),
        Example("""
            import torch.distributed as dist
            from torch.nn.parallel import DistributedDataParallel as DDP
            dist.init_process_group("nccl")
            model = DDP(model)
        """, line=3),
    ]

    def check_file(self, f, ctx) -> Iterable[Diagnostic]:
        s = script_of(f)
        if s is None:
            return
        inits = s.by("init_process_group")
        backends = {_backend(s, c)[0] for c in inits}
        if len(inits) > 1 and len(backends) > 1:
            return  # a backend per platform or device, chosen on purpose
        for c in inits:
            b, v = _backend(s, c)
            if any(not g.main for g in c.guards):
                continue  # chosen under a condition (platform, device availability)
            if b == "gloo":
                uses_cuda = any(
                    cc.qnames & {"torch.cuda.set_device"} for cc in s.by("set_device")
                ) or any(
                    (n := cc.arg_node("device_ids", 1)) is not None
                    and not _is_none(n)
                    for cc in s.by("ddp")
                )
                if uses_cuda and _nccl_subgroup(s):
                    continue  # gloo for CPU control messages, `new_group(backend="nccl")` for the GPU work
                if uses_cuda:
                    yield self.report(
                        s.arg_span(c, "backend", 0),
                        "gloo backend for a script that trains on CUDA: gloo moves every all-reduce "
                        "through host memory; use nccl for GPU tensors",
                    )
            elif b == "nccl" and s.has("ddp"):
                low = s.text.lower()
                if any(w in low for w in ("cuda", "device", "gpu", "local_rank")):
                    continue
                yield self.report(
                    s.arg_span(c, "backend", 0),
                    "nccl backend in a script that never puts anything on CUDA: NCCL only reduces "
                    "GPU tensors, the first all-reduce of the CPU model fails; use gloo or move the model to the GPU",
                    severity=Severity.ERROR,
                )
