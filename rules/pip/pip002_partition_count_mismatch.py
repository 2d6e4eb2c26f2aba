"""PIP002 partition-count-mismatch: the number of partitions differs from the PP degree or from the ranks that select them"""

from __future__ import annotations

from typing import Iterable

from parallint.model.diagnostics import Diagnostic, Related, Severity
from parallint.model.rule import Example, Rule
from parallint.model.script import Script, job_scripts, script_of
from parallint.model.world import job_launch_world_size
from parallint.rules.pip._common import _CONFIG_KINDS, _PY, _TITAN, _config_problems, _partitions


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
