"""CFG011 deepspeed-key-not-in-version: a DeepSpeed config key that the job's DeepSpeed release does not have (not yet, or no longer)."""

from __future__ import annotations

import functools

from parallint.model import versions
from parallint.model.diagnostics import Related, Severity
from parallint.model.rule import Example, Rule

TYPE_CHECKING = False  # typing is not imported at run time (start-up, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Any, Iterable

    from parallint.model.diagnostics import Diagnostic

#: what to write instead, where the older or newer release spells the setting another way
#: (DeepSpeed's own constants: ``BFLOAT16_OLD = "bfloat16"`` from 0.6.0; 0.7.0's pydantic
#: ``cpu_offload_param``, deprecated for ``offload_param``)
INSTEAD = {"bf16": "bfloat16", "cpu_offload_params": "offload_param: {device: cpu}"}


@functools.cache
def table() -> "dict[str, Any]":
    """``parallint/data/deepspeed_keys.json`` (``scripts/update_deepspeed_keys.py``): per key, the
    release it came with and the one that dropped it, from DeepSpeed's git history."""
    import json

    from parallint.data import read_text

    data = json.loads(read_text("parallint.data", "deepspeed_keys.json"))
    return data if isinstance(data, dict) else {}


def _rows() -> "list[dict[str, Any]]":
    """The rows the rule may state: an uncertain ``since`` is never used."""
    return [r for r in table().get("keys", ()) if r.get("since") and "since" not in (r.get("uncertain") or ())]


def _off(node) -> bool:
    """The setting does nothing where it is ignored: false, 0, null, or ``{"enabled": false}``."""
    v = node.value
    if isinstance(v, dict):
        en = v.get("enabled")
        return en is not None and en.value is False
    return v is None or v is False or v == 0


def _ds(body: str) -> str:
    return "{\n  \"train_micro_batch_size_per_gpu\": 4,\n" + body + "\n}\n"


_ZERO_PP = _ds('  "zero_optimization": {\n    "stage": 3,\n    "zero_quantized_weights": true\n  }')
_BF16 = _ds('  "bf16": {"enabled": true}')
_OFFLOAD = _ds('  "zero_optimization": {\n    "stage": 3,\n    "cpu_offload_params": true\n  }')


class DeepspeedKeyNotInVersion(Rule):
    code = "CFG011"
    name = "deepspeed-key-not-in-version"
    severity = Severity.ERROR
    summary = "A DeepSpeed config key that the job's DeepSpeed release does not have (not yet, or no longer)."
    kinds = frozenset({"deepspeed"})
    facts = frozenset({"version.deepspeed"})
    doc = """
    ## What it does
    Version-aware (DeepSpeed). Reads the keys of a DeepSpeed config against every DeepSpeed
    version that can reach the job (requirements, lock files, Dockerfile; under `parallint
    preflight` the installed one), using a table generated from DeepSpeed's own git history
    (`scripts/update_deepspeed_keys.py`: the first release tag whose config code reads the key,
    and the first without it). It reports a key every version is too old for (`bf16`, 0.6.0;
    `compression_training`, `comms_logger`, 0.7.0; `data_types`, 0.7.6; `data_efficiency`,
    0.8.0; `zero_optimization.mics_shard_size`, 0.9.2; ZeRO++'s `zero_hpz_partition_size`,
    `zero_quantized_weights`, `zero_quantized_gradients`, 0.10.0 ...) or too new for
    (`zero_optimization.cpu_offload_params`, gone in 0.7.0, whose pydantic config names it
    `cpu_offload_param`).

    Severity follows what DeepSpeed does with the key: `zero_optimization` is a pydantic model
    with `extra="forbid"` from 0.7.0, so there an unknown key stops the job (error); the top
    level, and `zero_optimization` before 0.7.0, ignore it (warning; silent when the value is
    off: `false`, `0`, `{"enabled": false}`). A version not known or not pinned, a range that
    reaches the release, and keys whose release the history does not settle stay silent.

    ## Why it matters
    Ignored, the feature is silently off: `"bf16": {"enabled": true}` on DeepSpeed 0.5 trains in
    fp32 (or fp16), ZeRO++ quantization never happens. Rejected, every rank stops at
    `deepspeed.initialize` with "extra fields not permitted" after the job has its GPUs.

    ## Example

    ## How to fix
    Change the DeepSpeed pin to a release that has the key, or write the key the pinned release
    knows (`bfloat16` before 0.6.0; `offload_param` for `cpu_offload_params`).
    """
    valid = (
        Example(files={"ds_config.json": _ZERO_PP, "requirements.txt": "deepspeed==0.10.0\n"}, paths=["ds_config.json"]),
        Example(files={"ds_config.json": _ZERO_PP, "requirements.txt": "deepspeed>=0.9\n"}, paths=["ds_config.json"]),
        Example(files={"ds_config.json": _ZERO_PP, "requirements.txt": "deepspeed\n"}, paths=["ds_config.json"]),
        Example(files={"ds_config.json": _BF16, "requirements.txt": "deepspeed==0.6.0\n"}, paths=["ds_config.json"]),
        Example(files={"ds_config.json": _ds('  "bf16": {"enabled": false}'), "requirements.txt": "deepspeed==0.5.10\n"},
                paths=["ds_config.json"]),
        Example(files={"ds_config.json": _OFFLOAD, "requirements.txt": "deepspeed==0.6.7\n"}, paths=["ds_config.json"]),
    )
    invalid = (
        Example(files={"ds_config.json": _ZERO_PP, "requirements.txt": "deepspeed==0.9.5\n"}, paths=["ds_config.json"],
                line=5, doc=True),
        Example(files={"ds_config.json": _BF16, "requirements.txt": "deepspeed>=0.5.5,<0.6\n"}, paths=["ds_config.json"],
                line=3),
        Example(files={"ds_config.json": _OFFLOAD, "requirements.txt": "deepspeed==0.7.0\n"}, paths=["ds_config.json"],
                line=5),
        Example(files={"ds_config.json": _ZERO_PP, "requirements.txt": "deepspeed==0.6.7\n"}, paths=["ds_config.json"],
                line=5),
    )

    def check_file(self, f, ctx) -> "Iterable[Diagnostic]":
        tree = getattr(getattr(f, "data", None), "tree", None)
        if tree is None or not tree.is_map:
            return
        ds = None
        forbid = str(table().get("zero_forbid_since") or "")
        for row in _rows():
            section = tree if not row["section"] else tree.get(row["section"])
            node = section.get(row["key"]) if section is not None and section.is_map else None
            if node is None:
                continue
            if ds is None:
                ds = ctx.versions(f).all("version.deepspeed")
            if not ds:
                return
            key, since, removed = row["key"], str(row["since"]), str(row.get("removed") or "")
            new = versions.below(ds, since)
            gone = bool(removed) and versions.at_least(ds, removed)
            if not (new or gone):
                continue
            strict = bool(row["section"]) and bool(forbid) and versions.at_least(ds, forbid)
            ignored = not row["section"] or (bool(forbid) and versions.below(ds, forbid))
            if not strict and _off(node):
                continue
            name = f"{row['section']}.{key}" if row["section"] else key
            said = versions.show(ds)
            when = f"it came with DeepSpeed {since}" if new else f"DeepSpeed {removed} dropped it"
            if strict:
                effect = f"{row['section']} rejects it (extra fields not permitted), so every rank stops"
            elif ignored:
                effect = "DeepSpeed ignores it and the setting is off"
            else:
                effect = "DeepSpeed ignores it or, from 0.7.0, rejects it"
            instead = INSTEAD.get(key)
            older = table_since("bfloat16")
            if key == "bf16" and not (older and versions.at_least(ds, older)):
                instead = None  # before 0.5.5 DeepSpeed has no bf16 at all
            fix = (f"rename it to {instead}, or change the pin to deepspeed>={since}" if new and instead else
                   f"change the pin to deepspeed>={since}" if new else
                   f"use {instead} instead" if instead else f"remove it, or pin deepspeed<{removed}")
            related = tuple(Related.at(v.span, f"{v.source or v.value} stated here") for v in ds if v.span is not None)[:3]
            span = section.key_spans.get(key, node.span)
            yield self.report(span, f"{name} is not a key of {said}: {when}, and {effect}; {fix}", related,
                              None if strict else Severity.WARNING)


def table_since(key: str) -> str | None:
    """The release a top-level key came with, from the table (None when it does not say)."""
    return next((str(r["since"]) for r in _rows() if r["key"] == key and not r["section"]), None)
