"""Raw scalars of configuration files: which of them cannot stand for a known value.

A config states ``"train_batch_size": "auto"``, ``num_nodes: <NUM_NODES>``, ``tp: ${TP}`` or a bare
template word; none of them is a value parallint may reason with. The readers turn such scalars
into unknown :class:`~parallint.model.facts.Value` s, and the config rules (schema checks) stay silent on
them, both through :func:`unknown_reason`.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False  # typing is not imported at run time (start-up, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Any


class Placeholder(str):
    """A bare word in a JSON template (``"train_batch_size": CONFIG_BATCH_SIZE``): never a known value."""


_PLACEHOLDER_RES = (
    re.compile(r"^<[^<>]*>$"),  # <NUM_NODES>
    re.compile(r"^\{\{.*\}\}$", re.S),  # {{ .Values.x }} (Helm / Jinja)
    re.compile(r"^(your|my)[_-]", re.I),  # your_num_nodes
    re.compile(r"^(X{2,}|TODO|TBD|FIXME|CHANGEME|REPLACE_?ME)$", re.I),
)
_ENV_RE = re.compile(r"\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|\$\(")


def unknown_reason(v: Any) -> str:
    """Why a raw scalar cannot be used as a known value ('' when it can)."""
    if v is None:
        return "null"
    if isinstance(v, Placeholder):
        return f"template placeholder {str(v)}"
    if isinstance(v, str):
        s = v.strip()
        low = s.lower()
        if low == "auto":
            return "auto"
        if s in ("???", "") or low in ("none", "null", "~"):
            return f"unset ({s or 'empty'})"
        if "${" in s or "{{" in s:
            return f"interpolation {s}"
        if _ENV_RE.search(s):
            return f"environment variable in {s}"
        for rx in _PLACEHOLDER_RES:
            if rx.search(s):
                return f"placeholder {s}"
    return ""
