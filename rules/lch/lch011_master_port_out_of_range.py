"""LCH011 master-port-out-of-range: The master/rendezvous port is above 65535."""

from __future__ import annotations

from typing import Iterable

from parallint.model.diagnostics import Diagnostic, Severity
from parallint.model.facts import Value
from parallint.model.launches import (
    LAUNCH_FILE_KINDS, launches,
)
from parallint.model.rule import Example, Rule
from parallint.rules.lch._common import _int_text


class MasterPortOutOfRange(Rule):
    code = "LCH011"
    name = "master-port-out-of-range"
    severity = Severity.ERROR
    summary = "The master/rendezvous port is above 65535."
    kinds = LAUNCH_FILE_KINDS
    doc = """
    ## What it does
    Reports a literal rendezvous port above 65535: `--master_port`, `--main_process_port`
    (accelerate), the port of `--rdzv_endpoint`, and `MASTER_PORT` in the environment of a process
    that reads it (a plain `python` under srun/mpirun).

    ## Why it matters
    TCP ports are 16-bit. The store cannot bind or connect: the job fails at start-up on every
    node, or — for a computed port such as `29500 + $SLURM_JOB_ID` written out by hand — after the
    allocation was granted.

    ## Example

    ## How to fix
    Use a free port between 1024 and 65535 (29500 is the PyTorch default). Port 0 (any free port,
    as in torchtitan's `--rdzv_endpoint=localhost:0`) is fine on one node and is not reported.
    """
    valid = (
        Example("""
        #!/bin/bash
        torchrun --nproc_per_node=8 --master_port=29500 train.py
        """, filename="run.sh"),
        Example("""
        #!/bin/bash
        torchrun --nnodes=2 --nproc_per_node=8 --rdzv_backend=c10d --rdzv_endpoint=$HEAD:$((29500 + 1)) train.py
        """, filename="run.sh"),
    )
    invalid = (
        Example("""
        #!/bin/bash
        torchrun --nproc_per_node=8 --master_port=295000 train.py
        """, filename="run.sh", line=2),
        Example("""
        #!/bin/bash
        deepspeed --num_gpus 8 --master_port 70000 train.py --deepspeed ds.json
        """, filename="run.sh", line=2),
    )

    def check_file(self, f, ctx) -> Iterable[Diagnostic]:
        seen = set()
        for la in launches(f):
            cands = [(la.options.get(k), f"--{k}") for k in ("master_port", "main_process_port")]
            ep = la.options.get("rdzv_endpoint")
            if ep is not None and ep.known and isinstance(ep.value, str) and ep.value.count(":") == 1:
                port = ep.value.rsplit(":", 1)[1]
                cands.append((Value(port, ep.span, True, "", ep.source), "--rdzv_endpoint port"))
            if la.launcher == "python" and la.wrapper is not None:
                cands.append((la.env.get("MASTER_PORT"), "MASTER_PORT"))
            for v, what in cands:
                p = _int_text(v)
                if p is None or p <= 65535 or v.span in seen:
                    continue
                seen.add(v.span)
                yield self.report(v.span or la.span, f"{what} {p} is not a TCP port (0-65535): the rendezvous "
                                                     f"store cannot listen on it; use a port from 1024 to 65535 (e.g. 29500)")
