"""LightningCLI YAML configs (``python main.py fit --config config.yaml``): ``trainer.devices``,
``trainer.num_nodes`` (default 1), ``trainer.strategy`` (a name such as ``ddp_find_unused_parameters_true``
or a ``class_path``/``init_args`` mapping, e.g. ``ModelParallelStrategy`` with ``data_parallel_size``
and ``tensor_parallel_size``), ``trainer.precision``, ``trainer.accumulate_grad_batches``.

Lightning starts ``devices`` processes per node itself, so a config with a fixed device count is a
job on its own. ``"auto"``, ``-1`` and strings like ``"0,1"`` that depend on the machine stay unknown
(a list of device ids counts its entries). ``ModelParallelStrategy``'s ``"auto"`` sizes resolve as
Lightning does: data parallel = ``num_nodes``, tensor parallel = devices per node.
"""

from __future__ import annotations

from pathlib import Path

from parallint.model.facts import FileFacts, Value
from parallint.model.origin import How, Origin
from parallint.readers.cfgutil import Emitter, as_int, open_config

KIND = "lightning_cli"
MODEL_PARALLEL = ("ModelParallelStrategy",)
PRECISION = {"bf16-mixed": "bf16", "bf16-true": "bf16", "bf16": "bf16", "16-mixed": "fp16", "16": "fp16",
             "16-true": "fp16", "32-true": "fp32", "32": "fp32"}


def _devices(v):
    if isinstance(v, list):
        return len(v)
    i = as_int(v)
    if i < 1:
        raise ValueError(v)
    return i


def read(path: str, abspath: Path, text: str) -> FileFacts:
    ff, root = open_config(path, abspath, text, KIND, "", "lightning")
    if root is None:
        return ff
    em = Emitter(ff, root)
    trainer = em.node("trainer")
    if trainer is None or not trainer.is_map:
        return ff
    em.framework("lightning")
    dev = em.add("parallel.procs_per_node", "trainer.devices", _devices)
    if em.node("trainer.num_nodes") is not None:
        nodes = em.add("parallel.nodes", "trainer.num_nodes", as_int)
    else:
        nodes = Value(1, trainer.span, True, "", f"{em.name} trainer (num_nodes defaults to 1)", Origin(How.DEFAULT))
        ff.facts.add("parallel.nodes", nodes)
    em.add("training.grad_accum", "trainer.accumulate_grad_batches", as_int)
    prec = em.value("trainer.precision")
    if prec is not None and prec.known and str(prec.value) in PRECISION:
        ff.facts.add("training.precision", Value(PRECISION[str(prec.value)], prec.span, True, "", prec.source))
    st = em.node("trainer.strategy")
    if st is not None and isinstance(st.value, str):
        if st.value.startswith("ddp_find_unused_parameters_"):
            ff.facts.add("ddp.find_unused_parameters", Value(st.value.endswith("_true"), st.span, True, "",
                                                             f"{em.name} trainer.strategy"))
    elif st is not None and st.is_map:
        cp = st.get("class_path")
        if cp is not None and isinstance(cp.value, str) and cp.value.rsplit(".", 1)[-1] in MODEL_PARALLEL:
            _model_parallel(em, dev, nodes)
    if dev is not None and dev.known and nodes is not None and nodes.known:
        ff.standalone_job = True
    return ff


def _model_parallel(em: Emitter, dev: Value | None, nodes: Value | None) -> None:
    ff = em.ff
    for key, name, auto in (("parallel.dp", "data_parallel_size", nodes), ("parallel.tp", "tensor_parallel_size", dev)):
        dotted = f"trainer.strategy.init_args.{name}"
        v = em.value(dotted)
        if v is None or (v.known and v.value == "auto") or (not v.known and "auto" in (v.why or "")):
            src = f"{em.name} {dotted} (\"auto\": {'num_nodes' if key == 'parallel.dp' else 'devices'})"
            if auto is not None and auto.known:
                ff.facts.add(key, Value(auto.value, auto.span, True, "", src))
            else:
                ff.facts.add(key, Value.unknown("auto", None, src))
            continue
        ff.facts.add(key, v.map(as_int) if v.known else v)
