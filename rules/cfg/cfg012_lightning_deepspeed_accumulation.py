"""CFG012 lightning-deepspeed-accumulation: a DeepSpeed config given to Lightning's DeepSpeedStrategy sets gradient_accumulation_steps, which Lightning refuses."""

from __future__ import annotations

from typing import Iterable

from parallint.model.diagnostics import Diagnostic, Related, Severity
from parallint.model.rule import Example, Rule
from parallint.rules.cfg._common import _tree

_KEY = "gradient_accumulation_steps"
_WHY = ("Lightning's DeepSpeedStrategy raises MisconfigurationException at start-up when the config "
        "has this key at all, because it sets it from the Trainer's accumulate_grad_batches")


def _same_file(link: str, path: str) -> bool:
    link = link.strip().replace("\\", "/")
    while link.startswith("./"):
        link = link[2:]
    return bool(link) and (path == link or path.endswith("/" + link))


class LightningDeepspeedAccumulation(Rule):
    code = "CFG012"
    name = "lightning-deepspeed-accumulation"
    severity = Severity.ERROR
    summary = ("A DeepSpeed config given to Lightning's DeepSpeedStrategy sets gradient_accumulation_steps, "
               "which Lightning refuses.")
    kinds = frozenset({"python"})
    facts = frozenset({"training.lightning_deepspeed_config", "training.lightning_deepspeed_config_accum"})
    doc = """
    ## What it does
    Reports a DeepSpeed config handed to the Lightning Trainer's `DeepSpeedStrategy(config=...)`
    (or the older `DeepSpeedPlugin`) that has a `gradient_accumulation_steps` key: a literal
    dict in the script (or a name bound to one), or a JSON/YAML file the script names by a literal
    path, which joins the script's job. Any value counts, `"auto"` included.

    It stays silent for Fabric's `DeepSpeedStrategy` (which does not fill the batch keys), for a
    config whose content or path the code does not show, and for a path that is not in the
    repository.

    ## Why it matters
    Lightning's strategy sets the key itself from the Trainer's `accumulate_grad_batches`, and
    raises `MisconfigurationException: Do not set gradient_accumulation_steps in the DeepSpeed
    config` when the config already has it (Lightning-AI/pytorch-lightning#19891). The job stops
    after the nodes are allocated, often when a config written for the HF Trainer or plain
    DeepSpeed is reused.

    ## Example

    ## How to fix
    Remove `gradient_accumulation_steps` from the DeepSpeed config and pass the value to the
    Trainer as `accumulate_grad_batches`.
    """
    _script = """
        import lightning as L
        from lightning.pytorch.strategies import DeepSpeedStrategy
        from model import Net

        trainer = L.Trainer(accelerator="gpu", devices=8, accumulate_grad_batches=4,
                            strategy=DeepSpeedStrategy(config={config}))
        trainer.fit(Net())
        """
    valid = (
        Example(_script.replace("{config}", '"ds_config.json"'),
                files={"ds_config.json": '{"zero_optimization": {"stage": 2}, "train_micro_batch_size_per_gpu": 8}\n'},
                paths=("train.py",)),
        Example(_script.replace("{config}", '{"zero_optimization": {"stage": 2}}')),
        Example("""
        import lightning as L
        from lightning.fabric.strategies import DeepSpeedStrategy

        fabric = L.Fabric(devices=8, strategy=DeepSpeedStrategy(config={"gradient_accumulation_steps": 4}))
        fabric.launch()
        """),
    )
    invalid = (
        Example(_script.replace("{config}", '"ds_config.json"'), doc=True, line=3, count=1, filename="train.py",
                files={"ds_config.json": '{\n  "zero_optimization": {"stage": 2},\n  "gradient_accumulation_steps": 4\n}\n'},
                paths=("train.py",)),
        Example(_script.replace("{config}", "DS").replace(
            "from model import Net\n", 'from model import Net\n        DS = {"gradient_accumulation_steps": "auto"}\n'),
            line=7),
    )

    def check_file(self, f, ctx) -> Iterable[Diagnostic]:
        for v in f.facts.known("training.lightning_deepspeed_config_accum"):
            if v.value is True:
                yield self.report(v.span, f"this DeepSpeed config sets {_KEY}: {_WHY}; remove the key and pass "
                                          f"accumulate_grad_batches to the Trainer")

    def check_job(self, job, ctx) -> Iterable[Diagnostic]:
        links = [v for f in job.files if f.kind == "python" for v in f.facts.known("training.lightning_deepspeed_config")]
        if not links:
            return
        seen = set()
        for ds in (f for f in job.files if f.kind == "deepspeed"):
            if ds.path in seen:
                continue
            link = next((v for v in links if _same_file(str(v.value), ds.path)), None)
            tree = _tree(ds)
            if link is None or tree is None or not tree.is_map or tree.get(_KEY) is None:
                continue  # any value counts, "auto" included: Lightning tests the key's presence
            seen.add(ds.path)
            at = tree.key_spans.get(_KEY, tree.get(_KEY).span)
            yield self.report(at, f"{ds.path.rsplit('/', 1)[-1]} sets {_KEY} and is given to Lightning's "
                                  f"DeepSpeedStrategy: {_WHY}; remove the key and pass accumulate_grad_batches "
                                  f"to the Trainer", [Related.at(link.span, "DeepSpeedStrategy(config=...)")])
