"""Plugin support: what third-party rules declare beyond the Rule API (see docs/plugins.md).

``needles``: strings whose presence makes a Python or shell file reach the readers even when none
of the built-in pre-filter's names is in it (the pre-filter skips most files of a repository
without parsing them; a plugin that looks for its own launcher or API names says so here).
"""

from __future__ import annotations

from typing import Iterable


def register_needles(rules: Iterable[type]) -> None:
    from parallint import classify

    add: dict[str, list[str]] = {"python": [], "shell": []}
    for rule in rules:
        needles = getattr(rule, "needles", ()) or ()
        if isinstance(needles, str):
            needles = (needles,)
        kinds = getattr(rule, "kinds", frozenset()) or frozenset()
        targets = [k for k in ("python", "shell") if k in kinds] or ["python", "shell"]
        for n in needles:
            if isinstance(n, str) and len(n) >= 3:  # a one- or two-letter needle would admit every file
                for k in targets:
                    add[k].append(n)
    for k, extra in add.items():
        if extra:
            classify.PLUGIN_NEEDLES[k] = tuple(dict.fromkeys(classify.PLUGIN_NEEDLES[k] + tuple(extra)))
