"""A launch command as parallint understands it (torchrun, deepspeed, accelerate, srun, python, a
Kubernetes replica...). Produced by the shell and Kubernetes readers, consumed by the linker and the
LCH/ENV/PG rules.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from parallint.diagnostics import Span
from parallint.facts import FactMap, Value


@dataclass
class Launch:
    #: torchrun | torch.distributed.run | torch.distributed.launch | deepspeed | accelerate |
    #: python | srun | mpirun | pytorchjob | trainjob | mpijob | volcano
    launcher: str
    span: Span  # the whole command (first line of it)
    #: normalized facts the command and its scheduler context state (parallel.nodes from
    #: `#SBATCH --nodes` AND from `torchrun --nnodes`, each with its own source/span; Megatron args...)
    facts: FactMap = field(default_factory=FactMap)
    script: Value | None = None  # the script path (or module name when is_module) as written
    is_module: bool = False
    args: list[Value] = field(default_factory=list)  # the script's arguments, one Value per word
    #: the launcher's own options, normalized names: nnodes, nproc_per_node, node_rank,
    #: master_addr, master_port, rdzv_endpoint, rdzv_backend, num_gpus, num_nodes, hostfile,
    #: config_file, num_processes, num_machines, ntasks_per_node ...
    options: dict[str, Value] = field(default_factory=dict)
    env: dict[str, Value] = field(default_factory=dict)  # environment in force at the command
    #: files the command names (script, --deepspeed_config, --config_file, --job.config_file ...)
    links: list[Value] = field(default_factory=list)
    #: scheduler directives in force (#SBATCH nodes, ntasks_per_node, gpus_per_node, gres, constraint)
    scheduler: dict[str, Value] = field(default_factory=dict)
    wrapper: "Launch | None" = None  # e.g. the srun that starts this torchrun


#: launchers that run on one node unless told otherwise -> the options that could tell otherwise
SINGLE_NODE_DEFAULT = {
    "deepspeed": ("hostfile", "num_nodes", "include", "exclude", "master_addr", "H", "launcher"),
    "torchrun": ("nnodes", "rdzv_endpoint", "master_addr", "node_rank", "rdzv_backend"),
    "torch.distributed.run": ("nnodes", "rdzv_endpoint", "master_addr", "node_rank", "rdzv_backend"),
    "torch.distributed.launch": ("nnodes", "rdzv_endpoint", "master_addr", "node_rank", "rdzv_backend"),
}


def launch_world_size(launch: "Launch | None") -> Value | None:
    """The number of processes a launch command starts, when the command itself says so.

    Stated (``parallel.world_size``), or nodes × processes per node, or — for torchrun and
    ``deepspeed --num_gpus`` with no node count, hostfile, rendezvous or unexpanded option, not
    started by srun or a batch script — the processes of the one local node (the launchers' default).
    """
    from parallint.facts import known_int

    facts = getattr(launch, "facts", None)
    if not isinstance(facts, FactMap):
        return None
    ws = facts.get("parallel.world_size")
    if known_int(ws) is not None:
        return ws
    nodes, ppn = facts.get("parallel.nodes"), facts.get("parallel.procs_per_node")
    n, p = known_int(nodes), known_int(ppn)
    if n is not None and p is not None:
        return Value(n * p, ppn.span, True, "", f"{nodes.source} × {ppn.source}")
    if p is None or facts.all("parallel.nodes"):
        return None
    options = launch.options or {}
    defaults = SINGLE_NODE_DEFAULT.get(launch.launcher)
    if (defaults is None or launch.wrapper is not None or launch.scheduler or "opaque" in options
            or any(k in options and not _loopback_endpoint(k, options[k], options) for k in defaults)):
        return None
    return Value(p, ppn.span, True, "", f"{ppn.source} (one node: the launcher's default)")


def _loopback_endpoint(key: str, v: Value, options: dict) -> bool:
    """``--rdzv_endpoint localhost:0`` / ``--master_addr 127.0.0.1`` (and the ``--rdzv_backend`` of such
    an endpoint): a rendezvous on this host only, so no sign of other nodes."""
    from parallint.cmdline import is_loopback

    if key == "rdzv_backend" and "rdzv_endpoint" in options:
        return _loopback_endpoint("rdzv_endpoint", options["rdzv_endpoint"], options)
    if key not in ("rdzv_endpoint", "master_addr") or not v.known or not isinstance(v.value, str):
        return False
    host = v.value
    if key == "rdzv_endpoint" and host.count(":") == 1:
        host = host.rsplit(":", 1)[0]
    return is_loopback(host.strip("[]"))
