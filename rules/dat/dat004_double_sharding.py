"""DAT004 double-sharding: a DataLoader with a DistributedSampler is passed through accelerator.prepare (sharded twice)"""

from __future__ import annotations

from typing import Iterable

from parallint.model.diagnostics import Diagnostic, Related, Severity
from parallint.model.rule import Example, Rule
from parallint.model.script import Call, Script, script_of
from parallint.rules.dat._common import _PY, prepared_by_accelerate


def _distributed_sampler_of(s: Script, loader: Call) -> Call | None:
    """The DistributedSampler a DataLoader surely gets (``sampler=`` or inside ``batch_sampler=``)."""
    import ast

    from parallint.model.script import call_args

    samplers = {id(c.node): c for c in s.by("distributed_sampler")}
    for kw, pos in (("sampler", 3), ("batch_sampler", 4)):
        n = loader.arg_node(kw, pos)
        frame = loader.frame
        for _ in range(4):
            if n is None:
                break
            if isinstance(n, ast.Call):
                if id(n) in samplers:
                    return samplers[id(n)]
                args = call_args(n)
                if kw == "batch_sampler" and args:  # BatchSampler(DistributedSampler(ds), ...)
                    first = args[0].value if args[0].keyword is None else None
                    inner = next((a.value for a in args if a.keyword == "sampler"), first)
                    n = inner
                    continue
                break
            if isinstance(n, ast.Name):
                b = s.binding(n.id, frame)
                if b is None:
                    break
                n, frame = b
                continue
            break
    return None


class DoubleSharding(Rule):
    code = "DAT004"
    calls = frozenset({"accelerator", "dataloader", "distributed_sampler"})
    name = "double-sharding"
    severity = Severity.WARNING
    summary = "a DataLoader with a DistributedSampler is passed through accelerator.prepare (sharded twice)"
    kinds = _PY
    doc = """
    ## What it does
    Flags a `DataLoader` built with a `DistributedSampler` (as `sampler=`, or inside a
    `BatchSampler` given as `batch_sampler=`) that the script then passes to
    `accelerator.prepare(...)`.

    ## Why it matters
    `accelerator.prepare` shards a DataLoader itself: it wraps the batch sampler in a
    `BatchSamplerShard` that hands every process one batch in N. A DistributedSampler has already
    given each process 1/N of the samples, so each process now sees 1/N² of the data and the job as
    a whole trains on 1/N of the dataset each epoch. Nothing fails: the run is simply shorter and
    worse than configured. The rule is a warning, like DAT001 (the mirror case, every rank seeing
    all data): the job runs and converges, on the wrong amount of data.

    ## Example

    ## How to fix
    Drop the DistributedSampler and pass `shuffle=True` (accelerate shards and reseeds every
    epoch), or keep the sampler and do not pass that DataLoader to `prepare`.
    """
    valid = [
        Example("""
            from accelerate import Accelerator
            from torch.utils.data import DataLoader
            accelerator = Accelerator()
            loader = DataLoader(train_set, batch_size=8, shuffle=True)
            model, loader = accelerator.prepare(model, loader)
        """),
        Example("""
            from accelerate import Accelerator
            from torch.utils.data import DataLoader, DistributedSampler
            accelerator = Accelerator()
            loader = DataLoader(train_set, batch_size=8, sampler=DistributedSampler(train_set))
            model = accelerator.prepare(model)
        """),
        Example("""
            from accelerate import Accelerator
            from torch.utils.data import DataLoader, DistributedSampler
            accelerator = Accelerator()
            sampler = DistributedSampler(train_set) if use_ddp_sampler else None
            loader = DataLoader(train_set, batch_size=8, sampler=sampler)
            model, loader = accelerator.prepare(model, loader)
        """),
    ]
    invalid = [
        Example("""
            from accelerate import Accelerator
            from torch.utils.data import DataLoader
            from torch.utils.data.distributed import DistributedSampler
            accelerator = Accelerator()
            sampler = DistributedSampler(train_set, shuffle=True)
            train_loader = DataLoader(train_set, batch_size=8, sampler=sampler)
            model, optimizer, train_loader = accelerator.prepare(model, optimizer, train_loader)
        """, line=7),
        Example("""
            import torch.utils.data as tud
            from accelerate import Accelerator
            class Runner:
                def __init__(self, ds):
                    self.accelerator = Accelerator()
                    bs = tud.BatchSampler(tud.DistributedSampler(ds), batch_size=4, drop_last=True)
                    self.loader = tud.DataLoader(ds, batch_sampler=bs)
                    self.loader = self.accelerator.prepare(self.loader)
        """, line=8),
    ]

    def check_file(self, f, ctx) -> Iterable[Diagnostic]:
        s = script_of(f)
        if s is None or not s.has("accelerator") or not s.has("distributed_sampler"):
            return
        for dl in s.by("dataloader"):
            sampler = _distributed_sampler_of(s, dl)
            if sampler is None:
                continue
            nr = s.arg(sampler, "num_replicas", 1)
            if nr is not None and not (nr.known and isinstance(nr.value, int) and nr.value > 1):
                continue  # an explicit replica count (1, or unknown): sharded on purpose
            prep = prepared_by_accelerate(s, dl)
            if prep is None:
                continue
            if any(g.if_id == h.if_id and g.branch != h.branch for g in dl.guards for h in prep.guards):
                continue  # built on one path, prepared on the other
            yield self.report(
                prep.span,
                "this DataLoader already has a DistributedSampler (line "
                f"{sampler.span.line}) and accelerator.prepare() shards it again: each process sees "
                "1/N of its 1/N share, the job trains on 1/N of the data per epoch; drop the "
                "DistributedSampler and let accelerator.prepare() shard the loader",
                related=[Related.at(sampler.span, "DistributedSampler here"), Related.at(dl.span, "DataLoader here")],
            )
