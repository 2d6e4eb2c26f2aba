"""What the TFD rules share: the tf.distribute strategies a script creates, the ``with
strategy.scope():`` blocks it enters, device strings. Read from the script's ``ast`` tree; TensorFlow
is never imported."""

from __future__ import annotations

import ast
import re
from functools import cache

from parallint.model.script import Call, Frame, Script

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_PY = frozenset({"python"})

#: strategy class name -> kind
_KINDS = {"MirroredStrategy": "mirrored", "MultiWorkerMirroredStrategy": "multi_worker",
          "ParameterServerStrategy": "ps", "TPUStrategy": "tpu", "CentralStorageStrategy": "central"}
#: the kinds that run on several machines
MULTI_MACHINE = frozenset({"multi_worker", "ps", "tpu"})


def strategy_kind(c: Call) -> str | None:
    """The kind of the strategy a ``tf_strategy`` call makes (None for another call)."""
    if "tf_strategy" not in c.groups:
        return None
    for q in c.qnames:
        k = _KINDS.get(q.rsplit(".", 1)[-1])
        if k is not None:
            return k
    return None


def strategies(s: Script) -> list[tuple[Call, str]]:
    """(call, kind) of every strategy the script creates, in source order."""
    out = []
    for c in s.by("tf_strategy"):
        k = strategy_kind(c)
        if k is not None:
            out.append((c, k))
    return out


def frame_node(s: Script, frame: Frame) -> Any:
    """The syntax node of a frame's body: the function or class, the module for the module."""
    return frame.node if frame.node is not None else getattr(s, "_module", None)


def _own_nodes(root: Any):
    """The nodes of ``root``'s body, not descending into nested functions, lambdas or classes."""
    stack = list(ast.iter_child_nodes(root))
    while stack:
        n = stack.pop()
        yield n
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        stack.extend(ast.iter_child_nodes(n))


def name_uses(s: Script, frame: Frame, name: str) -> tuple[list[Any], bool]:
    """The ``name.attr`` uses of ``name`` in ``frame``'s body (nested functions included), and whether
    ``name`` is also used in another way (passed to a call, stored in a container, returned)."""
    root = frame_node(s, frame)
    if root is None:
        return [], True
    attrs: list[Any] = []
    as_value: set[int] = set()
    for n in ast.walk(root):  # nested step functions call strategy.run(...): attribute uses too
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == name:
            attrs.append(n)
            as_value.add(id(n.value))
    other = False
    for n in ast.walk(root):
        if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load) and id(n) not in as_value:
            other = True
            break
        if isinstance(n, ast.Global | ast.Nonlocal) and name in n.names:
            other = True
            break
    return attrs, other


def scope_blocks(s: Script, frame: Frame, name: str | None) -> tuple[list[ast.With], bool]:
    """The ``with name.scope():`` statements of ``frame``'s own body (any ``with x.scope():`` when
    ``name`` is None), and whether such a ``.scope()`` is also called another way (``scope =
    strategy.scope(); scope.__enter__()``, an ExitStack)."""
    root = frame_node(s, frame)
    blocks: list[ast.With] = []
    in_with: set[int] = set()
    if root is None:
        return blocks, True
    nodes = list(_own_nodes(root))
    for n in nodes:
        if isinstance(n, ast.With | ast.AsyncWith):
            for item in n.items:
                e = item.context_expr
                if _is_scope_call(e, name):
                    blocks.append(n)  # type: ignore[arg-type]
                    in_with.add(id(e))
    other = any(_is_scope_call(n, name) and id(n) not in in_with for n in nodes)
    return blocks, other


def _is_scope_call(e: Any, name: str | None) -> bool:
    return (isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and e.func.attr == "scope"
            and (name is None or (isinstance(e.func.value, ast.Name) and e.func.value.id == name)))


def inside(node: Any, block: Any) -> bool:
    """``node`` lies in the body of the compound statement ``block`` (by position)."""
    body = getattr(block, "body", None)
    if not body:
        return False
    start = (body[0].lineno, body[0].col_offset)
    end = (body[-1].end_lineno or body[-1].lineno, body[-1].end_col_offset or 0)
    here = (node.lineno, node.col_offset)
    return start <= here <= end


def extra_conditions(c: Call, base: Call) -> bool:
    """``c`` runs under an ``if`` (or ``else``) that ``base`` does not (``if __name__ == ...`` aside)."""
    have = {(g.if_id, g.branch) for g in base.guards}
    return any((g.if_id, g.branch) not in have for g in c.guards if not g.main)


@cache
def _gpu_re() -> re.Pattern[str]:
    return re.compile(r"^(?:/job:[^/]+)?(?:/replica:\d+)?(?:/task:\d+)?/?(?:device:)?(gpu|cpu|tpu):(\d+)$", re.I)


def device_indices(devices: Any) -> list[int] | None:
    """The GPU indices a literal device list names (``["/gpu:0", "GPU:1",
    "/job:localhost/replica:0/task:0/device:GPU:2"]``); None when a device is not such a string."""
    if not isinstance(devices, list | tuple) or not devices:
        return None
    out: list[int] = []
    for d in devices:
        if not isinstance(d, str):
            return None
        m = _gpu_re().match(d.strip())
        if m is None:
            return None
        if m.group(1).lower() == "gpu":
            out.append(int(m.group(2)))
    return out


def tfjob_of(job: Any) -> Any:
    """The Kubeflow TFJob a job's launch runs in (its outermost wrapper), or None."""
    la = getattr(job, "launch", None)
    while la is not None:
        if la.launcher == "tfjob":
            return la
        la = la.wrapper
    return None


def replicas(tfjob: Any, *types: str) -> tuple[int, list[Any]] | None:
    """The replicas of these types of a TFJob, summed, and their Values; None when one is unknown."""
    total, vals = 0, []
    for t in types:
        v = tfjob.options.get(f"replicas.{t}")
        if v is None:
            continue
        if not v.known or not isinstance(v.value, int) or isinstance(v.value, bool):
            return None
        total += v.value
        vals.append(v)
    return total, vals


def tfjob_example(chief: int, workers: int, gpus: int = 1, strategy: str = "tf.distribute.MirroredStrategy()") -> dict:
    """A TFJob of ``chief`` + ``workers`` pods running train.py, shaped like Kubeflow's examples."""
    def replica(kind: str, n: int) -> str:
        return (f"    {kind}:\n"
                f"      replicas: {n}\n"
                "      restartPolicy: OnFailure\n"
                "      template:\n"
                "        spec:\n"
                "          containers:\n"
                "            - name: tensorflow\n"
                "              image: tensorflow/tensorflow:2.15.0-gpu\n"
                '              command: ["python", "train.py"]\n'
                "              resources:\n"
                "                limits:\n"
                f"                  nvidia.com/gpu: {gpus}\n")
    return {
        "tfjob.yaml": ("apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata:\n  name: mnist\nspec:\n"
                       "  tfReplicaSpecs:\n" + replica("Chief", chief) + (replica("Worker", workers) if workers else "")),
        "train.py": ("import tensorflow as tf\n\n"
                     f"strategy = {strategy}\n"
                     "with strategy.scope():\n"
                     "    model = tf.keras.Sequential([tf.keras.layers.Dense(10)])\n"
                     '    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")\n'
                     "model.fit(train_ds, epochs=3)\n"),
    }


# -- TF_CONFIG (TFD005) ------------------------------------------------------------------------
#: the task types TensorFlow's cluster validation accepts (multi_worker_util._validate_cluster_spec)
TASK_TYPES = ("chief", "worker", "ps", "evaluator")


def parse_tf_config(value: Any) -> dict | None:
    """A TF_CONFIG's cluster and task, from its JSON text or a dict literal; None when it is not a
    literal of that shape (a value built at run time, a template placeholder)."""
    import json

    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return None
    if not isinstance(value, dict):
        return None
    cluster = value.get("cluster")
    if not isinstance(cluster, dict) or not cluster:
        return None
    if not all(isinstance(k, str) and isinstance(v, list | tuple | dict) for k, v in cluster.items()):
        return None
    return value


def tf_config_problems(cfg: dict) -> list[str]:
    """What TensorFlow refuses in one TF_CONFIG, as its cluster validation checks it: more than one
    chief, a task type the cluster does not list, a task index past the tasks of its type. The
    evaluator is left out (older Estimator set-ups keep it out of the cluster on purpose)."""
    cluster = cfg["cluster"]
    out: list[str] = []
    chiefs = cluster.get("chief")
    if chiefs is not None and len(chiefs) > 1:
        out.append(f"its cluster lists {len(chiefs)} chief tasks and TensorFlow allows at most one "
                   "(\"There must be at most one 'chief' job\")")
    task = cfg.get("task")
    if not isinstance(task, dict):
        return out
    ttype, index = task.get("type"), task.get("index", 0)
    if not isinstance(ttype, str) or ttype not in ("chief", "worker", "ps"):
        return out
    if ttype not in cluster:
        listed = ", ".join(sorted(cluster))
        out.append(f"its task type is {ttype!r} but the cluster lists only {listed} "
                   f"(\"`task_type` {ttype!r} not found in cluster_spec\")")
        return out
    if isinstance(index, bool) or not isinstance(index, int):
        return out
    n = len(cluster[ttype]) if not isinstance(cluster[ttype], dict) else None
    if n is not None and (index >= n or index < 0):
        out.append(f"its task is {ttype} {index} but the cluster lists {n} {ttype} task"
                   f"{'s' if n != 1 else ''} (indices 0..{n - 1}): \"The `task_id` {index} exceeds the "
                   f"maximum id of {ttype}\"")
    return out


def trainers_of(cfg: dict) -> int | None:
    """The training tasks a TF_CONFIG cluster lists (chief + worker: the chief trains too)."""
    cluster = cfg["cluster"]
    n = 0
    for t in ("chief", "master", "worker"):
        v = cluster.get(t)
        if v is None:
            continue
        if isinstance(v, dict):
            return None
        n += len(v)
    return n


def _frames_by_node(s: Script) -> dict[int, Frame]:
    out: dict[int, Frame] = {}
    for group in (s.functions, s.classes):
        for frames in group.values():
            for fr in frames:
                if fr.node is not None:
                    out[id(fr.node)] = fr
    return out


def script_tf_configs(s: Script) -> list[tuple[dict, Any, Frame]]:
    """The literal TF_CONFIG a script writes: ``os.environ["TF_CONFIG"] = json.dumps({...})`` (or a
    JSON string), with the assignment node and its frame. Only a value the evaluator resolves."""
    tree = getattr(s, "_module", None)
    if tree is None or "TF_CONFIG" not in (s.text or ""):
        return []
    frames = _frames_by_node(s)
    out: list[tuple[dict, Any, Frame]] = []

    def visit(node: Any, frame: Frame) -> None:
        for child in ast.iter_child_nodes(node):
            fr = frames.get(id(child), frame)
            if isinstance(child, ast.Assign) and len(child.targets) == 1 and _is_tf_config_slot(child.targets[0]):
                cfg = _literal_config(s, child.value, frame)
                if cfg is not None:
                    out.append((cfg, child, frame))
            visit(child, fr)

    visit(tree, s.module_frame)
    return out


def _is_tf_config_slot(t: Any) -> bool:
    if not isinstance(t, ast.Subscript):
        return False
    key = t.slice
    if not (isinstance(key, ast.Constant) and key.value == "TF_CONFIG"):
        return False
    v = t.value
    return (isinstance(v, ast.Attribute) and v.attr == "environ" and isinstance(v.value, ast.Name)
            and v.value.id == "os") or (isinstance(v, ast.Name) and v.id == "environ")


def _literal_config(s: Script, node: Any, frame: Frame, depth: int = 0) -> dict | None:
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "dumps"
            and len(node.args) == 1):
        node = node.args[0]
    if isinstance(node, ast.Name) and depth < 3:
        b = s.binding(node.id, frame)
        if b is not None and isinstance(b[0], ast.Dict):
            return _literal_config(s, b[0], b[1], depth + 1)
    if isinstance(node, ast.Dict) and all(isinstance(k, ast.Constant) for k in node.keys):
        # key by key: a task index computed at run time leaves the cluster readable
        out: dict = {}
        for k, v in zip(node.keys, node.values):
            got = _known(s, v, frame)
            if got is not None:
                out[k.value] = got  # type: ignore[union-attr]
        if isinstance(out.get("task"), dict) is False and "task" in out:
            del out["task"]
        return parse_tf_config(out)
    got = _known(s, node, frame)
    return None if got is None else parse_tf_config(got)


def _known(s: Script, node: Any, frame: Frame) -> Any:
    try:
        v = s.value(node, frame, with_span=False)
    except Exception:  # noqa: BLE001 - an expression the evaluator does not take: unknown
        return None
    return v.value if v.known else None


def tfjob_pods(job: Any) -> tuple[int, list[Any], int, list[Any]] | None:
    """The TFJob a job runs in, counted: (chief + master + worker replicas, their Values, ps
    replicas, their Values); None outside a TFJob or when a count is unknown."""
    tj = tfjob_of(job)
    if tj is None:
        return None
    trainers, ps = replicas(tj, "Chief", "Master", "Worker"), replicas(tj, "PS")
    if trainers is None or ps is None:
        return None
    return trainers[0], trainers[1], ps[0], ps[1]
