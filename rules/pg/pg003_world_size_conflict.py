"""PG003 world-size-conflict: world_size=/rank= given to init_process_group disagree with the launcher"""

from __future__ import annotations

from typing import Iterable

from parallint.model.diagnostics import Diagnostic, Related, Severity
from parallint.model.rule import Example, Rule
from parallint.model.script import job_scripts
from parallint.model.world import job_launch_world_size
from parallint.rules.pg._common import _PY


class WorldSizeConflict(Rule):
    code = "PG003"
    calls = frozenset({"init_process_group"})
    name = "world-size-conflict"
    severity = Severity.ERROR
    summary = "world_size=/rank= given to init_process_group disagree with the launcher"
    kinds = _PY
    doc = """
    ## What it does
    Compares `world_size=` and `rank=` hard-coded in `init_process_group(...)` with the number of
    processes the launch starts (torchrun `--nnodes × --nproc_per_node`, srun tasks, ...).

    ## Why it matters
    The rendezvous waits for `world_size` processes. More started than declared: the extra ranks
    fail or join the wrong group; fewer: everyone waits until the timeout. A constant `rank=` makes
    every process claim the same rank.

    ## Example

    ## How to fix
    Leave `world_size` and `rank` out under torchrun (they come from the environment), or read
    them from `WORLD_SIZE`/`RANK`.
    """
    valid = [
        Example(files={
            "run.sh": "torchrun --nnodes 2 --nproc_per_node 8 train.py\n",
            "train.py": """
                import torch.distributed as dist
                dist.init_process_group("nccl")
            """,
        }),
        Example(files={
            "run.sh": "torchrun --nnodes 1 --nproc_per_node 4 train.py\n",
            "train.py": """
                import torch.distributed as dist
                dist.init_process_group("nccl", world_size=4)
            """,
        }),
    ]
    invalid = [
        Example(files={
            "run.sh": "torchrun --nnodes 2 --nproc_per_node 8 train.py\n",
            "train.py": """
                import torch.distributed as dist
                dist.init_process_group("nccl", world_size=8)
            """,
        }, line=2),
        Example(files={
            "run.sh": "torchrun --nproc_per_node 4 train.py\n",
            "train.py": """
                import torch.distributed as dist
                dist.init_process_group("nccl", init_method="env://", rank=0)
            """,
        }, line=2),
    ]

    def check_job(self, job, ctx) -> Iterable[Diagnostic]:
        ws, wv = job_launch_world_size(job)
        if ws is None:
            return
        assert wv is not None  # a known world size comes with its Value
        related = [Related.at(wv.span, f"the launch starts {ws} processes ({wv.source})")] if wv.span else []
        for f, s in job_scripts(job):
            for c in s.by("init_process_group"):
                v = s.arg(c, "world_size")
                if v is not None and v.known and isinstance(v.value, int) and not isinstance(v.value, bool):
                    if v.value != ws:
                        yield self.report(
                            s.arg_span(c, "world_size"),
                            f"init_process_group(world_size={v.value}) but the launch starts {ws} processes; remove "
                            f"world_size= (the launcher sets WORLD_SIZE) or set it to {ws}",
                            related=related,
                        )
                r = s.arg(c, "rank")
                if r is not None and r.known and isinstance(r.value, int) and not isinstance(r.value, bool) and ws > 1:
                    yield self.report(
                        s.arg_span(c, "rank"),
                        f"init_process_group(rank={r.value}) is a constant but the launch starts {ws} "
                        "processes: every process claims the same rank; remove rank= (the launcher sets RANK)",
                        related=related,
                    )
