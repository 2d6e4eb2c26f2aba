"""A launch command as parallint understands it (torchrun, deepspeed, accelerate, srun, python, a
Kubernetes replica...). Produced by the shell and Kubernetes readers, consumed by the linker and the
LCH/ENV/PG rules.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

from parallint.model.diagnostics import Span
from parallint.model.facts import FactMap, Value
from parallint.util.record import EqRecord


class Launch(EqRecord):
    #: torchrun | torch.distributed.run | torch.distributed.launch | deepspeed | accelerate |
    #: python | srun | mpirun | pytorchjob | trainjob | mpijob | volcano
    _fields = ("launcher", "span", "facts", "script", "is_module", "args", "options", "env", "links", "scheduler", "wrapper", "gpu_requests", "megatron_flags", "script_path", "repo_root", "megatron_table", "hostfile")
    launcher: str
    span: Span  # the whole command (first line of it)
    #: normalized facts the command and its scheduler context state (parallel.nodes from
    #: `#SBATCH --nodes` AND from `torchrun --nnodes`, each with its own source/span; Megatron args...)
    facts: FactMap
    script: Value | None  # the script path (or module name when is_module) as written
    is_module: bool
    args: list[Value]  # the script's arguments, one Value per word
    #: the launcher's own options, normalized names: nnodes, nproc_per_node, node_rank,
    #: master_addr, master_port, rdzv_endpoint, rdzv_backend, num_gpus, num_nodes, hostfile,
    #: config_file, num_processes, num_machines, ntasks_per_node ...
    options: dict[str, Value]
    env: dict[str, Value]  # environment in force at the command
    #: files the command names (script, --deepspeed_config, --config_file, --job.config_file ...)
    links: list[Value]
    #: scheduler directives in force (#SBATCH nodes, ntasks_per_node, gpus_per_node, gres, constraint)
    scheduler: dict[str, Value]
    wrapper: "Launch | None"  # e.g. the srun that starts this torchrun
    #: Kubernetes: every ``resources`` block of the manifest naming a GPU resource (on the job)
    gpu_requests: list["GpuRequest"]
    #: the script's ``--flags`` when they are Megatron's: (normalized name, flag word, value word)
    megatron_flags: list[tuple[str, Any, Any]] | None
    #: set by the linker: the script file the launch runs (when it exists) and its repository root
    script_path: Any
    repo_root: Any
    #: set by the linker for a launch with ``megatron_flags``: the flags the launched script accepts
    #: (``parallint.link.megatron_table.AcceptedFlags``), None when that cannot be known
    megatron_table: Any
    #: set by the shell reader for ``deepspeed``/``colossalai --hostfile F`` when F is read: its
    #: lines as DeepSpeed's launcher parses them, (line number, text, host, slots); host and slots
    #: are None on a line DeepSpeed rejects (it wants ``NAME slots=N``)
    hostfile: "list[tuple[int, str, str | None, int | None]] | None"

    def __init__(
        self,
        launcher: str,
        span: Span,
        facts: FactMap | None = None,
        script: Value | None = None,
        is_module: bool = False,
        args: list[Value] | None = None,
        options: dict[str, Value] | None = None,
        env: dict[str, Value] | None = None,
        links: list[Value] | None = None,
        scheduler: dict[str, Value] | None = None,
        wrapper: "Launch | None" = None,
        gpu_requests: list["GpuRequest"] | None = None,
        megatron_flags: list[tuple[str, Any, Any]] | None = None,
        script_path: Any = None,
        repo_root: Any = None,
        megatron_table: Any = None,
        hostfile: "list[tuple[int, str, str | None, int | None]] | None" = None,
    ) -> None:
        self.launcher = launcher
        self.span = span
        self.facts = FactMap() if facts is None else facts
        self.script = script
        self.is_module = is_module
        self.args = [] if args is None else args
        self.options = {} if options is None else options
        self.env = {} if env is None else env
        self.links = [] if links is None else links
        self.scheduler = {} if scheduler is None else scheduler
        self.wrapper = wrapper
        self.gpu_requests = [] if gpu_requests is None else gpu_requests
        self.megatron_flags = megatron_flags
        self.script_path = script_path
        self.repo_root = repo_root
        self.megatron_table = megatron_table
        self.hostfile = hostfile

    @cached_property
    def flag_names(self) -> frozenset[str]:
        """The ``--flags`` among the script's known arguments, normalised (``--foo_bar=1`` ->
        ``foo-bar``); computed once (every fact rule views every job, and a generated command line
        may hold thousands of words)."""
        return frozenset(a.value[2:].split("=", 1)[0].replace("_", "-").lower() for a in self.args
                         if a.known and isinstance(a.value, str) and a.value.startswith("--"))


class GpuRequest(EqRecord):
    """``resources.limits``/``requests`` of one container for one GPU resource (``nvidia.com/gpu``)."""

    _fields = ("resource", "limit", "request")
    resource: str
    limit: Value | None
    request: Value | None

    def __init__(self, resource: str, limit: Value | None, request: Value | None) -> None:
        self.resource = resource
        self.limit = limit
        self.request = request


# world-size logic lives once, in the model layer; these names stay for existing imports
from parallint.model.world import SINGLE_NODE_DEFAULT, launch_world_size  # noqa: E402,F401
