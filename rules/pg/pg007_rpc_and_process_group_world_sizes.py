"""PG007 rpc-and-process-group-world-sizes: rpc.init_rpc and init_process_group on one env:// rendezvous with different world sizes"""

from __future__ import annotations

from typing import Iterable

from parallint.model.diagnostics import Diagnostic, Related, Severity
from parallint.model.rule import Example, Rule
from parallint.model.script import Call, Script, script_of
from parallint.rules.pg._common import _PY


def _int_arg(s: Script, c: Call, keyword: str, pos: int) -> int | None:
    v = s.arg(c, keyword, pos)
    if v is not None and v.known and isinstance(v.value, int) and not isinstance(v.value, bool):
        return int(v.value)
    return None


def _env_rendezvous(s: Script, c: Call, options: tuple[tuple[str, int], ...]) -> bool:
    """The call rendezvous through ``env://`` (MASTER_ADDR:MASTER_PORT): none of ``options`` is
    passed, or ``init_method`` is the literal ``env://``."""
    if c.has_star():
        return False
    for kw, pos in options:
        v = s.arg(c, kw, pos)
        if v is None:
            continue
        if kw == "init_method" and v.known and v.value == "env://":
            continue
        return False
    return True


def _free(s: Script, c: Call) -> bool:
    """The call runs from module level under no rank condition (every process makes it)."""
    chains = s.effective_guards(c)
    return chains is not None and not any(g.rank for chain in chains for g in chain)


class RpcAndProcessGroupWorldSizes(Rule):
    code = "PG007"
    calls = frozenset({"init_rpc", "init_process_group"})
    name = "rpc-and-process-group-world-sizes"
    severity = Severity.ERROR
    summary = "rpc.init_rpc and init_process_group on one env:// rendezvous with different world sizes"
    kinds = _PY
    doc = """
    ## What it does
    Flags a script whose every process calls both `init_process_group(world_size=A)` and
    `rpc.init_rpc(world_size=B)` with A ≠ B (both known) when both rendezvous through `env://`,
    that is at `MASTER_ADDR:MASTER_PORT`: no `init_method` (or `"env://"`) and no `store` for the
    process group, no `rpc_backend_options` for RPC. Calls under a rank branch are left alone
    (PyTorch's DDP-with-RPC recipe starts the process group on the trainers only, and gives RPC
    its own `init_method`).

    ## Why it matters
    Both rendezvous use one TCP store on one port, and each waits there for its own number of
    workers: the one with the larger world waits for processes that never come, and the store
    its rank 0 hosts may already be taken by the other. The job hangs at start-up or fails with
    "address already in use".

    ## Example

    ## How to fix
    Give both the same world size, or give RPC its own rendezvous:
    `rpc_backend_options=rpc.TensorPipeRpcBackendOptions(init_method="tcp://host:other_port")`.
    """
    valid = [
        Example("""
            import os
            import torch.distributed as dist
            import torch.distributed.rpc as rpc

            rank, world = int(os.environ["RANK"]), 4
            dist.init_process_group("gloo", rank=rank, world_size=world)
            rpc.init_rpc(f"worker{rank}", rank=rank, world_size=world)
        """),
        # the DDP + RPC recipe: trainers only in the process group, RPC on its own port
        Example("""
            import torch.distributed as dist
            import torch.distributed.rpc as rpc

            def run_worker(rank, world_size):
                options = rpc.TensorPipeRpcBackendOptions(init_method="tcp://localhost:29501")
                if rank <= 1:
                    dist.init_process_group(backend="gloo", rank=rank, world_size=2)
                    rpc.init_rpc(f"trainer{rank}", rank=rank, world_size=world_size, rpc_backend_options=options)
                else:
                    rpc.init_rpc("ps", rank=rank, world_size=world_size, rpc_backend_options=options)
        """),
    ]
    invalid = [
        Example("""
            import os
            import torch.distributed as dist
            import torch.distributed.rpc as rpc

            rank = int(os.environ["RANK"])
            dist.init_process_group("gloo", rank=rank, world_size=2)
            rpc.init_rpc(f"worker{rank}", rank=rank, world_size=3)
        """, line=7),
    ]

    def check_file(self, f, ctx) -> Iterable[Diagnostic]:
        s = script_of(f)
        if s is None or not s.has("init_rpc") or not s.has("init_process_group"):
            return
        pgs = [(c, _int_arg(s, c, "world_size", 3)) for c in s.by("init_process_group")
               if _free(s, c) and _env_rendezvous(s, c, (("init_method", 1), ("store", 5)))]
        pgs = [(c, n) for c, n in pgs if n is not None]
        if len({n for _, n in pgs}) != 1:
            return
        pg, pn = pgs[0]
        for c in s.by("init_rpc"):
            if not _free(s, c) or not _env_rendezvous(s, c, (("rpc_backend_options", 4),)):
                continue
            n = _int_arg(s, c, "world_size", 3)
            if n is None or n == pn:
                continue
            yield self.report(
                s.arg_span(c, "world_size", 3),
                f"rpc.init_rpc(world_size={n}) and init_process_group(world_size={pn}) both rendezvous at "
                f"MASTER_ADDR:MASTER_PORT (env://), each waiting for its own number of workers: the start-up "
                f"hangs or the port is taken; set both to one world size, or pass "
                "rpc_backend_options=rpc.TensorPipeRpcBackendOptions(init_method=...) with another port",
                related=[Related.at(s.arg_span(pg, "world_size", 3), f"init_process_group(world_size={pn})")],
            )
