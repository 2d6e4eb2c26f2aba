"""The GPU catalogue (``parallint/data/gpus.yaml``, read from its generated copy ``gpus_table.py``):
names, memory in bytes, aliases."""

from __future__ import annotations

import functools
import re
from functools import lru_cache

from parallint.util.record import FrozenRecord

TYPE_CHECKING = False  # typing is not imported at run time (start-up, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Final

GIB = 1 << 30


class Gpu(FrozenRecord):
    _fields = ("name", "memory_bytes", "gpus_per_node", "aliases")
    name: Final[str]
    memory_bytes: Final[int]
    gpus_per_node: Final[int]
    aliases: Final[tuple[str, ...]]

    def __init__(
        self,
        name: str,
        memory_bytes: int,
        gpus_per_node: int,
        aliases: tuple[str, ...] = (),
    ) -> None:
        self.name = name
        self.memory_bytes = memory_bytes
        self.gpus_per_node = gpus_per_node
        self.aliases = aliases


def _norm(text: str) -> str:
    return re.sub(r"[\s_.\-/:]+", "", str(text).lower())


def catalogue_module(yaml_text: str) -> str:
    """``gpus_table.py``, the copy of ``gpus.yaml`` that start-up reads: a module, loaded from its
    bytecode (pure-Python YAML costs tens of milliseconds, and a YAML check needs no JSON parser).
    tests/test_startup.py checks they match; regenerate with
    ``PARALLINT_UPDATE_SNAPSHOTS=1 python -m pytest tests/test_startup.py``."""
    import yaml

    entries = yaml.safe_load(yaml_text)
    rows = "".join(f"    {e!r},\n" for e in entries)
    return ('"""The GPU catalogue, generated from gpus.yaml: edit that file, then regenerate this one\n'
            '(PARALLINT_UPDATE_SNAPSHOTS=1 python -m pytest tests/test_startup.py)."""\n\nGPUS: list[dict] = [\n' + rows + "]\n")


@lru_cache(maxsize=1)
def catalogue() -> tuple[Gpu, ...]:
    from parallint.data.gpus_table import GPUS

    raw = GPUS
    return tuple(
        Gpu(e["name"], int(e["memory_gib"] * GIB), int(e.get("gpus_per_node", 8)),
            tuple(e.get("aliases", ())))
        for e in raw
    )


@lru_cache(maxsize=1)
def _index() -> dict[str, Gpu]:
    idx: dict[str, Gpu] = {}
    for g in catalogue():
        for key in (g.name, *g.aliases):
            k = _norm(key)
            if k in idx and idx[k].memory_bytes >= g.memory_bytes:
                continue  # an alias shared by two sizes resolves to the larger one
            idx[k] = g
    return idx


@functools.cache  # compiled at the first use, not at import (start-up)
def _family() -> re.Pattern[str]:
    return re.compile(r"(mi\d{3}x?|[abhlv]\d{1,3}s?g?|gh200|gb[23]00)")


def resolve_gpu(text: object) -> Gpu | None:
    """The catalogue entry a GPU name, ``--gres`` type, constraint or node label means, or None.

    Exact aliases first; then a name like ``NVIDIA-A100-SXM4-80GB-MIG`` is matched by its family
    token and a memory size (``80GB``/``80G``) when it carries one.
    """
    if text is None or isinstance(text, bool):
        return None
    s = str(text).strip()
    if not s or len(s) > 100 or "mig" in s.lower():  # a MIG slice has a fraction of the memory
        return None
    idx = _index()
    k = _norm(s)
    if k in idx:
        return idx[k]
    low = s.lower()
    for tok in ("nvidia", "tesla", "amd", "instinct"):
        low = low.replace(tok, " ")
    fam = _family().search(_norm(low))
    if not fam:
        return None
    family = fam.group(1)
    mem = re.search(r"(\d{2,3})\s*g(?:i?b)?\b", low)
    if mem:
        hit = idx.get(_norm(f"{family.rstrip('g')}-{mem.group(1)}gb"))
        if hit:
            return hit
    return idx.get(family) or idx.get(family.rstrip("g"))


def largest_gpu() -> Gpu:
    return max(catalogue(), key=lambda g: g.memory_bytes)
