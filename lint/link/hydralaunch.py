"""A NeMo training YAML run through its Hydra entry script, with the launch line's overrides.

NeMo 1.x examples start from ``@hydra_runner(config_path="conf", config_name="megatron_gpt_config")``
and hand the whole config to NeMo (``MegatronTrainerBuilder(cfg)``, ``MegatronGPTModel(cfg.model,
trainer)``): the script's own code never reads ``cfg.model.tensor_model_parallel_size``, so the
binding of :mod:`parallint.readers.pycli` (which the script's evaluation uses) does not reach it.
The launch line, though, usually overrides exactly those keys::

    torchrun --nproc_per_node 8 megatron_gpt_pretraining.py trainer.devices=8 \\
        model.tensor_model_parallel_size=2 model.pipeline_model_parallel_size=4

:func:`attach` joins that YAML to the launch's job as the NeMo reader reads it *with the overrides
applied*: each overridden scalar is replaced in the text (same line, nothing else moves) and the
file read again, so derived facts (the world ``trainer.devices × trainer.num_nodes``) follow; a fact
read from an overridden key points at the launch-line word. The YAML then has no job of its own
(its defaults are not what runs). Only when every word of the line is read: no word parallint
cannot read (``$ARGS``), no group pick, sweep, deletion (``~key``), other config
(``--config-name``), interpolation or structured value, and every overridden key (``hydra.*``
aside) is a scalar of the primary config; otherwise nothing changes (the YAML is checked on its
own, as before). Nothing is imported or run; the YAML is read inside the repository.
"""

from __future__ import annotations

import re
from pathlib import Path

from parallint.model.facts import FileFacts, Value

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable

#: an override value that can stand in the YAML text as it is written
_PLAIN = re.compile(r"-?[0-9][0-9_]*(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?|true|false|True|False|null|[A-Za-z_][\w.-]*")


def _words(args: "list[Value]") -> "dict[str, tuple[str, Value]] | None":
    """``{key: (raw value, word)}`` of the line's Hydra overrides; None when a word is not one
    parallint reads as a plain override of one key."""
    out: dict[str, tuple[str, Value]] = {}
    for w in args:
        if not w.known or not isinstance(w.value, str):
            return None
        text = w.value
        if text.startswith(("-", "~", "+")):
            return None  # a flag (--config-name, -m), a deletion or an addition
        key, eq, rest = text.partition("=")
        if not eq or not key or "@" in key or not re.fullmatch(r"[A-Za-z_][\w.]*", key):
            return None
        if key.startswith("hydra.") or key == "hydra":
            continue  # Hydra's own settings (run.dir ...): no training fact
        if not _PLAIN.fullmatch(rest) or key in out:
            return None
        out[key] = (rest, w)
    return out


def _hits(source: str, keys: "dict[str, tuple[str, Value]]") -> str | None:
    """The overridden key a fact's source reads (``gpt.yaml model.tensor_model_parallel_size``,
    or a derived ``trainer.devices × trainer.num_nodes``), or None."""
    for word in re.split(r"[\s()×*,]+", source):
        if word in keys:
            return word
    return None


def attach(job: "Any", launch: "Any", script_ff: "FileFacts | None", read: "Callable[[Path], FileFacts | None]",
           root: Path, seen: "set[Path]", mask: "Callable[[FileFacts, Path], None] | None" = None) -> None:
    """Join the NeMo YAML of the launched Hydra entry script, overridden by the launch line, to
    ``job`` (see the module's docstring); a no-op unless everything it needs is known."""
    if script_ff is None:
        return
    from parallint.model.script import Script

    script = script_ff.data
    entry = getattr(script, "cli_entry", None) if isinstance(script, Script) else None
    if entry is None or entry.kind != "hydra" or entry.config_dir is None or not entry.config_path:
        return
    if entry.choices or entry.assigned:
        return  # a composed config, or one the script changes: not the file as read
    name = entry.config_path.rsplit("/", 1)[-1]
    path = entry.config_dir / (name if name.endswith((".yaml", ".yml")) else name + ".yaml")
    from parallint.util.boundary import inside_repository

    try:
        path = path.resolve()
    except OSError:
        return
    if path in seen or not path.is_file() or not inside_repository(path, job.root.abspath):
        return
    base = read(path)
    if base is None or base.kind != "nemo" or not base.text:
        return
    job.hydra_config = (base.path, None)  # run by this launch; what it overrides is not known yet
    words = _words(list(launch.args)) if launch.args else None
    if not words:
        return
    got = _overridden(base, words)
    if got is None:
        return
    text, spans = got
    from parallint.readers import nemo

    ff = nemo.read(base.path, base.abspath, text)
    if mask is not None:
        mask(ff, root)  # the keys the entry script sets itself (jobs.hydra_assignments)
    line = launch.span.line if launch.span is not None else 0
    # a view of the YAML for this launch (its own name: the runner's re-read of a member by its
    # path must not swap the overridden facts back for the file's)
    moved = FileFacts(path=base.path, abspath=Path(f"{base.abspath}#hydra-L{line}"), kind=base.kind, text=base.text)
    moved.data = base.data
    moved.links = list(base.links)
    for key, vs in ff.facts.items():
        for v in vs:
            hit = _hits(v.source, words)
            if hit is not None:
                raw, w = words[hit]
                v = Value(v.value, w.span, v.known, v.why, f"{v.source} ({hit}={raw} on the launch line)", v.origin)
            moved.facts.add(key, v)
    seen.add(path)
    job.hydra_config = (base.path, spans)
    job.files.append(moved)
    job.facts.extend(moved.facts)


def _overridden(ff: FileFacts, words: "dict[str, tuple[str, Value]]") -> "tuple[str, frozenset[tuple[int, int]]] | None":
    """The YAML's text with each overridden scalar replaced by the launch line's value, and where
    those scalars start; None when a key is not a one-line scalar of the file."""
    from parallint.readers.cfgutil import ConfigData

    data = ff.data
    root = data.tree if isinstance(data, ConfigData) else None
    if root is None or not root.is_map:
        return None
    lines = (ff.text or "").split("\n")
    edits: list[tuple[int, int, int, str]] = []
    for key, (raw, _w) in words.items():
        node = root.path(key)
        if node is None or node.is_map or node.is_seq or node.span is None:
            return None
        sp = node.span
        if sp.end_line != sp.line or sp.line < 1 or sp.line > len(lines):
            return None
        line = lines[sp.line - 1]
        start, end = sp.column - 1, (sp.end_column or sp.column) - 1
        old = line[start:end]
        if not old.strip() or "${" in old or old.lstrip().startswith(("&", "*", "!", "|", ">")):
            return None
        edits.append((sp.line - 1, start, end, raw))
    for i, start, end, raw in sorted(edits, key=lambda e: (e[0], -e[1])):
        lines[i] = lines[i][:start] + raw + lines[i][end:]
    return "\n".join(lines), frozenset((i + 1, start + 1) for i, start, _e, _r in edits)


def superseded(jobs: "list[Any]") -> "dict[str, frozenset[tuple[int, int]]]":
    """Per NeMo YAML run by launch lines: the scalars that every launch of it overrides (the
    file's own value there never runs; the runner drops the file's findings at them). A YAML that
    one launch runs with words parallint could not apply keeps all its findings."""
    runs: dict[str, list] = {}
    for job in jobs:
        hc = getattr(job, "hydra_config", None)
        if hc is not None:
            runs.setdefault(hc[0], []).append(hc[1])
    out: dict[str, frozenset[tuple[int, int]]] = {}
    for path, spans in runs.items():
        if spans and all(s is not None for s in spans):
            common = frozenset.intersection(*spans)
            if common:
                out[path] = common
    return out
