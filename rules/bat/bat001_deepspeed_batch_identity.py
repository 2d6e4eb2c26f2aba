"""BAT001 deepspeed-batch-identity: DeepSpeed train_batch_size != micro batch × gradient accumulation × data-parallel size"""

from __future__ import annotations

from parallint.model.diagnostics import Severity
from parallint.model.factrule import FactRule, Finding, View
from parallint.model.facts import known_int
from parallint.model.fixes import Fix, span_range, syntax_of
from parallint.model.rule import Example
from parallint.model.world import dp_size
from parallint.rules.bat._common import _multiple


_TRAIN_PY = "import deepspeed\nimport torch\n\nmodel = torch.nn.Linear(8, 8)\nengine, *_ = deepspeed.initialize(model=model, config='ds_config.json')\n"


def _ds(tb=None, mb=None, gas=None, extra: str = "") -> str:
    lines = []
    if tb is not None:
        lines.append(f'  "train_batch_size": {tb}')
    if mb is not None:
        lines.append(f'  "train_micro_batch_size_per_gpu": {mb}')
    if gas is not None:
        lines.append(f'  "gradient_accumulation_steps": {gas}')
    lines.append('  "zero_optimization": {"stage": 1}')
    if extra:
        lines.append(extra)
    return "{\n" + ",\n".join(lines) + "\n}\n"


def _batch_fix(tb: int, mb: int, ga: int, dp: int) -> str:
    """What makes train_batch_size == micro × accumulation × DP: the batch, else the accumulation."""
    alts = [f"set train_batch_size to {mb * ga * dp}"]
    if tb % (mb * dp) == 0:
        alts.append(f"gradient_accumulation_steps to {tb // (mb * dp)}")
    elif tb % (ga * dp) == 0:
        alts.append(f"train_micro_batch_size_per_gpu to {tb // (ga * dp)}")
    return " or ".join(alts)


class DeepspeedBatchIdentity(FactRule):
    code = "BAT001"
    facts = frozenset({
        "parallel.cp", "parallel.pp", "parallel.sp", "parallel.tp", "training.grad_accum", "training.micro_batch",
        "training.train_batch_size",
    })
    name = "deepspeed-batch-identity"
    severity = Severity.ERROR
    fix_safety = "unsafe"
    fix_doc = ("`--unsafe-fixes` sets `train_batch_size` in the config to micro batch × gradient accumulation × "
               "data-parallel size when all three are known: the global batch (and so the training) changes.")
    summary = "DeepSpeed train_batch_size != micro batch × gradient accumulation × data-parallel size"
    doc = """
    ## What it does
    Checks DeepSpeed's batch identity `train_batch_size == train_micro_batch_size_per_gpu ×
    gradient_accumulation_steps × DP`, where DP is the data-parallel size (world / (TP×PP×SP)).
    Without a known world size it still fires when no data-parallel size at all could satisfy
    it (e.g. `train_batch_size` not divisible by the micro batch). `"auto"` values are unknown.

    OpenRLHF's DeepSpeed trainers (`deepspeed --num_gpus N --module openrlhf.cli.train_sft`,
    `train_rm`, `train_dpo`, ...) build the config from the flags: `--train_batch_size` and
    `--micro_train_batch_size` (`--train.batch_size`, `--train.micro_batch_size` in newer
    releases) are checked the same way against the launcher's world, when every word of the line
    is read and no ring attention, DeepSpeed TP or dynamic batching is on it.

    ## Why it matters
    DeepSpeed asserts it inside every worker: "Check batch related parameters. train_batch_size
    is not equal to micro_batch_per_gpu * gradient_acc_step * world_size 8 != 2 * 1 * 1".

    ## Example

    ## How to fix
    Make the three agree with the launcher's GPU count, or give only two of them (or `"auto"`)
    and let DeepSpeed derive the third.
    """
    valid = (
        Example(files={"launch.sh": "deepspeed --num_gpus 8 train.py --deepspeed_config ds_config.json\n",
                       "train.py": _TRAIN_PY, "ds_config.json": _ds(64, 2, 4)}),
        Example(_ds("\"auto\"", 4, "\"auto\""), filename="ds_config.json"),
    )
    invalid = (
        Example(files={"launch.sh": "deepspeed --num_gpus 8 train.py --deepspeed_config ds_config.json\n",
                       "train.py": _TRAIN_PY, "ds_config.json": _ds(32, 2, 4)}, line=2),
        Example(_ds(30, 4), filename="ds_config.json", line=2),
    )

    def apply_fix(self, diag, text):
        """The number in the JSON or YAML config replaced (a value on a launch line or in a variable
        may be used elsewhere: not fixed)."""
        old, _, new = diag.fix.data.partition(" ")
        if syntax_of(diag.span.path) not in (None, "yaml"):
            return None
        r = span_range(text, syntax_of(diag.span.path), diag.span)
        if r is None or text[r[0]:r[1]] != old:
            return None
        return text[:r[0]] + new + text[r[1]:]

    def findings(self, view: View):
        if not view.fw("deepspeed", "neox"):
            return
        tb_v, mb_v, ga_v = (view.v("training.train_batch_size"), view.v("training.micro_batch"),
                            view.v("training.grad_accum"))
        tb, mb, ga = (known_int(tb_v), known_int(mb_v), known_int(ga_v))
        if tb is None or tb <= 0:
            return
        assert tb_v is not None  # known_int(None) is None
        if (mb is not None and mb <= 0) or (ga is not None and ga <= 0):
            return
        dp, dp_rel = dp_size(view.facts, view.world, sp=True)
        rel = [(mb_v, f"micro batch {mb}"), (ga_v, f"gradient accumulation {ga}")]
        rel = [r for r, i in zip(rel, (mb, ga)) if i is not None]
        if dp is not None:
            if mb is not None and ga is not None:
                if mb * ga * dp != tb:
                    yield Finding(tb_v, f"train_batch_size {tb} != micro batch {mb} × gradient accumulation "
                                        f"{ga} × data-parallel size {dp} = {mb * ga * dp}; {_batch_fix(tb, mb, ga, dp)}", rel + dp_rel,
                                  fix=Fix(f"set train_batch_size to {mb * ga * dp}", safe=False,
                                          data=f"{tb} {mb * ga * dp}"))
                return
            known = mb if mb is not None else ga
            if known is not None and tb % (known * dp):
                what = "micro batch" if mb is not None else "gradient accumulation"
                yield Finding(tb_v, f"train_batch_size {tb} is not divisible by {what} {known} × data-parallel "
                                    f"size {dp}: the missing value cannot be an integer; set train_batch_size to "
                                    f"{_multiple(known * dp, tb)}", rel + dp_rel)
            return
        # no world size: only what no data-parallel size can fix
        prod = (mb or 1) * (ga or 1)
        if (mb is not None or ga is not None) and tb % prod:
            parts = " × ".join(x for x in (f"micro batch {mb}" if mb is not None else "",
                                            f"gradient accumulation {ga}" if ga is not None else "") if x)
            yield Finding(tb_v, f"train_batch_size {tb} is not divisible by {parts} = {prod}: no "
                                f"data-parallel size satisfies DeepSpeed's batch identity; set train_batch_size to "
                                f"{_multiple(prod, tb)}", rel)
