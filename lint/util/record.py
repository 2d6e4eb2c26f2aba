"""Bases for parallint's value classes, in place of ``dataclasses``.

A ``@dataclass`` is built when its module is imported: the decorator generates and compiles the
source of ``__init__``, ``__repr__``, ``__eq__`` ... for every class, and importing
``dataclasses`` imports ``inspect``, ``ast``, ``dis`` and ``tokenize``. On the path of a one-file
check of a YAML config that was 26 classes and about a quarter of the run (issue 12). Here each
class writes its ``__init__`` by hand (compiled once, into the bytecode cache) and names its fields
in ``_fields``; these bases give it the rest, with the semantics the dataclasses had:

- ``Record``: ``__repr__`` as a dataclass prints it (``Name(field=value, ...)``, over ``_repr``,
  which defaults to ``_fields``); equality and hash by identity (``@dataclass(eq=False)``).
- ``EqRecord``: also ``==`` over ``_fields`` between instances of exactly the same class, and
  unhashable, as a mutable ``@dataclass`` is.
- ``FrozenRecord``: also hashable over ``_fields``, as ``@dataclass(frozen=True)`` is. Its fields
  are annotated ``Final``, so that the type check refuses an assignment after ``__init__``.

``replace(obj, **changes)`` is ``dataclasses.replace``: a copy with some fields changed.
"""

from __future__ import annotations

from operator import attrgetter

TYPE_CHECKING = False  # typing is not imported at run time (start-up, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Any, Callable, ClassVar, TypeVar

    _R = TypeVar("_R", bound="Record")


class Record:
    __slots__ = ()
    #: the fields, in ``__init__`` order
    _fields: ClassVar[tuple[str, ...]] = ()
    #: the fields ``__repr__`` shows (default: ``_fields``)
    _repr: ClassVar[tuple[str, ...] | None] = None
    #: the fields as a tuple (an ``attrgetter``), what ``==``, ``hash`` and ordering compare
    _key: ClassVar[Callable[..., Any]]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        names = cls._fields
        if len(names) > 1:
            key: Callable[[Any], Any] = attrgetter(*names)
        elif names:  # attrgetter of one name gives the value itself, not a 1-tuple
            key = lambda o: (getattr(o, names[0]),)  # noqa: E731
        else:
            key = lambda o: ()  # noqa: E731
        setattr(cls, "_key", staticmethod(key))  # called as self._key(obj), never bound
        if "_repr" not in cls.__dict__:
            cls._repr = names

    def __repr__(self) -> str:
        parts = ", ".join(f"{n}={getattr(self, n)!r}" for n in self._repr or ())
        return f"{type(self).__qualname__}({parts})"


class EqRecord(Record):
    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return bool(self._key(self) == self._key(other))

    __hash__ = None  # type: ignore[assignment]  # mutable and compared by value


class FrozenRecord(EqRecord):
    __slots__ = ()

    def __hash__(self) -> int:  # type: ignore[override]  # EqRecord is unhashable, this one is not
        return hash(self._key(self))


def replace(obj: _R, **changes: Any) -> _R:
    """A copy of ``obj`` with the given fields changed (its ``__init__`` runs again)."""
    unknown = set(changes) - set(obj._fields)
    if unknown:
        raise TypeError(f"{type(obj).__qualname__} has no field(s) {', '.join(sorted(unknown))}")
    kwargs = {n: changes[n] if n in changes else getattr(obj, n) for n in obj._fields}
    return type(obj)(**kwargs)
