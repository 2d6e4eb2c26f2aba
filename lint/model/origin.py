"""Structured provenance of a value: how it was obtained and through which construct.

Every :class:`parallint.model.facts.Value` carries an :class:`Origin`. Where the value sits (file, line,
column) is ``Value.span``; ``Value.source`` is the same provenance in words, for messages only.
Rules decide on ``Value.origin`` (or on the helpers here), never on the words of ``source``.
"""

from __future__ import annotations

import enum

from parallint.util.record import FrozenRecord

TYPE_CHECKING = False  # typing is not imported at run time (start-up, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Final, Protocol

    class _HasProvenance(Protocol):
        @property
        def origin(self) -> Origin: ...

        @property
        def source(self) -> str: ...


class How(enum.Enum):
    """How a value was obtained."""

    LITERAL = "literal"  # written in the file (a literal, a flag, a key)
    DEFAULT = "default"  # the framework's or launcher's default, nothing written
    ENVIRONMENT = "environment"  # from an environment variable
    HOST = "host"  # read from the machine itself (its GPUs: parallint preflight)
    DERIVED = "derived"  # computed from other values (nodes x processes per node)
    INFERRED = "inferred"  # concluded from context (one node: the launcher's default)


#: the launch layers a launch fact can come from, outermost first
LAUNCH_LAYERS: tuple[str, ...] = ("kube", "scheduler", "mpirun", "srun", "launcher")


class Origin(FrozenRecord):
    """How a value was obtained (``how``) and the construct that stated it (``via``).

    ``via`` is a launch layer of :data:`LAUNCH_LAYERS` for launch facts, or the qualified name of
    the call whose argument the value is (``Trainer``, ``init_process_group``); '' when not recorded.
    """

    _fields = ("how", "via")
    how: Final[How]
    via: Final[str]

    def __init__(self, how: How = How.LITERAL, via: str = "") -> None:
        self.how = how
        self.via = via


LITERAL = Origin()


#: ``source`` prefixes of orchestrators that start the command on every node (the ``kube`` layer)
KUBE_SOURCES: tuple[str, ...] = ("PyTorchJob", "TrainJob", "MPIJob", "pytorchReplicaSpecs", "Master", "Worker",
                                 "trainer", "nodeSelector", "SkyPilot", "Ray")

#: ``source`` prefixes of the launch layers, for values whose producer did not record ``via``
_LAYER_PREFIXES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("scheduler", ("#SBATCH",)),
    ("srun", ("srun",)),
    ("mpirun", ("mpirun",)),
    ("kube", KUBE_SOURCES),
)


def launch_layer(v: _HasProvenance) -> str:
    """Which launch layer stated a launch fact: kube, scheduler, mpirun, srun or the launcher itself.

    Decided by ``origin.via``; for producers that do not record it yet, by the provenance text
    (kept here, in one place, until every launch reader sets ``via``).
    """
    via = v.origin.via
    if via in LAUNCH_LAYERS:
        return via
    s = v.source or ""
    for name, prefixes in _LAYER_PREFIXES:
        if s.startswith(prefixes):
            return name
    return "launcher"


def from_call(v: _HasProvenance, qualname: str) -> bool:
    """Whether ``v`` is an argument of a call to ``qualname`` (``Trainer``)."""
    if v.origin.via:
        return v.origin.via == qualname
    return (v.source or "").startswith(qualname + "(")
