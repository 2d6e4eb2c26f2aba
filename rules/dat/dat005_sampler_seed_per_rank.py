"""DAT005 sampler-seed-per-rank: a shuffling DistributedSampler seeded with the rank, so the ranks' shards overlap"""

from __future__ import annotations

import ast
from typing import Iterable

from parallint.model.diagnostics import Diagnostic, Severity
from parallint.model.rule import Example, Rule
from parallint.model.script import Script, script_of
from parallint.rules.dat._common import _PY


def _rank_part(s: Script, node: ast.AST, frame, given: ast.AST | None) -> ast.AST | None:
    """The part of ``node`` that is provably a rank (the global or the local one, or the very
    expression the same sampler gets as its ``rank=``), if any."""
    same = s.code(given) if isinstance(given, (ast.Name, ast.Attribute)) else None
    for sub in ast.walk(node):
        if not isinstance(sub, (ast.Name, ast.Call, ast.Attribute, ast.Subscript)):
            continue
        if s.rank_kind(sub, frame) or (same is not None and isinstance(sub, (ast.Name, ast.Attribute))
                                       and s.code(sub) == same):
            return sub
    return None


class SamplerSeedPerRank(Rule):
    code = "DAT005"
    calls = frozenset({"distributed_sampler"})
    name = "sampler-seed-per-rank"
    severity = Severity.WARNING
    summary = "a shuffling DistributedSampler seeded with the rank, so the ranks' shards overlap"
    kinds = _PY
    doc = """
    ## What it does
    Flags a shuffling `DistributedSampler` whose `seed` provably depends on the rank
    (`seed=args.seed + rank`, `seed=dist.get_rank()`, `seed=int(os.environ["LOCAL_RANK"])`, or
    the very variable the same sampler gets as its `rank=`, as in an `mp.spawn` worker). A
    sampler with `shuffle=False` is left alone (the seed is not used), and so is a seed that only
    looks like a rank by its name.

    ## Why it matters
    Every rank shuffles the whole dataset with the sampler's seed (plus the epoch) and then takes
    every N-th index of that order. The ranks must therefore agree on the seed: with one seed per
    rank each rank takes its slice of a *different* permutation, so some samples are seen by
    several ranks in an epoch and others by none. Nothing fails; the model quietly trains on a
    skewed epoch. Seeding per rank is right for dropout and augmentation (`torch.manual_seed`),
    not for the sampler.

    ## Example

    ## How to fix
    Give every rank the same sampler seed (`seed=args.seed`) and call `set_epoch(epoch)` each
    epoch; keep the per-rank offset for `torch.manual_seed` only.
    """
    valid = [
        Example("""
            import torch.distributed as dist
            from torch.utils.data import DistributedSampler
            rank = dist.get_rank()
            torch.manual_seed(args.seed + rank)  # per-rank augmentation: right
            sampler = DistributedSampler(train_set, rank=rank, seed=args.seed)
        """),
        Example("""
            import torch.distributed as dist
            from torch.utils.data import DistributedSampler
            sampler = DistributedSampler(val_set, shuffle=False, seed=dist.get_rank())
        """),
        # a name that only looks like a rank: not provable, so silent
        Example("""
            from torch.utils.data import DistributedSampler
            sampler = DistributedSampler(train_set, seed=args.seed + args.rank_offset)
        """),
    ]
    invalid = [
        # an mp.spawn worker: the sampler's own rank= is in its seed
        Example("""
            import torch.multiprocessing as mp
            from torch.utils.data.distributed import DistributedSampler
            def main(rank, world_size, args):
                sampler = DistributedSampler(ds, num_replicas=world_size, rank=rank, seed=args.seed + rank)
            mp.spawn(main, args=(4, None), nprocs=4)
        """, line=4),
        Example("""
            import torch.distributed as dist
            from torch.utils.data import DistributedSampler
            rank = dist.get_rank()
            sampler = DistributedSampler(train_set, rank=rank, seed=args.seed + rank)
        """, line=4),
        Example("""
            import os
            from torch.utils.data.distributed import DistributedSampler
            def loader(ds, seed):
                local_rank = int(os.environ["LOCAL_RANK"])
                return DistributedSampler(ds, shuffle=True, seed=seed * 100 + local_rank)
        """, line=5),
    ]

    def check_file(self, f, ctx) -> Iterable[Diagnostic]:
        s = script_of(f)
        if s is None:
            return
        for c in s.by("distributed_sampler"):
            sh = s.arg(c, "shuffle", 3)
            if sh is not None and not (sh.known and sh.value is True):
                continue  # no shuffle (or not known to shuffle): the seed is not used
            seed = c.arg_node("seed", 4)
            if seed is None:
                continue
            part = _rank_part(s, seed, c.frame, c.arg_node("rank", 2))
            if part is None:
                continue
            yield self.report(
                s.span_of(seed),
                f"the DistributedSampler's seed `{s.code(seed)}` depends on the rank (`{s.code(part)}`): "
                "each rank slices a different shuffle, so the shards overlap and some samples are never "
                "seen in an epoch; give every rank the same seed (seed per rank belongs in "
                "torch.manual_seed, not in the sampler)",
            )
