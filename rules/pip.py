"""PIP — hand-written pipeline partitions (PIP001–PIP003)."""

from __future__ import annotations

import re
from typing import Any, Iterable, NamedTuple

from parallint.model.diagnostics import Diagnostic, Related, Severity, Span
from parallint.model.script import Partition, Script, job_scripts, script_of
from parallint.model.world import job_launch_world_size
from parallint.model.rule import Example, Rule

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


class PartitionGapOrOverlap(Rule):
    code = "PIP001"
    facts = frozenset({"training.pp_schedule"})
    name = "partition-gap-or-overlap"
    severity = Severity.ERROR
    summary = "layer slices handed to pipeline ranks overlap, leave a gap, or miss the first/last layer"
    kinds = _PY | _CONFIG_KINDS
    doc = """
    ## What it does
    Reads hand-written pipeline partitions — a list of slices of one module list, such as
    `[model.layers[:4], model.layers[4:8]]`, usually indexed by the rank — and flags slices that
    overlap, leave layers out between stages, or miss the first or last layers (when the script
    shows how many layers there are). Also torchtitan's `module_fqns_per_model_part`.

    ## Why it matters
    A skipped layer silently trains a different, shallower model; an overlapping layer runs
    twice and is updated by two stages with diverging weights. Neither raises an error.

    ## Example

    ## How to fix
    Make each stage start where the previous one ends (`[:4]`, `[4:8]`) and let the last one run
    to the end; better, compute the bounds from the layer count and the number of stages.
    """
    valid = [
        Example("""
            import torch.distributed as dist
            dist.init_process_group("nccl")
            stages = [model.layers[:4], model.layers[4:8]]
            stage = stages[dist.get_rank()]
        """),
        Example("""
            import torch.nn as nn
            import torch.distributed as dist
            dist.init_process_group("nccl")
            N = 12
            layers = nn.ModuleList([Block() for _ in range(N)])
            parts = [nn.Sequential(*layers[0:6]), nn.Sequential(*layers[6:])]
        """),
        Example("""
            import torch.distributed as dist
            dist.init_process_group("nccl")
            train, val = [data[:1000], data[2000:3000]]
        """),
        Example(_TITAN.format(parts='[["tok_embeddings", "layers.0", "layers.1"], ["layers.2", "layers.3", "norm", "output"]]'),
                filename="llama_pp.toml"),
    ]
    invalid = [
        Example("""
            import torch.distributed as dist
            dist.init_process_group("nccl")
            stages = [model.layers[:4], model.layers[5:8]]
            stage = stages[dist.get_rank()]
        """, line=3),
        Example("""
            import torch.nn as nn
            import torch.distributed as dist
            dist.init_process_group("nccl")
            layers = nn.ModuleList([Block() for _ in range(8)])
            parts = [nn.Sequential(*layers[0:4]), nn.Sequential(*layers[3:6])]
            stage = parts[dist.get_rank()]
        """, count=2, line=5),
        Example("""
            import torch.nn as nn
            import torch.distributed as dist
            dist.init_process_group("nccl")
            rank = dist.get_rank()
            if rank == 0:
                stage = nn.Sequential(*model.layers[0:4])
            elif rank == 1:
                stage = nn.Sequential(*model.layers[3:8])
        """, line=8),
        Example(_TITAN.format(parts='[["tok_embeddings", "layers.0", "layers.1"], ["layers.3", "norm", "output"]]'),
                filename="llama_pp.toml", line=8),
    ]

    def check_file(self, f, ctx) -> Iterable[Diagnostic]:
        for span, msg in _config_problems(f, self.code):
            yield self.report(span, f"pipeline partition: {msg}; {_COVER_FIX}")
        s = script_of(f)
        if s is None:
            return
        for p in _partitions(s):
            for i, msg in _problems(p):
                yield self.report(p.slices[i].span, f"pipeline partition: {msg}; {_COVER_FIX}")


def _sizes(p: Partition) -> list[int] | None:
    bs = _bounds(p)
    if bs is None or _problems(p):
        return None
    out = []
    for a, b in bs:
        if b is None:
            if p.total is None:
                return None
            b = p.total
        out.append(b - a)
    return out


class PartitionCountMismatch(Rule):
    code = "PIP002"
    facts = frozenset({"parallel.pp", "training.pp_schedule", "parallel.world_size"})
    name = "partition-count-mismatch"
    severity = Severity.ERROR
    summary = "the number of partitions differs from the PP degree or from the ranks that select them"
    kinds = _PY | _CONFIG_KINDS
    doc = """
    ## What it does
    Compares the number of stages of a hand-written partition that is chosen by the rank
    (`stages[rank]`) with the number of ranks: the world size the script passes to
    `init_process_group`, or the one the launch starts, or the pipeline degree stated for the job.
    Per-stage lists written as literals and indexed by a rank (`layers_per_stage = [8, 8, 8]`
    then `layers_per_stage[rank]`; boundaries `bounds[rank]:bounds[rank + 1]`, one entry more than
    stages) are checked the same way: against the world size when the global rank indexes them,
    against the pipeline degree when a pipeline rank (`pp_rank`, `stage_id`) does.
    For torchtitan's `module_fqns_per_model_part`: the number of parts must be a multiple of
    `pipeline_parallel_degree` (exactly it for the single-stage schedules 1F1B and GPipe).

    ## Why it matters
    With fewer stages than ranks the extra ranks index past the list (`IndexError`) or get no
    layers; with more, some stages are never run and the model is cut short.

    ## Example

    ## How to fix
    Split the layers into exactly as many stages as there are pipeline ranks.
    """
    valid = [
        Example("""
            import torch.distributed as dist
            dist.init_process_group("nccl", world_size=2)
            stages = [model.layers[:4], model.layers[4:8]]
            stage = stages[dist.get_rank()]
        """),
        Example(files={
            "run.sh": "torchrun --nproc_per_node 2 pipe.py\n",
            "pipe.py": """
                import torch.distributed as dist
                dist.init_process_group("nccl")
                stages = [model.layers[:4], model.layers[4:]]
                stage = stages[dist.get_rank()]
            """,
        }),
        Example(_TITAN.format(parts='[["tok_embeddings", "layers.0"], ["layers.1"], ["layers.2"], ["layers.3", "norm", "output"]]'),
                filename="llama_pp.toml"),
        Example("""
            import torch.distributed as dist
            from megatron.core import parallel_state
            parallel_state.initialize_model_parallel(pipeline_model_parallel_size=4)
            pp_rank = parallel_state.get_pipeline_model_parallel_rank()
            boundaries = [0, 8, 16, 24, 32]
            mine = model.layers[boundaries[pp_rank]:boundaries[pp_rank + 1]]
        """),
    ]
    invalid = [
        Example("""
            import torch.distributed as dist
            dist.init_process_group("nccl", world_size=4)
            stages = [model.layers[:4], model.layers[4:8]]
            stage = stages[dist.get_rank()]
        """, line=3),
        Example(files={
            "run.sh": "torchrun --nproc_per_node 4 pipe.py\n",
            "pipe.py": """
                import torch.distributed as dist
                dist.init_process_group("nccl")
                stages = [model.layers[:4], model.layers[4:]]
                stage = stages[dist.get_rank()]
            """,
        }, line=3),
        Example(_TITAN.format(parts='[["tok_embeddings", "layers.0"], ["layers.1"], ["layers.2", "norm", "output"]]'),
                filename="llama_pp.toml", line=8),
        Example(files={
            "run.sh": "torchrun --nproc_per_node 4 pipe.py\n",
            "pipe.py": """
                import torch.distributed as dist
                dist.init_process_group("nccl")
                rank = dist.get_rank()
                layers_per_stage = [8, 8, 8]
                start = sum(layers_per_stage[:rank])
                mine = model.layers[start:start + layers_per_stage[rank]]
            """,
        }, line=4),
        Example("""
            import torch.distributed as dist
            from megatron.core import parallel_state
            parallel_state.initialize_model_parallel(tensor_model_parallel_size=2, pipeline_model_parallel_size=4)
            pp_rank = parallel_state.get_pipeline_model_parallel_rank()
            boundaries = [0, 8, 16, 24]
            mine = model.layers[boundaries[pp_rank]:boundaries[pp_rank + 1]]
        """, line=5),
    ]

    def _check_lists(self, s: Script, n: int, what: str, rank: str, related=(), frame=None) -> Iterable[Diagnostic]:
        """Per-stage lists (`layers_per_stage[rank]`) whose length is not the number of ranks."""
        for rl in s.rank_lists:
            if rl.rank != rank:
                continue
            if frame is not None and (rl.frame is None or not s.same_run(frame, rl.frame)):
                continue
            want = n + 1 if rl.boundaries else n
            if rl.length == want:
                continue
            shape = (f"{rl.length} boundaries (indexed with rank and rank + 1: {rl.length - 1} stages)"
                     if rl.boundaries else f"{rl.length} entries")
            short = rl.length < want
            yield self.report(
                rl.span,
                f"`{rl.name}` has {shape}, indexed by the {'pipeline ' if rank == 'pipeline' else ''}rank, "
                f"but {what} is {n}: "
                + ("the last ranks index past the list (IndexError)" if short else "some entries are never used")
                + f"; give it {want} entries",
                related=related,
            )

    def _check(self, s: Script, n: int, what: str, related=(), frame=None, world=True) -> Iterable[Diagnostic]:
        if world:
            yield from self._check_lists(s, n, what, "global", related, frame)
        for p in _partitions(s):
            if p.selector != "rank" or p.open_ended:
                continue
            if frame is not None and (p.frame is None or not s.same_run(frame, p.frame)):
                continue
            k = len(p.slices)
            if k != n:
                yield self.report(
                    p.span,
                    f"pipeline partition has {k} stages, chosen by rank, but {what} is {n}: "
                    + ("ranks beyond the last stage index past the list" if k < n else f"{k - n} stage(s) never run")
                    + f"; split the layers into {n} stages",
                    related=related,
                )

    def check_file(self, f, ctx) -> Iterable[Diagnostic]:
        for span, msg in _config_problems(f, self.code):
            yield self.report(span, f"pipeline partition: {msg}; change the number of model parts to what the "
                                    f"schedule needs")
        s = script_of(f)
        if s is None:
            return
        for ws, frame in s.world_sizes():
            yield from self._check(s, ws.value, "init_process_group(world_size=...)", frame=frame)

    def check_job(self, job, ctx) -> Iterable[Diagnostic]:
        pp = job.int("parallel.pp")
        ws, wv = job_launch_world_size(job)
        for f, s in job_scripts(job):
            if f.facts.int("parallel.world_size") is not None:
                continue  # the file's own world size was checked by check_file
            if pp is not None:
                yield from self._check(s, pp, "the pipeline-parallel degree", world=False)
                yield from self._check_lists(s, pp, "the pipeline-parallel degree", "pipeline")
            elif ws is not None:
                assert wv is not None  # a known world size comes with its Value
                rel = [Related.at(wv.span, f"{ws} processes ({wv.source})")] if wv.span else []
                yield from self._check(s, ws, "the number of processes the launch starts", rel)


class PartitionImbalance(Rule):
    code = "PIP003"
    name = "partition-imbalance"
    severity = Severity.INFO
    summary = "pipeline stage sizes differ by more than one layer"
    kinds = _PY
    doc = """
    ## What it does
    Reports a hand-written pipeline partition whose stages differ in size by more than one layer.

    ## Why it matters
    A pipeline runs at the pace of its slowest stage: with stages of 2 and 6 layers, the small
    stage idles most of every step, and the large one may also run out of memory first.

    ## Example

    ## How to fix
    Balance the layers (`[:4]`, `[4:8]`); if the imbalance is deliberate (embeddings on the first
    stage, the head on the last), suppress it with `# noqa: PIP003`.
    """
    valid = [
        Example("""
            import torch.distributed as dist
            dist.init_process_group("nccl")
            stages = [model.layers[:4], model.layers[4:8]]
            stage = stages[dist.get_rank()]
        """),
        Example("""
            import torch.distributed as dist
            dist.init_process_group("nccl")
            stages = [model.layers[:4], model.layers[4:9]]
            stage = stages[dist.get_rank()]
        """),
    ]
    invalid = [
        Example("""
            import torch.distributed as dist
            dist.init_process_group("nccl")
            stages = [model.layers[:2], model.layers[2:8]]
            stage = stages[dist.get_rank()]
        """, line=3),
    ]

    def check_file(self, f, ctx) -> Iterable[Diagnostic]:
        s = script_of(f)
        if s is None:
            return
        for p in _partitions(s):
            sizes = _sizes(p)
            if sizes and max(sizes) - min(sizes) > 1:
                yield self.report(
                    p.span,
                    f"pipeline stages of {p.base} hold {sizes} layers: the largest stage sets the pace "
                    f"and the others idle; rebalance them to {_even(sum(sizes), len(sizes))} layers",
                )


_COVER_FIX = "assign each layer to exactly one stage"


def _even(total: int, k: int) -> list[int]:
    """Stage sizes that differ by at most one layer."""
    return [total // k + (1 if i < total % k else 0) for i in range(k)]
