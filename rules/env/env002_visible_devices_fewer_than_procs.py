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
    facts = frozenset({"parallel.world_size", "parallel.procs_per_node", "hardware.visible_devices"})
    name = "visible-devices-fewer-than-procs"
    severity = Severity.ERROR
    summary = "CUDA_VISIBLE_DEVICES lists fewer devices than the processes started per node."
    kinds = LAUNCH_FILE_KINDS | {"accelerate"}
    doc = """
    ## What it does
    Counts the devices in a literal `CUDA_VISIBLE_DEVICES` set for `torchrun`,
    `torch.distributed.launch` or `accelerate launch` and compares with the processes per node.
    (Under `srun` with a GPU request Slurm sets the variable itself; `deepspeed` ignores it when
    `--num_gpus`/`--include` are given, so neither is checked.) An accelerate config's literal
    `gpu_ids` counts the same way: `accelerate launch` exports it as `CUDA_VISIBLE_DEVICES`, and
    starts `num_processes / num_machines` processes on each machine (accelerate#3894: `gpu_ids: 0,1`
    with 10 processes on 2 machines).

    ## Why it matters
    Local ranks beyond the visible devices call `set_device(LOCAL_RANK)` on a device that does not
    exist ("invalid device ordinal") or, without `set_device`, pile onto the same GPU.

    ## Example

    ## How to fix
    List one device per process, or lower `--nproc_per_node`.
    """
    valid = (
        Example("""
        compute_environment: LOCAL_MACHINE
        distributed_type: MULTI_GPU
        gpu_ids: 0,1
        machine_rank: 1
        num_machines: 2
        num_processes: 4
        """, filename="accelerate_config.yaml"),
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
        compute_environment: LOCAL_MACHINE
        distributed_type: MULTI_GPU
        gpu_ids: 0,1
        machine_rank: 1
        num_machines: 2
        num_processes: 10
        """, filename="accelerate_config.yaml", line=3),
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
        if f.kind == "accelerate":
            yield from self._gpu_ids(f)
            return
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

    def _gpu_ids(self, f) -> Iterable[Diagnostic]:
        """An accelerate config's ``gpu_ids`` (accelerate exports them as CUDA_VISIBLE_DEVICES)
        against the processes per machine it starts (``num_processes / num_machines``)."""
        v, p = f.facts.get("hardware.visible_devices"), f.facts.get("parallel.procs_per_node")
        if v is None or p is None or not v.known:
            return
        devs = [d for d in str(v.value).split(",") if d.strip()]
        pi = known_int(p)
        if not devs or pi is None or pi <= len(devs):
            return
        yield self.report(
            v.span,
            f"gpu_ids {v.value} makes {len(devs)} device(s) visible (accelerate exports it as "
            f"CUDA_VISIBLE_DEVICES) but {pi} processes start on each machine ({p.source}); list {pi} devices "
            f"or lower num_processes to {len(devs)} × num_machines",
            related=related_at(p, f"{pi} processes per machine"),
        )
