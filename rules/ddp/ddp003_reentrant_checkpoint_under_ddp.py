"""DDP003 reentrant-checkpoint-under-ddp: torch.utils.checkpoint.checkpoint without use_reentrant=False in a DDP-trained script"""

from __future__ import annotations

from typing import Iterable

from parallint.model.diagnostics import Diagnostic, Severity
from parallint.model.rule import Example, Rule
from parallint.model.script import script_of
from parallint.rules.ddp._common import _PY


class ReentrantCheckpointUnderDDP(Rule):
    code = "DDP003"
    calls = frozenset({"checkpoint", "ddp"})
    name = "reentrant-checkpoint-under-ddp"
    severity = Severity.WARNING
    summary = "torch.utils.checkpoint.checkpoint without use_reentrant=False in a DDP-trained script"
    kinds = _PY
    doc = """
    ## What it does
    Flags `torch.utils.checkpoint.checkpoint(...)` calls that do not pass `use_reentrant=False` in a
    script that wraps its model in DistributedDataParallel (unless the DDP model uses
    `static_graph=True`).

    ## Why it matters
    Reentrant checkpointing runs a second, hidden backward pass. DDP's reducer then sees a
    parameter become ready twice or never and stops with "Expected to mark a variable ready only
    once" or hangs, in particular with `find_unused_parameters=True` or parameters shared
    between checkpointed blocks. PyTorch also warns that the reentrant default is going away.

    ## Example

    ## How to fix
    Pass `use_reentrant=False` (the non-reentrant implementation works with DDP), or build DDP
    with `static_graph=True`.
    """
    valid = [
        Example("""
            import torch.utils.checkpoint as cp
            from torch.nn.parallel import DistributedDataParallel as DDP
            def forward(block, x):
                return cp.checkpoint(block, x, use_reentrant=False)
            model = DDP(model, device_ids=[local_rank])
        """),
        Example("""
            from torch.utils.checkpoint import checkpoint
            def forward(block, x):
                return checkpoint(block, x)
        """),
        Example("""
            from torch.utils.checkpoint import checkpoint
            from torch.nn.parallel import DistributedDataParallel as DDP
            def forward(block, x):
                return checkpoint(block, x)
            model = DDP(model, device_ids=[local_rank], static_graph=True)
        """),
    ]
    invalid = [
        Example("""
            from torch.utils.checkpoint import checkpoint
            from torch.nn.parallel import DistributedDataParallel as DDP
            def forward(block, x):
                return checkpoint(block, x)
            model = DDP(model, device_ids=[local_rank])
        """, line=4),
        Example("""
            import torch
            def forward(block, x):
                return torch.utils.checkpoint.checkpoint(block, x, use_reentrant=True)
            model = torch.nn.parallel.DistributedDataParallel(model)
        """, line=3),
    ]

    def check_file(self, f, ctx) -> Iterable[Diagnostic]:
        s = script_of(f)
        if s is None or not s.has("ddp"):
            return
        static = [s.arg(c, "static_graph") for c in s.by("ddp")]
        if all(v is not None and (not v.known or v.value is True) for v in static):
            return  # every DDP here is static (or may be)
        if s.methods("_set_static_graph"):
            return
        for c in s.by("checkpoint"):
            v = s.arg(c, "use_reentrant")
            if v is None:
                msg = "checkpoint() without use_reentrant=False under DDP: the reentrant default"
            elif v.known and v.value is True:
                msg = "checkpoint(use_reentrant=True) under DDP: reentrant checkpointing"
            else:
                continue
            yield self.report(
                c.span,
                f"{msg} re-runs backward behind DDP's reducer (\"mark a variable ready only once\"); "
                "pass use_reentrant=False or use DDP(static_graph=True)",
            )
