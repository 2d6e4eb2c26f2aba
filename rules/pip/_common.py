"""What the PIP rules share."""

from __future__ import annotations

import re
from typing import Any, NamedTuple

from parallint.model.diagnostics import Span
from parallint.model.script import Partition, Script


_PY = frozenset({"python"})


_CONFIG_KINDS = frozenset({"torchtitan", "torchtitan_py"})


_LAYERISH = re.compile(r"layer|block|stage|(^|\.)h$|module", re.I)


# -- hand-written pipeline partitions in configs (torchtitan module_fqns_per_model_part, read by the
#    torchtitan readers into FileFacts.data.partitions)

_LAYER_FQN = re.compile(r"^(?:model\.)?layers\.(\d+)$")


SINGLE_STAGE_SCHEDULES = frozenset({"1f1b", "gpipe"})


class PartitionProblem(NamedTuple):
    """A problem of a pipeline partition: ``kind`` is ``"layers"`` or ``"stages"``."""

    kind: str
    span: Span
    message: str


def partition_problems(part: Any, schedule: str | None = None) -> list[PartitionProblem]:
    """What is wrong with one config partition, as :class:`PartitionProblem` (kind, span, message):

    * ``"layers"``: a layer in two stages, layers handed out out of order, a gap between the layers
      used, or (when the layer count is known) the first/last layer missing;
    * ``"stages"``: the number of stages is not a multiple of the PP degree (for the single-stage
      schedules 1F1B and GPipe: not equal to it).

    ``part`` is a config partition (``parallint.readers.cfgutil.Partition``: ``stages``,
    ``stage_spans``, ``span``, ``pp``, ``layers``). PIP001 reports the first kind, PIP002 the
    second. Silent on anything unknown.
    """
    out: list[PartitionProblem] = []
    where: dict[int, int] = {}
    last_max = -1
    for si, (names, sspan) in enumerate(zip(part.stages, part.stage_spans)):
        idx = [int(m.group(1)) for m in (_LAYER_FQN.match(n) for n in names) if m]
        for i in idx:
            if i in where:
                out.append(PartitionProblem("layers", sspan, f"layers.{i} is in stage {where[i]} and again in stage {si}"))
            else:
                where[i] = si
        if idx and min(idx) <= last_max and not any(i in where and where[i] != si for i in idx if i <= last_max):
            out.append(PartitionProblem("layers", sspan, f"stage {si} starts at layers.{min(idx)}, before the end of an earlier stage "
                                         f"(layers.{last_max})"))
        if idx:
            last_max = max(last_max, max(idx))
    if where:
        layers = None
        if part.layers is not None and part.layers.known and isinstance(part.layers.value, int):
            layers = part.layers.value
        top = (layers - 1) if layers else max(where)
        missing = [i for i in range(0, top + 1) if i not in where]
        if missing:
            shown = ", ".join(f"layers.{i}" for i in missing[:5]) + (" ..." if len(missing) > 5 else "")
            out.append(PartitionProblem("layers", part.span, f"no stage holds {shown}"))
        if layers and max(where) >= layers:
            out.append(PartitionProblem("layers", part.span, f"layers.{max(where)} does not exist: the model has {layers} layers"))
    pp = part.pp.value if part.pp is not None and part.pp.known and isinstance(part.pp.value, int) else None
    n = len(part.stages)
    if pp and pp > 0:
        single = (schedule or "").strip().lower() in SINGLE_STAGE_SCHEDULES
        if single and n != pp:
            out.append(PartitionProblem("stages", part.span, f"{n} model parts for pipeline degree {pp} with the single-stage "
                                             f"{schedule} schedule (needs exactly {pp})"))
        elif n % pp:
            out.append(PartitionProblem("stages", part.span, f"{n} model parts do not divide over pipeline degree {pp} "
                                             f"(needs a multiple of {pp})"))
    return out


def _config_problems(f, code: str):
    """PIP001/PIP002 findings of torchtitan `module_fqns_per_model_part` partitions in a config."""
    data = getattr(f, "data", None)
    parts = getattr(data, "partitions", None)
    if not parts or isinstance(data, Script):
        return
    sched = f.facts.get("training.pp_schedule")
    schedule = sched.value if sched is not None and sched.known and isinstance(sched.value, str) else None
    kind = {"PIP001": "layers", "PIP002": "stages"}[code]
    for part in parts:
        for problem in partition_problems(part, schedule):
            if problem.kind == kind:
                yield problem.span, problem.message


_TITAN = """
    [training]
    local_batch_size = 8
    seq_len = 2048

    [parallelism]
    data_parallel_shard_degree = -1
    pipeline_parallel_degree = 2
    module_fqns_per_model_part = {parts}
"""


def _partitions(s: Script) -> list[Partition]:
    return [p for p in s.partitions if p.selector == "rank" or _LAYERISH.search(p.base)]


def _bounds(p: Partition) -> list[tuple[int, int | None]] | None:
    """(start, stop) per stage with negative indices resolved; stop None = to the end."""
    out = []
    for sl in p.slices:
        a, b = sl.start, sl.stop
        if a is None:
            a = 0
        if (a < 0 or (b is not None and b < 0)) and p.total is None:
            return None
        if a < 0:
            assert p.total is not None  # returned above when a negative index meets an unknown total
            a += p.total
        if b is not None and b < 0:
            assert p.total is not None
            b += p.total
        out.append((a, b))
    return out


def _problems(p: Partition) -> list[tuple[int, str]]:
    """(slice index, message) for every gap, overlap or missing end."""
    bs = _bounds(p)
    if bs is None:
        return []
    out = []
    a0, _ = bs[0]
    if a0 > 0:
        miss = "layer 0 belongs" if a0 == 1 else f"layers 0..{a0 - 1} belong"
        out.append((0, f"stage 0 starts at layer {a0}: {miss} to no stage"))
    for i in range(1, len(bs)):
        prev_stop = bs[i - 1][1]
        start = bs[i][0]
        if prev_stop is None:
            out.append((i, f"stage {i - 1} already runs to the end of {p.base}; stage {i} (from layer {start}) overlaps it"))
            continue
        if start > prev_stop:
            gap = f"layer {prev_stop} belongs" if start == prev_stop + 1 else f"layers {prev_stop}..{start - 1} belong"
            out.append((i, f"gap between stage {i - 1} (ends before layer {prev_stop}) and stage {i} (starts at {start}): {gap} to no stage"))
        elif start < prev_stop:
            out.append((i, f"stage {i} starts at layer {start} but stage {i - 1} runs to layer {prev_stop - 1}: layers {start}..{prev_stop - 1} are in two stages"))
    last = bs[-1][1]
    if last is not None and p.total is not None:
        if last < p.total:
            out.append((len(bs) - 1, f"the last stage ends before layer {last} but {p.base} has {p.total} layers: layers {last}..{p.total - 1} belong to no stage"))
        elif last > p.total:
            out.append((len(bs) - 1, f"the last stage runs to layer {last} but {p.base} has only {p.total} layers"))
    return out
