"""Megatron-LM test-case YAMLs (``MODEL_ARGS:`` whose keys are command-line flags, e.g.
``--tensor-model-parallel-size: 2``), read through :mod:`parallint.readers.megatron_args`; the NeMo-2
flavour of the same files (``trainer.strategy.tensor_model_parallel_size: 2``) is read too."""

from __future__ import annotations

from pathlib import Path

from parallint.model.facts import FileFacts, Value
from parallint.readers.cfgutil import Emitter, open_config, to_value
from parallint.readers.yamlpos import PNode

KIND = "megatron_yaml"

#: flags that make the pipeline split uneven (LAY004 must stay quiet)
UNEVEN_FLAGS = (
    "--decoder-first-pipeline-num-layers", "--decoder-last-pipeline-num-layers",
    "--pipeline-model-parallel-layout", "--account-for-embedding-in-pipeline-split",
    "--account-for-loss-in-pipeline-split", "--hybrid-override-pattern",
    "--pipeline-model-parallel-split-rank", "--encoder-num-layers", "--decoder-num-layers",
    "--num-layers-in-first-pipeline-stage", "--num-layers-in-last-pipeline-stage",
)


def read(path: str, abspath: Path, text: str) -> FileFacts:
    ff, root = open_config(path, abspath, text, KIND, "yaml", "megatron")
    if root is None:
        return ff
    args = root.get("MODEL_ARGS")
    if args is None or not args.is_map:
        return ff
    em = Emitter(ff, root)
    flags = [(k, v) for k, v in args.items() if k.startswith("--")]
    dotted = [(k, v) for k, v in args.items() if not k.startswith("-") and "." in k]
    if flags:
        _read_flags(ff, args, flags)
    if dotted:
        _read_nemo2(em, args, dotted)
    return ff


def _read_flags(ff: FileFacts, args: PNode, flags: list[tuple[str, PNode]]) -> None:
    from parallint.readers.megatron_args import args_facts

    name = ff.path.rsplit("/", 1)[-1]
    words: list[Value] = []
    for flag, node in flags:
        kspan = args.key_spans.get(flag, node.span)
        v = to_value(node, f"{name} MODEL_ARGS {flag}")
        if v is not None and v.known and v.value is False:
            continue  # `--flag: false` = not passed
        if v is not None and v.known and node.is_map:
            continue
        if flag in UNEVEN_FLAGS and not (v is not None and v.known and v.value in (None, False)):
            ff.facts.add("parallel.pp_layout", Value(flag, kspan, True, "", f"{name} MODEL_ARGS {flag}")
                         if v is None or not v.known else Value(v.value, v.span, True, "", v.source))
        words.append(Value(flag, kspan, True, "", f"{name} MODEL_ARGS {flag}"))
        if v is None or (v.known and v.value is True):
            continue
        if v.known:
            val = v.value
            if isinstance(val, list):
                val = " ".join(str(x) for x in val)
            words.append(Value(str(val), v.span, True, "", v.source))
        else:
            words.append(v)
    facts = args_facts(words, require_marker=False)
    shared = _merged_in(args, "--sequence-parallel")
    for key, vs in facts.items():
        for v in vs:
            if key == "framework":
                v = Value("megatron", v.span or args.span, True, "", f"{name} MODEL_ARGS")
            elif key == "parallel.sequence_parallel" and shared and v.known:
                # a switch in base args shared through `<<: *anchor` by runs with other layouts (a TP
                # matrix): right for some of them, not this file's own choice for this one
                v = Value.unknown("from base args shared by several runs (YAML merge)", v.span, v.source)
            ff.facts.add(key, v)
    if "framework" not in ff.facts:
        ff.facts.add("framework", Value("megatron", args.span, True, "", f"{name} MODEL_ARGS"))


def _merged_in(args: PNode, flag: str) -> bool:
    """True when ``flag`` reaches ``args`` through a ``<<: *anchor`` merge: its key is written
    before the mapping itself starts."""
    ks = args.key_spans.get(flag)
    return ks is not None and (ks.line, ks.column) < (args.span.line, args.span.column)


def _read_nemo2(em: Emitter, args: PNode, dotted: list[tuple[str, PNode]]) -> None:
    """NeMo-2 recipe overrides: ``trainer.devices``, ``trainer.strategy.*``, ``model.config.*``."""
    from parallint.readers.nemo import emit_megatron_model, emit_trainer

    # rebuild a nested tree from the dotted keys so the NeMo readers can walk it
    nested: dict = {}
    for k, node in dotted:
        parts = k.split(".")
        cur = nested
        for p in parts[:-1]:
            cur = cur.setdefault(p, {})
            if not isinstance(cur, dict):
                break
        else:
            cur[parts[-1]] = PNode(node.value, node.span, node.key_spans, node.duplicates)

    def to_pnode(d, span) -> PNode:
        if isinstance(d, PNode):
            return d
        return PNode({k: to_pnode(v, span) for k, v in d.items()}, span)

    tree = to_pnode(nested, args.span)
    sub = Emitter(em.ff, tree)
    emit_trainer(sub, "trainer.")
    emit_megatron_model(sub, "trainer.strategy.")
    emit_megatron_model(sub, "model.config.")
    em.ff.facts.add("framework", Value("nemo", args.span, True, "", f"{em.name} MODEL_ARGS"))
