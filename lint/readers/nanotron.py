"""nanotron YAML: ``parallelism: {dp, tp, pp, expert_parallel_size}`` (nanotron requires
dp·tp·pp == the world size, so the file states its own world size), ``tokens`` batch keys,
``optimizer.zero_stage`` and the HF-style ``model.model_config`` shape."""

from __future__ import annotations

from pathlib import Path

from parallint.model.facts import FileFacts, Value
from parallint.readers.cfgutil import Emitter, as_bool, as_int, open_config
from parallint.readers.hf_model import emit_hf_shape

KIND = "nanotron"


def read(path: str, abspath: Path, text: str) -> FileFacts:
    ff, root = open_config(path, abspath, text, KIND, "yaml", "nanotron")
    if root is None:
        return ff
    em = Emitter(ff, root)
    em.framework("nanotron")
    dp = em.add("parallel.dp", "parallelism.dp", as_int)
    tp = em.add("parallel.tp", "parallelism.tp", as_int)
    pp = em.add("parallel.pp", "parallelism.pp", as_int)
    em.add("parallel.ep", "parallelism.expert_parallel_size", as_int)
    if dp is not None and dp.known and tp is not None and tp.known and pp is not None and pp.known:
        par = root.get("parallelism")
        assert par is not None  # dp, tp and pp came from it
        ff.facts.add("parallel.world_size", Value(
            dp.value * tp.value * pp.value, par.span, True, "",
            f"{em.name} parallelism dp×tp×pp ({dp.value}×{tp.value}×{pp.value})"))
        ff.standalone_job = True
    mode = em.value("parallelism.tp_mode")
    if mode is not None and tp is not None and tp.known and isinstance(tp.value, int) and tp.value > 1:
        if not mode.known:
            ff.facts.add("parallel.sequence_parallel", mode)
        elif str(mode.value).strip().upper() in ("REDUCE_SCATTER", "ALL_REDUCE"):
            # REDUCE_SCATTER keeps activations outside the TP regions sharded by sequence
            ff.facts.add("parallel.sequence_parallel", Value(
                str(mode.value).strip().upper() == "REDUCE_SCATTER", mode.span, True, "", mode.source))
    rl = em.value("parallelism.recompute_layer")
    if rl is not None:
        if not rl.known:
            ff.facts.add("training.recompute", rl)
        else:
            try:
                if as_bool(rl.value):  # false: nanotron may still recompute parts; not stated as none
                    ff.facts.add("training.recompute", Value("full", rl.span, True, "", rl.source))
            except ValueError:
                pass
    em.add("training.micro_batch", "tokens.micro_batch_size", as_int)
    em.add("training.grad_accum", "tokens.batch_accumulation_per_replica", as_int)
    em.add("model.seq_len", "tokens.sequence_length", as_int)
    em.add("parallel.zero_stage", "optimizer.zero_stage", as_int)
    emit_hf_shape(em, "model.model_config.")
    return ff
