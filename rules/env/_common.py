"""What the ENV rules share."""

from __future__ import annotations

from typing import Iterable

from parallint.model.facts import Value


def _env_items(la) -> Iterable[tuple[str, Value]]:
    seen = set()
    w = la
    while w is not None:
        for k, v in w.env.items():
            if k not in seen:
                seen.add(k)
                yield k, v
        w = w.wrapper
