"""parallint.util.record: the value-class bases that replace ``dataclasses`` (issue 12, start-up). Each
behaviour is checked against the dataclass the class used to be."""

from __future__ import annotations

import dataclasses
import pickle

import pytest

from parallint.model.diagnostics import Diagnostic, Related, Severity, Span
from parallint.model.facts import FileFacts, Value
from parallint.model.origin import How, Origin
from parallint.util.record import EqRecord, FrozenRecord, Record, replace


class Point(FrozenRecord):
    _fields = ("x", "y")

    def __init__(self, x: int, y: int = 0) -> None:
        self.x = x
        self.y = y


class Bag(EqRecord):
    _fields = ("items",)
    _repr = ()

    def __init__(self, items: list | None = None) -> None:
        self.items = [] if items is None else items


class Node(Record):
    _fields = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name


@dataclasses.dataclass(frozen=True)
class DPoint:
    x: int
    y: int = 0


def test_repr_is_the_dataclass_repr():
    assert repr(Point(1, 2)) == repr(DPoint(1, 2)).replace("DPoint", "Point")
    assert repr(Bag([1])) == "Bag()"  # _repr names what it shows
    assert repr(Value(3)) == ("Value(value=3, span=None, known=True, why='', source='', "
                              "origin=Origin(how=<How.LITERAL: 'literal'>, via=''))")


def test_frozen_record_compares_and_hashes_by_fields():
    assert Point(1, 2) == Point(1, 2) and Point(1, 2) != Point(2, 1)
    assert hash(Point(1, 2)) == hash(Point(1, 2))
    assert len({Point(1, 2), Point(1, 2), Point(1, 3)}) == 2
    assert Point(1, 2) != (1, 2)  # only the same class compares equal, as a dataclass


def test_a_subclass_instance_is_not_equal():
    class Point3(Point):
        pass

    assert Point(1, 2) != Point3(1, 2)
    assert Point3(1, 2) == Point3(1, 2)


def test_eq_record_is_unhashable_and_compares_by_fields():
    assert Bag([1]) == Bag([1]) and Bag([1]) != Bag([2])
    with pytest.raises(TypeError):
        hash(Bag())
    assert Bag().items is not Bag().items  # a fresh default per instance


def test_record_compares_by_identity():
    a = Node("a")
    assert a == a and a != Node("a")
    assert len({a, Node("a")}) == 2


def test_replace_is_dataclasses_replace():
    v = Value(8, why="", source="8")
    w = replace(v, origin=Origin(How.LITERAL, "kube"))
    assert w.origin.via == "kube" and w.value == 8 and w.source == "8" and v.origin.via == ""
    with pytest.raises(TypeError, match="no field"):
        replace(v, nope=1)


def test_span_orders_as_the_tuple_of_its_fields():
    spans = [Span("b", 1), Span("a", 3, 2), Span("a", 3, 1), Span("a", 1, 5, 2, 1)]
    assert sorted(spans) == sorted(spans, key=lambda s: (s.path, s.line, s.column, s.end_line, s.end_column))
    assert Span("a", 1) < Span("a", 2) <= Span("a", 2) and Span("b", 1) > Span("a", 9) >= Span("a", 9)


def test_span_end_is_never_before_its_start():
    s = Span("f", 5, 7)
    assert (s.end_line, s.end_column) == (5, 7)
    assert (Span("f", 5, 7, 6, 1).end_line, Span("f", 5, 7, 6, 1).end_column) == (6, 1)


def test_findings_survive_pickling():
    """The run cache and the worker processes move findings and facts by pickle."""
    d = Diagnostic("BAT001", "batch", Severity.ERROR, "m", Span("a.json", 2, 3), (Related("b.sh", 1, "here"),))
    assert pickle.loads(pickle.dumps(d)) == d
    assert hash(pickle.loads(pickle.dumps(d))) == hash(d)
    ff = FileFacts("a.json", None, "deepspeed", "{}")  # type: ignore[arg-type]
    back = pickle.loads(pickle.dumps(ff))
    assert (back.path, back.kind, back.launches, back.standalone_job) == ("a.json", "deepspeed", [], False)
    assert back.facts is not ff.facts and back != ff  # a FactMap compares by identity, as before
