"""torchtune recipe configs (YAML with ``_component_: torchtune...``): the parallel dimensions of
``full_finetune_distributed`` and friends (``tensor_parallel_dim``, ``context_parallel_dim``,
``data_parallel_shard_dim`` (-1 = inferred), ``data_parallel_replicate_dim``), ``batch_size``
(per device), ``gradient_accumulation_steps``, ``dtype``.

The world size comes from ``tune run`` (torchrun options, or one process without them), never
from the file. torchtune's ``ParallelDims`` has torchtitan's rule: the product of the dimensions
equals the world size, with a ``-1`` shard dimension inferred.
"""

from __future__ import annotations

from pathlib import Path

from parallint.model.facts import FileFacts, Value
from parallint.readers.cfgutil import Emitter, as_int, open_config

KIND = "torchtune"
DIMS = (("parallel.tp", "tensor_parallel_dim"), ("parallel.cp", "context_parallel_dim"),
        ("parallel.dp_shard", "data_parallel_shard_dim"), ("parallel.dp_replicate", "data_parallel_replicate_dim"))
DTYPES = {"bf16": "bf16", "bfloat16": "bf16", "fp32": "fp32", "float32": "fp32", "fp16": "fp16", "float16": "fp16"}


def _dim(v):
    i = as_int(v)
    if i == 0 or i < -1:
        raise ValueError(v)
    return i


def read(path: str, abspath: Path, text: str) -> FileFacts:
    ff, root = open_config(path, abspath, text, KIND, "", "torchtune")
    if root is None:
        return ff
    em = Emitter(ff, root)
    em.framework("torchtune")
    for key, name in DIMS:
        if em.node(name) is None:
            continue
        v = em.value(name)
        if v is None:
            continue
        if v.known:
            v = v.map(_dim)
            if v.known and v.value == -1:
                v = Value.unknown("inferred (-1)", v.span, v.source)
        ff.facts.add(key, v)
    em.add("training.micro_batch", "batch_size", as_int)
    em.add("training.grad_accum", "gradient_accumulation_steps", as_int)
    dt = em.value("dtype")
    if dt is not None and dt.known and isinstance(dt.value, str) and dt.value.lower() in DTYPES:
        ff.facts.add("training.precision", Value(DTYPES[dt.value.lower()], dt.span, True, "", dt.source))
    return ff
