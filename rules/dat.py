"""DAT — data loading (DAT001–DAT004)."""

from __future__ import annotations

from typing import Iterable

import re

from parallint.model.diagnostics import Diagnostic, Related, Severity
from parallint.model.script import Call, Script, script_of
from parallint.model.rule import Example, Rule

_PY = frozenset({"python"})
#: names in the code that mean the script shards its data some other way (or streams it)
_OWN_SHARDING = frozenset({"DistributedSampler", "IterableDataset", "split_dataset_by_node", "shard",
                           "DistributedBatchSampler", "ElasticDistributedSampler", "StatefulDistributedSampler",
                           "DistributedGroupSampler", "DistributedEvalSampler"})


def _shards_otherwise(s: Script) -> bool:
    """The code (not a comment or docstring) shards the data some other way, or streams it."""
    ix = s.syntax_index()
    if ix.names & _OWN_SHARDING or ix.bases & {"IterableDataset"}:
        return True
    if "num_replicas" in ix.keywords or ix.keyword_is("streaming", True):
        return True
    return any(m.split(".")[0] in ("webdataset", "wds") for m in ix.modules)


def _accelerators(s: Script) -> set[str]:
    """Names (``accelerator``, ``self.accelerator``) bound to an ``Accelerator(...)``."""
    return {c.target for c in s.by("accelerator") if c.target}


def prepared_by_accelerate(s: Script, loader: Call) -> Call | None:
    """The ``accelerator.prepare(...)`` call a DataLoader is passed to, if any."""
    import ast

    accs = _accelerators(s)
    if not accs:
        return None
    for c in s.methods("prepare"):
        if c.receiver is None or s.code(c.receiver) not in accs:
            continue
        for a in c.args:
            v = a.value
            if v is loader.node or (isinstance(v, (ast.Name, ast.Attribute)) and loader.target
                                    and s.code(v) == loader.target):
                return c
    return None
_TRAINISH = re.compile(r"train", re.I)
#: evaluation data: the order does not matter, so a fixed shuffle is harmless
_EVALISH = re.compile(r"eval|valid|test|(?:^|_)(?:val|dev)(?:_|$)", re.I)


_PER_RANK = re.compile(r"rank|world_size|num_shards|process_index", re.I)


def _bound_text(s: Script, node, c: Call) -> str:
    """The source of the expression a name passed to the call was bound to ("" if unknown)."""
    import ast

    if isinstance(node, ast.Name):
        b = s.binding(node.id, c.frame)
        if b is not None:
            return s.code(b[0])
    return ""


def _passed_not_none(s: Script, c: Call, keyword: str, pos: int | None) -> bool | None:
    """True when an argument is passed and is surely not None; None when it cannot be said."""
    import ast

    n = c.arg_node(keyword, pos)
    if n is None:
        return None if c.has_star() else False
    if isinstance(n, ast.Constant) and n.value is None:
        return False
    if isinstance(n, (ast.Call, ast.List, ast.Tuple)):
        return True
    if isinstance(n, ast.Name):
        b = s.binding(n.id, c.frame)
        if b is not None and isinstance(b[0], ast.Call):
            return True
    return None


class MissingDistributedSampler(Rule):
    code = "DAT001"
    calls = frozenset({"dataloader", "ddp", "fsdp", "fully_shard"})
    name = "missing-distributed-sampler"
    severity = Severity.WARNING
    summary = "a DDP/FSDP script iterates a training DataLoader with no DistributedSampler"
    kinds = _PY
    doc = """
    ## What it does
    In a script that wraps its model in DDP or FSDP itself, flags a training `DataLoader` (one that
    shuffles, or whose name or dataset says `train`) built with no `sampler=`/`batch_sampler=`,
    when nothing in the script's code shards the data another way (`DistributedSampler`,
    `IterableDataset`, `split_dataset_by_node`, `.shard(...)`, `num_replicas=`, webdataset); a
    comment or docstring that names one of them does not count. Scripts driven by accelerate,
    Lightning or the HF Trainer are left alone: those shard the data themselves.

    ## Why it matters
    Without a distributed sampler every rank iterates the whole dataset in the same order: N GPUs
    compute the same batches, the run costs N times more for the same progress, and the effective
    batch size is not what the hyper-parameters say.

    ## Example

    ## How to fix
    `sampler = DistributedSampler(train_set)`, pass `sampler=sampler` (and drop `shuffle=True`),
    and call `sampler.set_epoch(epoch)` at the start of every epoch.
    """
    valid = [
        Example("""
            from torch.nn.parallel import DistributedDataParallel as DDP
            from torch.utils.data import DataLoader, DistributedSampler
            model = DDP(model, device_ids=[local_rank])
            loader = DataLoader(train_set, batch_size=32, sampler=DistributedSampler(train_set))
        """),
        Example("""
            from accelerate import Accelerator
            from torch.utils.data import DataLoader
            accelerator = Accelerator()
            loader = DataLoader(train_set, batch_size=32, shuffle=True)
            model, loader = accelerator.prepare(model, loader)
        """),
        Example("""
            from torch.nn.parallel import DistributedDataParallel as DDP
            from torch.utils.data import DataLoader
            model = DDP(model, device_ids=[local_rank])
            val_loader = DataLoader(val_set, batch_size=64)
        """),
        Example("""
            import torch.distributed as dist
            from torch.nn.parallel import DistributedDataParallel as DDP
            from torch.utils.data import DataLoader, Subset
            model = DDP(model, device_ids=[local_rank])
            mine = Subset(train_set, range(dist.get_rank(), len(train_set), dist.get_world_size()))
            train_loader = DataLoader(mine, batch_size=32, shuffle=True)
        """),
    ]
    invalid = [
        Example("""
            from torch.nn.parallel import DistributedDataParallel as DDP
            from torch.utils.data import DataLoader
            model = DDP(model, device_ids=[local_rank])
            loader = DataLoader(train_set, batch_size=32, shuffle=True)
            for epoch in range(10):
                for x, y in loader:
                    step(x, y)
        """, line=4),
        Example("""
            import torch.utils.data
            from torch.distributed.fsdp import fully_shard
            fully_shard(model)
            train_loader = torch.utils.data.DataLoader(train_dataset, batch_size=8)
        """, line=4),
        # a comment that mentions the sampler is not a sampler
        Example("""
            from torch.nn.parallel import DistributedDataParallel as DDP
            from torch.utils.data import DataLoader
            model = DDP(model, device_ids=[local_rank])
            # TODO: switch to a DistributedSampler
            train_loader = DataLoader(train_set, batch_size=32, shuffle=True)
        """, line=5),
    ]

    def check_file(self, f, ctx) -> Iterable[Diagnostic]:
        s = script_of(f)
        if s is None or not s.has("ddp", "fsdp", "fully_shard") or s.framework_managed():
            return
        if _shards_otherwise(s):
            return
        for c in s.by("dataloader"):
            if _passed_not_none(s, c, "sampler", 3) is not False:
                continue
            if _passed_not_none(s, c, "batch_sampler", 4) is not False:
                continue
            if any(g.rank for g in c.guards):
                continue
            shuffle = s.arg(c, "shuffle", 2)
            ds = c.arg_node("dataset", 0)
            ds_text = s.code(ds) if ds is not None else ""
            if _PER_RANK.search(ds_text) or _PER_RANK.search(_bound_text(s, ds, c)):
                continue  # the dataset is split by rank by hand (data[rank::world_size], shards[rank])
            trainish = bool(_TRAINISH.search(ds_text) or _TRAINISH.search(c.target or ""))
            if not ((shuffle is not None and shuffle.known and shuffle.value is True) or trainish):
                continue
            yield self.report(
                c.span,
                "DataLoader without a DistributedSampler in a script that wraps its model in "
                f"{'DDP' if s.has('ddp') else 'FSDP'}: every rank iterates the same samples; pass "
                "sampler=DistributedSampler(dataset) to the DataLoader",
            )


def _loader_uses(s: Script, sampler: Call) -> list[Call]:
    out = []
    for dl in s.by("dataloader"):
        n = dl.arg_node("sampler", 3)
        if n is None:
            continue
        if n is sampler.node or (sampler.target and s.code(n) == sampler.target):
            out.append(dl)
    return out


class SamplerSetEpochMissing(Rule):
    code = "DAT002"
    calls = frozenset({"accelerator", "dataloader", "distributed_sampler"})
    name = "sampler-set-epoch-missing"
    severity = Severity.WARNING
    summary = "a shuffling DistributedSampler is iterated across epochs without set_epoch(epoch)"
    kinds = _PY
    doc = """
    ## What it does
    Flags a `DistributedSampler` that shuffles (the default) whose DataLoader is iterated in an
    epoch loop, when the script never calls `set_epoch` (decided from the code: a comment or
    docstring that mentions `set_epoch` does not count). Evaluation samplers (`eval_sampler`,
    `val_dataset` ...) are left alone: their order does not matter; so are DataLoaders passed
    through `accelerator.prepare`, whose `DataLoaderShard` calls `set_epoch` itself (but see
    DAT004).

    ## Why it matters
    The sampler seeds its shuffle with `seed + epoch`. Without `set_epoch(epoch)` the epoch stays
    0: every epoch visits the samples in exactly the same order, which hurts convergence.

    ## Example

    ## How to fix
    Call `sampler.set_epoch(epoch)` at the start of each epoch, before iterating the loader.
    """
    valid = [
        Example("""
            from torch.utils.data import DataLoader, DistributedSampler
            sampler = DistributedSampler(train_set)
            loader = DataLoader(train_set, sampler=sampler)
            for epoch in range(10):
                sampler.set_epoch(epoch)
                for batch in loader:
                    step(batch)
        """),
        Example("""
            from torch.utils.data import DataLoader, DistributedSampler
            eval_sampler = DistributedSampler(eval_dataset)
            eval_loader = DataLoader(eval_dataset, sampler=eval_sampler)
            for epoch in range(10):
                evaluate(model, eval_loader)
        """),
        Example("""
            from torch.utils.data import DataLoader, DistributedSampler
            sampler = DistributedSampler(val_set, shuffle=False)
            loader = DataLoader(val_set, sampler=sampler)
            for epoch in range(10):
                for batch in loader:
                    evaluate(batch)
        """),
        # accelerate's prepared loader (DataLoaderShard) calls set_epoch itself
        Example("""
            from accelerate import Accelerator
            from torch.utils.data import DataLoader, DistributedSampler
            accelerator = Accelerator()
            sampler = DistributedSampler(train_set)
            loader = accelerator.prepare(DataLoader(train_set, sampler=sampler))
            for epoch in range(10):
                for batch in loader:
                    step(batch)
        """),
    ]
    invalid = [
        Example("""
            from torch.utils.data import DataLoader, DistributedSampler
            sampler = DistributedSampler(train_set)
            loader = DataLoader(train_set, batch_size=32, sampler=sampler)
            for epoch in range(10):
                for batch in loader:
                    step(batch)
        """, line=2),
        Example("""
            import torch.utils.data as tud
            train_loader = tud.DataLoader(train_set, sampler=tud.distributed.DistributedSampler(train_set, shuffle=True))
            for epoch in range(args.epochs):
                train_one_epoch(model, train_loader)
        """, line=2),
    ]

    def check_file(self, f, ctx) -> Iterable[Diagnostic]:
        s = script_of(f)
        if s is None or "set_epoch" in s.syntax_index().names:
            return
        for c in s.by("distributed_sampler"):
            sh = s.arg(c, "shuffle", 3)
            if sh is not None and not (sh.known and sh.value is True):
                continue
            if any(l.epoch for l in c.loops):
                continue  # a new sampler every epoch
            uses = _loader_uses(s, c)
            if any(prepared_by_accelerate(s, dl) for dl in uses):
                continue  # accelerate's DataLoaderShard calls set_epoch itself (DAT004 has a word on it)
            loaders = [dl.target for dl in uses if dl.target]
            if not loaders:
                continue
            ds = c.arg_node("dataset", 0)
            names = [c.target or "", s.code(ds) if ds is not None else "", *loaders]
            if any(_EVALISH.search(n) for n in names if n) and not any(_TRAINISH.search(n) for n in names if n):
                continue  # an evaluation sampler: the visiting order does not matter
            if not self._iterated_per_epoch(s, set(loaders)):
                continue
            yield self.report(
                c.span,
                "DistributedSampler shuffles but set_epoch() is never called: every epoch sees the "
                "samples in the same order; call sampler.set_epoch(epoch) each epoch",
            )

    @staticmethod
    def _iterated_per_epoch(s: Script, names: set[str]) -> bool:
        for loop, outer, _frame in s.loops:
            if loop.names & names and (loop.epoch or any(o.epoch for o in outer)):
                return True
        import ast

        for c in s.calls:
            if any(l.epoch for l in c.loops):
                for a in c.args:
                    if isinstance(a.value, ast.Name) and a.value.id in names:
                        return True
        return False


class SamplerWithShuffle(Rule):
    code = "DAT003"
    calls = frozenset({"dataloader"})
    name = "sampler-with-shuffle"
    severity = Severity.ERROR
    summary = "DataLoader(sampler=..., shuffle=True) raises at construction"
    kinds = _PY
    doc = """
    ## What it does
    Flags a `DataLoader` given both a sampler (or batch sampler) and `shuffle=True`.

    ## Why it matters
    PyTorch raises "sampler option is mutually exclusive with shuffle" when the DataLoader is
    built: the job dies at start-up, after the GPUs are allocated.

    ## Example

    ## How to fix
    Drop `shuffle=True`: the sampler shuffles (`DistributedSampler(shuffle=True)` is its default).
    """
    valid = [
        Example("""
            from torch.utils.data import DataLoader, DistributedSampler
            loader = DataLoader(train_set, sampler=DistributedSampler(train_set), shuffle=False)
        """),
        Example("""
            from torch.utils.data import DataLoader
            loader = DataLoader(train_set, sampler=sampler, shuffle=(sampler is None))
        """),
        Example("""
            from torch.utils.data import DataLoader
            sampler = None
            if distributed:
                sampler = make_sampler()
            loader = DataLoader(train_set, sampler=sampler, shuffle=True)
        """),
    ]
    invalid = [
        Example("""
            from torch.utils.data import DataLoader, DistributedSampler
            loader = DataLoader(train_set, batch_size=8, sampler=DistributedSampler(train_set), shuffle=True)
        """, line=2),
        Example("""
            import torch.utils.data as tud
            sampler = tud.BatchSampler(tud.DistributedSampler(ds), batch_size=8, drop_last=False)
            loader = tud.DataLoader(ds, batch_sampler=sampler, shuffle=True)
        """, line=3),
    ]

    def check_file(self, f, ctx) -> Iterable[Diagnostic]:
        s = script_of(f)
        if s is None:
            return
        for c in s.by("dataloader"):
            sh = s.arg(c, "shuffle", 2)
            if sh is None or not sh.known or sh.value is not True:
                continue
            for kw, pos in (("sampler", 3), ("batch_sampler", 4)):
                if _passed_not_none(s, c, kw, pos) is True:
                    yield self.report(
                        s.arg_span(c, "shuffle", 2),
                        f"DataLoader got both {kw}= and shuffle=True: PyTorch raises \"{kw} option is "
                        "mutually exclusive with shuffle\"; remove shuffle=True (let the sampler shuffle)",
                    )
                    break


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
