"""DAT001 missing-distributed-sampler: a DDP/FSDP script iterates a training DataLoader with no DistributedSampler"""

from __future__ import annotations

from typing import Iterable
import re

from parallint.model.diagnostics import Diagnostic, Severity
from parallint.model.rule import Example, Rule
from parallint.model.script import Call, Script, script_of
from parallint.rules.dat._common import _PY, _TRAINISH, _passed_not_none


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


_PER_RANK = re.compile(r"rank|world_size|num_shards|process_index", re.I)


def _bound_text(s: Script, node, c: Call) -> str:
    """The source of the expression a name passed to the call was bound to ("" if unknown)."""
    import ast

    if isinstance(node, ast.Name):
        b = s.binding(node.id, c.frame)
        if b is not None:
            return s.code(b[0])
    return ""


class MissingDistributedSampler(Rule):
    code = "DAT001"
    calls = frozenset({"dataloader", "ddp", "fsdp", "fully_shard", "hvd_optimizer"})
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
    comment or docstring that names one of them does not count. A script that trains with
    Horovod's `hvd.DistributedOptimizer` is checked the same way. Scripts driven by accelerate,
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
        # Horovod's recipe: the sampler is told Horovod's size and rank
        Example("""
            import torch
            import horovod.torch as hvd
            hvd.init()
            sampler = torch.utils.data.distributed.DistributedSampler(
                train_dataset, num_replicas=hvd.size(), rank=hvd.rank())
            train_loader = torch.utils.data.DataLoader(train_dataset, batch_size=64, sampler=sampler)
            optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())
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
        Example("""
            import torch
            import horovod.torch as hvd
            hvd.init()
            train_loader = torch.utils.data.DataLoader(train_dataset, batch_size=64, shuffle=True)
            optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())
        """, line=4),
    ]

    def check_file(self, f, ctx) -> Iterable[Diagnostic]:
        s = script_of(f)
        if s is None or s.framework_managed():
            return
        hvd = not s.has("ddp", "fsdp", "fully_shard")
        if hvd and not s.has("hvd_optimizer"):
            return
        if _shards_otherwise(s):
            return
        for c in s.by("dataloader"):
            if _passed_not_none(s, c, "sampler", 3) is not False:
                continue
            if _passed_not_none(s, c, "batch_sampler", 4) is not False:
                continue
            if any(g.rank or g.single for g in c.guards):
                continue
            shuffle = s.arg(c, "shuffle", 2)
            ds = c.arg_node("dataset", 0)
            ds_text = s.code(ds) if ds is not None else ""
            if _PER_RANK.search(ds_text) or _PER_RANK.search(_bound_text(s, ds, c)):
                continue  # the dataset is split by rank by hand (data[rank::world_size], shards[rank])
            trainish = bool(_TRAINISH.search(ds_text) or _TRAINISH.search(c.target or ""))
            if not ((shuffle is not None and shuffle.known and shuffle.value is True) or trainish):
                continue
            if hvd:
                yield self.report(
                    c.span,
                    "DataLoader without a DistributedSampler in a script that trains with Horovod "
                    "(hvd.DistributedOptimizer): every worker iterates the same samples; pass "
                    "sampler=DistributedSampler(dataset, num_replicas=hvd.size(), rank=hvd.rank()) to the DataLoader",
                )
                continue
            yield self.report(
                c.span,
                "DataLoader without a DistributedSampler in a script that wraps its model in "
                f"{'DDP' if s.has('ddp') else 'FSDP'}: every rank iterates the same samples; pass "
                "sampler=DistributedSampler(dataset) to the DataLoader",
            )
