"""DAT002 sampler-set-epoch-missing: a shuffling DistributedSampler is iterated across epochs without set_epoch(epoch)"""

from __future__ import annotations

from typing import Iterable
import re

from parallint.model.diagnostics import Diagnostic, Severity
from parallint.model.rule import Example, Rule
from parallint.model.script import Call, Script, script_of
from parallint.rules.dat._common import _PY, _TRAINISH, prepared_by_accelerate


#: evaluation data: the order does not matter, so a fixed shuffle is harmless
_EVALISH = re.compile(r"eval|valid|test|(?:^|_)(?:val|dev)(?:_|$)", re.I)


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
