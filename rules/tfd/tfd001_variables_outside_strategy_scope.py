"""TFD001 variables-outside-strategy-scope: a Keras model or optimizer built outside the tf.distribute strategy's scope"""

from __future__ import annotations

import ast
from typing import Iterable

from parallint.model.diagnostics import Diagnostic, Related, Severity
from parallint.model.rule import Example, Rule
from parallint.model.script import Call, Frame, Script, script_of
from parallint.rules.tfd._common import _PY, extra_conditions, inside, name_uses, scope_blocks, strategies

_KERAS = ("tensorflow.keras.", "keras.", "tensorflow.compat.v1.keras.", "tensorflow.python.keras.", "tf_keras.")
_MODELS = frozenset({"Sequential", "Model", "models.Sequential", "models.Model", "models.load_model",
                     "saving.load_model", "models.clone_model"})
#: what is done with a model or an optimizer that trains it (a model only evaluated is not training)
_TRAINS = frozenset({"fit", "fit_generator", "train_on_batch", "compile", "apply_gradients", "minimize"})


def _category(qnames: frozenset[str]) -> str | None:
    """'model' / 'optimizer' when a call of one of ``qnames`` creates a Keras model's or an
    optimizer's variables, else None."""
    for q in qnames:
        for pre in _KERAS:
            if not q.startswith(pre):
                continue
            rest = q[len(pre):]
            last = rest.rsplit(".", 1)[-1]
            if rest in _MODELS or (rest.startswith("applications.") and last[:1].isupper()):
                return "model"
            if rest.startswith(("optimizers.", "mixed_precision.LossScaleOptimizer")) and (
                    last[:1].isupper() or last == "get") and "schedules" not in rest:
                return "optimizer"
    return None


def _keras_model_class(s: Script, name: str) -> bool:
    """A class of this script that subclasses a Keras model."""
    frames = s.classes.get(name) or []
    for fr in frames:
        node = fr.node
        for b in getattr(node, "bases", ()):
            if _category(s.qnames(b, fr.parent)) == "model":
                return True
    return False


def _creates(s: Script, c: Call, hop: bool = True) -> str | None:
    """What the call creates: a Keras model, an optimizer, or (one hop) what a function of the
    script that it calls creates outside any scope of its own."""
    cat = _category(c.qnames)
    if cat is not None:
        return cat
    f = c.node.func
    if isinstance(f, ast.Name) and not c.qnames - {f.id}:
        if _keras_model_class(s, f.id):
            return "model"
        defs = s.functions.get(f.id) or []
        if hop and len(defs) == 1:
            fr = defs[0]
            blocks, other = scope_blocks(s, fr, None)
            if blocks or other:
                return None
            got = {_creates(s, x, hop=False) for x in s.calls if x.frame is fr}
            for cat in ("model", "optimizer"):
                if cat in got:
                    return cat
    return None


def _trained(s: Script, name: str) -> bool:
    """``name`` is trained, compiled or handed to compile as its optimizer somewhere in the script,
    or its trainable variables are taken (a custom training loop's gradients)."""
    tree = getattr(s, "_module", None)
    if tree is not None and any(isinstance(n, ast.Attribute) and n.attr in ("trainable_variables", "trainable_weights")
                                and isinstance(n.value, ast.Name) and n.value.id == name for n in ast.walk(tree)):
        return True
    for c in s.calls:
        if c.method in _TRAINS and isinstance(c.receiver, ast.Name) and c.receiver.id == name:
            return True
        if c.method == "compile":
            node = c.arg_node("optimizer", 0)
            if isinstance(node, ast.Name) and node.id == name:
                return True
    return False


class VariablesOutsideStrategyScope(Rule):
    code = "TFD001"
    name = "variables-outside-strategy-scope"
    severity = Severity.WARNING
    summary = "a Keras model or optimizer built outside the tf.distribute strategy's scope"
    kinds = _PY
    calls = frozenset({"tf_strategy"})
    doc = """
    ## What it does
    Flags a Keras model (`tf.keras.Sequential`, `tf.keras.Model`, `keras.applications.*`, a
    class of the script that subclasses `tf.keras.Model`, a function of the script that builds
    one) or an optimizer (`tf.keras.optimizers.*`) that a script builds after creating a
    `tf.distribute` strategy, in the same function, outside every `with strategy.scope():`
    block, and then trains (`fit`, `compile`, `apply_gradients`). Silent when the strategy is
    handed to other code, entered another way (`experimental_set_strategy`, `__enter__`), or
    when the model is built under a condition the strategy is not.

    ## Why it matters
    A strategy distributes only the variables created under its scope. A model built outside it
    keeps ordinary variables: `fit` then trains on one device while the strategy idles, and
    an optimizer built on the other side of the scope from its model stops the run with "not
    created in the distribution strategy scope" or "a different tf.distribute.Strategy".

    ## Example

    ## How to fix
    Build and compile the model, and create the optimizer, under `with strategy.scope():`
    (the dataset and the `fit` call may stay outside).
    """
    valid = [
        Example("""
            import tensorflow as tf

            strategy = tf.distribute.MirroredStrategy()
            with strategy.scope():
                model = tf.keras.Sequential([tf.keras.layers.Dense(10)])
                model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
            model.fit(train_ds, epochs=3)
        """),
        # the custom-training-loop recipe: model and optimizer made in the scope by a helper
        Example("""
            import tensorflow as tf

            def build():
                return tf.keras.Sequential([tf.keras.layers.Dense(10)])

            strategy = tf.distribute.MirroredStrategy()
            with strategy.scope():
                model = build()
                optimizer = tf.keras.optimizers.Adam()
            model.fit(ds)
        """),
        # a model loaded after training only to evaluate it: nothing trains it
        Example("""
            import tensorflow as tf

            strategy = tf.distribute.MultiWorkerMirroredStrategy()
            with strategy.scope():
                model = tf.keras.applications.ResNet50(weights=None)
                model.compile(optimizer="sgd", loss="mse")
            model.fit(ds)
            restored = tf.keras.models.load_model("ckpt")
            restored.evaluate(test_ds)
        """),
        # the strategy goes to other code, which may enter its scope
        Example("""
            import tensorflow as tf

            strategy = tf.distribute.MirroredStrategy()
            model = tf.keras.Sequential([tf.keras.layers.Dense(10)])
            trainer = Trainer(strategy, model)
            model.fit(ds)
        """),
    ]
    invalid = [
        Example("""
            import tensorflow as tf

            strategy = tf.distribute.MirroredStrategy()
            print("replicas:", strategy.num_replicas_in_sync)
            model = tf.keras.Sequential([tf.keras.layers.Dense(10)])
            model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
            model.fit(train_ds, epochs=3)
        """, line=5),
        # the optimizer made after the scope closed
        Example("""
            import tensorflow as tf

            def main():
                strategy = tf.distribute.MultiWorkerMirroredStrategy()
                with strategy.scope():
                    model = build_and_compile_cnn_model()
                optimizer = tf.keras.optimizers.SGD(learning_rate=0.01)
                model.compile(optimizer=optimizer, loss="mse")
                model.fit(ds, epochs=3)
        """, line=7),
        # a subclassed model, built before the scope is entered
        Example("""
            import tensorflow as tf

            class Net(tf.keras.Model):
                def call(self, x):
                    return x

            strategy = tf.distribute.MirroredStrategy()
            model = Net()
            with strategy.scope():
                optimizer = tf.keras.optimizers.Adam()

            @tf.function
            def train_step(x):
                with tf.GradientTape() as tape:
                    loss = model(x)
                optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables),
                                              model.trainable_variables))
            model.fit(ds)
        """, line=8),
        # a custom training loop: the model is built before the scope it should be in
        Example("""
            import tensorflow as tf

            strategy = tf.distribute.MirroredStrategy()
            model = tf.keras.Sequential([tf.keras.layers.Dense(10)])
            with strategy.scope():
                optimizer = tf.keras.optimizers.Adam()

            def train_step(x):
                with tf.GradientTape() as tape:
                    loss = model(x)
                grads = tape.gradient(loss, model.trainable_variables)
                optimizer.apply_gradients(zip(grads, model.trainable_variables))

            @tf.function
            def distributed_train_step(x):
                return strategy.run(train_step, args=(x,))
        """, line=4),
    ]

    def check_file(self, f, ctx) -> Iterable[Diagnostic]:
        s = script_of(f)
        if s is None or "experimental_set_strategy" in (s.text or ""):
            return
        for sc, kind in strategies(s):
            yield from self._check(s, sc)

    def _check(self, s: Script, sc: Call) -> Iterable[Diagnostic]:
        v = sc.target
        frame: Frame = sc.frame
        if v is None or s.binding(v, frame) is None:
            return
        _, other_use = name_uses(s, frame, v)
        blocks, other_scope = scope_blocks(s, frame, None)
        if other_use or other_scope:
            return
        seen: set[str] = set()
        for c in s.calls:
            if c.frame is not frame or c.index <= sc.index or any(inside(c.node, b) for b in blocks):
                continue
            if extra_conditions(c, sc) or c.target is None:
                continue
            cat = _creates(s, c)
            if cat is None or cat in seen or not _trained(s, c.target):
                continue
            seen.add(cat)
            what = "builds the model" if cat == "model" else "creates the optimizer"
            where = (f"outside {v}.scope()" if blocks
                     else f"while the scope of {v} is never entered")
            yield self.report(
                c.span,
                f"{c.func_text}(...) {what} {where}: its variables are not the strategy's, so training "
                f"runs undistributed or stops with 'not created in the distribution strategy scope'; move it "
                f"under `with {v}.scope():`",
                related=[Related.at(sc.span, f"the {sc.func_text} whose scope it should be in")],
            )
