"""PG006 rpc-world-size-conflict: world_size=/rank= given to rpc.init_rpc disagree with the launcher"""

from __future__ import annotations

from typing import Iterable

from parallint.model.diagnostics import Diagnostic, Related, Severity
from parallint.model.rule import Example, Rule
from parallint.model.script import Call, Script, job_scripts
from parallint.model.world import job_launch_world_size
from parallint.rules.pg._common import _PY


def _int_arg(s: Script, c: Call, keyword: str, pos: int) -> int | None:
    v = s.arg(c, keyword, pos)
    if v is not None and v.known and isinstance(v.value, int) and not isinstance(v.value, bool):
        return int(v.value)
    return None


def _under_rank_branch(s: Script, c: Call) -> bool:
    """The call runs under a rank condition (or its reach is unknown): a constant rank there is
    that branch's rank."""
    chains = s.effective_guards(c)
    return chains is None or any(g.rank for chain in chains for g in chain)


class RpcWorldSizeConflict(Rule):
    code = "PG006"
    calls = frozenset({"init_rpc"})
    name = "rpc-world-size-conflict"
    severity = Severity.ERROR
    summary = "world_size=/rank= given to rpc.init_rpc disagree with the launcher"
    kinds = _PY
    doc = """
    ## What it does
    Compares `world_size=` and `rank=` written in `torch.distributed.rpc.init_rpc(name, rank,
    world_size)` with the processes the launch starts (torchrun `--nnodes × --nproc_per_node`,
    srun tasks, ...), as PG003 does for `init_process_group`. A constant `rank=` is flagged only
    outside a rank branch (`if rank == 0: init_rpc("master", rank=0, ...)` is the recipe).

    ## Why it matters
    RPC's rendezvous waits for `world_size` workers before any of them returns from
    `init_rpc`. More processes started than declared: the extra ones fail to join; fewer: every
    worker waits until the timeout. A constant rank makes every worker claim the same slot.

    ## Example

    ## How to fix
    Under torchrun leave `rank` and `world_size` out (RPC's `env://` rendezvous reads `RANK` and
    `WORLD_SIZE`), or pass the launcher's values.
    """
    valid = [
        Example(files={
            "run.sh": "torchrun --nnodes 1 --nproc_per_node 4 rpc_train.py\n",
            "rpc_train.py": """
                import os
                import torch.distributed.rpc as rpc

                rank = int(os.environ["RANK"])
                rpc.init_rpc(f"worker{rank}", rank=rank, world_size=int(os.environ["WORLD_SIZE"]))
                rpc.shutdown()
            """,
        }),
        Example(files={
            "run.sh": "torchrun --nproc_per_node 3 rpc_train.py\n",
            "rpc_train.py": """
                import os
                import torch.distributed.rpc as rpc

                if int(os.environ["RANK"]) == 0:
                    rpc.init_rpc("master", rank=0, world_size=3)
                else:
                    rpc.init_rpc(f"worker{os.environ['RANK']}", rank=int(os.environ["RANK"]), world_size=3)
                rpc.shutdown()
            """,
        }),
    ]
    invalid = [
        Example(files={
            "run.sh": "torchrun --nnodes 2 --nproc_per_node 4 rpc_train.py\n",
            "rpc_train.py": """
                import os
                import torch.distributed.rpc as rpc

                rank = int(os.environ["RANK"])
                rpc.init_rpc(f"worker{rank}", rank=rank, world_size=4)
                rpc.shutdown()
            """,
        }, line=5),
        Example(files={
            "run.sh": "torchrun --nproc_per_node 2 ps.py\n",
            "ps.py": """
                from torch.distributed import rpc

                rpc.init_rpc("ps", rank=0, world_size=2)
            """,
        }, line=3),
    ]

    def check_job(self, job, ctx) -> Iterable[Diagnostic]:
        ws, wv = job_launch_world_size(job)
        if ws is None:
            return
        assert wv is not None
        related = [Related.at(wv.span, f"the launch starts {ws} processes ({wv.source})")] if wv.span else []
        for _f, s in job_scripts(job):
            for c in s.by("init_rpc"):
                n = _int_arg(s, c, "world_size", 3)
                if n is not None and n != ws:
                    yield self.report(
                        s.arg_span(c, "world_size", 3),
                        f"rpc.init_rpc(world_size={n}) but the launch starts {ws} processes: the RPC rendezvous "
                        f"waits for {n} workers; remove world_size= (env:// reads WORLD_SIZE) or set it to {ws}",
                        related=related,
                    )
                r = _int_arg(s, c, "rank", 2)
                if r is not None and r >= 0 and ws > 1 and not _under_rank_branch(s, c):
                    yield self.report(
                        s.arg_span(c, "rank", 2),
                        f"rpc.init_rpc(rank={r}) is a constant but the launch starts {ws} processes: every "
                        "worker claims the same rank; remove rank= (env:// reads RANK) or pass the process's rank",
                        related=related,
                    )
