"""TFD006 per-replica-batch-as-global: a batch named per replica where tf.distribute expects the global batch (or the reverse)"""

from __future__ import annotations

import ast
import re
from typing import Iterable

from parallint.model.diagnostics import Diagnostic, Severity
from parallint.model.rule import Example, Rule
from parallint.model.script import Script, script_of
from parallint.rules.tfd._common import _PY, frame_node, strategies

#: a name that says per replica (per device, per GPU, per worker, per core)
_PER = re.compile(r"per_?(?:replica|device|gpu|worker|core|tpu)|replica_batch", re.I)
_GLOBAL = re.compile(r"global", re.I)
#: the strategies whose dataset batch is the global one (ParameterServerStrategy takes a dataset_fn)
_SPLITTING = frozenset({"mirrored", "multi_worker", "tpu", "central"})


def _passed(s: Script, frame, name: str) -> list | None:
    """The (expression, frame) each call site of ``frame``'s function passes for its parameter
    ``name``; None when the function is a method, the parameter is not a plain one, or a call site
    does not show it (``*args``, a callback)."""
    fn = frame.node
    if frame.kind != "function" or frame.cls is not None or not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
        return None
    names = [a.arg for a in fn.args.args]
    if name not in names:
        return None
    pos = names.index(name)
    sites = s.callsites.get(frame.name) or []
    if not sites or len(s.functions.get(frame.name, ())) != 1 or frame.name in s.refs:
        return None
    out = []
    for call, _guards, caller in sites:
        if call is None or call.has_star():
            return None
        node = call.arg_node(name, pos)
        if node is None:
            return None
        out.append((node, caller))
    return out


def _leaf_name(node) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _naming(s: Script, node, frame, depth: int = 0) -> str | None:
    """'per' when the value is a per-replica-named value as it is (no arithmetic on the way),
    'global' for a global-named one, None otherwise; follows plain single assignments."""
    if depth > 4 or node is None:
        return None
    if any(isinstance(n, ast.Attribute) and n.attr in ("num_replicas_in_sync", "get_per_replica_batch_size")
           for n in ast.walk(node)):
        return None
    name = _leaf_name(node)
    if name is None:
        return None
    if isinstance(node, ast.Name) and node.id in frame.params and not _PER.search(name) and not _GLOBAL.search(name):
        # a parameter that names nothing (`batch_size`): what every caller passes
        got = _passed(s, frame, node.id)
        kinds = {_naming(s, n, f, depth + 1) for n, f in got or ()}
        return kinds.pop() if len(kinds) == 1 else None
    if isinstance(node, ast.Name):
        b = s.binding(node.id, frame)
        if (b is not None and isinstance(b[0], ast.BinOp) and isinstance(b[0].op, ast.Div | ast.FloorDiv)
                and isinstance(b[0].right, ast.Attribute) and b[0].right.attr == "num_replicas_in_sync"):
            return "per"  # GLOBAL // strategy.num_replicas_in_sync: one replica's share
        if b is not None and not isinstance(b[0], ast.Name | ast.Attribute | ast.Constant):
            return None  # computed: the name says nothing certain
        if b is not None and isinstance(b[0], ast.Name | ast.Attribute):
            inner = _naming(s, b[0], b[1], depth + 1)
            if inner is not None:
                return inner
    if _PER.search(name):
        return "per"
    if _GLOBAL.search(name) and not _PER.search(name):
        return "global"
    return None


def _batch_calls(expr):
    """The ``.batch(x)`` calls of a dataset pipeline expression (``ds.shuffle(n).batch(x).prefetch(1)``)."""
    for n in ast.walk(expr):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "batch" and n.args:
            yield n


def _pipeline(s: Script, arg, frame, depth: int = 0):
    """The (expression, frame) pairs that build dataset ``arg``: itself, each value assigned to its
    name in the frame that passes it, and for a parameter what the function's callers pass."""
    out = [(arg, frame)]
    if isinstance(arg, ast.Name):
        root = frame_node(s, frame)
        if root is not None:
            for n in ast.walk(root):
                if isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == arg.id for t in n.targets):
                    out.append((n.value, frame))
        if arg.id in frame.params and depth < 2:
            for node, caller in _passed(s, frame, arg.id) or ():
                out.extend(_pipeline(s, node, caller, depth + 1))
    for expr, _fr in list(out):
        # a dataset a local function returns: its return expressions, in its own frame
        if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and depth < 2:
            callees = s.functions.get(expr.func.id, ())
            if len(callees) == 1 and callees[0].cls is None:
                for ret in callees[0].returns:
                    if ret is not None:
                        out.extend(_pipeline(s, ret, callees[0], depth + 1))
    return out


class PerReplicaBatchAsGlobal(Rule):
    code = "TFD006"
    name = "per-replica-batch-as-global"
    severity = Severity.WARNING
    summary = "a batch named per replica where tf.distribute expects the global batch (or the reverse)"
    kinds = _PY
    calls = frozenset({"tf_strategy"})
    doc = """
    ## What it does
    In a script that creates a `tf.distribute` strategy, flags a batch size whose own name says
    per replica (`BATCH_SIZE_PER_REPLICA`, `per_gpu_batch`, `per_worker_batch_size`), passed as
    it is, where TensorFlow expects the global batch: `dataset.batch(...)` of a dataset given to
    `strategy.experimental_distribute_dataset()` or to `model.fit()`, and
    `tf.nn.compute_average_loss(..., global_batch_size=...)`. The dataset is followed through
    the script's own helper functions (a parameter: what every call site passes; a local
    function's return value; a batch-size parameter that names nothing: what its callers
    pass). Flags the reverse too: a
    global-named batch in the `dataset_fn` of `strategy.distribute_datasets_from_function()`,
    which batches for one replica. A value multiplied by anything (`* strategy.num_replicas_in_sync`,
    `* num_workers`) or computed otherwise is left alone: only the name is evidence, and a value
    assigned `GLOBAL // strategy.num_replicas_in_sync` (one replica's share).

    ## Why it matters
    `experimental_distribute_dataset` and Keras `fit` split each batch of the dataset across
    the replicas: a dataset batched per replica gives each replica
    `BATCH_SIZE_PER_REPLICA / num_replicas_in_sync` examples, so the run is slower, the
    effective batch is not the one tuned, and a learning rate scaled for the global batch is too
    large. `compute_average_loss` divides by the global batch; given the per-replica size the
    summed gradients are `num_replicas_in_sync` times too large. A `dataset_fn` batching the
    global size makes every replica take the whole global batch.

    ## Example

    ## How to fix
    Batch with `BATCH_SIZE_PER_REPLICA * strategy.num_replicas_in_sync` (TensorFlow's
    distributed-training tutorials name it `GLOBAL_BATCH_SIZE`); in a `dataset_fn` use
    `input_context.get_per_replica_batch_size(GLOBAL_BATCH_SIZE)`.
    """
    valid = [
        Example("""
            import tensorflow as tf

            strategy = tf.distribute.MirroredStrategy()
            BATCH_SIZE_PER_REPLICA = 64
            GLOBAL_BATCH_SIZE = BATCH_SIZE_PER_REPLICA * strategy.num_replicas_in_sync
            train_dataset = tf.data.Dataset.from_tensor_slices((images, labels)).shuffle(60000).batch(GLOBAL_BATCH_SIZE)
            train_dist_dataset = strategy.experimental_distribute_dataset(train_dataset)

            def compute_loss(labels, predictions):
                per_example_loss = loss_object(labels, predictions)
                return tf.nn.compute_average_loss(per_example_loss, global_batch_size=GLOBAL_BATCH_SIZE)
        """),
        Example("""
            import tensorflow as tf

            strategy = tf.distribute.MirroredStrategy()
            GLOBAL_BATCH_SIZE = 256

            def dataset_fn(input_context):
                batch_size = input_context.get_per_replica_batch_size(GLOBAL_BATCH_SIZE)
                return tf.data.Dataset.from_tensor_slices((x, y)).shard(
                    input_context.num_input_pipelines, input_context.input_pipeline_id).batch(batch_size)

            dist_dataset = strategy.distribute_datasets_from_function(dataset_fn)
        """),
    ]
    invalid = [
        Example("""
            import tensorflow as tf

            strategy = tf.distribute.MirroredStrategy()
            BATCH_SIZE_PER_REPLICA = 64
            train_dataset = tf.data.Dataset.from_tensor_slices((images, labels)).shuffle(60000).batch(BATCH_SIZE_PER_REPLICA)
            train_dist_dataset = strategy.experimental_distribute_dataset(train_dataset)
        """, line=5, doc=True),
        Example("""
            import tensorflow as tf

            strategy = tf.distribute.MirroredStrategy()
            BATCH_SIZE_PER_REPLICA = 64

            def compute_loss(labels, predictions):
                per_example_loss = loss_object(labels, predictions)
                return tf.nn.compute_average_loss(per_example_loss, global_batch_size=BATCH_SIZE_PER_REPLICA)
        """, line=8),
        Example("""
            import tensorflow as tf

            strategy = tf.distribute.MirroredStrategy()
            GLOBAL_BATCH_SIZE = 256

            def dataset_fn(input_context):
                return tf.data.Dataset.from_tensor_slices((x, y)).batch(GLOBAL_BATCH_SIZE)

            dist_dataset = strategy.distribute_datasets_from_function(dataset_fn)
        """, line=7),
    ]

    def check_file(self, f, ctx) -> Iterable[Diagnostic]:
        s = script_of(f)
        if s is None:
            return
        kinds = {k for _c, k in strategies(s)}
        if not kinds & _SPLITTING:
            return
        seen: set[int] = set()
        for c in s.calls:
            if c.method in ("experimental_distribute_dataset", "distribute_dataset") or (
                    c.method == "fit" and c.node.args):
                arg = c.node.args[0] if c.node.args else None
                if arg is None:
                    continue
                for expr, fr in _pipeline(s, arg, c.frame):
                    for b in _batch_calls(expr):
                        if id(b) in seen or _naming(s, b.args[0], fr) != "per":
                            continue
                        seen.add(id(b))
                        x = s.code(b.args[0])
                        where = f"{s.code(c.node.func)}()"
                        yield self.report(
                            s.span_of(b),
                            f".batch({x}) batches per replica, but {where} takes the global batch and splits "
                            f"it across the replicas: each replica gets {x} / num_replicas_in_sync examples; "
                            f"use .batch({x} * strategy.num_replicas_in_sync)")
            elif c.method == "compute_average_loss" or "tensorflow.nn.compute_average_loss" in c.qnames:
                node = c.arg_node("global_batch_size")
                if node is None or _naming(s, node, c.frame) != "per":
                    continue
                x = s.code(node)
                yield self.report(
                    s.span_of(node),
                    f"compute_average_loss(global_batch_size={x}) divides by a per-replica batch: each "
                    "replica's loss is its own mean and the summed gradients are num_replicas_in_sync times "
                    f"too large; pass global_batch_size={x} * strategy.num_replicas_in_sync")
            elif c.method in ("distribute_datasets_from_function", "experimental_distribute_datasets_from_function"):
                fn = c.node.args[0] if c.node.args else None
                if not isinstance(fn, ast.Name):
                    continue
                for fr in s.functions.get(fn.id, ()):
                    if fr.node is None:
                        continue
                    for b in _batch_calls(fr.node):
                        if id(b) in seen or _naming(s, b.args[0], fr) != "global":
                            continue
                        seen.add(id(b))
                        x = s.code(b.args[0])
                        yield self.report(
                            s.span_of(b),
                            f".batch({x}) in the dataset_fn of {s.code(c.node.func)}() batches the global size, "
                            "but that function builds the dataset of one replica: every replica takes the "
                            f"whole global batch; use .batch(input_context.get_per_replica_batch_size({x}))")
