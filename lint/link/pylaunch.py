"""Launch facts stated in Python: the launchers that live inside a script.

* Ray Train: ``ScalingConfig(num_workers=N, use_gpu=..., resources_per_worker={"GPU": g})`` given to a
  ``TorchTrainer``/``DataParallelTrainer`` → a world of N processes.
* submitit: ``AutoExecutor``/``SlurmExecutor`` ``update_parameters(nodes=, gpus_per_node=,
  tasks_per_node=, slurm_*)`` → nodes, processes per node, GPUs per node; a submitted
  ``submitit.helpers.CommandFunction([...])`` is a command line like any other.
* NeMo-Run: ``run.SlurmExecutor(nodes=, ntasks_per_node=)``, ``run.LocalExecutor(ntasks_per_node=)``
  and recipe fields set by assignment (``recipe.trainer.strategy.tensor_model_parallel_size = 4``,
  ``recipe.trainer.num_nodes``, ``recipe.trainer.devices``).
* Lightning Fabric: ``Fabric(devices=, num_nodes=)``.
* ``torch.multiprocessing.spawn(fn, nprocs=N)`` → N processes on this node.
* ``os.environ["WORLD_SIZE"] = "N"`` → the world size the script hands to ``init_process_group``.

The script is parsed with :mod:`ast` (never imported or run). Only literal values count, and names
bound once at module level to a literal; a call inside a loop, or a value that comes from
arguments, the environment or a function is unknown and says nothing. Facts are added to the job
the script belongs to, each pointing at its own text; a launcher that forks the workers itself
(torchrun, deepspeed ...) decides the world and these facts are not used under it.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

from parallint.model.diagnostics import Span
from parallint.model.facts import FactMap, FileFacts, Value
from parallint.model.origin import How, Origin
from parallint.util.record import EqRecord

MAX_BYTES = 2_000_000
#: cheap text needles: a script without any of them is not parsed
NEEDLES = ("ScalingConfig", "ModelParallelStrategy", "update_parameters", "Executor", "spawn", "WORLD_SIZE", "Fabric",
           "CommandFunction", "tensor_model_parallel_size", "MASTER_ADDR", "_recipe")
FORKING = frozenset({"torchrun", "torch.distributed.run", "torch.distributed.launch", "deepspeed", "accelerate",
                     "composer", "colossalai"})

RAY_SCALING = ("ray.train.ScalingConfig", "ray.air.ScalingConfig", "ray.air.config.ScalingConfig",
               "ray.train.v2.api.config.ScalingConfig")
RAY_TRAINERS = ("ray.train.torch.TorchTrainer", "ray.train.data_parallel_trainer.DataParallelTrainer",
                "ray.train.DataParallelTrainer", "ray.train.huggingface.TransformersTrainer",
                "ray.train.lightning.LightningTrainer", "ray.train.torch.torch_trainer.TorchTrainer")
SUBMITIT_EXECUTORS = ("submitit.AutoExecutor", "submitit.SlurmExecutor", "submitit.auto.auto.AutoExecutor",
                      "submitit.slurm.slurm.SlurmExecutor")
SUBMITIT_COMMAND = ("submitit.helpers.CommandFunction",)
NEMO_RUN_EXECUTORS = {"nemo_run.SlurmExecutor": "slurm", "nemo_run.LocalExecutor": "local",
                      "nemo_run.core.execution.slurm.SlurmExecutor": "slurm",
                      "nemo_run.core.execution.local.LocalExecutor": "local"}
FABRIC = ("lightning.Fabric", "lightning.fabric.Fabric", "lightning_fabric.Fabric", "lightning.fabric.fabric.Fabric")
MODEL_PARALLEL = ("lightning.fabric.strategies.ModelParallelStrategy", "lightning.fabric.strategies.model_parallel."
                  "ModelParallelStrategy", "lightning_fabric.strategies.ModelParallelStrategy",
                  "lightning.fabric.strategies.model_parallel.ModelParallelStrategy")
SPAWN = ("torch.multiprocessing.spawn", "torch.multiprocessing.start_processes", "torch.multiprocessing.spawn.spawn")
#: NeMo recipe attribute paths (the tail of an assignment target) -> fact key
NEMO_FIELDS = {
    "trainer.strategy.tensor_model_parallel_size": "parallel.tp",
    "trainer.strategy.pipeline_model_parallel_size": "parallel.pp",
    "trainer.strategy.context_parallel_size": "parallel.cp",
    "trainer.strategy.expert_model_parallel_size": "parallel.ep",
    "trainer.strategy.virtual_pipeline_model_parallel_size": "parallel.vpp",
    "trainer.num_nodes": "parallel.nodes",
    "trainer.devices": "parallel.procs_per_node",
    "data.micro_batch_size": "training.micro_batch",
    "data.global_batch_size": "training.global_batch",
}


class PyLaunch(EqRecord):
    """What a script states about how it is launched."""

    _fields = ("facts", "kinds", "master_addr", "layout")
    facts: FactMap
    kinds: set[str]  # ray, submitit, nemo_run, fabric, spawn, environ
    #: an unconditional ``os.environ["MASTER_ADDR"] = "localhost"`` (module level, the main guard, or
    #: the function that calls init_process_group)
    master_addr: Value | None
    #: layout facts of the script's own strategy (Fabric's ``ModelParallelStrategy``): they hold
    #: whatever launcher starts the script
    layout: FactMap

    def __init__(
        self,
        facts: FactMap | None = None,
        kinds: set[str] | None = None,
        master_addr: Value | None = None,
        layout: FactMap | None = None,
    ) -> None:
        self.facts = FactMap() if facts is None else facts
        self.kinds = set() if kinds is None else kinds
        self.master_addr = master_addr
        self.layout = FactMap() if layout is None else layout


_LOOPS = (ast.For, ast.While, ast.AsyncFor, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _walk(tree: ast.AST) -> list[ast.AST]:
    """The nodes of ``tree`` in :func:`ast.walk`'s order (breadth first), as a list, less the
    context and operator singletons: one pass without ast.walk's generators, reused by every
    loop of the scan."""
    from parallint.model.pyshared import ast_nodes

    return ast_nodes(tree)


def _is_main_guard(test: ast.AST) -> bool:
    return (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == "__name__"
            and len(test.comparators) == 1 and isinstance(test.comparators[0], ast.Constant)
            and test.comparators[0].value == "__main__")


LOOPBACK = re.compile(r"^(localhost|127(?:\.\d{1,3}){3}|::1|0\.0\.0\.0)$", re.I)


def is_loopback(text: str) -> bool:
    return LOOPBACK.match(text.strip()) is not None


class _Scan:
    def __init__(self, path: str, tree: ast.Module) -> None:
        self.path = path
        self.tree = tree
        self.alias: dict[str, str] = {}
        self.consts: dict[str, ast.AST] = {}
        self.out = PyLaunch()
        self._always: set[int] | None = None
        self._loops: set[int] | None = None

    # -- names
    def imports(self) -> None:
        self.nodes = _walk(self.tree)  # every node, in ast.walk's order, listed once
        Import, ImportFrom, Assign, AnnAssign, AugAssign, Name = \
            ast.Import, ast.ImportFrom, ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Name
        counts: dict[str, int] = {}
        for node in self.nodes:
            t = type(node)
            if t is Import:
                for a in node.names:  # type: ignore[attr-defined]
                    self.alias[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
            elif t is ImportFrom:
                if node.module and not node.level:  # type: ignore[attr-defined]
                    for a in node.names:  # type: ignore[attr-defined]
                        self.alias[a.asname or a.name] = f"{node.module}.{a.name}"  # type: ignore[attr-defined]
            elif t is Assign or t is AnnAssign or t is AugAssign:
                for tg in (node.targets if t is Assign else [node.target]):  # type: ignore[attr-defined]
                    if type(tg) is Name:
                        counts[tg.id] = counts.get(tg.id, 0) + 1
        for node in self.tree.body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                name = node.targets[0].id
                if counts.get(name) == 1 and isinstance(node.value, ast.Constant):
                    self.consts[name] = node.value

    @property
    def always(self) -> set[int]:
        """Ids of the statements that always run (see :meth:`_flow`)."""
        if self._always is None:
            self._flow()
        return self._always  # type: ignore[return-value]

    @property
    def loops(self) -> set[int]:
        """Ids of the nodes inside a loop or comprehension (see :meth:`_flow`)."""
        if self._loops is None:
            self._flow()
        return self._loops  # type: ignore[return-value]

    def _flow(self) -> None:
        """One pass, made only when a launcher call or assignment needs it (a walk per function
        or loop was quadratic in nesting): the module's statements, the bodies of `if __name__ ==
        "__main__":` and of every function with an init_process_group call anywhere inside
        (nested functions included) always run; every node inside a loop is in a loop."""
        always = {id(st) for st in self.tree.body}
        loops: set[int] = set()
        setup: dict[int, ast.AST] = {}
        stack: list[tuple[ast.AST, tuple, bool]] = [(self.tree, (), False)]
        while stack:
            node, funcs, in_loop = stack.pop()
            if in_loop:
                loops.add(id(node))
            if isinstance(node, ast.If) and _is_main_guard(node.test):
                always.update(id(st) for st in node.body)
            elif funcs and isinstance(node, ast.Call) and self.qname(node.func).endswith("init_process_group"):
                setup.update((id(fn), fn) for fn in funcs)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                funcs = funcs + (node,)
            in_loop = in_loop or isinstance(node, _LOOPS)
            stack.extend((c, funcs, in_loop) for c in ast.iter_child_nodes(node))
        for fn in setup.values():
            always.update(id(st) for st in fn.body)  # type: ignore[attr-defined]
        self._always, self._loops = always, loops

    def qname(self, func: ast.AST) -> str:
        parts: list[str] = []
        while isinstance(func, ast.Attribute):
            parts.append(func.attr)
            func = func.value
        if not isinstance(func, ast.Name):
            return ""
        head = self.alias.get(func.id)
        if head is None:
            return ""
        return ".".join([head] + list(reversed(parts)))

    def span(self, node: ast.AST) -> Span:
        return Span(self.path, getattr(node, "lineno", 1), getattr(node, "col_offset", 0) + 1,
                    getattr(node, "end_lineno", 0) or 0, (getattr(node, "end_col_offset", -1) or -1) + 1)

    def literal(self, node: ast.AST | None) -> Any:
        """The literal value of ``node`` (a constant, a module-level constant name, a dict/list of
        literals); ``...`` when it is not a literal."""
        if node is None:
            return ...
        if isinstance(node, ast.Name) and node.id in self.consts:
            node = self.consts[node.id]
        try:
            return ast.literal_eval(node)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return ...

    def value(self, node: ast.AST | None, source: str) -> Value | None:
        if node is None:
            return None
        v = self.literal(node)
        if v is ...:
            return Value.unknown(f"{source} is not a literal", self.span(node), source)
        return Value(v, self.span(node), True, "", source)

    # -- the scan
    def run(self) -> PyLaunch:
        self.imports()
        scaling: list[ast.Call] = []
        trainers = False
        for node in self.nodes:
            if isinstance(node, ast.Call):
                q = self.qname(node.func)
                if q in RAY_SCALING:
                    scaling.append(node)
                elif q in RAY_TRAINERS:
                    trainers = True
                elif q in SUBMITIT_EXECUTORS:
                    self.out.kinds.add("submitit")
                elif q in SUBMITIT_COMMAND:
                    self.out.kinds.add("submitit")  # its command line: parallint.readers.submitit
                elif q in NEMO_RUN_EXECUTORS:
                    self._nemo_executor(node, NEMO_RUN_EXECUTORS[q])
                elif q in FABRIC:
                    self._fabric(node)
                elif q in SPAWN:
                    self._spawn(node)
                elif q.startswith("nemo.collections.llm.") and q.rsplit(".", 1)[-1] in ("pretrain_recipe",
                                                                                         "finetune_recipe"):
                    self._nemo_recipe(node)
                elif isinstance(node.func, ast.Attribute) and node.func.attr == "update_parameters":
                    self._update_parameters(node)
            elif isinstance(node, ast.Assign):
                self._assign(node)
        if trainers:
            for call in scaling:
                self._scaling(call)
        return self.out

    def kw(self, call: ast.Call, name: str) -> ast.AST | None:
        for k in call.keywords:
            if k.arg == name:
                return k.value
        return None

    def _int(self, key: str, node: ast.AST | None, source: str, positive: bool = True) -> None:
        v = self.value(node, source)
        if v is None:
            return
        if v.known:
            v = v.as_int()
            if v.known and positive and v.value < 1:
                v = Value.unknown(f"{source} {v.value} is not a positive count", v.span, source)
        self.out.facts.add(key, v)

    def _once(self, call: ast.AST, what: str) -> bool:
        """A call inside a loop or comprehension may run with several values: not a fact."""
        return id(call) not in self.loops

    def _scaling(self, call: ast.Call) -> None:
        if not self._once(call, "ScalingConfig"):
            return
        self.out.kinds.add("ray")
        # one process per worker, whatever GPUs it holds (use_gpu, resources_per_worker)
        self._int("parallel.world_size", self.kw(call, "num_workers"), "ScalingConfig(num_workers=...)")
        rpw, use_gpu = self.kw(call, "resources_per_worker"), self.kw(call, "use_gpu")
        res = self.literal(rpw) if rpw is not None else {}
        src = "ScalingConfig(resources_per_worker=...)"
        if not isinstance(res, dict):
            self.out.facts.add("hardware.gpus_per_process", Value.unknown(f"{src} is not a literal", self.span(rpw), src))
        elif "GPU" in res:
            g = res["GPU"]
            if isinstance(g, int) and not isinstance(g, bool) and g > 0:
                self.out.facts.add("hardware.gpus_per_process", Value(g, self.span(rpw), True, "", src))
            elif not (isinstance(g, (int, float)) and not isinstance(g, bool) and g == 0):
                self.out.facts.add("hardware.gpus_per_process",
                                   Value.unknown(f"GPU {g!r} per worker is not a whole count", self.span(rpw), src))
        elif use_gpu is not None and self.literal(use_gpu) is True:
            self.out.facts.add("hardware.gpus_per_process", Value(1, self.span(use_gpu), True, "",
                                                                  "ScalingConfig(use_gpu=True) (one GPU per worker)"))

    def _update_parameters(self, call: ast.Call) -> None:
        if not self._once(call, "update_parameters"):
            return
        names = {k.arg for k in call.keywords if k.arg}
        if not names & {"nodes", "slurm_nodes", "tasks_per_node", "slurm_ntasks_per_node", "gpus_per_node",
                        "slurm_gpus_per_node"}:
            return
        self.out.kinds.add("submitit")
        for key, fact in (("nodes", "parallel.nodes"), ("tasks_per_node", "parallel.procs_per_node"),
                          ("ntasks_per_node", "parallel.procs_per_node"),
                          ("gpus_per_node", "hardware.gpus_per_node_requested")):
            for kw in (key, f"slurm_{key}"):
                node = self.kw(call, kw)
                if node is not None:
                    self._int(fact, node, f"update_parameters({kw}=...)")
                    break

    def _nemo_executor(self, call: ast.Call, kind: str) -> None:
        if not self._once(call, "executor"):
            return
        self.out.kinds.add("nemo_run")
        if kind == "slurm":
            self._int("parallel.nodes", self.kw(call, "nodes"), "SlurmExecutor(nodes=...)")
        else:
            self.out.facts.add("parallel.nodes", Value(1, self.span(call), True, "", "LocalExecutor (one node)",
                                                       Origin(How.INFERRED)))
        self._int("parallel.procs_per_node", self.kw(call, "ntasks_per_node"), "Executor(ntasks_per_node=...)")
        g = self.kw(call, "gpus_per_node")
        if g is not None:
            self._int("hardware.gpus_per_node_requested", g, "Executor(gpus_per_node=...)")

    def _nemo_recipe(self, call: ast.Call) -> None:
        """``llm.<model>.pretrain_recipe(num_nodes=, num_gpus_per_node=, tensor_parallelism=, ...)``."""
        if not self._once(call, "recipe"):
            return
        self.out.kinds.add("nemo_recipe")
        name = self.qname(call.func).rsplit(".", 2)[-2]
        for kw, fact in (("num_nodes", "parallel.nodes"), ("num_gpus_per_node", "parallel.procs_per_node"),
                         ("tensor_parallelism", "parallel.tp"), ("pipeline_parallelism", "parallel.pp"),
                         ("context_parallelism", "parallel.cp")):
            node = self.kw(call, kw)
            if node is not None:
                self._int(fact, node, f"{name}.{self.qname(call.func).rsplit('.', 1)[-1]}({kw}=...)")

    def _fabric(self, call: ast.Call) -> None:
        if not self._once(call, "Fabric"):
            return
        self.out.kinds.add("fabric")
        dev = self.kw(call, "devices")
        if dev is not None:
            v = self.literal(dev)
            if isinstance(v, (list, tuple)):
                self.out.facts.add("parallel.procs_per_node", Value(len(v), self.span(dev), True, "", "Fabric(devices=[...])"))
            else:
                self._int("parallel.procs_per_node", dev, "Fabric(devices=...)")
        self._model_parallel(self.kw(call, "strategy"))
        nn = self.kw(call, "num_nodes")
        if nn is not None:
            self._int("parallel.nodes", nn, "Fabric(num_nodes=...)")
        else:
            self.out.facts.add("parallel.nodes", Value(1, self.span(call), True, "", "Fabric (num_nodes defaults to 1)",
                                                       Origin(How.DEFAULT)))

    def _model_parallel(self, node: ast.AST | None) -> None:
        """``Fabric(strategy=ModelParallelStrategy(data_parallel_size=2, tensor_parallel_size=4))``,
        the call written in place or bound once to a name: Lightning's layout, needing dp × tp ==
        world. ``"auto"`` sizes (the defaults) depend on the devices that run: unknown."""
        if isinstance(node, ast.Name):
            binds = [n for n in ast.walk(self.tree) if isinstance(n, ast.Assign)
                     and any(isinstance(t, ast.Name) and t.id == node.id for t in n.targets)]
            node = binds[0].value if len(binds) == 1 and id(binds[0]) not in self.loops else None
        if not isinstance(node, ast.Call) or self.qname(node.func) not in MODEL_PARALLEL:
            return
        span = self.span(node)
        self.out.layout.add("framework", Value("lightning", span, True, "", "Fabric ModelParallelStrategy"))
        for kw, key in (("data_parallel_size", "parallel.dp"), ("tensor_parallel_size", "parallel.tp")):
            arg = self.kw(node, kw)
            src = f"ModelParallelStrategy({kw}=...)"
            v = self.literal(arg) if arg is not None else "auto"
            if isinstance(v, int) and not isinstance(v, bool) and v > 0:
                self.out.layout.add(key, Value(v, self.span(arg), True, "", src))
            else:
                self.out.layout.add(key, Value.unknown(f"{kw} is {'auto' if v == 'auto' else 'not a literal'}",
                                                       self.span(arg) if arg is not None else span, src))

    def _spawn(self, call: ast.Call) -> None:
        if not self._once(call, "spawn"):
            return
        node = self.kw(call, "nprocs")
        if node is None and len(call.args) >= 3:
            node = call.args[2]
        if node is None:
            return  # nprocs defaults to 1
        self.out.kinds.add("spawn")
        self._int("parallel.procs_per_node", node, "mp.spawn(nprocs=...)")

    def _assign(self, node: ast.Assign) -> None:
        for t in node.targets:
            # os.environ["WORLD_SIZE"] = "4"
            if isinstance(t, ast.Subscript) and self.qname(t.value) == "os.environ":
                key = self.literal(t.slice)
                if key == "WORLD_SIZE" and id(node) not in self.loops:
                    self.out.kinds.add("environ")
                    self._int("parallel.world_size", node.value, 'os.environ["WORLD_SIZE"]')
                elif key == "MASTER_ADDR" and id(node) in self.always:
                    v = self.literal(node.value)
                    if isinstance(v, str) and is_loopback(v):
                        self.out.master_addr = Value(v, self.span(node), True, "", 'os.environ["MASTER_ADDR"]')
                continue
            # recipe.trainer.strategy.tensor_model_parallel_size = 4
            parts: list[str] = []
            cur = t
            while isinstance(cur, ast.Attribute):
                parts.append(cur.attr)
                cur = cur.value
            if not isinstance(cur, ast.Name) or len(parts) < 2:
                continue
            dotted = ".".join(reversed(parts))
            for tail, fact in NEMO_FIELDS.items():
                if dotted == tail or dotted.endswith("." + tail):
                    if id(node) in self.loops:
                        break
                    self.out.kinds.add("nemo_recipe")
                    self._int(fact, node.value, f"{cur.id}.{dotted} = ...")
                    break


_CACHE: dict[tuple[str, int], "PyLaunch | None"] = {}


#: what separates two tokens of one expression: blanks, line continuations, comments (a comment
#: runs to its line's end: no backtracking between several ``#``)
_SEP = r"(?:[ \t\r\n\f\\]|#[^\n]*\n)*"
_SEP_CLOSE = r"(?:[ \t\r\n\f\\)]|#[^\n]*\n)*"  # ... and a closing parenthesis before a dot
#: an assignment target ending in one of NEMO_FIELDS' attribute paths: (its words, its pattern);
#: the pattern starts with a literal (a fast search), the word boundary before it is tested apart
_NEMO_TARGETS = [(tuple(tail.split(".")),
                  re.compile((_SEP_CLOSE + r"\." + _SEP).join(re.escape(p) for p in tail.split(".")) + r"\b"))
                 for tail in NEMO_FIELDS]


def _nemo_target(text: str) -> bool:
    for words, pattern in _NEMO_TARGETS:
        if not all(w in text for w in words):
            continue
        for m in pattern.finditer(text):
            at = m.start()
            if at == 0 or not (text[at - 1].isalnum() or text[at - 1] == "_"):
                return True
    return False


def may_state(text: str) -> bool:
    """False when ``text`` cannot state a launch fact :class:`_Scan` finds: every qualified name
    it matches has each of its parts in the text (in an import or the call), an ``os.environ``
    key is a literal in the text, and a NeMo recipe field is an attribute path in the text."""
    if "submitit" in text or "update_parameters" in text or "nemo_run" in text:
        return True
    if ("Fabric" in text and "lightning" in text) or ("ScalingConfig" in text and "ray" in text) or \
            ("_recipe" in text and "nemo" in text):
        return True
    if "multiprocessing" in text and "torch" in text and ("spawn" in text or "start_processes" in text):
        return True
    if ("WORLD_SIZE" in text or "MASTER_ADDR" in text) and "environ" in text:
        return True
    return _nemo_target(text)


def scan(path: str, text: str) -> PyLaunch | None:
    """The launch facts a script states (None when it states none, or cannot be parsed). A script
    linked by several launches is parsed once."""
    if not text or len(text) > MAX_BYTES or not any(n in text for n in NEEDLES) or not may_state(text):
        return None
    key = (path, hash(text))
    if key not in _CACHE:
        if len(_CACHE) > 512:
            _CACHE.clear()
        _CACHE[key] = _scan(path, text)
    return _CACHE[key]


def _scan(path: str, text: str) -> PyLaunch | None:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    try:
        out = _Scan(path, tree).run()
    except RecursionError:
        return None
    if not out.kinds and out.master_addr is None and not out.layout:
        return None
    return out


def loopback_master(f: FileFacts) -> Value | None:
    """The loopback MASTER_ADDR a script always sets (see :attr:`PyLaunch.master_addr`)."""
    if f.kind != "python" or "MASTER_ADDR" not in (f.text or ""):
        return None
    pl = scan(f.path, f.text or "")
    return pl.master_addr if pl is not None else None


def _consistent(facts: FactMap) -> FactMap:
    """Keys stated twice with different known values are dropped, and a known value stated next to
    an unknown one stays unknown (two configurations in one script, e.g. a Slurm and a local
    executor chosen by an argument: which one runs is not static)."""
    out = FactMap()
    for key, vs in facts.items():
        known = {repr(v.value) for v in vs if v.known}
        if len(known) > 1:
            continue
        unknown = [v for v in vs if not v.known]
        for v in unknown or vs:
            out.add(key, v)
    return out


#: a script with any of these may start processes itself, or run under a launcher it names
STARTS_PROCESSES = re.compile(
    r"subprocess|os\.system|Popen|spawn|torchrun|torch\.distributed\.(?:run|launch|elastic)|multiprocessing|"
    r"\bray\b|submitit|[Ff]abric|lightning|notebook_launcher|\bxmp\b|deepspeed\.launcher|mpi4py|horovod|"
    r"accelerate|\blaunch\(|fairseq|detectron2|mmengine|mmcv|colossalai|composer|call_main|start_processes|"
    r"torchx|nemo|SLURM_|OMPI_|PMI_|PMIX_")
#: environment variables that make a plain process part of a larger job
DIST_ENV = ("WORLD_SIZE", "RANK", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT", "NODE_RANK", "LOCAL_WORLD_SIZE")


def plain_python_world(job, script: FileFacts | None) -> None:
    """``python train.py`` with no launcher, scheduler or wrapper, and a script that starts no
    processes itself: one process, a world of 1."""
    la = getattr(job, "launch", None)
    if la is None or la.launcher != "python" or la.wrapper is not None or la.scheduler or "opaque" in la.options:
        return
    if la.script is None or not la.script.known or any(k in (la.env or {}) for k in DIST_ENV):
        return
    if job.facts.all("parallel.world_size") or job.facts.all("parallel.nodes") or \
            job.facts.all("parallel.procs_per_node"):
        return
    if script is None or script.kind != "python" or STARTS_PROCESSES.search(script.text or "") is not None:
        return
    job.facts.add("parallel.world_size", Value(1, la.span, True, "", "plain python (one process)",
                                               Origin(How.INFERRED)))




def torchx_config(job, root: Path | None = None) -> None:
    """``torchx run dist.ddp`` without ``-j``: the ``j`` of ``[component:dist.ddp]`` in the
    ``.torchxconfig`` next to the launch file (or at the repository root), which TorchX reads."""
    la = getattr(job, "launch", None)
    if la is None or "torchx" not in la.options or "torchx_j" in la.options or "opaque" in la.options:
        return
    import configparser

    folder = job.root.abspath.parent
    for d in dict.fromkeys((folder, root or folder)):
        p = d / ".torchxconfig"
        from parallint.util.boundary import read_inside

        raw = read_inside(p, job.root.abspath, 100_000)
        if raw is None:
            continue  # absent, outside the repository, too large or not a regular file
        text = raw.decode("utf-8", errors="replace")
        cp = configparser.ConfigParser(interpolation=None)
        try:
            cp.read_string(text)
        except configparser.Error:
            return
        sec = "component:dist.ddp"
        if not cp.has_section(sec) or not cp.has_option(sec, "j"):
            return
        raw = cp.get(sec, "j")
        line = next((n for n, ln in enumerate(text.splitlines(), 1) if re.match(r"\s*j\s*[=:]", ln)), 1)
        import os

        rel = os.path.relpath(p, folder).replace(os.sep, "/")
        disp = (job.root.path.rsplit("/", 1)[0] + "/" + rel) if "/" in job.root.path else rel
        from parallint.readers.cmdline import torchx_j

        torchx_j(la, Value(raw.strip(), Span(disp, line, 1), True, "", ".torchxconfig j"), ".torchxconfig j")
        return


#: LightningCLI ``--trainer.<key>`` flags -> the fact of the lightning_cli reader they set
LIGHTNING_FLAGS = {"devices": "parallel.procs_per_node", "num_nodes": "parallel.nodes",
                   "accumulate_grad_batches": "training.grad_accum", "precision": "training.precision"}


def _lightning_value(key: str, val: Value, flag: str) -> Value:
    """A ``--trainer.<key>`` word as the lightning_cli reader would read it from the config."""
    from parallint.readers.lightning_cli import PRECISION, _devices
    from parallint.readers.cfgutil import as_int

    src = f"{flag} on the launch line"
    if not val.known:
        return Value.unknown(val.why, val.span, src)
    word = str(val.value).strip()
    try:
        if key == "precision":
            if word not in PRECISION:
                return Value.unknown(f"precision {word!r}", val.span, src)
            got: object = PRECISION[word]
        elif key == "devices":
            got = _devices(word)
        else:
            got = as_int(word)
    except (ValueError, TypeError):
        return Value.unknown(f"{flag} {word!r} is not a fixed count", val.span, src)
    return Value(got, val.span, True, "", src)


def lightning_overrides(job) -> None:
    """``python main.py fit --config cfg.yaml --trainer.devices 2``: LightningCLI flags beat the
    config. jsonargparse applies the words in order, so a flag after the last ``--config`` wins over
    it, one before it only where the config does not set the key. Devices, node counts, gradient
    accumulation and precision become facts of the launch (read first); a strategy override
    leaves the config's parallel sizes and DDP switch unknown unless it names one; a word parallint
    cannot read may set any of them: the config's values of those keys become unknown."""
    la = getattr(job, "launch", None)
    if la is None or not any(f.kind == "lightning_cli" for f in job.files):
        return
    args = la.args or []
    last_config = -1
    unknown_at = -1
    given: dict[str, tuple[int, str, Value | None]] = {}  # key -> (position, flag, value word)
    for i, a in enumerate(args):
        if not a.known or not isinstance(a.value, str):
            unknown_at = i
            continue
        t = a.value
        if t in ("--config", "-c") or t.startswith("--config="):
            last_config = i
            continue
        if not t.startswith("--trainer."):
            continue
        k, eq, v = t.partition("=")
        val = Value(v, a.span, True, "", k) if eq else (args[i + 1] if i + 1 < len(args) else None)
        given[k[len("--trainer."):]] = (i, k, val)
    if not given and unknown_at < 0:
        return
    configs = [f for f in job.files if f.kind == "lightning_cli"]
    paths = {f.path for f in configs}
    config_keys = {key: any(v.origin.how is not How.DEFAULT for f in configs for v in f.facts.all(key))
                   for key in LIGHTNING_FLAGS.values()}
    front = FactMap()
    replaced: set[str] = set()
    for name, key in LIGHTNING_FLAGS.items():
        hit = given.get(name)
        if hit is not None and hit[2] is not None and (hit[0] > last_config or not config_keys[key]):
            ov = _lightning_value(name, hit[2], hit[1])
            if hit[0] < unknown_at:
                ov = Value.unknown(f"{hit[1]} may be set again by an unknown word", ov.span, ov.source)
            front.add(key, ov)
            la.facts.add(key, ov)
            replaced.add(key)
        elif unknown_at >= 0:
            replaced.add(key)
            front.add(key, Value.unknown("a word on the launch line parallint cannot read may set it",
                                         args[unknown_at].span, f"--trainer.{name} on the launch line"))
    strategy = [k for k in given if k == "strategy" or k.startswith("strategy.")]
    in_config = any("trainer.strategy" in (v.source or "") for f in configs for _k, vs in f.facts.items() for v in vs)
    strategy_set = unknown_at >= 0 or any(given[k][0] > last_config or not in_config for k in strategy)
    if strategy_set:
        replaced.add("ddp.find_unused_parameters")
        hit = given.get("strategy")
        if hit is not None and hit[2] is not None and hit[2].known and unknown_at < hit[0] and \
                str(hit[2].value).startswith("ddp_find_unused_parameters_"):
            word = str(hit[2].value)
            front.add("ddp.find_unused_parameters", Value(word.endswith("_true"), hit[2].span, True, "",
                                                          "--trainer.strategy on the launch line"))
    auto_stale = any(k in replaced for k in ("parallel.procs_per_node", "parallel.nodes"))
    kept = FactMap()
    kept.extend(front)
    for key, vs in job.facts.items():
        for v in vs:
            src = v.source or ""
            if key in ("parallel.dp", "parallel.tp") and "trainer.strategy" in src and (
                    strategy_set or (auto_stale and '"auto"' in src)):
                continue
            if key in replaced and v.span is not None and v.span.path in paths:
                continue  # the config's value, overridden by the launch line
            kept.add(key, v)
    job.facts = kept


def attach(job, script: FileFacts | None = None, root: Path | None = None) -> None:
    """Add the launch facts of the job's Python files to ``job`` (see the module docstring);
    ``script`` is the launch's script file, ``root`` the repository root (from the linker)."""
    la = getattr(job, "launch", None)
    torchx_config(job, root)
    lightning_overrides(job)
    for f in list(job.files):
        if f.kind == "python" and "#L" not in str(f.abspath) and "ModelParallelStrategy" in (f.text or ""):
            pl = scan(f.path, f.text or "")
            if pl is not None and pl.layout:
                job.facts.extend(pl.layout)  # the script's own layout, whatever starts it
    if la is not None and (la.launcher in FORKING or la.launcher not in ("python",)):
        return  # the launcher decides the world
    for f in list(job.files):
        if f.kind != "python" or "#L" in str(f.abspath):
            continue
        pl = scan(f.path, f.text or "")
        if pl is None:
            continue
        facts = _as_launcher(_consistent(pl.facts))
        if "submitit" in pl.kinds:
            _submitit_world(facts)
        if pl.kinds & {"ray", "submitit", "nemo_run", "fabric", "nemo_recipe"} or "environ" in pl.kinds:
            job.facts.extend(facts)
            if "nemo_recipe" in pl.kinds and any(k.startswith("parallel.") for k in facts.keys()):
                first = next(v for k, vs in facts.items() for v in vs)
                job.facts.add("framework", Value("nemo", first.span, True, "", "NeMo 2 recipe"))
        elif pl.kinds == {"spawn"}:
            _spawn_world(job, f, facts)
    plain_python_world(job, script)


def _as_launcher(facts: FactMap) -> FactMap:
    """The world size a script's own launcher states (Ray Train, mp.spawn, os.environ) is a fact of
    the launcher layer (``Origin.via``), as torchrun's would be: rules that compare a script's
    layout with the processes its launch starts take it from there."""
    from parallint.util.record import replace

    out = FactMap()
    for key, vs in facts.items():
        for v in vs:
            out.add(key, replace(v, origin=Origin(v.origin.how, "launcher")) if key == "parallel.world_size" else v)
    return out


def _submitit_world(facts: FactMap) -> None:
    """submitit starts ``tasks_per_node`` processes on each of ``nodes`` nodes: with both known
    (and no world stated), the world is their product, a fact of the launcher layer that rules
    comparing a script's layout (a device mesh, TP × PP) with its world read."""
    from parallint.model.facts import known_int

    if facts.all("parallel.world_size"):
        return
    nodes, ppn = facts.all("parallel.nodes"), facts.all("parallel.procs_per_node")
    if len(nodes) != 1 or len(ppn) != 1:
        return
    n, p = known_int(nodes[0]), known_int(ppn[0])
    if n is None or p is None:
        return
    facts.add("parallel.world_size", Value(n * p, ppn[0].span, True, "", f"{nodes[0].source} × {ppn[0].source}",
                                           Origin(How.DERIVED, "launcher")))


def _spawn_world(job, f: FileFacts, facts: FactMap) -> None:
    """mp.spawn(nprocs=N) with no sign of several nodes: a world of N on this node."""
    ppn = facts.get("parallel.procs_per_node")
    if ppn is None:
        return
    job.facts.add("parallel.procs_per_node", ppn)
    text = LOOPBACK_MASTER.sub("", f.text or "").lower()
    if re.search(r"n_?nodes|num_nodes|node_rank|--nodes|^\s*[\w.]*world_size\s*=(?!=)|slurm|master_addr", text, re.M):
        return  # the script may span nodes or compute its own world
    job.facts.add("parallel.world_size", Value(ppn.value, ppn.span, True, "",
                                               f"{ppn.source} (one node: no node count in the script)",
                                               Origin(How.INFERRED, "launcher")))


#: ``os.environ["MASTER_ADDR"] = "localhost"``: a script that rendezvouses on this machine only (the
#: PyTorch DDP tutorial's ``setup``), no sign of several nodes
LOOPBACK_MASTER = re.compile(
    r"""^[ \t]*os\.environ\[\s*['"]MASTER_ADDR['"]\s*\]\s*=\s*['"](?:localhost|127\.0\.0\.1)['"][ \t]*$""", re.M)
