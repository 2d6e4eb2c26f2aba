"""A job: the files that together describe one training run, and the facts they state.

Built by :mod:`parallint.link.jobs`. ``facts`` holds every file's normalized facts (the launch file's
first, then scripts and configs), so rules can compare values stated in different files and report
one at the value that is wrong with the others as related locations.
"""

from __future__ import annotations


from parallint.model.facts import FactMap, FileFacts, Value, known_int
from parallint.model.world import world_size
from parallint.util.record import EqRecord

TYPE_CHECKING = False  # typing is not imported at run time (start-up, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Any


class Job(EqRecord):
    _fields = ("name", "root", "launch", "files", "facts", "loopback_masters", "imported", "missing", "hydra_config")
    name: str  # a display name: the launch file (and line) or the standalone file
    root: FileFacts  # the launch file, or the standalone config/script
    launch: Any  # the parallint.model.launch.Launch this job came from, if any
    files: list[FileFacts]  # root first, then linked files
    facts: FactMap
    #: loopback ``MASTER_ADDR`` values the job's Python files always set, in file order (set by the
    #: linker for a launch's job, from :func:`parallint.link.pylaunch.loopback_master`)
    loopback_masters: list[Value]
    #: files that joined the job because its entry script imports them (directly or through other
    #: repository modules; :mod:`parallint.link.imports`): absolute path -> the importing file's
    #: display path. Their script events are the job's; their facts are not (a helper's parser
    #: defaults never override the launch line)
    imported: dict[Any, str]
    #: config files the launch line names by a literal relative path (``--deepspeed ds.json``,
    #: ``--config_file acc.yaml``) that are neither beside the launch file nor at the repository
    #: root, in no git submodule, each with a close name in its folder or None (set by the linker;
    #: LCH019 reads it)
    missing: "list[tuple[Value, str | None]]"
    #: the NeMo YAML the launched Hydra entry script loads, as (display path, the (line, column)
    #: of each scalar the launch line overrides), or (display path, None) when the line's words
    #: could not be applied (set by :mod:`parallint.link.hydralaunch`; the runner drops the
    #: YAML's own findings at a default that every launch of it overrides)
    hydra_config: "tuple[str, frozenset[tuple[int, int]] | None] | None"

    def __init__(
        self,
        name: str,
        root: FileFacts,
        launch: Any = None,
        files: list[FileFacts] | None = None,
        facts: FactMap | None = None,
        loopback_masters: list[Value] | None = None,
        imported: dict[Any, str] | None = None,
        missing: "list[tuple[Value, str | None]] | None" = None,
    ) -> None:
        self.name = name
        self.root = root
        self.launch = launch
        self.files = [] if files is None else files
        self.facts = FactMap() if facts is None else facts
        self.loopback_masters = [] if loopback_masters is None else loopback_masters
        self.imported = {} if imported is None else imported
        self.missing = [] if missing is None else missing
        self.hydra_config = None

    def get(self, key: str) -> Value | None:
        return self.facts.get(key)

    def int(self, key: str) -> int | None:
        return known_int(self.facts.get(key))

    def of_kind(self, *kinds: str) -> list[FileFacts]:
        return [f for f in self.files if f.kind in kinds]

    def world_size(self) -> Value | None:
        """The world size stated for the job (explicit, or nodes × processes per node)."""
        return world_size(self.facts)
