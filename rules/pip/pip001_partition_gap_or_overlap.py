"""PIP001 partition-gap-or-overlap: layer slices handed to pipeline ranks overlap, leave a gap, or miss the first/last layer"""

from __future__ import annotations

from typing import Iterable

from parallint.model.diagnostics import Diagnostic, Severity
from parallint.model.rule import Example, Rule
from parallint.model.script import script_of
from parallint.rules.pip._common import _CONFIG_KINDS, _PY, _TITAN, _config_problems, _partitions, _problems


_COVER_FIX = "assign each layer to exactly one stage"


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
