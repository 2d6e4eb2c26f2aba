"""ENV003 nccl-socket-loopback: NCCL_SOCKET_IFNAME selects only the loopback interface for a multi-node launch."""

from __future__ import annotations

from typing import Iterable

from parallint.model.diagnostics import Diagnostic, Severity
from parallint.model.launches import (
    LAUNCH_FILE_KINDS, effective_nodes, launches,
)
from parallint.model.rule import Example, Rule
from parallint.rules.env._common import _env_items


def _loopback_only(value: str) -> bool:
    items = [i.strip() for i in value.split(",") if i.strip()]
    if not items or any(i.startswith("^") for i in items):
        return False
    return all(i.lstrip("=").startswith("lo") and i.lstrip("=")[2:].isdigit() or i.lstrip("=") == "lo"
               for i in items)


class NcclSocketLoopback(Rule):
    code = "ENV003"
    name = "nccl-socket-loopback"
    severity = Severity.ERROR
    summary = "NCCL_SOCKET_IFNAME selects only the loopback interface for a multi-node launch."
    kinds = LAUNCH_FILE_KINDS
    doc = """
    ## What it does
    Reports `NCCL_SOCKET_IFNAME=lo` (or a list of only loopback interfaces) in the environment of a
    launch that spans more than one node.

    ## Why it matters
    NCCL's bootstrap and socket transport then listen on 127.0.0.1, which no other node can reach:
    the first collective hangs or fails with "Connection refused" (pytorch#52916).

    ## Example

    ## How to fix
    Name the cluster network interface (`eth0`, `ib0`, `bond0`), or exclude loopback with
    `NCCL_SOCKET_IFNAME=^lo,docker`.
    """
    valid = (
        Example("""
        #!/bin/bash
        #SBATCH --nodes=2
        export NCCL_SOCKET_IFNAME=^lo,docker0
        srun torchrun --nnodes=2 --nproc_per_node=8 train.py
        """, filename="train.sbatch"),
        Example("""
        #!/bin/bash
        export NCCL_SOCKET_IFNAME=lo
        torchrun --standalone --nnodes=1 --nproc_per_node=8 train.py
        """, filename="run.sh"),
    )
    invalid = (
        Example("""
        #!/bin/bash
        #SBATCH --nodes=2
        export NCCL_SOCKET_IFNAME=lo
        srun torchrun --nnodes=2 --nproc_per_node=8 train.py
        """, filename="train.sbatch", line=3),
    )

    def check_file(self, f, ctx) -> Iterable[Diagnostic]:
        seen = set()
        for la in launches(f):
            n = effective_nodes(la)
            if n is None or n <= 1:
                continue
            for name, v in _env_items(la):
                if name != "NCCL_SOCKET_IFNAME" or not v.known or v.span in seen:
                    continue
                if _loopback_only(str(v.value)):
                    seen.add(v.span)
                    yield self.report(v.span or la.span,
                                      f"NCCL_SOCKET_IFNAME={v.value} keeps NCCL on the loopback interface but the "
                                      f"job spans {n} nodes: the other nodes cannot connect; set it to the interface "
                                      f"between the nodes (e.g. eth0, ib0) or unset it")
