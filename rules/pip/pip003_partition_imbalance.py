"""PIP003 partition-imbalance: pipeline stage sizes differ by more than one layer"""

from __future__ import annotations

from typing import Iterable

from parallint.model.diagnostics import Diagnostic, Severity
from parallint.model.rule import Example, Rule
from parallint.model.script import Partition, script_of
from parallint.rules.pip._common import _PY, _bounds, _partitions, _problems


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


def _even(total: int, k: int) -> list[int]:
    """Stage sizes that differ by at most one layer."""
    return [total // k + (1 if i < total % k else 0) for i in range(k)]


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
