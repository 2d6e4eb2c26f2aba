"""DDP004 multiple-device-ids: DistributedDataParallel device_ids with more than one element"""

from __future__ import annotations

from typing import Iterable

from parallint.model.diagnostics import Diagnostic, Severity
from parallint.model.rule import Example, Rule
from parallint.model.script import script_of
from parallint.rules.ddp._common import _PY


class MultipleDeviceIds(Rule):
    code = "DDP004"
    calls = frozenset({"ddp"})
    name = "multiple-device-ids"
    severity = Severity.ERROR
    summary = "DistributedDataParallel device_ids with more than one element"
    kinds = _PY
    doc = """
    ## What it does
    Flags `DistributedDataParallel(..., device_ids=[...])` given more than one device.

    ## Why it matters
    Single-process multi-device DDP was removed: DDP raises "device_ids can only be None or
    contain a single element" when the job starts, after the GPUs are allocated.

    ## Example

    ## How to fix
    Start one process per GPU (torchrun `--nproc_per_node`) and pass each process its own device:
    `device_ids=[local_rank]`.
    """
    valid = [
        Example("""
            from torch.nn.parallel import DistributedDataParallel as DDP
            model = DDP(model, device_ids=[local_rank], output_device=local_rank)
        """),
        Example("""
            import torch
            model = torch.nn.DataParallel(model, device_ids=[0, 1, 2, 3])
        """),
    ]
    invalid = [
        Example("""
            from torch.nn.parallel import DistributedDataParallel as DDP
            model = DDP(model, device_ids=[0, 1, 2, 3])
        """, line=2),
        Example("""
            import torch
            GPUS = list(range(2))
            model = torch.nn.parallel.DistributedDataParallel(model, device_ids=GPUS)
        """, line=3),
    ]

    def check_file(self, f, ctx) -> Iterable[Diagnostic]:
        s = script_of(f)
        if s is None:
            return
        for c in s.by("ddp"):
            v = s.arg(c, "device_ids", 1)
            if v is None or not v.known or not isinstance(v.value, (list, tuple)):
                continue
            if len(v.value) > 1:
                yield self.report(
                    s.arg_span(c, "device_ids", 1),
                    f"DistributedDataParallel got device_ids with {len(v.value)} devices "
                    f"({list(v.value)!r}); DDP accepts one device per process; pass device_ids=[local_rank] and "
                    "start one process per GPU",
                )
