"""A job: the files that together describe one training run, and the facts they state.

Built by :mod:`parallint.link`. ``facts`` holds every file's normalized facts (the launch file's
first, then scripts and configs), so rules can compare values stated in different files and report
one at the value that is wrong with the others as related locations.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from parallint.facts import FactMap, FileFacts, Value, known_int
from parallint.model.world import world_size


@dataclass
class Job:
    name: str  # a display name: the launch file (and line) or the standalone file
    root: FileFacts  # the launch file, or the standalone config/script
    launch: Any = None  # the parallint.launch.Launch this job came from, if any
    files: list[FileFacts] = field(default_factory=list)  # root first, then linked files
    facts: FactMap = field(default_factory=FactMap)
    #: loopback ``MASTER_ADDR`` values the job's Python files always set, in file order (set by the
    #: linker for a launch's job, from :func:`parallint.pylaunch.loopback_master`)
    loopback_masters: list[Value] = field(default_factory=list)

    def get(self, key: str) -> Value | None:
        return self.facts.get(key)

    def int(self, key: str) -> int | None:
        return known_int(self.facts.get(key))

    def of_kind(self, *kinds: str) -> list[FileFacts]:
        return [f for f in self.files if f.kind in kinds]

    def world_size(self) -> Value | None:
        """The world size stated for the job (explicit, or nodes × processes per node)."""
        return world_size(self.facts)
