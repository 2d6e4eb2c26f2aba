"""Facts: values extracted from files, each either known (with where it came from) or unknown (with why).

Every reader produces :class:`FileFacts`; the linker joins them into :class:`parallint.job.Job`.
Normalized fact keys follow the job spec of DESIGN.md, e.g. ``parallel.tp``, ``parallel.world_size``,
``model.layers``, ``training.micro_batch``, ``hardware.gpu``. See :data:`FACT_KEYS`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator

from parallint.diagnostics import Diagnostic, Span

#: The normalized keys (job-spec sections) plus a few launch-level ones. Readers may only emit these.
FACT_KEYS = frozenset(
    """
    model.param_count model.layers model.hidden model.heads model.kv_heads model.ffn model.vocab
    model.seq_len model.mlp model.tied_embeddings model.norm model.bias model.position_embeddings
    model.num_experts model.top_k model.moe_ffn model.head_dim model.preset model.moe_layer_freq
    model.shared_expert_ffn
    parallel.world_size parallel.nodes parallel.gpus_per_node parallel.procs_per_node parallel.dp
    parallel.dp_replicate parallel.dp_shard parallel.tp parallel.pp parallel.vpp parallel.cp parallel.ep
    parallel.etp parallel.zero_stage parallel.sequence_parallel parallel.distributed_optimizer
    parallel.fsdp parallel.pp_layout parallel.sp
    training.micro_batch training.global_batch training.grad_accum training.recompute
    training.precision training.optimizer training.grad_dtype training.train_batch_size
    hardware.gpu hardware.gpu_memory_bytes hardware.gpus_per_node_requested
    training.offload
    ddp.find_unused_parameters
    framework
    """.split()
)


@dataclass(frozen=True)
class Value:
    """A value as parallint understands it.

    ``known`` is False when the value cannot be resolved statically; ``why`` then says why
    ("environment variable NNODES", "command substitution", "placeholder <NUM_NODES>", "auto").
    ``source`` names the text it came from in words ("torchrun --nproc_per_node", "#SBATCH --nodes").
    """

    value: Any = None
    span: Span | None = None
    known: bool = True
    why: str = ""
    source: str = ""

    @classmethod
    def unknown(cls, why: str, span: Span | None = None, source: str = "") -> "Value":
        return cls(None, span, False, why, source)

    def map(self, fn) -> "Value":
        """Apply ``fn`` to a known value; unknown stays unknown (and so does a failing conversion)."""
        if not self.known:
            return self
        try:
            return Value(fn(self.value), self.span, True, "", self.source)
        except (TypeError, ValueError, ArithmeticError):
            return Value.unknown(f"cannot interpret {self.value!r}", self.span, self.source)

    def as_int(self) -> "Value":
        def conv(v: Any) -> int:
            if isinstance(v, bool):
                raise TypeError("bool is not an int")
            if isinstance(v, int):
                return v
            if isinstance(v, float) and v.is_integer():
                return int(v)
            if isinstance(v, str) and v.strip().lstrip("+-").isdigit():
                return int(v.strip())
            raise ValueError(v)

        return self.map(conv)

    def __bool__(self) -> bool:  # guard against `if value:` meaning "is known"
        raise TypeError("use value.known / value.value, not truthiness")


def known_int(v: "Value | None") -> int | None:
    """The integer behind ``v`` when it is known and integral, else None."""
    if v is None or not v.known:
        return None
    iv = v.as_int()
    return iv.value if iv.known else None


class FactMap:
    """Normalized key -> the values stated for it (a key may be stated by several files)."""

    def __init__(self) -> None:
        self._d: dict[str, list[Value]] = {}

    def add(self, key: str, value: Value) -> None:
        if key not in FACT_KEYS:
            raise KeyError(f"not a normalized fact key: {key}")
        self._d.setdefault(key, []).append(value)

    def extend(self, other: "FactMap") -> None:
        for k, vs in other._d.items():
            for v in vs:
                self.add(k, v)

    def all(self, key: str) -> list[Value]:
        return list(self._d.get(key, ()))

    def known(self, key: str) -> list[Value]:
        return [v for v in self._d.get(key, ()) if v.known]

    def get(self, key: str) -> Value | None:
        """The first known value for ``key`` (None when nothing known was stated)."""
        for v in self._d.get(key, ()):
            if v.known:
                return v
        return None

    def int(self, key: str) -> int | None:
        return known_int(self.get(key))

    def keys(self) -> Iterable[str]:
        return self._d.keys()

    def items(self) -> Iterator[tuple[str, list[Value]]]:
        return iter(self._d.items())

    def __contains__(self, key: str) -> bool:
        return key in self._d

    def __len__(self) -> int:
        return len(self._d)


@dataclass
class FileFacts:
    """What one reader made of one file."""

    path: str  # display path: relative to the working directory, '/'-separated
    abspath: Path
    kind: str  # see parallint.classify.KINDS
    text: str
    facts: FactMap = field(default_factory=FactMap)
    #: launch commands found in the file (parallint.launch.Launch objects), for launch files
    launches: list[Any] = field(default_factory=list)
    #: values naming other files (value = the path as written); resolved by the linker
    links: list[Value] = field(default_factory=list)
    #: reader-specific payload for file-level rules (e.g. parallint.readers.python.Script)
    data: Any = None
    #: findings the reader itself produced (SYN001 and friends)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    #: a single file that states its own world size is a job on its own
    standalone_job: bool = False

    def span(self, line: int, column: int = 1, end_line: int = 0, end_column: int = 0) -> Span:
        return Span(self.path, line, column, end_line, end_column)
