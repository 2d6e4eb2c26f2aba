"""Regenerate ``lint/data/deepspeed_keys.json``: the DeepSpeed release each config key came with
(and the one that dropped it), read from DeepSpeed's own git history, never guessed.

    .venv/bin/python scripts/update_deepspeed_keys.py /path/to/DeepSpeed/.git > lint/data/deepspeed_keys.json

For every release tag (``vX.Y.Z``, in version order) and every key of :data:`KEYS`, the key is
looked for in the files that read DeepSpeed's config at that tag: the key as a quoted string in a
``constants.py`` (``BFLOAT16 = "bf16"``, the style before the pydantic configs) or as a field or
alias in a ``config*.py`` (``zero_quantized_weights: bool = False``, ``alias="..."``). The first
tag that has it is ``since``; a tag after which it is gone from every later tag is ``removed``.
A key found in a tag, missing in a later one and found again (a file moved) keeps ``since``.

``KEYS`` lists the keys whose meaning is one config key (a distinctive name); ``section`` says
where the key sits (``""``: the top level, which DeepSpeed does not validate: an unknown key is
ignored; ``zero_optimization``: a pydantic model with ``extra="forbid"`` from ``forbid_since``,
so an unknown key stops the job, and ignored before). The script also finds ``forbid_since``.
Each row carries the files it was found in at ``since``, for review.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

#: (section, key): the keys the table covers (top-level ones: a distinctive name only)
KEYS = [
    ("", "bf16"),
    ("", "bfloat16"),
    ("", "compression_training"),
    ("", "data_efficiency"),
    ("", "comms_logger"),
    ("", "csv_monitor"),
    ("", "hybrid_engine"),
    ("", "data_types"),
    ("", "compile"),
    ("", "torch_autocast"),
    ("zero_optimization", "offload_optimizer"),
    ("zero_optimization", "offload_param"),
    ("zero_optimization", "round_robin_gradients"),
    ("zero_optimization", "stage3_gather_16bit_weights_on_model_save"),
    ("zero_optimization", "mics_shard_size"),
    ("zero_optimization", "zero_hpz_partition_size"),
    ("zero_optimization", "zero_quantized_weights"),
    ("zero_optimization", "zero_quantized_gradients"),
    ("zero_optimization", "legacy_stage1"),
    ("zero_optimization", "cpu_offload"),
    ("zero_optimization", "cpu_offload_params"),
    ("zero_optimization", "cpu_offload_param"),
]
PATHS = ("deepspeed/runtime", "deepspeed/monitor", "deepspeed/compression", "deepspeed/comm",
         "deepspeed/runtime/data_pipeline", "deepspeed/runtime/zero")


def git(gitdir: str, *args: str) -> str:
    return subprocess.run(["git", "--git-dir", gitdir, *args], capture_output=True, text=True, check=False).stdout


def tags(gitdir: str) -> list[str]:
    out = [t for t in git(gitdir, "tag").split() if re.fullmatch(r"v\d+\.\d+\.\d+", t)]
    return sorted(out, key=lambda t: tuple(int(x) for x in t[1:].split(".")))


def found(gitdir: str, tag: str, section: str, key: str) -> list[str]:
    """The files at ``tag`` that read ``key`` as a config key (see the module's doc)."""
    quoted = git(gitdir, "grep", "-l", "-E", f"[\"']{key}[\"']", tag, "--", *[f"{p}/*constants.py" for p in PATHS])
    # a pydantic field or alias; not a docstring's sample config (`"key": [true|false]`), which
    # may name a key the parser does not take
    field = git(gitdir, "grep", "-l", "-E", rf"^\s+{key}\s*:|alias\s*=\s*[\"']{key}[\"']",
                tag, "--", *[f"{p}/*config*.py" for p in PATHS])
    hits = sorted({ln.split(":", 1)[1] for ln in (quoted + field).splitlines() if ":" in ln})
    if section == "zero_optimization":
        hits = [h for h in hits if "/zero/" in h]
    return hits


def forbid_since(gitdir: str, order: list[str]) -> str | None:
    for t in order:
        text = git(gitdir, "show", f"{t}:deepspeed/runtime/config_utils.py")
        zero = git(gitdir, "show", f"{t}:deepspeed/runtime/zero/config.py")
        if re.search(r"extra\s*=\s*[\"']forbid[\"']", text) and "DeepSpeedConfigModel" in zero:
            return t[1:]
    return None


def main(gitdir: str) -> None:
    order = tags(gitdir)
    rows = []
    for section, key in KEYS:
        present = [(t, found(gitdir, t, section, key)) for t in order]
        first = next((i for i, (_t, h) in enumerate(present) if h), None)
        if first is None:
            rows.append({"section": section, "key": key, "since": None, "uncertain": ["since"],
                         "note": "not found in any release's config code"})
            continue
        last = max(i for i, (_t, h) in enumerate(present) if h)
        row = {"section": section, "key": key, "since": order[first][1:], "found_in": present[first][1]}
        if last < len(order) - 1:
            row["removed"] = order[last + 1][1:]
        if first == 0:  # in the oldest tag: it may be older than the history the tags cover
            row["uncertain"] = ["since"]
        rows.append(row)
    out = {"source": "DeepSpeed git history (github.com/microsoft/DeepSpeed), release tags "
                     f"{order[0]}..{order[-1]}, by scripts/update_deepspeed_keys.py",
           "newest_release": order[-1][1:], "zero_forbid_since": forbid_since(gitdir, order), "keys": rows}
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main(sys.argv[1])
