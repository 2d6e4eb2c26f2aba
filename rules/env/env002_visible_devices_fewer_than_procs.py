"""ENV002 visible-devices-fewer-than-procs: CUDA_VISIBLE_DEVICES lists fewer devices than the processes started per node."""

from __future__ import annotations

from typing import Iterable

from parallint.model.diagnostics import Diagnostic, Severity
from parallint.model.facts import known_int
from parallint.model.launches import (
    LAUNCH_FILE_KINDS, launches, procs_per_node, related_at,
)
from parallint.model.rule import Example, Rule


class VisibleDevicesFewerThanProcs(Rule):
    code = "ENV002"
    facts = frozenset({"parallel.world_size"})
    name = "visible-devices-fewer-than-procs"
    severity = Severity.ERROR
    summary = "CUDA_VISIBLE_DEVICES lists fewer devices than the processes started per node."
    kinds = LAUNCH_FILE_KINDS
    doc = """
    ## What it does
    Counts the devices in a literal `CUDA_VISIBLE_DEVICES` set for `torchrun`,
    `torch.distributed.launch` or `accelerate launch` and compares with the processes per node.
    (Under `srun` with a GPU request Slurm sets the variable itself; `deepspeed` ignores it when
    `--num_gpus`/`--include` are given, so neither is checked.)

    ## Why it matters
    Local ranks beyond the visible devices call `set_device(LOCAL_RANK)` on a device that does not
    exist ("invalid device ordinal") or, without `set_device`, pile onto the same GPU.

    ## Example

    ## How to fix
    List one device per process, or lower `--nproc_per_node`.
    """
    valid = (
        Example("""
        #!/bin/bash
        CUDA_VISIBLE_DEVICES=0,1,2,3 torchrun --nproc_per_node=4 train.py
        """, filename="run.sh"),
        Example("""
        #!/bin/bash
        export CUDA_VISIBLE_DEVICES=$GPUS
        torchrun --nproc_per_node=4 train.py
        """, filename="run.sh"),
    )
    invalid = (
        Example("""
        #!/bin/bash
        export CUDA_VISIBLE_DEVICES=0,1
        torchrun --nproc_per_node=4 train.py
        """, filename="run.sh", line=2),
        Example("""
        #!/bin/bash
        CUDA_VISIBLE_DEVICES=0 accelerate launch --num_processes 2 --num_machines 1 train.py
        """, filename="run.sh", line=2),
    )

    def check_file(self, f, ctx) -> Iterable[Diagnostic]:
        for la in launches(f):
            if la.launcher not in ("torchrun", "torch.distributed.run", "torch.distributed.launch", "accelerate"):
                continue
            if la.wrapper is not None and la.wrapper.launcher == "srun":
                continue
            v = la.env.get("CUDA_VISIBLE_DEVICES")
            if v is None or not v.known:
                continue
            devs = [d for d in str(v.value).split(",") if d.strip()]
            if not devs:
                continue
            p = procs_per_node(la)
            if p is None and la.launcher == "accelerate":
                ws = la.facts.get("parallel.world_size")
                if ws is not None and "num_machines" not in la.options:
                    p = ws
            pi = known_int(p)
            if pi is None or pi <= len(devs):
                continue
            assert p is not None  # known_int(None) is None
            yield self.report(
                v.span or la.span,
                f"CUDA_VISIBLE_DEVICES={v.value} shows {len(devs)} device(s) but {pi} processes start on this node "
                f"({p.source}); list {pi} devices or start {len(devs)} "
                f"{'process' if len(devs) == 1 else 'processes'} per node",
                related=related_at(p, f"{p.source} = {pi}"),
            )
