"""DDP — data-parallel wrappers (DDP001–DDP004)."""

from __future__ import annotations

from typing import Iterable

from parallint.diagnostics import Diagnostic, Severity, Span
from parallint.readers.python import Script, job_scripts, script_of
from parallint.rule import Example, Rule

_PY = frozenset({"python"})


class FindUnusedParameters(Rule):
    code = "DDP001"
    facts = frozenset({"ddp.find_unused_parameters"})
    name = "find-unused-parameters"
    severity = Severity.WARNING
    summary = "find_unused_parameters=True makes DDP traverse the autograd graph every step"
    kinds = frozenset({"python", "hftrainargs", "accelerate", "nemo", "foundry"})
    doc = """
    ## What it does
    Flags `find_unused_parameters=True` wherever it reaches DistributedDataParallel: the
    `DistributedDataParallel(...)` constructor, accelerate's `DistributedDataParallelKwargs`,
    Lightning's `DDPStrategy(...)` or strategy string `ddp_find_unused_parameters_true`, HF
    `TrainingArguments(ddp_find_unused_parameters=True)`, and the same key in YAML/JSON configs.

    ## Why it matters
    With the flag on, DDP walks the autograd graph after every forward pass to find parameters
    that did not take part, and it cannot overlap all of its gradient all-reduce with backward.
    When every parameter is used (the usual case) this is pure overhead on every step.

    ## Example
    ```python
    model = DDP(model, device_ids=[local_rank], find_unused_parameters=True)
    ```

    ## How to fix
    Drop the flag. If DDP then reports unused parameters, remove the unused submodules from the
    model or freeze them (`requires_grad_(False)`); keep the flag only for models whose forward
    really skips parameters depending on the input, or use `static_graph=True` when the set of
    used parameters is the same every step.
    """
    valid = [
        Example("""
            import torch.distributed as dist
            from torch.nn.parallel import DistributedDataParallel as DDP
            model = DDP(model, device_ids=[local_rank])
        """),
        Example("""
            import os
            from torch.nn.parallel import DistributedDataParallel as DDP
            model = DDP(model, find_unused_parameters=os.environ.get("FIND_UNUSED") == "1")
        """),
        Example("""
            from transformers import TrainingArguments
            args = TrainingArguments(output_dir="out", ddp_find_unused_parameters=False)
        """),
    ]
    invalid = [
        Example("""
            import torch.nn.parallel as par
            model = par.DistributedDataParallel(model, device_ids=[local_rank], find_unused_parameters=True)
        """, line=2),
        Example("""
            from accelerate import Accelerator, DistributedDataParallelKwargs
            kwargs = DistributedDataParallelKwargs(find_unused_parameters=True)
            accelerator = Accelerator(kwargs_handlers=[kwargs])
        """, line=2),
        Example("""
            import lightning as L
            from lightning.pytorch.strategies import DDPStrategy
            FIND_UNUSED = True
            trainer = L.Trainer(strategy=DDPStrategy(find_unused_parameters=FIND_UNUSED), devices=8)
        """, line=4),
        Example("""
            import pytorch_lightning as pl
            trainer = pl.Trainer(accelerator="gpu", devices=4, strategy="ddp_find_unused_parameters_true")
        """, line=2),
        Example("""
            from transformers import TrainingArguments
            args = TrainingArguments(output_dir="out", ddp_find_unused_parameters=True)
        """, line=2),
    ]

    def check_file(self, f, ctx) -> Iterable[Diagnostic]:
        for v in f.facts.known("ddp.find_unused_parameters"):
            if v.value is True:
                where = f" ({v.source})" if v.source else ""
                yield self.report(
                    v.span or Span.whole_file(f.path),
                    f"find_unused_parameters=True{where}: DDP searches the autograd graph for unused "
                    "parameters after every forward pass and delays gradient all-reduce",
                )


def _device_uses(s: Script):
    """(expression node, span, frame, what) for every place an expression selects the device."""
    for c in s.by("ddp"):
        n = c.arg_node("device_ids", 1)
        if n is not None and hasattr(n, "elements") and len(n.elements) == 1:
            yield n.elements[0].value, c.frame, "device_ids=[...]"
    for c in s.by("set_device"):
        if c.qnames & {"torch.cuda.set_device", "torch.accelerator.set_device_index"}:
            n = c.arg_node("device", 0)
            if n is not None:
                yield n, c.frame, "torch.cuda.set_device(...)"
    for c in s.calls:
        if c.method in ("to", "cuda") and not c.groups and c.receiver is not None:
            n = c.arg_node("device", 0)
            if n is not None:
                yield n, c.frame, f".{c.method}(...)"
        elif "torch.device" in c.qnames:
            n = c.arg_node("index", 1)
            if n is not None:
                yield n, c.frame, "torch.device(...)"
    for expr, _span, frame, _guards in s.fstrings:
        yield expr, frame, 'f"cuda:{...}"'


class GlobalRankAsDevice(Rule):
    code = "DDP002"
    calls = frozenset({"ddp", "set_device"})
    facts = frozenset({"parallel.nodes"})
    name = "global-rank-as-device"
    severity = Severity.ERROR
    summary = "the global rank selects the CUDA device (use the local rank)"
    kinds = frozenset()  # job-level: the severity depends on how many nodes the launch spans
    doc = """
    ## What it does
    Flags the global rank (`dist.get_rank()`, `RANK`, `SLURM_PROCID`, or a variable holding one)
    used to pick the GPU: `device_ids=[rank]`, `torch.cuda.set_device(rank)`, `.to(rank)`,
    `.cuda(rank)`, `torch.device("cuda", rank)`, `f"cuda:{rank}"`. A warning for a script alone;
    an error when the launch that starts it spans more than one node.

    ## Why it matters
    Device indices are per node (0..7 on an 8-GPU box) while the global rank runs over the whole
    job. On the second node rank 8 asks for `cuda:8`, which does not exist: "invalid device
    ordinal". On one node the two coincide, so the bug only appears when the job grows.

    ## Example
    ```python
    rank = dist.get_rank()
    torch.cuda.set_device(rank)
    ```

    ## How to fix
    Use the local rank: `local_rank = int(os.environ["LOCAL_RANK"])` (set by torchrun, accelerate
    and DeepSpeed launchers; `SLURM_LOCALID` under srun), or `rank % torch.cuda.device_count()`.
    """
    valid = [
        Example("""
            import os
            import torch
            import torch.distributed as dist
            from torch.nn.parallel import DistributedDataParallel as DDP
            local_rank = int(os.environ["LOCAL_RANK"])
            torch.cuda.set_device(local_rank)
            model = DDP(model.to(local_rank), device_ids=[local_rank])
        """),
        Example("""
            import torch
            import torch.distributed as dist
            rank = dist.get_rank()
            device_id = rank % torch.cuda.device_count()
            model = model.to(device_id)
        """),
        Example("""
            import torch
            def worker(rank, world_size):
                torch.cuda.set_device(rank)
        """),
    ]
    invalid = [
        Example("""
            import torch
            import torch.distributed as dist
            from torch.nn.parallel import DistributedDataParallel as DDP
            dist.init_process_group("nccl")
            rank = dist.get_rank()
            torch.cuda.set_device(rank)
        """, line=6),
        Example("""
            import os
            from torch.nn.parallel import DistributedDataParallel as DDP
            rank = int(os.environ["RANK"])
            model = DDP(model, device_ids=[rank])
        """, line=4),
        Example(
            files={
                "run.sh": "torchrun --nnodes 2 --nproc_per_node 8 train.py\n",
                "train.py": """
                    import os
                    import torch
                    import torch.distributed as dist
                    dist.init_process_group("nccl")
                    rank = int(os.environ["RANK"])
                    model = model.cuda(rank)
                """,
            },
            line=6,
        ),
    ]

    def _findings(self, f, s: Script, severity: Severity, nodes: int | None) -> Iterable[Diagnostic]:
        seen = set()
        for node, frame, what in _device_uses(s):
            if s.rank_kind(node, frame) != "global":
                continue
            span = s.span_of(node)
            if (span.line, span.column) in seen:
                continue
            seen.add((span.line, span.column))
            yield self.report(
                span,
                f"the global rank `{s.code(node)}` selects the device in {what}; device indices are "
                "per node, use the local rank (LOCAL_RANK)"
                + (f": this job spans {nodes} nodes, ranks >= the GPUs per node ask for a device that does not exist"
                   if nodes else ""),
                severity=severity,
            )

    def check_job(self, job, ctx) -> Iterable[Diagnostic]:
        nodes = job.int("parallel.nodes")
        multi = nodes is not None and nodes > 1
        for f, s in job_scripts(job):
            yield from self._findings(f, s, Severity.ERROR if multi else Severity.WARNING, nodes if multi else None)


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
    ```python
    out = torch.utils.checkpoint.checkpoint(block, x)
    ```

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
    ```python
    model = DDP(model, device_ids=[0, 1, 2, 3])
    ```

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
                    f"({list(v.value)!r}); DDP accepts one device per process",
                )


__all__ = ["FindUnusedParameters", "GlobalRankAsDevice", "ReentrantCheckpointUnderDDP", "MultipleDeviceIds"]
