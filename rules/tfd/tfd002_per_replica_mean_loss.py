"""TFD002 per-replica-mean-loss: a custom training loop under a tf.distribute strategy averages its loss with reduce_mean per replica"""

from __future__ import annotations

import ast
from typing import Any, Iterable

from parallint.model.diagnostics import Diagnostic, Related, Severity
from parallint.model.rule import Example, Rule
from parallint.model.script import Call, Frame, Script, script_of
from parallint.rules.tfd._common import _PY, device_indices, strategies

_MEAN = frozenset({"tensorflow.reduce_mean", "tensorflow.math.reduce_mean", "tensorflow.compat.v1.reduce_mean",
                   "tensorflow.keras.backend.mean"})
_RUN = frozenset({"run", "experimental_run_v2", "experimental_run"})
#: words that show the loss is scaled to the global batch (or by the replica count)
_SCALED = ("compute_average_loss", "num_replicas_in_sync", "global_batch", "GLOBAL_BATCH")


def _scaled(s: Script, node: Any) -> bool:
    text = s.code(node)
    if any(w in text for w in _SCALED):
        return True
    return any(isinstance(n, ast.BinOp) and isinstance(n.op, ast.Div | ast.FloorDiv | ast.Mult)
               for n in ast.walk(node))


def _mean_in(s: Script, node: Any, frame: Frame, hop: bool = True) -> Any:
    """The reduce_mean call that makes ``node``'s value (through one name binding, or one function
    of the script that returns it), when nothing scales it; else None."""
    if isinstance(node, ast.Name):
        b = s.binding(node.id, frame)
        if b is None:
            return None
        node, frame = b
    if node is None or _scaled(s, node):
        return None
    for n in ast.walk(node):
        if isinstance(n, ast.Call) and s.qname_in(n.func, _MEAN):
            return n
    if hop and isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        defs = s.functions.get(node.func.id) or []
        if len(defs) == 1:
            fr = defs[0]
            if fr.node is not None and _scaled(s, fr.node):
                return None
            rets = [r for r in fr.returns if r is not None]
            if len(rets) == 1:
                return _mean_in(s, rets[0], fr, hop=False)
    return None


def _step_function(s: Script, run: Call) -> Frame | None:
    fn = run.arg_node("fn", 0)
    if not isinstance(fn, ast.Name):
        return None
    defs = s.functions.get(fn.id) or []
    return defs[0] if len(defs) == 1 else None


class PerReplicaMeanLoss(Rule):
    code = "TFD002"
    name = "per-replica-mean-loss"
    severity = Severity.WARNING
    summary = ("a custom training loop under a tf.distribute strategy averages its loss with reduce_mean per "
               "replica")
    kinds = _PY
    calls = frozenset({"tf_strategy"})
    doc = """
    ## What it does
    Follows the step function a script hands to `strategy.run(...)` (MirroredStrategy,
    MultiWorkerMirroredStrategy, TPUStrategy, CentralStorageStrategy) to the loss it takes the
    gradient of (`tape.gradient(loss, ...)`), and flags a loss made with `tf.reduce_mean` over the
    replica's own examples, with nothing that scales it to the global batch
    (`tf.nn.compute_average_loss`, a division, `num_replicas_in_sync`), directly or through one
    function of the script that returns it. ParameterServerStrategy is not checked (its workers
    apply their gradients on their own).

    ## Why it matters
    The strategy sums the replicas' gradients. Each replica's mean is already an average, so the
    sum is `num_replicas_in_sync` times the gradient of the global mean: the effective learning
    rate grows with the number of GPUs, and a recipe tuned on one GPU diverges on eight. Nothing
    fails.

    ## Example

    ## How to fix
    Compute the per-example loss (a Keras loss with `reduction=tf.keras.losses.Reduction.NONE`)
    and average it over the global batch:
    `tf.nn.compute_average_loss(per_example_loss, global_batch_size=GLOBAL_BATCH_SIZE)`.
    """
    valid = [
        Example("""
            import tensorflow as tf

            strategy = tf.distribute.MirroredStrategy()
            GLOBAL_BATCH_SIZE = 64 * strategy.num_replicas_in_sync
            with strategy.scope():
                loss_object = tf.keras.losses.SparseCategoricalCrossentropy(
                    from_logits=True, reduction=tf.keras.losses.Reduction.NONE)

            def compute_loss(labels, predictions):
                per_example_loss = loss_object(labels, predictions)
                return tf.nn.compute_average_loss(per_example_loss, global_batch_size=GLOBAL_BATCH_SIZE)

            def train_step(inputs):
                images, labels = inputs
                with tf.GradientTape() as tape:
                    predictions = model(images, training=True)
                    loss = compute_loss(labels, predictions)
                gradients = tape.gradient(loss, model.trainable_variables)
                optimizer.apply_gradients(zip(gradients, model.trainable_variables))
                return loss

            @tf.function
            def distributed_train_step(inputs):
                per_replica_losses = strategy.run(train_step, args=(inputs,))
                return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica_losses, axis=None)
        """),
        # the mean scaled by the replica count
        Example("""
            import tensorflow as tf

            strategy = tf.distribute.MirroredStrategy()

            def step(x, y):
                with tf.GradientTape() as tape:
                    loss = tf.reduce_mean(loss_fn(y, model(x))) / strategy.num_replicas_in_sync
                grads = tape.gradient(loss, model.trainable_variables)
                opt.apply_gradients(zip(grads, model.trainable_variables))

            strategy.run(step, args=(x, y))
        """),
        # one device: the mean is the global mean
        Example("""
            import tensorflow as tf

            strategy = tf.distribute.MirroredStrategy(devices=["/gpu:0"])

            def step(x, y):
                with tf.GradientTape() as tape:
                    loss = tf.reduce_mean(loss_fn(y, model(x)))
                opt.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))

            strategy.run(step, args=(x, y))
        """),
    ]
    invalid = [
        Example("""
            import tensorflow as tf

            strategy = tf.distribute.MirroredStrategy()

            def train_step(inputs):
                images, labels = inputs
                with tf.GradientTape() as tape:
                    predictions = model(images, training=True)
                    loss = tf.reduce_mean(loss_object(labels, predictions))
                gradients = tape.gradient(loss, model.trainable_variables)
                optimizer.apply_gradients(zip(gradients, model.trainable_variables))
                return loss

            @tf.function
            def distributed_train_step(inputs):
                per_replica_losses = strategy.run(train_step, args=(inputs,))
                return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica_losses, axis=None)
        """, line=9),
        # through a loss helper of the script
        Example("""
            import tensorflow as tf

            strategy = tf.distribute.MultiWorkerMirroredStrategy()

            def compute_loss(labels, logits):
                return tf.reduce_mean(tf.keras.losses.sparse_categorical_crossentropy(labels, logits))

            def step(x, y):
                with tf.GradientTape() as tape:
                    loss = compute_loss(y, model(x))
                grads = tape.gradient(loss, model.trainable_variables)
                opt.apply_gradients(zip(grads, model.trainable_variables))

            strategy.run(step, args=(x, y))
        """, line=6),
    ]

    def check_file(self, f, ctx) -> Iterable[Diagnostic]:
        s = script_of(f)
        if s is None:
            return
        done: set[int] = set()
        for sc, kind in strategies(s):
            if kind == "ps" or sc.target is None:
                continue
            if kind == "mirrored":
                dev = s.arg(sc, "devices", 0)
                if dev is not None:
                    idx = device_indices(dev.value) if dev.known else None
                    if idx is None or len(set(idx)) <= 1:
                        continue  # one device, or devices we cannot count
            for run in s.calls:
                if run.method not in _RUN or not isinstance(run.receiver, ast.Name) or run.receiver.id != sc.target:
                    continue
                b = s.binding(sc.target, run.frame)
                if b is None or b[0] is not sc.node:
                    continue
                step = _step_function(s, run)
                if step is None:
                    continue
                for g in s.calls:
                    if g.frame is not step or g.method != "gradient":
                        continue
                    loss = g.arg_node("target", 0)
                    if loss is None:
                        continue
                    mean = _mean_in(s, loss, step)
                    if mean is None or id(mean) in done:
                        continue
                    done.add(id(mean))
                    yield self.report(
                        s.span_of(mean),
                        f"{s.code(mean.func)}(...) averages the loss over this replica's examples only, and "
                        f"{sc.target}.run() sums the replicas' gradients: each step is num_replicas_in_sync "
                        "times the global mean's; use tf.nn.compute_average_loss(per_example_loss, "
                        "global_batch_size=...) on a per-example loss",
                        related=[Related.at(run.span, f"the step function runs on every replica of {sc.func_text}")],
                    )
