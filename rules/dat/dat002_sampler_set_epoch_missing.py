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
        # the loader is built in another module, and the loop calls set_epoch
        Example(files={
            "data_utils.py": """
                from torch.utils.data import DataLoader, DistributedSampler
                def build_train_loader(dataset):
                    sampler = DistributedSampler(dataset)
                    return DataLoader(dataset, batch_size=32, sampler=sampler)
            """,
            "train.py": """
                from torch.nn.parallel import DistributedDataParallel as DDP
                from data_utils import build_train_loader
                model = DDP(model)
                train_loader = build_train_loader(train_set)
                for epoch in range(10):
                    train_loader.sampler.set_epoch(epoch)
                    for batch in train_loader:
                        step(batch)
            """,
        }),
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
        # the shuffling sampler is made in another module's function that returns its loader
        Example(files={
            "data_utils.py": """
                from torch.utils.data import DataLoader, DistributedSampler
                def build_train_loader(dataset):
                    sampler = DistributedSampler(dataset)
                    return DataLoader(dataset, batch_size=32, sampler=sampler)
            """,
            "train.py": """
                from torch.nn.parallel import DistributedDataParallel as DDP
                from data_utils import build_train_loader
                model = DDP(model)
                train_loader = build_train_loader(train_set)
                for epoch in range(10):
                    for batch in train_loader:
                        step(batch)
            """,
        }, filename="train.py", line=4),
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

        yield from self._from_other_module(f, s)

    def _from_other_module(self, f, s: Script) -> Iterable[Diagnostic]:
        """``loader = build_loader(...)`` with ``build_loader`` imported from a repository module
        whose function makes a shuffling DistributedSampler, hands it to a DataLoader and returns
        that loader, iterated here per epoch, with ``set_epoch`` in neither file: reported here,
        at the call (the missing call belongs to this loop), with the sampler as a note."""
        import ast

        import posixpath

        from parallint.model.diagnostics import Related
        from parallint.model.script import imported_class

        for c in s.calls:
            if not c.target or not isinstance(c.node.func, ast.Name) or any(l.epoch for l in c.loops):
                continue
            got = imported_class(s, c.node.func.id, "DistributedSampler")  # (what _returned_sampler needs)
            if got is None:
                continue
            mod, name, rel = got
            if "set_epoch" in mod.syntax_index().names:
                continue
            made = self._returned_sampler(mod, name)
            if made is None:
                continue
            if _EVALISH.search(c.target) and not _TRAINISH.search(c.target):
                continue
            if prepared_by_accelerate(s, c):
                continue  # the returned loader goes through accelerator.prepare
            if not self._iterated_per_epoch(s, {c.target}):
                continue
            where = mod.span_of(made.node)
            shown = posixpath.normpath(posixpath.join(posixpath.dirname(f.path), rel))
            yield self.report(
                c.span,
                f"`{c.target}` comes from {name}() in {rel}, whose DistributedSampler shuffles, but "
                f"set_epoch() is never called: every epoch sees the samples in the same order; call "
                f"sampler.set_epoch(epoch) each epoch",
                [Related(shown, where.line, "the shuffling DistributedSampler", where.column)],
            )

    @staticmethod
    def _returned_sampler(mod: Script, name: str) -> Call | None:
        """The shuffling DistributedSampler that function ``name`` of ``mod`` makes and returns
        inside the DataLoader it returns (by name or as the returned call); None otherwise."""
        import ast

        frames = mod.functions.get(name) or []
        if len(frames) != 1:
            return None
        frame = frames[0]
        for c in mod.by("distributed_sampler"):
            if c.frame is not frame:
                continue
            sh = mod.arg(c, "shuffle", 3)
            if sh is not None and not (sh.known and sh.value is True):
                continue
            uses = [dl for dl in _loader_uses(mod, c) if dl.frame is frame]
            for r in frame.returns:
                if any(r is dl.node or (isinstance(r, ast.Name) and r.id == dl.target) for dl in uses):
                    if _EVALISH.search(name) and not _TRAINISH.search(name):
                        return None
                    return c
        return None

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
