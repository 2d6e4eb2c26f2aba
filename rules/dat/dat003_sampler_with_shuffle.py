"""DAT003 sampler-with-shuffle: DataLoader(sampler=..., shuffle=True) raises at construction"""

from __future__ import annotations

from typing import Iterable

from parallint.model.diagnostics import Diagnostic, Severity
from parallint.model.fixes import Fix, drop_keyword
from parallint.model.rule import Example, Rule
from parallint.model.script import script_of
from parallint.rules.dat._common import _PY, _passed_not_none


class SamplerWithShuffle(Rule):
    code = "DAT003"
    calls = frozenset({"dataloader"})
    name = "sampler-with-shuffle"
    severity = Severity.ERROR
    summary = "DataLoader(sampler=..., shuffle=True) raises at construction"
    kinds = _PY
    fix_safety = "safe"
    fix_doc = "`--fix` removes `shuffle=True` from the call (the sampler already decides the order)."
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
                        fix=Fix("remove shuffle=True", safe=True, data="shuffle"),
                    )
                    break

    def apply_fix(self, diag, text):
        return drop_keyword(text, diag.span, diag.fix.data)
