"""Facts: values extracted from files, each either known (with where it came from) or unknown (with why).

Every reader produces :class:`FileFacts`; the linker joins them into :class:`parallint.model.job.Job`.
Normalized fact keys follow the job spec of DESIGN.md, e.g. ``parallel.tp``, ``parallel.world_size``,
``model.layers``, ``training.micro_batch``, ``hardware.gpu``. See :data:`FACT_KEYS`.
"""

from __future__ import annotations

import builtins
from pathlib import Path

from parallint.model.diagnostics import Diagnostic, Span
from parallint.model import vocab as _vocab
from parallint.model.origin import LITERAL, How, Origin
from parallint.util.record import EqRecord, FrozenRecord

TYPE_CHECKING = False  # typing is not imported at run time (start-up, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Any, Callable, Final, Iterable, Iterator

__all__ = ["FACT_KEYS", "FactMap", "FileFacts", "How", "Origin", "Value", "known_int"]

#: The normalized fact keys: readers may only emit these. Declared, with their type, unit, meaning
#: and producers, in :mod:`parallint.model.vocab` (the one vocabulary); this is a derived view.
FACT_KEYS = _vocab.FACT_KEYS


class Value(FrozenRecord):
    """A value as parallint understands it.

    ``known`` is False when the value cannot be resolved statically; ``why`` then says why
    ("environment variable NNODES", "command substitution", "placeholder <NUM_NODES>", "auto").
    ``source`` names the text it came from in words ("torchrun --nproc_per_node", "#SBATCH --nodes"),
    for messages. ``origin`` says how it was obtained (literal, default, environment, derived,
    inferred) and through which construct (:class:`parallint.model.origin.Origin`); rules decide on
    ``origin``, never on the words of ``source``. The file and position are ``span``.
    """

    _fields = ("value", "span", "known", "why", "source", "origin")
    value: Final[Any]
    span: Final[Span | None]
    known: Final[bool]
    why: Final[str]
    source: Final[str]
    origin: Final[Origin]

    def __init__(
        self,
        value: Any = None,
        span: Span | None = None,
        known: bool = True,
        why: str = "",
        source: str = "",
        origin: Origin = LITERAL,
    ) -> None:
        self.value = value
        self.span = span
        self.known = known
        self.why = why
        self.source = source
        self.origin = origin

    @classmethod
    def unknown(cls, why: str, span: Span | None = None, source: str = "", origin: Origin = LITERAL) -> "Value":
        return cls(None, span, False, why, source, origin)

    def map(self, fn: "Callable[[Any], Any]") -> "Value":
        """Apply ``fn`` to a known value; unknown stays unknown (and so does a failing conversion)."""
        if not self.known:
            return self
        try:
            return Value(fn(self.value), self.span, True, "", self.source, self.origin)
        except (TypeError, ValueError, ArithmeticError):
            return Value.unknown(f"cannot interpret {self.value!r}", self.span, self.source, self.origin)

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
            raise KeyError(f"not a normalized fact key: {key} (declare it in parallint.model.vocab)")
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

    def int(self, key: str) -> builtins.int | None:
        return known_int(self.get(key))

    def keys(self) -> Iterable[str]:
        return self._d.keys()

    def items(self) -> Iterator[tuple[str, list[Value]]]:
        return iter(self._d.items())

    def __contains__(self, key: str) -> bool:
        return key in self._d

    def __len__(self) -> builtins.int:
        return len(self._d)


class FileFacts(EqRecord):
    """What one reader made of one file."""

    _fields = ("path", "abspath", "kind", "text", "facts", "launches", "links", "data", "diagnostics", "standalone_job")
    path: str  # display path: relative to the working directory, '/'-separated
    abspath: Path
    kind: str  # see parallint.discover.classify.KINDS
    text: str
    facts: FactMap
    #: launch commands found in the file (parallint.model.launch.Launch objects), for launch files
    launches: list[Any]
    #: values naming other files (value = the path as written); resolved by the linker
    links: list[Value]
    #: reader-specific payload for file-level rules (e.g. parallint.model.script.Script)
    data: Any
    #: findings the reader itself produced (SYN001 and friends)
    diagnostics: list[Diagnostic]
    #: a single file that states its own world size is a job on its own
    standalone_job: bool

    def __init__(
        self,
        path: str,
        abspath: Path,
        kind: str,
        text: str,
        facts: FactMap | None = None,
        launches: list[Any] | None = None,
        links: list[Value] | None = None,
        data: Any = None,
        diagnostics: list[Diagnostic] | None = None,
        standalone_job: bool = False,
    ) -> None:
        self.path = path
        self.abspath = abspath
        self.kind = kind
        self.text = text
        self.facts = FactMap() if facts is None else facts
        self.launches = [] if launches is None else launches
        self.links = [] if links is None else links
        self.data = data
        self.diagnostics = [] if diagnostics is None else diagnostics
        self.standalone_job = standalone_job

    def span(self, line: int, column: int = 1, end_line: int = 0, end_column: int = 0) -> Span:
        return Span(self.path, line, column, end_line, end_column)
