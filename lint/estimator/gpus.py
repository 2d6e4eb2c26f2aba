"""The GPU catalogue (``parallint/data/gpus.yaml``, read from its generated copy ``gpus.json``):
names, memory in bytes, aliases."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Final

from parallint.record import FrozenRecord

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


def catalogue_json(yaml_text: str) -> str:
    """``gpus.json``, the copy of ``gpus.yaml`` that start-up reads (json is in every process
    already; pure-Python YAML costs tens of milliseconds). tests/test_startup.py checks they match;
    regenerate with ``PARALLINT_UPDATE_SNAPSHOTS=1 python -m pytest tests/test_startup.py``."""
    import json

    import yaml

    entries = yaml.safe_load(yaml_text)
    return json.dumps({"generated_from": "gpus.yaml (edit that file, then regenerate this one)",
                       "gpus": entries}, indent=1) + "\n"


@lru_cache(maxsize=1)
def catalogue() -> tuple[Gpu, ...]:
    import json

    from parallint.data import read_text

    raw = json.loads(read_text("parallint.data", "gpus.json"))["gpus"]
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


_FAMILY = re.compile(r"(mi\d{3}x?|[abhlv]\d{1,3}s?g?|gh200|gb[23]00)")


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
    fam = _FAMILY.search(_norm(low))
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
