"""Shared machinery of the config rules (LAY, BAT, CFG, PIP004): a view over the facts of one file
or of one job, and a base class that runs the same check on both without reporting twice.

A finding whose values all come from one config file is reported by ``check_file`` on that file;
``check_job`` reports only findings that combine values from different files (a TP on the
Megatron command line against the heads of a HF config.json), or that come from a launch file
that ``check_file`` does not see.
"""

from __future__ import annotations


from parallint.model.diagnostics import Related
from parallint.model.world import launch_world_size, world_size
from parallint.model.facts import FactMap, Value, known_int
from parallint.util.record import EqRecord
from parallint.model.rule import Rule

TYPE_CHECKING = False  # typing is not imported at run time (start-up, docs/architecture.md)
if TYPE_CHECKING:  # pragma: no cover
    from typing import Any, Callable, Iterable, Iterator

    from parallint.model.diagnostics import Diagnostic
    from parallint.model.diagnostics import Fix
    from parallint.model.facts import FileFacts
    from parallint.model.job import Job
    from parallint.model.rule import Context

CONFIG_KINDS = frozenset(
    {"deepspeed", "nemo", "megatron_yaml", "torchtitan", "torchtitan_py", "accelerate", "neox",
     "foundry", "nanotron", "hf_model", "hftrainargs", "jobspec"}
)

#: flags on a Megatron command line that make the pipeline split uneven or non-standard
UNEVEN_FLAGS = frozenset(
    """decoder-first-pipeline-num-layers decoder-last-pipeline-num-layers
    pipeline-model-parallel-layout account-for-embedding-in-pipeline-split
    account-for-loss-in-pipeline-split hybrid-override-pattern pipeline-model-parallel-split-rank
    encoder-num-layers decoder-num-layers num-layers-in-first-pipeline-stage
    num-layers-in-last-pipeline-stage""".split()
)


class View(EqRecord):
    _fields = ("facts", "world", "frameworks", "launch_world", "gpus_per_node", "launch_flags", "config")
    facts: FactMap
    world: Value | None
    frameworks: set[str]
    #: the world size as stated by a launcher (not by the config itself), when there is one
    launch_world: Value | None
    gpus_per_node: Value | None
    launch_flags: set[str]
    config: dict[str, Any]

    def __init__(
        self,
        facts: FactMap,
        world: Value | None,
        frameworks: set[str],
        launch_world: Value | None = None,
        gpus_per_node: Value | None = None,
        launch_flags: set[str] | None = None,
        config: dict[str, Any] | None = None,
    ) -> None:
        self.facts = facts
        self.world = world
        self.frameworks = frameworks
        self.launch_world = launch_world
        self.gpus_per_node = gpus_per_node
        self.launch_flags = set() if launch_flags is None else launch_flags
        self.config = {} if config is None else config
        #: whether ``plan`` accepts a layout (:meth:`parallint.model.rule.Context.accepts`), for
        #: the fixes that propose one; None where there is no such service (``plan``'s own views)
        self.accept: Callable[[dict[str, Any], int | None], bool] | None = None

    def v(self, key: str) -> Value | None:
        return self.facts.get(key)

    def i(self, key: str) -> int | None:
        return known_int(self.facts.get(key))

    def b(self, key: str) -> bool | None:
        v = self.facts.get(key)
        if v is None or not isinstance(v.value, bool):
            return None
        return v.value

    def stated(self, key: str) -> bool:
        """The key was written somewhere (known or not)."""
        return bool(self.facts.all(key))

    def fw(self, *names: str) -> bool:
        return bool(self.frameworks & set(names))

    @property
    def world_int(self) -> int | None:
        return known_int(self.world)


def world_of(facts: FactMap) -> Value | None:
    return world_size(facts)  # one world size: parallint.model.world


def _frameworks(facts: FactMap) -> set[str]:
    return {str(v.value) for v in facts.known("framework")}


def _gpn(facts: FactMap, config: dict[str, Any]) -> Value | None:
    for key in ("parallel.gpus_per_node", "parallel.procs_per_node", "hardware.gpus_per_node_requested"):
        v = facts.get(key)
        if known_int(v) is not None:
            return v
    g = config.get("gpus-per-node") if isinstance(config, dict) else None
    if isinstance(g, int) and not isinstance(g, bool) and g > 0:
        return Value(g, None, True, "", "[tool.parallint] gpus-per-node")
    return None


def file_view(f: "FileFacts", config: dict[str, Any] | None = None) -> View:
    config = config or {}
    w = world_of(f.facts)
    return View(f.facts, w, _frameworks(f.facts), None, _gpn(f.facts, config), set(), config)


def job_view(job: "Job", config: dict[str, Any] | None = None) -> View:
    config = config or {}
    launch_world = None
    flags: set[str] = set()
    launch = getattr(job, "launch", None)
    if launch is not None:
        lf = getattr(launch, "facts", None)
        if isinstance(lf, FactMap):
            launch_world = world_of(lf)
            if launch_world is None:
                launch_world = launch_world_size(launch)
        flags = set(launch.flag_names)
    w = launch_world
    if w is None and hasattr(job, "world_size"):
        w = job.world_size()
    if w is None:
        w = world_of(job.facts)
    return View(job.facts, w, _frameworks(job.facts), launch_world, _gpn(job.facts, config), flags, config)


class Finding(EqRecord):
    _fields = ("at", "message", "others", "fix")
    at: Value  # where it is reported
    message: str
    others: list[tuple[Value | None, str]]  # related values
    fix: Fix | None  # the fix it proposes (parallint.model.fixes)

    def __init__(self, at: Value, message: str, others: list[tuple[Value | None, str]] | None = None,
                 fix: Fix | None = None) -> None:
        self.at = at
        self.message = message
        self.others = [] if others is None else others
        self.fix = fix

    def involved(self) -> list[Value]:
        return [self.at] + [v for v, _ in self.others if v is not None]


class FactRule(Rule):
    """A rule over a :class:`View`; subclasses implement :meth:`findings`."""

    kinds = CONFIG_KINDS

    def findings(self, view: View) -> Iterable[Finding]:  # pragma: no cover - abstract
        return ()

    def _emit(self, found: Iterable[Finding]) -> Iterator[Diagnostic]:
        seen = set()
        for fd in found:
            if fd.at.span is None:
                continue
            key = (fd.at.span, fd.message)
            if key in seen:
                continue
            seen.add(key)
            related = [Related.at(v.span, msg) for v, msg in fd.others if v is not None and v.span is not None
                       and v.span != fd.at.span]
            yield self.report(fd.at.span, fd.message, related, fix=fd.fix)

    def check_file(self, f: "FileFacts", ctx: "Context") -> Iterator[Diagnostic]:
        config = getattr(ctx, "config", {}) or {}
        view = file_view(f, config)
        view.accept = getattr(ctx, "accepts", None)
        yield from self._emit(self.findings(view))

    def check_job(self, job: "Job", ctx: "Context") -> Iterator[Diagnostic]:
        config = getattr(ctx, "config", {}) or {}
        kinds = {f.path: f.kind for f in job.files}
        covered = {p for p, k in kinds.items() if k in self.kinds}
        keep = []
        view = job_view(job, config)
        view.accept = getattr(ctx, "accepts", None)
        for fd in self.findings(view):
            paths = {v.span.path for v in fd.involved() if v.span is not None}
            if len(paths) == 1 and paths <= covered:
                continue  # check_file on that file reports it
            keep.append(fd)
        yield from self._emit(keep)


def src(v: Value | None) -> str:
    return v.source if v is not None and v.source else "?"
