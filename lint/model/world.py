"""World size, once: the number of processes a job or a launch command starts.

* :func:`world_size` — stated (``parallel.world_size``) or nodes × processes per node, from a
  :class:`~parallint.model.facts.FactMap` (a file's, a job's or a launch's facts);
* :func:`launch_world_size` — what a launch command starts, including the launchers' one-node
  default (torchrun / ``deepspeed --num_gpus`` without a node count);
* :func:`job_launch_world_size` — the same for a job's launch, as ``(int or None, Value or None)``;
* :func:`dp_size` — the data-parallel size: world / (TP × PP × CP, or × SP for DeepSpeed's Ulysses).

``Job.world_size``, ``rules._cfgfacts.world_of`` and ``parallint.model.launch.launch_world_size`` are thin
aliases of these; the script rules call :func:`job_launch_world_size`.
"""

from __future__ import annotations


from parallint.model.facts import FactMap, Value, known_int
from parallint.model.origin import How, Origin

TYPE_CHECKING = False  # typing is not imported at run time (start-up, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Any

#: launchers that run on one node unless told otherwise -> the options that could tell otherwise.
#: torchrun (and ``torch.distributed.run``/``.launch``) default ``--nnodes`` to ``1:1``: a rendezvous
#: backend, endpoint, master address or node rank without ``--nnodes`` is still one node.
SINGLE_NODE_DEFAULT: dict[str, tuple[str, ...]] = {
    "deepspeed": ("hostfile", "num_nodes", "include", "exclude", "master_addr", "H", "launcher"),
    "torchrun": ("nnodes",),
    "torch.distributed.run": ("nnodes",),
    "torch.distributed.launch": ("nnodes",),
}


def world_size(facts: FactMap) -> Value | None:
    """The world size ``facts`` state: explicit, or nodes × processes per node; else None."""
    ws = facts.get("parallel.world_size")
    if ws is not None and known_int(ws) is not None:
        return ws
    nodes, ppn = facts.get("parallel.nodes"), facts.get("parallel.procs_per_node")
    n, p = known_int(nodes), known_int(ppn)
    if nodes is not None and ppn is not None and n is not None and p is not None:
        return Value(n * p, ppn.span, True, "", f"{nodes.source} × {ppn.source}", Origin(How.DERIVED))
    return None


def launch_world_size(launch: Any) -> Value | None:
    """The number of processes a launch command starts, when the command itself says so.

    Stated (``parallel.world_size``), or nodes × processes per node, or — for torchrun and
    ``deepspeed --num_gpus`` with no node count, hostfile, rendezvous or unexpanded option, not
    started by srun or a batch script — the processes of the one local node (the launchers' default).
    """
    facts = getattr(launch, "facts", None)
    if not isinstance(facts, FactMap):
        return None
    ws = world_size(facts)
    if ws is not None:
        return ws
    ppn = facts.get("parallel.procs_per_node")
    p = known_int(ppn)
    if ppn is None or p is None or facts.all("parallel.nodes"):
        return None
    options = launch.options or {}
    defaults = SINGLE_NODE_DEFAULT.get(launch.launcher)
    if (defaults is None or launch.wrapper is not None or launch.scheduler or "opaque" in options
            or any(k in options for k in defaults)):
        return None
    return Value(p, ppn.span, True, "", f"{ppn.source} (one node: the launcher's default)", Origin(How.INFERRED))


def job_launch_world_size(job: Any) -> tuple[int | None, Value | None]:
    """The world size a job's launcher starts, as ``(int, Value)``; ``(None, None)`` when unknown."""
    v = launch_world_size(getattr(job, "launch", None))
    return (known_int(v), v) if v is not None else (None, None)


def dp_size(facts: FactMap, world: Value | None, *, sp: bool) -> tuple[int | None, list[tuple[Value | None, str]]]:
    """Data-parallel size = world / (TP × PP [× SP, else × CP]) and the values it came from, as
    ``(Value, "what it is")`` pairs for the related locations of a finding. ``(None, [])`` when the
    world is unknown or not positive, a degree is stated but unknown or not positive, or the degrees do not divide
    the world (the LAY rules report that)."""
    w = known_int(world)
    if w is None or w <= 0:
        return None, []  # no world, or a zero one (a launcher's `--nnodes 0`): no data-parallel size
    div = 1
    used: list[tuple[Value | None, str]] = []
    keys = ["parallel.tp", "parallel.pp"] + (["parallel.sp"] if sp else ["parallel.cp"])
    for k in keys:
        i = known_int(facts.get(k))
        if i is None:
            if facts.all(k):
                return None, []
            continue
        if i <= 0:
            return None, []
        div *= i
        if i > 1:
            used.append((facts.get(k), f"{k.split('.')[1].upper()} {i}"))
    if w % div:
        return None, []  # LAY001's business
    return w // div, [(world, f"world size {w}")] + used
