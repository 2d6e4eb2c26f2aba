"""Calls the rules match, and the text pre-filter derived from them.

A rule declares the calls it matches (``Rule.calls``): names of call groups (``"ddp"``,
``"collective"``: groups of qualified names, the catalogue is ``parallint.model.script.GROUPS``) or
qualified names (``"torch.distributed.barrier"``). Extra words that make a file worth parsing for a
rule (aliases such as ``DDP``, keywords such as ``find_unused_parameters``) are ``Rule.needles``.

From those declarations the engine derives

* :func:`derive_groups` — the call groups the Python reader must resolve (the rules' and the
  reader's own, for the facts it states);
* :func:`derive_needles` — the words a Python file must contain to be parsed at all (the
  pre-filter of ``parallint.discover.classify``).

Pure functions over plain data: the catalogue and the rules are passed in.
"""

from __future__ import annotations

from typing import Iterable, Mapping, Protocol, Sequence

#: last components too common to pre-filter on alone: the module path is used instead
GENERIC: frozenset[str] = frozenset({
    "save", "load", "device", "spawn", "barrier", "reduce", "gather", "scatter", "broadcast", "all_reduce",
    "all_gather", "all_to_all", "checkpoint", "initialize", "get_rank", "start_processes", "async_save",
    "save_state_dict", "set_device_index", "set_default_device",
})


class DeclaresCalls(Protocol):
    calls: frozenset[str]
    needles: tuple[str, ...]


def needle(qualname: str) -> str:
    """The word a file that calls ``qualname`` contains: its last component, or — when that is a
    common word — the first two components (``torch.save``, ``torch.distributed``)."""
    parts = qualname.split(".")
    last = parts[-1]
    if last in GENERIC or len(parts) == 1:
        return ".".join(parts[:2])
    return last


def derive_groups(catalogue: Mapping[str, Sequence[str]], used: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """The groups of ``catalogue`` named in ``used`` (unknown names are ignored here; the registry
    refuses them)."""
    want = set(used)
    return {g: tuple(qs) for g, qs in catalogue.items() if g in want}


def declared_calls(rules: Iterable[DeclaresCalls], reader_groups: Iterable[str] = ()) -> set[str]:
    """Every call group or qualified name the rules (and the reader, for its facts) declare."""
    out = set(reader_groups)
    for r in rules:
        out.update(r.calls)
    return out


def derive_needles(catalogue: Mapping[str, Sequence[str]], calls: Iterable[str],
                   extra: Iterable[str] = ()) -> tuple[str, ...]:
    """The pre-filter: one word per declared qualified name (a group stands for its names), plus
    ``extra`` words; minimal (a word that contains another is dropped) and sorted."""
    words = set(extra)
    for c in calls:
        for q in catalogue.get(c, (c,) if "." in c else ()):
            words.add(needle(q))
    keep = {w for w in words if not any(o != w and o in w for o in words)}
    return tuple(sorted(keep))


def covers(derived: Iterable[str], handwritten: Iterable[str]) -> list[str]:
    """The hand-written needles a file could contain without containing any derived one (empty
    when the derived pre-filter lets through every file the hand-written one does)."""
    d = list(derived)
    return [h for h in handwritten if not any(w in h for w in d)]
