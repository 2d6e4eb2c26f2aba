"""LCH010 node-rank-out-of-range: --node_rank is not smaller than --nnodes."""

from __future__ import annotations

from typing import Iterable

from parallint.model.diagnostics import Diagnostic, Severity
from parallint.model.launches import (
    LAUNCH_FILE_KINDS, launches, related_at,
)
from parallint.model.rule import Example, Rule
from parallint.rules.lch._common import RANK_OPTIONS, _int_text


class NodeRankOutOfRange(Rule):
    code = "LCH010"
    name = "node-rank-out-of-range"
    severity = Severity.ERROR
    summary = "--node_rank is not smaller than --nnodes."
    kinds = LAUNCH_FILE_KINDS
    doc = """
    ## What it does
    Reports a literal `--node_rank` (torchrun, `python -m torch.distributed.run`, deepspeed) or
    `--machine_rank` (accelerate) that is not smaller than the node count of the same command
    (`--nnodes`, the upper end of a `MIN:MAX` range; `--num_nodes`; `--num_machines`).

    ## Why it matters
    Node ranks count from 0: with `--nnodes=2` the ranks are 0 and 1. A rank of 2 gives global
    ranks past the world size; the rendezvous never completes (or the process group rejects the
    rank) and every node waits until the timeout.

    ## Example

    ## How to fix
    Number the nodes from 0 to nnodes − 1 (the second node of two is `--node_rank=1`).
    """
    valid = (
        Example("""
        #!/bin/bash
        torchrun --nnodes=2 --node_rank=1 --nproc_per_node=8 --master_addr=10.0.0.1 --master_port=29500 train.py
        """, filename="node1.sh"),
        Example("""
        #!/bin/bash
        torchrun --nnodes=1:4 --node_rank=3 --nproc_per_node=8 --rdzv_endpoint=head:29400 train.py
        """, filename="elastic.sh"),
    )
    invalid = (
        Example("""
        #!/bin/bash
        torchrun --nnodes=2 --node_rank=2 --nproc_per_node=8 --master_addr=10.0.0.1 --master_port=29500 train.py
        """, filename="node2.sh", line=2),
        Example("""
        #!/bin/bash
        accelerate launch --num_machines 2 --machine_rank 2 --num_processes 16 train.py
        """, filename="run.sh", line=2),
    )

    def check_file(self, f, ctx) -> Iterable[Diagnostic]:
        seen = set()
        for la in launches(f):
            names = RANK_OPTIONS.get(la.launcher)
            if names is None:
                continue
            rv, nv = la.options.get(names[0]), la.options.get(names[1])
            r = _int_text(rv)
            if r is None or nv is None or not nv.known:
                continue
            text = str(nv.value).strip()
            m = text.rsplit(":", 1)[-1] if la.launcher != "deepspeed" and ":" in text else text
            n = int(m) if m.isdigit() else None
            if n is None or r < n or (rv.span, nv.span) in seen:
                continue
            seen.add((rv.span, nv.span))
            yield self.report(rv.span or la.span,
                              f"--{names[0]} {r} with --{names[1]} {text}: node ranks run from 0 to {n - 1}; set "
                              f"--{names[0]} below {n} or raise --{names[1]}",
                              related=related_at(nv, f"--{names[1]} {text}"))
