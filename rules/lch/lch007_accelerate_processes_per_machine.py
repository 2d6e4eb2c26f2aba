"""LCH007 accelerate-processes-per-machine: accelerate num_processes is the total over all machines: it must be a multiple of num_machines."""

from __future__ import annotations

from typing import Iterable

from parallint.model.diagnostics import Diagnostic, Related, Severity
from parallint.model.facts import Value, known_int
from parallint.model.launches import (
    LAUNCH_FILE_KINDS, by_layer, first, launches,
)
from parallint.model.rule import Example, Rule


class AccelerateProcessesPerMachine(Rule):
    code = "LCH007"
    facts = frozenset({"parallel.nodes", "parallel.world_size"})
    name = "accelerate-processes-per-machine"
    severity = Severity.ERROR
    summary = "accelerate num_processes is the total over all machines: it must be a multiple of num_machines."
    kinds = LAUNCH_FILE_KINDS | {"accelerate"}
    doc = """
    ## What it does
    Checks accelerate's `num_processes` against `num_machines`, from `accelerate launch` options,
    from an accelerate config file, or one from each (the command line overrides the file):
    `num_processes` must be at least `num_machines` and divisible by it.

    ## Why it matters
    `num_processes` is the total across machines; accelerate computes the processes per machine as
    `num_processes // num_machines` without checking (accelerate#2521). Putting the per-node count
    there (`num_processes: 8` on 2 machines of 8 GPUs) silently halves the job; a count that does not
    divide leaves ranks missing and the rendezvous hangs.

    ## Example

    ## How to fix
    Set `num_processes` to machines × GPUs per machine (16 for 2 × 8).
    """
    valid = (
        Example("""
        #!/bin/bash
        accelerate launch --num_machines 2 --num_processes 16 --machine_rank $RANK train.py
        """, filename="run.sh"),
        Example("""
        compute_environment: LOCAL_MACHINE
        distributed_type: MULTI_GPU
        num_machines: 2
        num_processes: 16
        machine_rank: 0
        """, filename="accelerate_config.yaml"),
    )
    invalid = (
        Example("""
        #!/bin/bash
        accelerate launch --multi_gpu --num_machines 2 --num_processes 3 --machine_rank $RANK train.py
        """, filename="run.sh", line=2),
        Example("""
        compute_environment: LOCAL_MACHINE
        distributed_type: MULTI_GPU
        num_machines: 4
        num_processes: 2
        machine_rank: 0
        """, filename="accelerate_config.yaml", line=4),
        Example(files={
            "run.sh": """
            #!/bin/bash
            accelerate launch --config_file accel.yaml --num_processes 6 train.py
            """,
            "accel.yaml": """
            compute_environment: LOCAL_MACHINE
            distributed_type: MULTI_GPU
            num_machines: 4
            num_processes: 32
            machine_rank: 0
            """,
        }, line=2, paths=["run.sh"]),
    )

    def _verdict(self, np_: Value, nm: Value, related_note: bool = False) -> Diagnostic | None:
        p, m = known_int(np_), known_int(nm)
        if p is None or m is None or m <= 0:
            return None
        if p >= m and p % m == 0:
            return None
        why = "fewer processes than machines" if p < m else f"{p} is not divisible by {m}"
        return self.report(
            np_.span,
            f"accelerate num_processes is the total over all machines: {p} processes on {m} machines ({why}); "
            f"set num_processes to {m} × the processes per machine ("
            + (f"{m}" if p < m else f"{p // m * m} or {p // m * m + m}") + ")",
            related=[Related.at(nm.span, f"num_machines = {m}")] if nm.span and nm.span != np_.span else (),
        )

    def check_file(self, f, ctx) -> Iterable[Diagnostic]:
        if f.kind == "accelerate":
            np_, nm = f.facts.get("parallel.world_size"), f.facts.get("parallel.nodes")
            if np_ is not None and nm is not None:
                d = self._verdict(np_, nm)
                if d is not None:
                    yield d
            return
        for la in launches(f):
            if la.launcher != "accelerate":
                continue
            np_ = by_layer(la, "parallel.world_size").get("launcher")
            nm = by_layer(la, "parallel.nodes").get("launcher")
            if np_ is not None and nm is not None:
                d = self._verdict(np_, nm)
                if d is not None:
                    yield d

    def check_job(self, job, ctx) -> Iterable[Diagnostic]:
        la = job.launch
        if la is None or la.launcher != "accelerate":
            return
        cli_np = by_layer(la, "parallel.world_size").get("launcher")
        cli_nm = by_layer(la, "parallel.nodes").get("launcher")
        if cli_np is not None and cli_nm is not None:
            return  # both on the command line: check_file's case
        for cfg in job.of_kind("accelerate"):
            np_ = first(cli_np, cfg.facts.get("parallel.world_size"))
            nm = first(cli_nm, cfg.facts.get("parallel.nodes"))
            if np_ is None or nm is None or (np_ is not cli_np and nm is not cli_nm):
                continue  # both from the config file: reported on the file itself
            d = self._verdict(np_, nm)
            if d is not None:
                yield d
            return
