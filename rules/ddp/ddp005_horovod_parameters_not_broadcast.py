"""DDP005 horovod-parameters-not-broadcast: Horovod training whose workers never receive rank 0's initial weights"""

from __future__ import annotations

import ast
import re
from typing import Iterable

from parallint.model.diagnostics import Diagnostic, Severity
from parallint.model.rule import Example, Rule
from parallint.model.script import Script, script_of
from parallint.rules.ddp._common import _PY

_FRONT_ENDS = ("horovod.torch", "horovod.tensorflow", "horovod.keras", "horovod.tensorflow.keras", "horovod.mxnet")
#: the wrappers that make a Horovod training loop (gradients averaged across workers)
_WRAPPERS = frozenset(f"{m}.{n}" for m in _FRONT_ENDS for n in ("DistributedOptimizer", "DistributedGradientTape",
                                                                 "DistributedTrainer"))
#: what gives every worker the same starting state
_SYNC = re.compile(r"\b(?:broadcast_parameters|broadcast_optimizer_state|broadcast_variables|"
                   r"BroadcastGlobalVariablesCallback|BroadcastGlobalVariablesHook|broadcast_global_variables|"
                   r"broadcast_object|elastic\.\w*State\(|elastic\.run\b|\.sync\(\))")
#: seeding every worker alike also gives the same initial weights
_SEED_CALLS = frozenset({"torch.manual_seed", "tensorflow.random.set_seed", "tensorflow.keras.utils.set_random_seed",
                         "keras.utils.set_random_seed", "mxnet.random.seed", "tensorflow.compat.v1.set_random_seed"})


def _imported_sync(s: Script) -> bool:
    """Whether a repository module this script imports broadcasts (a helper that does it); True
    when it cannot look (no module loader or syntax tree): then the rule stays silent."""
    tree = getattr(s, "_module", None)
    if s.module_loader is None or s.abspath is None or tree is None:
        return True
    wanted: list[tuple[str, int]] = []
    for st in ast.walk(tree):
        if isinstance(st, ast.Import):
            wanted.extend((a.name, 0) for a in st.names)
        elif isinstance(st, ast.ImportFrom):
            base = st.module or ""
            if base:
                wanted.append((base, st.level))
            wanted.extend((f"{base}.{a.name}" if base else a.name, st.level) for a in st.names if a.name != "*")
    for module, level in wanted:
        if module.split(".")[0] in ("torch", "horovod", "tensorflow", "keras", "numpy", "os", "sys"):
            continue
        got = s.module_loader(s.abspath, module, level)
        if got is not None and _SYNC.search(got[1].text or ""):
            return True
    return False


class HorovodParametersNotBroadcast(Rule):
    code = "DDP005"
    calls = _WRAPPERS
    name = "horovod-parameters-not-broadcast"
    severity = Severity.WARNING
    summary = "Horovod training whose workers never receive rank 0's initial weights"
    kinds = _PY
    doc = """
    ## What it does
    Flags a script that trains with Horovod (`hvd.DistributedOptimizer`, TensorFlow's
    `hvd.DistributedGradientTape`) but never gives the workers one starting state: no
    `hvd.broadcast_parameters`, `hvd.broadcast_optimizer_state`, `hvd.broadcast_variables`,
    Keras `BroadcastGlobalVariablesCallback`, nor an elastic `State` (it syncs when
    `hvd.elastic.run` starts), in the script or in a repository module it imports. A script that
    seeds its random generator
    (`torch.manual_seed`, `tf.random.set_seed`) with a value that is not the rank gets an `info`
    hint instead: identical seeds usually give identical weights, but only if every worker draws
    its initial values in the same order.

    ## Why it matters
    Horovod averages gradients; it never copies weights. Without the broadcast each worker starts
    from its own random initialisation, the replicas never agree, and the averaged gradients fit
    none of them: the loss stalls or diverges while nothing fails. Horovod's own guides put the
    broadcast right after building the model and the optimizer.

    ## Example

    ## How to fix
    After building the model and the wrapped optimizer:
    `hvd.broadcast_parameters(model.state_dict(), root_rank=0)` and
    `hvd.broadcast_optimizer_state(optimizer, root_rank=0)` (Keras:
    `callbacks=[hvd.callbacks.BroadcastGlobalVariablesCallback(0)]`).
    """
    valid = [
        Example("""
            import torch
            import horovod.torch as hvd
            hvd.init()
            torch.cuda.set_device(hvd.local_rank())
            optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.01),
                                                 named_parameters=model.named_parameters())
            hvd.broadcast_parameters(model.state_dict(), root_rank=0)
            hvd.broadcast_optimizer_state(optimizer, root_rank=0)
        """),
        Example("""
            import tensorflow as tf
            import horovod.tensorflow.keras as hvd
            hvd.init()
            opt = hvd.DistributedOptimizer(tf.keras.optimizers.Adam(0.001 * hvd.size()))
            model.compile(optimizer=opt, loss="sparse_categorical_crossentropy")
            model.fit(ds, callbacks=[hvd.callbacks.BroadcastGlobalVariablesCallback(0)], epochs=3)
        """),
    ]
    invalid = [
        Example("""
            import torch
            import horovod.torch as hvd
            hvd.init()
            torch.cuda.set_device(hvd.local_rank())
            optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.01),
                                                 named_parameters=model.named_parameters())
            for batch in loader:
                optimizer.zero_grad()
                model(batch).sum().backward()
                optimizer.step()
        """, line=5),
        # seeded alike on every worker: a hint, not a warning
        Example("""
            import torch
            import horovod.torch as hvd
            hvd.init()
            torch.manual_seed(42)
            optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.01))
        """, line=5),
    ]

    def check_file(self, f, ctx) -> Iterable[Diagnostic]:
        s = script_of(f)
        if s is None or "horovod" not in (s.text or ""):
            return
        wrap = next((c for c in s.calls if c.qnames & _WRAPPERS), None)
        if wrap is None or _SYNC.search(s.text or ""):
            return
        if _imported_sync(s):
            return
        seeds = [c for c in s.calls if c.qnames & _SEED_CALLS]
        if any(s.rank_kind(n, c.frame) for c in seeds for a in c.args for n in ast.walk(a.value)
               if isinstance(n, (ast.Name, ast.Call, ast.Attribute, ast.Subscript))):
            seeds = []  # a seed per rank: the weights differ for certain
        if seeds:
            yield self.report(
                wrap.span,
                "Horovod training with no hvd.broadcast_parameters(): the workers start from rank 0's "
                "weights only if every worker draws its initial values alike from the shared seed "
                f"(line {s.span_of(seeds[0].node).line}), which is not certain; call "
                "hvd.broadcast_parameters(model.state_dict(), root_rank=0) after building the model",
                severity=Severity.INFO,
            )
            return
        yield self.report(
            wrap.span,
            "Horovod training with no hvd.broadcast_parameters() (nor broadcast_optimizer_state or a "
            "broadcast callback): each worker starts from its own random weights and the replicas never "
            "agree; call hvd.broadcast_parameters(model.state_dict(), root_rank=0) and "
            "hvd.broadcast_optimizer_state(optimizer, root_rank=0) before training",
        )
