"""LCH012 master-addr-differs: The per-node commands of one job name different master addresses."""

from __future__ import annotations

from typing import Iterable

from parallint.model.diagnostics import Diagnostic, Severity
from parallint.model.facts import Value
from parallint.model.launches import (
    LAUNCH_FILE_KINDS, launches, related_at,
)
from parallint.model.rule import Example, Rule
from parallint.rules.lch._common import RANK_OPTIONS, _int_text


class MasterAddrDiffers(Rule):
    code = "LCH012"
    name = "master-addr-differs"
    severity = Severity.ERROR
    summary = "The per-node commands of one job name different master addresses."
    kinds = LAUNCH_FILE_KINDS
    doc = """
    ## What it does
    In a file that holds the per-node commands of one multi-node job — the same launcher and
    script, the same node count, different literal node ranks — reports a literal
    `--master_addr`/`--main_process_ip`/`--rdzv_endpoint` host that differs from the one of the
    rank-0 command.

    ## Why it matters
    Every node must rendezvous with the same master. Nodes given another address wait for a
    master that never comes (or form a job of their own), and the rest hang until the timeout.
    It typically happens when a command is copied for the next node and its own IP is put in
    `--master_addr`.

    ## Example

    ## How to fix
    Give every node the rank-0 node's address.
    """
    valid = (
        Example("""
        #!/bin/bash
        if [ "$NODE" = 0 ]; then
          torchrun --nnodes=2 --node_rank=0 --nproc_per_node=8 --master_addr=10.0.0.1 train.py
        else
          torchrun --nnodes=2 --node_rank=1 --nproc_per_node=8 --master_addr=10.0.0.1 train.py
        fi
        """, filename="run.sh"),
        Example("""
        #!/bin/bash
        torchrun --nnodes=2 --node_rank=0 --nproc_per_node=8 --master_addr=10.0.0.1 train.py
        torchrun --nnodes=2 --node_rank=0 --nproc_per_node=8 --master_addr=10.0.0.9 eval.py
        """, filename="run.sh"),
    )
    invalid = (
        Example("""
        #!/bin/bash
        if [ "$NODE" = 0 ]; then
          torchrun --nnodes=2 --node_rank=0 --nproc_per_node=8 --master_addr=10.0.0.1 train.py
        else
          torchrun --nnodes=2 --node_rank=1 --nproc_per_node=8 --master_addr=10.0.0.2 train.py
        fi
        """, filename="run.sh", line=5),
    )

    @staticmethod
    def _addr(la) -> Value | None:
        for key in ("master_addr", "main_process_ip", "rdzv_endpoint"):
            v = la.options.get(key)
            if v is not None:
                if not v.known or not isinstance(v.value, str):
                    return None
                host = v.value
                if key == "rdzv_endpoint":
                    host = host.rsplit(":", 1)[0] if host.count(":") == 1 else host
                return Value(host, v.span, True, "", f"--{key}")
        return None

    def check_file(self, f, ctx) -> Iterable[Diagnostic]:
        groups: dict[tuple, list[tuple[int, Value]]] = {}
        for la in launches(f):
            names = RANK_OPTIONS.get(la.launcher)
            if names is None or la.script is None or not la.script.known:
                continue
            r = _int_text(la.options.get(names[0]))
            nv = la.options.get(names[1])
            addr = self._addr(la)
            if r is None or addr is None or nv is None or not nv.known:
                continue
            n = str(nv.value)
            if not (n.isdigit() and int(n) > 1):
                continue
            groups.setdefault((la.launcher, str(la.script.value), n), []).append((r, addr))
        for members in groups.values():
            if len({r for r, _ in members}) < 2:
                continue  # not the per-node commands of one job
            ref = min(members, key=lambda m: m[0])
            for r, addr in members:
                if addr.value != ref[1].value:
                    yield self.report(addr.span, f"node rank {r} rendezvouses at {addr.value!r} but node rank "
                                                 f"{ref[0]} at {ref[1].value!r}: the nodes of one job need one master; set every "
                                                 f"node's master address to {ref[1].value!r}",
                                      related=related_at(ref[1], f"node rank {ref[0]}: {ref[1].value}"))
