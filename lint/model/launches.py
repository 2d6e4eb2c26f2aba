"""Launch commands, as the rules read them: which layer stated a value, what a launch starts.

A launch (:class:`parallint.model.launch.Launch`) carries facts stated by several layers — the launcher
itself (``torchrun --nnodes``), srun, the batch scheduler (``#SBATCH --nodes``), a Kubernetes job —
each value knowing its layer through its origin (:mod:`parallint.model.origin`). These helpers pick
the value that decides; the LCH and ENV rules share them.
"""

from __future__ import annotations

import re
from typing import Any

from parallint.model.diagnostics import Related
from parallint.model.facts import Value, known_int
from parallint.model.origin import launch_layer

#: kinds of files that hold launch commands (the launcher rules read them)
LAUNCH_FILE_KINDS: frozenset[str] = frozenset({"shell", "makefile", "kube", "skypilot"})

#: environment variables a Kubernetes training operator sets in every container
OPERATOR_ENV: tuple[str, ...] = (
    "MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE", "LOCAL_RANK", "NODE_RANK",
    "PET_NNODES", "PET_NPROC_PER_NODE", "PET_NODE_RANK", "PET_MASTER_ADDR", "PET_MASTER_PORT",
    "OMPI_MCA_orte_default_hostfile", "K_MPI_JOB_ROLE")

LOOPBACK = re.compile(r"^(localhost|127(?:\.\d{1,3}){3}|::1|0\.0\.0\.0)$", re.I)


def is_loopback(text: str) -> bool:
    """A loopback host (localhost, 127.x.y.z, ::1, 0.0.0.0), quotes around it ignored."""
    return LOOPBACK.match(text.strip().strip("'\"")) is not None


def layer(v: Value) -> str:
    """Which launch layer stated a fact: scheduler, srun, mpirun, kube or the launcher itself."""
    return launch_layer(v)  # decided on the value's origin (parallint.model.origin)


def first(*vals: Any) -> Any:
    """The first of ``vals`` that is not None (Values have no truthiness)."""
    for v in vals:
        if v is not None:
            return v
    return None


def by_layer(la: Any, key: str) -> dict[str, Value]:
    """The first known value of ``key`` stated by each layer of a launch."""
    out: dict[str, Value] = {}
    for v in la.facts.all(key):
        if v.known and known_int(v) is not None:
            out.setdefault(layer(v), v)
    return out


#: the layers around a launcher, innermost first
OUTER_LAYERS: tuple[str, ...] = ("srun", "scheduler", "kube")


def stated(la: Any, key: str, layers: tuple[str, ...] = ("launcher",) + OUTER_LAYERS) -> Value | None:
    """The value of ``key`` stated by the first of ``layers`` that states one."""
    lay = by_layer(la, key)
    v: Value | None = first(*(lay.get(name) for name in layers))
    return v


def outer_nodes(la: Any) -> Value | None:
    """The node count the scheduler/wrapper gives the launcher: srun's, else #SBATCH's, else the
    Kubernetes job's."""
    return stated(la, "parallel.nodes", OUTER_LAYERS)


def effective_nodes(la: Any) -> int | None:
    """The node count a launch runs on, when stated (accelerate without a count: unknown)."""
    v = stated(la, "parallel.nodes")
    if v is None and la.launcher == "accelerate":
        return None
    return known_int(v)


def procs_per_node(la: Any) -> Value | None:
    """Processes the launch starts on each node (the launcher's own count, else the job's)."""
    v = stated(la, "parallel.procs_per_node")
    if v is not None:
        return v
    if la.launcher == "accelerate":
        ws = by_layer(la, "parallel.world_size").get("launcher")
        n = by_layer(la, "parallel.nodes").get("launcher")
        if ws is not None and n is not None and n.value and ws.value % n.value == 0:
            return Value(ws.value // n.value, ws.span, True, "", "accelerate --num_processes / --num_machines")
    return None


def gpus_requested(la: Any) -> Value | None:
    """The GPUs per node the scheduler or the Kubernetes job requests."""
    return stated(la, "hardware.gpus_per_node_requested", OUTER_LAYERS)


def launches(f: Any) -> list[Any]:
    """The launch commands of a file."""
    return list(f.launches or ())


def related_at(v: Value, message: str) -> tuple[Related, ...]:
    """The related location of a finding at ``v`` (none when ``v`` has no position)."""
    return (Related.at(v.span, message),) if v.span else ()
