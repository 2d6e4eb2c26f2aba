"""The Python reader: what a training script does, as far as the code shows it statically.

``read(path, abspath, text)`` parses the file once with LibCST, resolves positions and qualified
names once, and walks the tree once. The result's ``data`` is a :class:`Script`: every call (matched
by qualified name, so ``import torch.distributed as dist`` or ``from torch.nn.parallel import
DistributedDataParallel as DDP`` cannot dodge a rule) with its arguments, position, the enclosing
``if`` conditions classified (rank-0 guard, rank branch), enclosing loops and function; hand-written
layer partitions; device meshes. ``facts`` holds the normalized facts the script states.

Importing this module is cheap: LibCST is imported inside :func:`read`.

Speed (benchmarks/bench_python_reader.py): LibCST's parse is most of the cost. The tree is walked
with :class:`_Walker`, a read-only walk in LibCST's own visiting order (``CSTNode.visit`` rebuilds
every node it passes, which cost more than the parse); imports come from the ``ast`` pass that
checks the file first; positions are computed only when a span is asked for, by one code
generation (:func:`_positions`).

For rule writers (see rules/ddp.py, pg.py, dat.py, ckp.py, pip.py, lay_mesh.py)::

    s = script_of(f)                       # the Script of a python FileFacts, else None
    s.by("init_process_group", "ddp")      # calls by group of qualified names (GROUPS)
    s.methods("set_epoch")                 # x.set_epoch(...) calls on anything
    s.arg(call, "world_size", pos=None)    # Value (known/unknown) or None when not passed
    s.arg_span(call, "world_size")         # where to report about that argument
    call.guards / call.loops / call.frame  # enclosing ifs (Guard.rank, .zero), loops, function
    s.effective_guards(call)               # guard chains through the file's own call sites
    s.rank_kind(expr, frame)               # "global" / "local" rank, as far as the code shows
    s.partitions, s.meshes                 # hand-written pipeline splits, device meshes
    s.is_distributed(), s.framework_managed()
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from parallint.diagnostics import Diagnostic, Severity, Span
from parallint.facts import FileFacts, Value, known_int

#: A Python file is worth parsing only when its text contains one of these (the pre-filter lives
#: with the classifier, which must not import this module).
from parallint.classify import PYTHON_NEEDLES as NEEDLES  # noqa: E402

MAX_BYTES = 2_000_000  # larger "scripts" are generated code: not read
MAX_NESTING = 100  # syntax-tree depth; real training code stays under 30

# ---------------------------------------------------------------------------------------------
# canonical qualified names, grouped by what the rules care about
_T = "torch.distributed."
GROUPS: dict[str, tuple[str, ...]] = {
    "init_process_group": (_T + "init_process_group", _T + "distributed_c10d.init_process_group"),
    "ddp": ("torch.nn.parallel.DistributedDataParallel",
            "torch.nn.parallel.distributed.DistributedDataParallel"),
    "fsdp": (_T + "fsdp.FullyShardedDataParallel",
             _T + "fsdp.fully_sharded_data_parallel.FullyShardedDataParallel"),
    "fully_shard": (_T + "fsdp.fully_shard", _T + "_composable.fsdp.fully_shard",
                    _T + "_composable.fsdp.fully_shard.fully_shard", _T + "_composable.fully_shard",
                    _T + "fsdp._fully_shard.fully_shard"),
    "set_device": ("torch.cuda.set_device", "torch.cuda.device", "torch.accelerator.set_device_index",
                   "torch.xpu.set_device", "torch.npu.set_device", "torch.set_default_device"),
    "dataloader": ("torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"),
    "distributed_sampler": ("torch.utils.data.distributed.DistributedSampler",
                            "torch.utils.data.DistributedSampler"),
    "save": ("torch.save",),
    "load": ("torch.load",),
    "checkpoint": ("torch.utils.checkpoint.checkpoint",),
    "init_device_mesh": (_T + "device_mesh.init_device_mesh", _T + "init_device_mesh"),
    "device_mesh": (_T + "device_mesh.DeviceMesh", _T + "DeviceMesh", _T + "_tensor.DeviceMesh",
                    _T + "tensor.DeviceMesh"),
    "accelerator": ("accelerate.Accelerator", "accelerate.accelerator.Accelerator"),
    "ddp_kwargs": ("accelerate.DistributedDataParallelKwargs", "accelerate.utils.DistributedDataParallelKwargs",
                   "accelerate.utils.dataclasses.DistributedDataParallelKwargs"),
    "ddp_strategy": ("lightning.pytorch.strategies.DDPStrategy", "lightning.fabric.strategies.DDPStrategy",
                     "pytorch_lightning.strategies.DDPStrategy", "lightning.pytorch.strategies.ddp.DDPStrategy",
                     "pytorch_lightning.strategies.ddp.DDPStrategy", "lightning.fabric.strategies.ddp.DDPStrategy"),
    "pl_trainer": ("lightning.Trainer", "lightning.pytorch.Trainer", "pytorch_lightning.Trainer",
                   "lightning.pytorch.trainer.Trainer", "pytorch_lightning.trainer.Trainer",
                   "lightning.pytorch.trainer.trainer.Trainer"),
    "training_args": ("transformers.TrainingArguments", "transformers.training_args.TrainingArguments",
                      "transformers.Seq2SeqTrainingArguments", "trl.SFTConfig", "trl.DPOConfig",
                      "trl.GRPOConfig", "trl.RewardConfig", "trl.KTOConfig", "trl.ORPOConfig"),
    "hf_trainer": ("transformers.Trainer", "transformers.Seq2SeqTrainer", "trl.SFTTrainer",
                   "trl.DPOTrainer", "trl.GRPOTrainer", "trl.RewardTrainer"),
    "ds_initialize": ("deepspeed.initialize",),
    "ds_init_distributed": ("deepspeed.init_distributed", "deepspeed.comm.init_distributed",
                            "deepspeed.comm.comm.init_distributed"),
    "fabric": ("lightning.Fabric", "lightning.fabric.Fabric", "lightning_fabric.Fabric",
               "lightning.fabric.fabric.Fabric", "lightning_fabric.fabric.Fabric"),
    "bytes_io": ("io.BytesIO", "io.StringIO", "tempfile.SpooledTemporaryFile"),
    "spawn": ("torch.multiprocessing.spawn", "torch.multiprocessing.start_processes",
              "torch.multiprocessing.spawn.spawn", "colossalai.testing.spawn", "colossalai.testing.utils.spawn",
              "torch.multiprocessing.spawn.start_processes"),
    "get_rank": (_T + "get_rank", _T + "distributed_c10d.get_rank"),
    "dcp_save": (_T + "checkpoint.save", _T + "checkpoint.save_state_dict",
                 _T + "checkpoint.state_dict_saver.save", _T + "checkpoint.async_save"),
    "collective": tuple(_T + n for n in (
        "barrier", "monitored_barrier", "all_reduce", "broadcast", "all_gather", "all_gather_into_tensor",
        "reduce_scatter", "reduce_scatter_tensor", "reduce", "gather", "scatter", "all_to_all",
        "all_to_all_single", "all_gather_object", "broadcast_object_list", "gather_object",
        "scatter_object_list")),
}
_BY_QNAME: dict[str, str] = {q: g for g, qs in GROUPS.items() for q in qs}
_MP_SUFFIXES = ("parallel_state.initialize_model_parallel", "mpu.initialize_model_parallel")

FRAMEWORK_IMPORTS = {
    "accelerate": "accelerate", "lightning": "lightning", "pytorch_lightning": "lightning",
    "transformers": "transformers", "trl": "transformers", "deepspeed": "deepspeed",
    "composer": "composer", "fairseq": "fairseq", "colossalai": "colossalai", "ignite": "ignite",
    "mmengine": "mmengine", "mmcv": "mmengine", "detectron2": "detectron2", "fabric": "lightning",
    "torchtitan": "torchtitan", "megatron": "megatron", "nemo": "nemo", "torchtnt": "torchtnt",
}

_RANK_NAME = re.compile(
    r"^(?:get_)?(?:(?:local|global|ddp|ddp_local|node|world|proc|process|dist|my|cur|current|gpu|device)_)?rank(?:_id|_idx)?$"
    r"|^(?:local_)?process_index$|^get_ordinal$|^(?:slurm_)?procid$|^proc_id$"
    r"|^(?:local_)?gpu(?:_id|_idx)?$|^(?:local_)?device_id$|^dev_id$",
    re.I,
)
_RANK0_NAME = re.compile(
    r"^(?:is_)?(?:local_|global_|node_)?(?:main|master|leader|chief)(?:_process|_proc|_rank|_worker|_node|_host)?$"
    r"|^(?:is_)?(?:local_|global_)?rank_?(?:zero|0)$|^is_(?:world|local)_process_zero$|^is_global_zero$"
    r"|^(?:is_)?(?:global_|local_)?(?:first|zero)_(?:rank|process|worker)$",
    re.I,
)
_RANK0_DECORATOR = re.compile(r"rank_zero|rank0|master_only|main_process_only|on_main_process|on_rank0|main_only", re.I)
_EPOCH = re.compile(r"epoch", re.I)


# ---------------------------------------------------------------------------------------------
class Guard:
    """One condition a statement runs under.

    ``rank``: the condition depends on the rank (so only some ranks take this branch).
    ``zero``: True when this branch is taken by rank 0 only (a rank-0 guard), False when rank 0
    does not take it, None when it cannot be said. ``text``/``span`` are computed on demand.
    """

    __slots__ = ("_script", "_node", "rank", "zero", "if_id", "branch", "early", "main")

    def __init__(self, script: "Script", node, rank: bool, zero: bool | None, if_id: int, branch: bool,
                 early: bool = False, main: bool = False) -> None:
        self._script, self._node = script, node
        self.rank, self.zero, self.if_id, self.branch, self.early, self.main = rank, zero, if_id, branch, early, main

    @property
    def text(self) -> str:
        return self._script.code(self._node)

    @property
    def span(self) -> Span:
        return self._script.span_of(self._node)

    def __repr__(self) -> str:
        return f"Guard({self.text!r}, rank={self.rank}, zero={self.zero}, branch={self.branch})"


class Loop:
    """An enclosing for/while loop. ``names``: the names its iterable (or test) reads."""

    __slots__ = ("_script", "_node", "names", "epoch", "node_id")

    def __init__(self, script: "Script", node, names: frozenset[str], epoch: bool) -> None:
        self._script, self._node, self.names, self.epoch, self.node_id = script, node, names, epoch, id(node)

    @property
    def span(self) -> Span:
        return self._script.span_of(self._node)

    def __repr__(self) -> str:
        return f"Loop(line={self.span.line}, epoch={self.epoch})"


@dataclass(eq=False)
class Frame:
    kind: str  # module | function | class
    name: str
    parent: "Frame | None" = field(repr=False)
    cls: str | None = None
    bindings: dict[str, list] = field(default_factory=dict, repr=False)
    params: set[str] = field(default_factory=set)
    base_guards: tuple[Guard, ...] = ()
    imports: dict[str, set] = field(default_factory=dict, repr=False)
    #: the expressions of the function's `return` statements (None for a bare `return`)
    returns: list = field(default_factory=list, repr=False)
    #: a class decorated with @dataclass (its annotated class attributes are field defaults)
    dataclass: bool = False
    #: the function's parameters have defaults / *args: calls may bind them
    has_params: bool = False
    #: the FunctionDef / ClassDef node (None for the module)
    node: Any = field(default=None, repr=False)


@dataclass(eq=False)
class Call:
    node: Any = field(repr=False)  # libcst.Call
    script: "Script" = field(repr=False)
    qnames: frozenset[str]
    groups: frozenset[str]
    method: str | None  # x.foo(...) -> "foo"
    receiver: Any = field(repr=False)  # the node of x in x.foo(...)
    guards: tuple[Guard, ...] = ()
    loops: tuple[Loop, ...] = ()
    frame: Frame = field(default=None, repr=False)  # type: ignore[assignment]
    target: str | None = None  # `t = call(...)` -> "t"
    index: int = 0  # order of appearance in the file

    @property
    def span(self) -> Span:
        return self.script.span_of(self.node)

    @property
    def func_text(self) -> str:
        return self.script.code(self.node.func)

    def arg_node(self, keyword: str | None = None, pos: int | None = None):
        """The expression passed for ``keyword`` (or positional index ``pos``), or None."""
        positional = 0
        for a in self.node.args:
            if a.keyword is not None:
                if keyword is not None and a.keyword.value == keyword:
                    return a.value
                continue
            if a.star:
                return None
            if pos is not None and positional == pos:
                return a.value
            positional += 1
        return None

    def has_star(self) -> bool:
        return any(a.star for a in self.node.args)

    def has_keyword(self, keyword: str) -> bool:
        return any(a.keyword is not None and a.keyword.value == keyword for a in self.node.args)

    def n_positional(self) -> int:
        return sum(1 for a in self.node.args if a.keyword is None and not a.star)

    @property
    def rank_guards(self) -> list[Guard]:
        return [g for g in self.guards if g.rank]


@dataclass
class Slice:
    start: int | None
    stop: int | None
    node: Any = field(repr=False)
    script: Any = field(repr=False)

    @property
    def span(self) -> Span:
        return self.script.span_of(self.node)


@dataclass
class Partition:
    """A list of slices of one module list handed out as pipeline stages."""

    base: str
    slices: list[Slice]
    node: Any = field(repr=False)
    script: Any = field(repr=False)
    total: int | None = None  # number of layers of `base` when the script shows it
    total_source: str = ""
    selector: str | None = None  # "rank" when chosen by a rank expression
    selector_span: Span | None = None
    frame: Frame | None = field(default=None, repr=False)
    #: chosen by `if rank == k:` branches with a final `else:` taking every other rank
    open_ended: bool = False

    @property
    def span(self) -> Span:
        return self.script.span_of(self.node)


@dataclass
class RankList:
    """A list literal of per-stage values (layer counts, boundaries, layer ids) that the script
    indexes with a rank: ``layers_per_stage[rank]``, ``bounds[rank]:bounds[rank + 1]``."""

    name: str
    length: int
    node: Any = field(repr=False)
    script: Any = field(repr=False)
    frame: Frame | None = field(default=None, repr=False)
    #: "global" (dist.get_rank(), RANK) or "pipeline" (pp_rank, stage_id ...)
    rank: str = "global"
    #: also indexed with rank + 1 (a list of stage boundaries: one more entry than stages)
    boundaries: bool = False

    @property
    def span(self) -> Span:
        return self.script.span_of(self.node)


@dataclass
class Mesh:
    span: Span
    shape: tuple[int, ...] | None  # None when not known
    names: tuple[str, ...] | None
    call: Call | None = None


class Script:
    """What the Python reader found in one file (``FileFacts.data`` for kind ``python``)."""

    def __init__(self, path: str, text: str) -> None:
        self.path = path
        self.text = text
        self.calls: list[Call] = []
        self.module_frame = Frame("module", "<module>", None)
        self.imports: set[str] = set()  # top-level package names imported
        self.callsites: dict[str, list[tuple[Call | None, tuple[Guard, ...], Frame]]] = {}
        self.refs: set[str] = set()  # names passed as values (callbacks)
        self.functions: dict[str, list[Frame]] = {}
        self.classes: dict[str, list[Frame]] = {}
        self.loops: list[tuple[Loop, tuple[Loop, ...], Frame]] = []
        self.partitions: list[Partition] = []
        self.meshes: list[Mesh] = []
        self.argparse: dict[str, Any] = {}
        self.args_names: set[str] = set()
        self.attr_bindings: dict[str, list] = {}
        self.rank_subscripts: list[tuple[str, Span]] = []  # (name, span) of name[<rank>]
        self.fstrings: list[tuple[Any, Span, Frame, tuple[Guard, ...]]] = []  # f"cuda:{x}"
        self.layer_lists: dict[str, list] = {}
        self._positions: Any = None
        self.import_map: dict[str, set[str]] = {}  # local name -> qualified names it may stand for
        self._module: Any = None
        self._by_group: dict[str, list[Call]] = {}
        self._evaluator: Any = None
        self._pending_guards: list = []  # guards to classify again once the whole file is read
        self._rank_index: list = []  # (name, index expression, frame) of name[<rank>]
        #: literal per-rank lists (`layers_per_stage = [8, 8, 8]`) indexed by a rank
        self.rank_lists: list[RankList] = []

    # ---------------------------------------------------------------- lookups
    def by(self, *groups: str) -> list[Call]:
        out: list[Call] = []
        for g in groups:
            out.extend(self._by_group.get(g, ()))
        if len(groups) > 1:
            out.sort(key=lambda c: c.index)  # source order without computing positions
        return out

    def has(self, *groups: str) -> bool:
        return any(self._by_group.get(g) for g in groups)

    def methods(self, name: str) -> list[Call]:
        return [c for c in self.calls if c.method == name]

    def frameworks(self) -> set[str]:
        return {FRAMEWORK_IMPORTS[i] for i in self.imports if i in FRAMEWORK_IMPORTS}

    def is_distributed(self) -> bool:
        """The script itself sets up torch.distributed training (not a framework doing it)."""
        return self.has("init_process_group", "ddp", "fsdp", "fully_shard", "init_device_mesh")

    def syntax_index(self) -> "SyntaxIndex":
        """Identifiers, keyword arguments, string constants and environment writes of the file,
        from its syntax tree (comments and docstrings are not code). Computed once, on demand."""
        if getattr(self, "_syntax_index", None) is None:
            self._syntax_index = SyntaxIndex(self.text)
        return self._syntax_index

    def env_writes(self) -> set[str]:
        """Environment variables the script sets: ``os.environ["X"] = ...``, ``os.environ.update(X=...)``,
        ``os.environ.setdefault("X", ...)``, ``os.putenv("X", ...)``."""
        return self.syntax_index().env_writes

    def sets_up_distributed(self) -> bool:
        """The script starts distributed training through a call it makes itself: torch.distributed,
        ``deepspeed.init_distributed()``, ``Accelerator()``, ``lightning.Fabric(...)`` or
        ``init_device_mesh``, and no trainer (HF Trainer, Lightning Trainer) runs the loop for it.
        Such a script writes and reads its own checkpoints, so the CKP rules apply."""
        if self.has("hf_trainer", "training_args", "pl_trainer"):
            return False
        if self.runs_setup("ds_init_distributed", "accelerator", "fabric", "init_device_mesh"):
            return True
        return self.has("init_process_group", "ddp", "fsdp", "fully_shard") and not self.framework_managed()

    def runs_setup(self, *groups: str) -> bool:
        """One of these calls runs when the file is started (not only inside a library function
        nobody here calls)."""
        return any(self.paths(c.frame) is not None for c in self.by(*groups))

    def framework_managed(self) -> bool:
        """accelerate, Lightning, the HF Trainer (and friends) shard data and guard saves themselves.

        Importing transformers only for a model does not count: its Trainer has to be used."""
        if self.has("hf_trainer", "training_args", "accelerator", "pl_trainer"):
            return True
        return bool(self.frameworks() & {"accelerate", "lightning", "composer", "fairseq",
                                          "colossalai", "ignite", "mmengine", "detectron2", "deepspeed",
                                          "torchtnt", "megatron", "nemo", "torchtitan"})

    def span_of(self, node) -> Span:
        if self._positions is None:  # positions cost a full code generation: only when needed
            self._positions = _positions(self._module)
        r = self._positions.get(node)
        if r is None:
            return Span(self.path, 1, 1)
        return Span(self.path, r.start.line, r.start.column + 1, r.end.line, r.end.column + 1)

    def qnames(self, node, frame: "Frame | None" = None) -> frozenset[str]:
        """Qualified names of a dotted expression through the file's imports (``dist.barrier`` ->
        ``torch.distributed.barrier``). Empty when its base name is not imported."""
        import libcst as cst

        parts = []
        while isinstance(node, cst.Attribute):
            parts.append(node.attr.value)
            node = node.value
        if not isinstance(node, cst.Name):
            return frozenset()
        bases = self.import_map.get(node.value)
        if not bases:
            return frozenset()
        tail = ".".join(reversed(parts))
        return frozenset(f"{b}.{tail}" if tail else b for b in bases)

    def qname_in(self, node, names: set[str] | frozenset[str]) -> bool:
        import libcst as cst

        qs = self.qnames(node)
        if qs:
            return bool(qs & names)
        # builtins: a bare name that is not bound anywhere in the file
        if isinstance(node, cst.Name):
            return node.value in names or f"builtins.{node.value}" in names
        return False

    def is_builtin(self, node) -> bool:
        import libcst as cst

        if not isinstance(node, cst.Name):
            return False
        qs = self.qnames(node)
        return not qs or f"builtins.{node.value}" in qs or qs == {node.value}

    def code(self, node) -> str:
        try:
            return self._module.code_for_node(node)
        except Exception:  # pragma: no cover
            return ""

    def binding(self, name: str, frame: Frame):
        """(expr, frame) when ``name`` is bound exactly once by a plain assignment in its scope."""
        f: Frame | None = frame
        first = True
        while f is not None:
            if f.kind == "class" and not first:
                f = f.parent
                continue
            first = False
            if name in f.params:
                return None
            if name in f.bindings:
                bs = f.bindings[name]
                if len(bs) == 1 and bs[0] is not MULTI:
                    return bs[0], f
                return None
            f = f.parent
        return None

    def is_args_name(self, name: str, frame: Frame) -> bool:
        if not self.argparse:
            return False
        if name in self.args_names:
            b = self.binding(name, frame)
            if b is not None:
                return True
        # a parameter conventionally holding the parsed arguments
        f: Frame | None = frame
        while f is not None:
            if name in f.params:
                return name in ("args", "opt", "opts", "flags", "FLAGS", "cli_args", "cmd_args")
            if name in f.bindings:
                return name in self.args_names
            f = f.parent
        return False

    def value(self, node, frame: Frame, with_span: bool = True) -> Value:
        return self._evaluator.value(node, frame, with_span=with_span)

    def arg(self, call: Call, keyword: str | None = None, pos: int | None = None,
            with_span: bool = False) -> Value | None:
        """The resolved argument: None when not passed (and no ``**kwargs`` could pass it).

        Spans are left out unless asked for (positions cost a pass over the file): a rule that
        reports at the argument uses :meth:`arg_span`."""
        node = call.arg_node(keyword, pos)
        if node is not None:
            return self.value(node, call.frame, with_span=with_span)
        for a in call.node.args:
            if a.star == "**":
                d = self.value(a.value, call.frame, with_span=False)
                if d.known and isinstance(d.value, dict):
                    if keyword in d.value:
                        return Value(d.value[keyword], self.span_of(a.value) if with_span else None, True, "",
                                     d.source or "**kwargs")
                    continue
                return Value.unknown("**kwargs", self.span_of(a.value) if with_span else None)
            if a.star == "*" and pos is not None:
                return Value.unknown("*args", self.span_of(a.value) if with_span else None)
        return None

    def arg_span(self, call: Call, keyword: str | None = None, pos: int | None = None) -> Span:
        """Where the argument is written (the ``**kwargs`` it came through, else the call)."""
        node = call.arg_node(keyword, pos)
        if node is None:
            for a in call.node.args:
                if a.star == "**":
                    node = a.value
                    break
        return self.span_of(node) if node is not None else call.span

    # ---------------------------------------------------------------- rank expressions
    def rank_kind(self, node, frame: Frame | None, depth: int = 0) -> str | None:
        """'global' / 'local' when ``node`` is the global / local rank as far as the code shows."""
        import libcst as cst

        from parallint.readers.pyeval import GLOBAL_RANK_ENV, LOCAL_RANK_ENV, env_name

        if depth > 6 or node is None:
            return None
        if isinstance(node, cst.Call):
            if self.qname_in(node.func, set(GROUPS["get_rank"])) and not node.args:
                return "global"
            if self.qname_in(node.func, {"builtins.int", "int"}) and len(node.args) == 1:
                return self.rank_kind(node.args[0].value, frame, depth + 1)
        env = env_name(self, node)
        if env is not None:
            if env in GLOBAL_RANK_ENV:
                return "global"
            if env in LOCAL_RANK_ENV:
                return "local"
            return None
        if isinstance(node, cst.Name) and frame is not None:
            b = self.binding(node.value, frame)
            if b is not None:
                return self.rank_kind(b[0], b[1], depth + 1)
        if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == "self":
            bs = self.attr_bindings.get(_dotted(node) or "")
            if bs and len(bs) == 1:
                return self.rank_kind(bs[0][0], bs[0][1], depth + 1)
        return None

    def rankish(self, node, frame: Frame | None = None) -> bool:
        """A rank-looking expression (by name or by source): for guards, where silence is the error."""
        import libcst as cst

        from parallint.readers.pyeval import GLOBAL_RANK_ENV, LOCAL_RANK_ENV, env_name

        if isinstance(node, cst.BinaryOperation):  # rank % gpus_per_node, rank // tp ...
            return self.rankish(node.left, frame) or self.rankish(node.right, frame)
        if isinstance(node, (cst.Name, cst.Attribute)) and self.rank_kind(node, frame) is not None:
            return True

        if isinstance(node, cst.Call):
            if self.qname_in(node.func, {"builtins.int", "int"}) and len(node.args) == 1:
                return self.rankish(node.args[0].value)
            env = env_name(self, node)
            if env is not None:
                return env in GLOBAL_RANK_ENV or env in LOCAL_RANK_ENV or "RANK" in env
            return _RANK_NAME.match(_tail(node.func) or "") is not None
        env = env_name(self, node)
        if env is not None:
            return env in GLOBAL_RANK_ENV or env in LOCAL_RANK_ENV or "RANK" in env
        t = _tail(node)
        return t is not None and _RANK_NAME.match(t) is not None

    def rank0ish(self, node) -> bool:
        import libcst as cst

        if isinstance(node, cst.Call):
            node = node.func
        t = _tail(node)
        return t is not None and _RANK0_NAME.match(t) is not None

    def classify_test(self, node, frame: Frame | None = None, depth: int = 0) -> tuple[bool, bool | None]:
        """(depends on rank, True-branch is rank-0 only / rank 0 never takes it / unknown)."""
        import libcst as cst

        if depth > 6:
            return False, None
        if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Not):
            r, z = self.classify_test(node.expression, frame, depth + 1)
            return r, (None if z is None else not z)
        if isinstance(node, cst.BooleanOperation):
            r1, z1 = self.classify_test(node.left, frame, depth + 1)
            r2, z2 = self.classify_test(node.right, frame, depth + 1)
            if isinstance(node.operator, cst.And):
                return r1 or r2, (True if (z1 is True or z2 is True) else None)
            # or: rank 0 never takes it only if neither side lets rank 0 in
            return r1 or r2, (False if (z1 is False and z2 is False) else None)
        if isinstance(node, cst.Comparison) and len(node.comparisons) == 1:
            left, cmp = node.left, node.comparisons[0]
            right, op = cmp.comparator, cmp.operator
            if self.rankish(right, frame) and not self.rankish(left, frame):
                left, right = right, left
                op = _flip(op)
            if not self.rankish(left, frame):
                return False, None
            ints = _int_literals(right)
            if ints is None:
                return False, None
            nonneg = [i for i in ints if i >= 0]
            if not nonneg:  # rank == -1: "not distributed", all ranks agree
                return False, None
            if isinstance(op, cst.Equal) and len(ints) == 1:
                return True, ints[0] == 0
            if isinstance(op, cst.NotEqual) and len(ints) == 1:
                return True, (False if ints[0] == 0 else None)
            if isinstance(op, cst.In):
                return True, (True if nonneg == [0] else (None if 0 in nonneg else False))
            if isinstance(op, cst.NotIn):
                return True, (False if 0 in nonneg else None)
            if len(ints) == 1:
                k = ints[0]
                if isinstance(op, cst.GreaterThan):
                    return True, False
                if isinstance(op, cst.LessThanEqual) and k == 0:
                    return True, True
                if isinstance(op, cst.LessThan) and k == 1:
                    return True, True
                if isinstance(op, cst.GreaterThanEqual) and k >= 1:
                    return True, False
            return False, None
        if self.rank0ish(node):
            return True, True
        if isinstance(node, cst.Name) and frame is not None:
            b = self.binding(node.value, frame)
            if b is not None:
                return self.classify_test(b[0], b[1], depth + 1)
            return self._classify_all(frame.bindings.get(node.value) if node.value in frame.bindings else None,
                                      frame, depth)
        if isinstance(node, cst.Attribute):
            # `args.save_logs = args.logs and is_master(args)` then `if args.save_logs:` elsewhere
            bs = self.attr_bindings.get(_dotted(node) or "")
            if bs:
                return self._classify_all([b[0] for b in bs], bs[0][1], depth, [b[1] for b in bs])
        return False, None

    def _classify_all(self, exprs, frame, depth, frames=None) -> tuple[bool, bool | None]:
        """A name bound several times: a rank-0 guard when every binding says rank 0 only."""
        if not exprs or len(exprs) > 4 or any(e is MULTI for e in exprs):
            return False, None
        got = [self.classify_test(e, (frames[i] if frames else frame), depth + 1) for i, e in enumerate(exprs)]
        if all(r and z is True for r, z in got):
            return True, True
        return False, None

    # ---------------------------------------------------------------- reachability
    def paths(self, frame: Frame, _seen: frozenset = frozenset()) -> list[tuple[Guard, ...]] | None:
        """The guard chains under which ``frame``'s body runs when started from module level.

        None when the script never calls the function (or passes it around): unknown.
        """
        if frame.kind == "module":
            return [()]
        if frame.kind == "class":
            return [()] if frame.parent is not None and frame.parent.kind == "module" else None
        if id(frame) in _seen or len(_seen) > 8:
            return None
        sites = self.callsites.get(frame.name, [])
        if not sites:
            return None
        out: list[tuple[Guard, ...]] = []
        for _call, guards, sframe in sites:
            sub = self.paths(sframe, _seen | {id(frame)})
            if sub is None:
                continue
            for s in sub:
                out.append(s + sframe.base_guards + guards)
        return out or None

    def same_run(self, a: Frame, b: Frame) -> bool:
        """Whether code in frames ``a`` and ``b`` belongs to one run: the same function, methods of
        one class, or ``a`` at module level (a test file's classes are separate runs)."""
        if a is b or a.kind == "module":
            return True
        return a.kind == "function" and b.kind == "function" and a.parent is b.parent and a.parent.kind == "class"

    def world_sizes(self) -> list[tuple[Value, Frame]]:
        """Known integer world sizes passed to init_process_group, with the frame of the call."""
        out = []
        for c in self.by("init_process_group"):
            v = self.arg(c, "world_size", with_span=True)
            if v is not None and v.known and isinstance(v.value, int) and not isinstance(v.value, bool):
                out.append((v, c.frame))
        return out

    def effective_guards(self, call: Call) -> list[tuple[Guard, ...]] | None:
        """Every guard chain the call runs under (own function's conditions plus its callers')."""
        ps = self.paths(call.frame)
        if ps is None:
            return None
        return [p + call.frame.base_guards + call.guards for p in ps]


class SyntaxIndex:
    """What a file's code (not its comments) names: identifiers (names and attributes), keyword
    argument names with their constant values, imported modules, base classes, string constants
    and the environment variables it writes. Built with the stdlib ``ast`` (cheap next to LibCST)."""

    def __init__(self, text: str) -> None:
        import ast

        self.names: set[str] = set()
        self.keywords: dict[str, list] = {}
        self.modules: set[str] = set()
        self.bases: set[str] = set()
        self.strings: set[str] = set()
        self.env_writes: set[str] = set()
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return
        for node in ast.walk(tree):
            t = type(node)
            if t is ast.Name:
                self.names.add(node.id)
            elif t is ast.Attribute:
                self.names.add(node.attr)
            elif t is ast.keyword and node.arg:
                v = node.value.value if isinstance(node.value, ast.Constant) else ...
                self.keywords.setdefault(node.arg, []).append(v)
            elif t is ast.Import:
                self.modules.update(a.name for a in node.names)
            elif t is ast.ImportFrom and node.module:
                self.modules.add(node.module)
                self.names.update(a.name for a in node.names)
            elif t is ast.ClassDef:
                for b in node.bases:
                    self.bases.add(b.attr if isinstance(b, ast.Attribute) else getattr(b, "id", ""))
            elif t is ast.Constant and isinstance(node.value, str) and len(node.value) < 200:
                self.strings.add(node.value)
            elif t is ast.Assign or t is ast.AugAssign:
                for tgt in (node.targets if t is ast.Assign else [node.target]):
                    if isinstance(tgt, ast.Subscript) and _is_environ(tgt.value):
                        k = tgt.slice
                        if isinstance(k, ast.Constant) and isinstance(k.value, str):
                            self.env_writes.add(k.value)
            elif t is ast.Call and isinstance(node.func, ast.Attribute):
                f = node.func
                if f.attr in ("update", "setdefault") and _is_environ(f.value) or (
                        f.attr == "putenv" and isinstance(f.value, ast.Name) and f.value.id == "os"):
                    self.env_writes.update(k.arg for k in node.keywords if k.arg)
                    if node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                        self.env_writes.add(node.args[0].value)
                    if node.args and isinstance(node.args[0], ast.Dict):
                        self.env_writes.update(k.value for k in node.args[0].keys
                                               if isinstance(k, ast.Constant) and isinstance(k.value, str))

    def keyword_is(self, name: str, value) -> bool:
        return any(v is value or (v is not ... and v == value and type(v) is type(value))
                   for v in self.keywords.get(name, ()))


def _is_environ(node) -> bool:
    import ast

    return (isinstance(node, ast.Attribute) and node.attr == "environ"
            and isinstance(node.value, ast.Name) and node.value.id == "os") or (
            isinstance(node, ast.Name) and node.id == "environ")


def _positions(module) -> Any:
    """Node -> CodeRange, as LibCST's PositionProvider computes them. Run directly, the provider
    costs one code generation; through a MetadataWrapper it also costs an empty batched visit of
    the whole tree (rebuilding every node)."""
    from libcst.metadata import MetadataWrapper, PositionProvider

    try:
        provider = PositionProvider()
        provider._gen_impl(module)
        computed = provider._computed
        if computed:
            return computed
    except Exception:  # noqa: BLE001 - a LibCST without these internals: the public way
        pass
    return MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)


from parallint.readers.pyshared import MULTI  # noqa: E402,F401 - one sentinel for both modules


def _ast_depth(tree, limit: int, imports: list | None = None, shapes: list | None = None) -> int:
    """Depth of a stdlib ``ast`` tree (iterative; stops counting at ``limit``). The same pass
    gathers the Import/ImportFrom nodes into ``imports`` when given, and the nodes the gate of
    :class:`CallGate` looks at (calls, list/tuple displays, ``if`` statements) into ``shapes``."""
    import ast

    AST, Import, ImportFrom = ast.AST, ast.Import, ast.ImportFrom
    want = (ast.Call, ast.List, ast.Tuple, ast.If) if shapes is not None else ()
    best, stack = 0, [(tree, 1)]
    pop, push = stack.pop, stack.append
    while stack:
        node, d = pop()
        if d > best:
            best = d
            if best >= limit:
                return best
        t = type(node)
        if imports is not None and (t is Import or t is ImportFrom):
            imports.append(node)
        elif t in want:
            shapes.append(node)  # type: ignore[union-attr]
        d += 1
        for name in node._fields:
            v = getattr(node, name, None)
            if type(v) is list:
                for x in v:
                    if isinstance(x, AST):
                        push((x, d))
            elif isinstance(v, AST):
                push((v, d))
    return best


class CallGate:
    """Which Python files need the concrete syntax tree at all, decided on the ``ast`` pass.

    The rules match calls by qualified name (their declared ``calls``: groups of :data:`GROUPS`
    or qualified names), and the facts this reader states come from those calls too. A file none
    of whose calls resolves, through its imports, to one of those names (nor to Megatron's
    ``initialize_model_parallel``), and that holds no hand-written pipeline partition (a list of
    two or more slices, or slices chosen by ``if rank == k:`` branches: PIP001/PIP003 need no
    call), gives no rule anything to match and states no fact: it is not parsed with LibCST.
    The runner uses the gate only for files that no launch or config links (a linked script's
    job rules look at its device expressions and more) and only when every rule in force
    declares what it matches."""

    __slots__ = ("qnames",)

    def __init__(self, extra: Iterable[str] = ()) -> None:
        self.qnames = frozenset(_BY_QNAME) | frozenset(extra)

    def wanted(self, shapes: list, import_map: dict[str, set[str]]) -> bool:
        import ast

        qnames, maps = self.qnames, import_map
        for node in shapes:
            t = type(node)
            if t is ast.Call:
                func, parts = node.func, []
                while type(func) is ast.Attribute:
                    parts.append(func.attr)
                    func = func.value
                if type(func) is not ast.Name:
                    continue
                bases = maps.get(func.id)
                if not bases:
                    continue
                tail = ".".join(reversed(parts))
                for b in bases:
                    q = f"{b}.{tail}" if tail else b
                    if q in qnames or q.endswith(_MP_SUFFIXES):
                        return True
            elif t is ast.If:
                if node.orelse and any(type(st) is ast.Assign and _slicey(st.value) for st in node.body):
                    return True
            elif len(node.elts) >= 2 and all(_slicey(e) for e in node.elts):
                return True
        return False


def _slicey(node) -> bool:
    """``x[a:b]``, or a call with such an argument (``Sequential(*x[a:b])``): a partition slice,
    as far as the ``ast`` shows (a superset of what the collector takes)."""
    import ast

    t = type(node)
    if t is ast.Call:
        return any(_slicey(a.value if type(a) is ast.Starred else a)
                   for a in list(node.args) + [k.value for k in node.keywords] if type(a) is not ast.Call)
    if t is not ast.Subscript:
        return False
    sl = node.slice
    return type(sl) is ast.Slice or (type(sl) is ast.Tuple and len(sl.elts) == 1 and type(sl.elts[0]) is ast.Slice)


def _dotted(node) -> str | None:
    """``a.b.c`` for a Name/Attribute chain, else None (cheap: no code generation)."""
    import libcst as cst

    parts = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if not isinstance(node, cst.Name):
        return None
    parts.append(node.value)
    return ".".join(reversed(parts))


def _collect_imports(nodes, out: dict[str, set[str]]) -> None:
    """Every import in the file (any scope): local name -> qualified names. Read from CPython's
    ``ast`` nodes (gathered while checking the file's depth), much cheaper than a LibCST walk."""
    import ast

    for node in nodes:
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.asname is not None:
                    out.setdefault(a.asname, set()).add(a.name)
                else:
                    top = a.name.split(".")[0]
                    out.setdefault(top, set()).add(top)
        elif isinstance(node, ast.ImportFrom):
            if node.level or node.module is None or any(a.name == "*" for a in node.names):
                continue
            for a in node.names:
                out.setdefault(a.asname or a.name, set()).add(f"{node.module}.{a.name}")


def _tail(node) -> str | None:
    import libcst as cst

    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return node.attr.value
    if isinstance(node, cst.Call):
        return _tail(node.func)
    return None


def _flip(op):
    import libcst as cst

    m = {cst.LessThan: cst.GreaterThan, cst.GreaterThan: cst.LessThan,
         cst.LessThanEqual: cst.GreaterThanEqual, cst.GreaterThanEqual: cst.LessThanEqual}
    for a, b in m.items():
        if isinstance(op, a):
            return b()
    return op


def _int_literals(node) -> list[int] | None:
    import libcst as cst

    def one(n):
        if isinstance(n, cst.Integer):
            return int(n.evaluated_value)
        if isinstance(n, cst.UnaryOperation) and isinstance(n.operator, cst.Minus) and isinstance(n.expression, cst.Integer):
            return -int(n.expression.evaluated_value)
        return None

    v = one(node)
    if v is not None:
        return [v]
    if isinstance(node, (cst.List, cst.Tuple, cst.Set)):
        out = []
        for el in node.elements:
            x = one(el.value)
            if x is None:
                return None
            out.append(x)
        return out or None
    return None


# ---------------------------------------------------------------------------------------------
# A fast walk over a LibCST tree. ``CSTNode.visit`` rebuilds every node it passes (and calls two
# attribute hooks per field), which costs more than parsing; this walk only reads. It keeps
# LibCST's visiting protocol and order: ``visit_<Type>`` (returning False skips the children),
# children in source order, then ``leave_<Type>``. Purely syntactic fields (parentheses,
# whitespace, commas, brackets) hold nothing a walker looks for and are not entered.
_SYNTAX_FIELDS = frozenset({
    "lpar", "rpar", "comma", "semicolon", "equal", "colon", "dot", "leading_lines",
    "lines_after_decorators", "header", "footer", "indent", "lbrace", "rbrace", "lbracket",
    "rbracket", "first_colon", "second_colon", "star", "asynchronous", "operator",
    "trailing_whitespace", "leading_whitespace", "encoding", "default_indent", "default_newline",
    "has_trailing_newline", "start", "end", "posonly_ind", "trailing_comma", "whitespace_between",
    "newline", "value_whitespace",
})
#: LibCST's visiting order where it differs from the order of the dataclass fields
_VISIT_ORDER: dict[str, tuple[str, ...]] = {
    "Arg": ("keyword", "value"),
    "ClassDef": ("decorators", "name", "type_parameters", "bases", "keywords", "body"),
    "ExceptHandler": ("type", "name", "body"),
    "ExceptStarHandler": ("type", "name", "body"),
    "FunctionDef": ("decorators", "name", "type_parameters", "params", "returns", "body"),
    "IfExp": ("body", "test", "orelse"),
    "ImportFrom": ("relative", "module", "names"),
    "Parameters": ("posonly_params", "params", "star_arg", "kwonly_params", "star_kwarg"),
    "MatchCase": ("pattern", "guard", "body"),
    "MatchAs": ("pattern", "name"),
    "TypeAlias": ("name", "type_parameters", "value"),
    "TypeParam": ("param", "default"),
    "TypeVar": ("name", "bound"),
}
_FIELDS: dict[type, tuple[str, ...]] = {}


_NODE: Any = None  # libcst.CSTNode, bound on first use


def _child_fields(t: type) -> tuple[str, ...]:
    global _NODE
    fs = _FIELDS.get(t)
    if fs is None:
        import dataclasses

        import libcst as cst

        _NODE = cst.CSTNode

        names = _VISIT_ORDER.get(t.__name__) or tuple(f.name for f in dataclasses.fields(t))
        fs = tuple(n for n in names if n not in _SYNTAX_FIELDS and not n.startswith("whitespace"))
        _FIELDS[t] = fs
    return fs


class _Walker:
    """Base of the fast visitors: subclasses define ``visit_<Type>`` / ``leave_<Type>``."""

    _hooks: dict = {}

    def __init_subclass__(cls, **kw) -> None:
        super().__init_subclass__(**kw)
        cls._hooks = {}

    def walk(self, node) -> None:
        t = type(node)
        h = self._hooks.get(t)
        if h is None:
            cls = type(self)
            h = (getattr(cls, "visit_" + t.__name__, None), getattr(cls, "leave_" + t.__name__, None),
                 _child_fields(t))
            cls._hooks[t] = h
        visit, leave, fields = h
        if visit is None or visit(self, node) is not False:
            walk = self.walk
            for name in fields:
                v = getattr(node, name)
                if type(v) is tuple or type(v) is list:
                    for x in v:
                        if isinstance(x, _NODE):
                            walk(x)
                elif isinstance(v, _NODE):
                    walk(v)
        if leave is not None:
            leave(self, node)


# ---------------------------------------------------------------------------------------------
def read(path: str, abspath: Path, text: str, gate: "CallGate | None" = None) -> FileFacts:
    """The facts and the :class:`Script` of one file. With ``gate``, a file that the gate says no
    rule can use (see :class:`CallGate`) is not parsed with LibCST: no Script, and no facts,
    which only those calls state."""
    f = FileFacts(path=path, abspath=abspath, kind="python", text=text)
    if len(text) > MAX_BYTES:
        return f
    try:
        script = _parse(path, text, gate)
    except _SyntaxProblem as e:
        f.diagnostics.append(Diagnostic("SYN001", "parse-error", Severity.ERROR, e.message, e.span))
        return f
    except (RecursionError, MemoryError):
        f.diagnostics.append(
            Diagnostic("SYN001", "parse-error", Severity.ERROR, "file too deeply nested to parse",
                       Span.whole_file(path))
        )
        return f
    if script is None:
        return f
    f.data = script
    try:
        _facts(script, f)
    except RecursionError:  # pragma: no cover - pathological nesting
        pass
    if "CommandFunction" in text:  # a submitit command line the script submits
        from parallint.readers.submitit import command_facts

        f.facts.extend(command_facts(path, text))
    return f


class _SyntaxProblem(Exception):
    def __init__(self, message: str, span: Span) -> None:
        super().__init__(message)
        self.message = message
        self.span = span


def _newer_python(text: str) -> bool:
    """True when CPython here rejects ``text`` but LibCST's grammar (which follows newer Pythons)
    accepts it: code for a newer Python than the one running parallint, such as PEP 701 f-strings
    (``f"{d["k"]}"``, 3.12), is not a syntax error. Only for mild text: LibCST's native parser
    must not meet the pathological nesting the CPython parse normally screens out."""
    import sys

    if sys.version_info >= (3, 14) or len(text) > 2_000_000:
        return False
    depth = top = 0
    for ch in text:  # bracket depth, strings included: an overestimate is only more cautious
        if ch in "([{":
            depth += 1
            top = max(top, depth)
        elif ch in ")]}":
            depth = max(0, depth - 1)
    if top > 60 or len(re.findall(r"\b(?:and|or)\b", text)) > 400 or \
            max((len(ln) for ln in text.splitlines()), default=0) > 5000:
        return False
    import libcst as cst

    try:
        cst.parse_module(text)
    except Exception:
        return False
    return True


def _parse(path: str, text: str, gate: "CallGate | None" = None) -> Script | None:
    """Parse with CPython's own parser first: it gives the positions editors show, it rejects
    what CPython cannot run, and it is a cheap guard for LibCST's native parser, which crashes
    the process on pathological nesting. Only then LibCST, for the tree the rules walk."""
    import ast
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(text, filename=path)
    except SyntaxError as se:
        if _newer_python(text):
            return None  # valid for a newer Python than the one running parallint (PEP 701 f-strings...)
        line, col = se.lineno or 1, max(se.offset or 1, 1)
        raise _SyntaxProblem(f"Python syntax error at {line}:{col}: {se.msg or 'invalid syntax'}",
                             Span(path, line, col)) from None
    except (RecursionError, MemoryError):
        raise _SyntaxProblem("Python syntax error at 1:1: nested too deeply for Python to compile",
                             Span(path, 1, 1)) from None
    except ValueError as exc:  # NUL bytes, lone surrogates
        m = re.search("[\ud800-\udfff\x00]", text)
        i = m.start() if m else 0
        line = text.count("\n", 0, i) + 1
        col = i - (text.rfind("\n", 0, i) + 1) + 1
        raise _SyntaxProblem(f"cannot parse as Python at {line}:{col}: {exc}", Span(path, line, col)) from None
    import_nodes: list = []
    shapes: list | None = [] if gate is not None else None
    depth = _ast_depth(tree, MAX_NESTING + 1, import_nodes, shapes)
    del tree
    if depth > MAX_NESTING:
        raise _SyntaxProblem(
            f"code nested more than {MAX_NESTING} levels deep (limit for checking): file not checked",
            Span(path, 1, 1),
        )
    import_map: dict[str, set[str]] = {}
    _collect_imports(import_nodes, import_map)
    if gate is not None and not gate.wanted(shapes or [], import_map):
        return None  # nothing here for a rule (see CallGate)
    del shapes
    import libcst as cst

    from parallint.readers import pyeval

    try:
        module = cst.parse_module(text)
    except (cst.ParserSyntaxError, UnicodeError, ValueError, RecursionError):
        return None  # Python accepts it but LibCST does not (newer syntax): nothing to say about it
    script = Script(path, text)
    script._module = module
    script.import_map = import_map
    script._evaluator = pyeval.Evaluator(script)
    collector = _Collector(script)
    collector.walk(module)
    for c in script.calls:
        for g in c.groups:
            script._by_group.setdefault(g, []).append(c)
    _post(script)
    return script


# ---------------------------------------------------------------------------------------------
def _collector_class():
    import libcst as cst

    from parallint.readers.pyeval import string_literal

    class Collector(_Walker):
        def __init__(self, script: Script) -> None:
            super().__init__()
            self.s = script
            self.frame = script.module_frame
            self.guards: list[Guard] = []
            self.loops: list[Loop] = []
            self.block_early: list[int] = [0]
            self.targets: dict[int, str] = {}
            self.elifs: set[int] = set()

        # -------------------------------------------------- bindings
        def _bind(self, name: str, expr) -> None:
            self.frame.bindings.setdefault(name, []).append(expr)

        def _bind_target(self, t, expr) -> None:
            if isinstance(t, cst.Name):
                self._bind(t.value, expr)
            elif isinstance(t, (cst.Tuple, cst.List)):
                for el in t.elements:
                    self._bind_target(el.value, MULTI)
            elif isinstance(t, cst.StarredElement):
                self._bind_target(t.value, MULTI)
            elif isinstance(t, cst.Attribute) and expr is not MULTI:
                self.s.attr_bindings.setdefault(_dotted(t) or self.s.code(t), []).append((expr, self.frame))

        def visit_Assign(self, node: cst.Assign) -> None:
            for t in node.targets:
                self._bind_target(t.target, node.value)
            if isinstance(node.value, cst.Call) and len(node.targets) == 1:
                self.targets[id(node.value)] = _dotted(node.targets[0].target) or self.s.code(node.targets[0].target)
                tgt = node.targets[0].target
                if isinstance(tgt, cst.Name) and _tail(node.value.func) in ("parse_args", "parse_known_args"):
                    self.s.args_names.add(tgt.value)
            if isinstance(node.value, cst.Subscript) and len(node.targets) == 1:
                inner = node.value.value
                if isinstance(inner, cst.Call) and _tail(inner.func) == "parse_known_args":
                    t = node.targets[0].target
                    if isinstance(t, cst.Name):
                        self.s.args_names.add(t.value)
            if len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Tuple):
                if isinstance(node.value, cst.Call) and _tail(node.value.func) == "parse_known_args":
                    els = node.targets[0].target.elements
                    if els and isinstance(els[0].value, cst.Name):
                        self.s.args_names.add(els[0].value.value)

        def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
            self._bind_target(node.target, node.value if node.value is not None else MULTI)
            if isinstance(node.value, cst.Call):
                self.targets[id(node.value)] = _dotted(node.target) or self.s.code(node.target)

        def visit_AugAssign(self, node: cst.AugAssign) -> None:
            self._bind_target(node.target, MULTI)
            if isinstance(node.target, cst.Attribute):
                self.s.attr_bindings.setdefault(_dotted(node.target) or self.s.code(node.target), []).append((MULTI, self.frame))

        def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
            self._bind_target(node.target, MULTI)

        def visit_AsName(self, node: cst.AsName) -> None:
            self._bind_target(node.name, MULTI)

        def visit_Import(self, node: cst.Import) -> None:
            for a in node.names:
                top = (_dotted(a.name) or "").split(".")[0]
                self.s.imports.add(top)
                if a.asname is None:
                    self._bind(top, MULTI)

        def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
            if node.module is not None and not node.relative:
                self.s.imports.add((_dotted(node.module) or "").split(".")[0])
            if not isinstance(node.names, cst.ImportStar):
                for a in node.names:
                    if a.asname is None and isinstance(a.name, cst.Name):
                        self._bind(a.name.value, MULTI)

        def visit_Global(self, node) -> None:
            for n in node.names:
                self._bind(n.name.value, MULTI)

        def visit_Nonlocal(self, node) -> None:
            for n in node.names:
                self._bind(n.name.value, MULTI)

        def visit_ExceptHandler(self, node) -> None:
            if node.name is not None:
                self._bind_target(node.name.name, MULTI)

        # -------------------------------------------------- scopes
        def _with_frame(self, frame: Frame, body) -> None:
            saved = (self.frame, self.guards, self.loops, self.block_early)
            self.frame, self.guards, self.loops, self.block_early = frame, [], [], [0]
            self.walk(body)
            self.frame, self.guards, self.loops, self.block_early = saved

        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            for d in node.decorators:
                self.walk(d)
            self._bind(node.name.value, MULTI)
            cls = self.frame.name if self.frame.kind == "class" else None
            frame = Frame("function", node.name.value, self.frame, cls=cls)
            frame.node = node
            p = node.params
            for group in (p.params, p.kwonly_params, p.posonly_params):
                for prm in group:
                    frame.params.add(prm.name.value)
                    if prm.default is not None:
                        self.walk(prm.default)
            for prm in (p.star_arg, p.star_kwarg):
                if isinstance(prm, cst.Param):
                    frame.params.add(prm.name.value)
            frame.has_params = bool(frame.params)
            base = []
            for d in node.decorators:
                if _RANK0_DECORATOR.search(_dotted(d.decorator) or self.s.code(d.decorator)):
                    base.append(Guard(self.s, d.decorator, True, True, id(d), True))
            frame.base_guards = tuple(base)
            self.s.functions.setdefault(node.name.value, []).append(frame)
            self._with_frame(frame, node.body)
            return False

        def visit_ClassDef(self, node: cst.ClassDef) -> bool:
            for d in node.decorators:
                self.walk(d)
            for a in node.bases:
                self.walk(a)
            self._bind(node.name.value, MULTI)
            frame = Frame("class", node.name.value, self.frame)
            frame.node = node
            frame.dataclass = any(
                (_tail(d.decorator) or "") == "dataclass" for d in node.decorators)
            self.s.classes.setdefault(node.name.value, []).append(frame)
            self._with_frame(frame, node.body)
            return False

        def visit_Return(self, node) -> None:
            if self.frame.kind == "function":
                # a return under a condition or in a loop: the function's value is not one expression
                self.frame.returns.append(node.value if not self.guards and not self.loops else MULTI)

        def visit_Lambda(self, node: cst.Lambda) -> bool:
            return True

        # -------------------------------------------------- control flow
        def visit_IndentedBlock(self, node) -> None:
            self.block_early.append(0)

        def leave_IndentedBlock(self, node) -> None:
            n = self.block_early.pop()
            for _ in range(n):
                self.guards.pop()

        def visit_If(self, node: cst.If) -> bool:
            if id(node) not in self.elifs:
                self._rank_branch_partition(node)
            if isinstance(node.orelse, cst.If):
                self.elifs.add(id(node.orelse))
            self.walk(node.test)
            t = node.test
            is_main = isinstance(t, cst.Comparison) and isinstance(t.left, cst.Name) and t.left.value == "__name__"
            rank, zero = self.s.classify_test(t, self.frame)
            g_true = Guard(self.s, t, rank, zero, id(node), True, main=is_main)
            g_false = Guard(self.s, t, rank, (None if zero is None else not zero), id(node), False, main=is_main)
            self.guards.append(g_true)
            self.walk(node.body)
            self.guards.pop()
            pending = [g_true, g_false]
            if node.orelse is not None:
                self.guards.append(g_false)
                if isinstance(node.orelse, cst.Else):
                    self.walk(node.orelse.body)
                else:
                    self.walk(node.orelse)
                self.guards.pop()
            elif _exits(node.body) and (rank or not is_main):
                # `if rank != 0: return` -> the rest of the block runs on the other ranks only
                early = Guard(self.s, t, rank, g_false.zero, id(node), False, early=True)
                pending.append(early)
                self.guards.append(early)
                self.block_early[-1] += 1
            if not rank:  # may read a flag bound later in the file (`args.save_logs = is_master(args)`)
                self.s._pending_guards.append((pending, t, self.frame))
            return False

        def visit_IfExp(self, node: cst.IfExp) -> None:
            return None

        def _loop(self, node, target, iter_node) -> Loop:
            names = frozenset(n.value for n in _names_in(iter_node)) if iter_node is not None else frozenset()
            tnames = frozenset(n.value for n in _names_in(target)) if target is not None else frozenset()
            epoch = any(_EPOCH.search(n) for n in names | tnames)
            return Loop(self.s, node, names, epoch)

        def visit_For(self, node: cst.For) -> bool:
            self.walk(node.iter)
            self._bind_target(node.target, MULTI)
            loop = self._loop(node, node.target, node.iter)
            self.s.loops.append((loop, tuple(self.loops), self.frame))
            self.loops.append(loop)
            self.walk(node.body)
            self.loops.pop()
            if node.orelse is not None:
                self.walk(node.orelse)
            return False

        def visit_While(self, node: cst.While) -> bool:
            self.walk(node.test)
            loop = self._loop(node, None, node.test)
            self.s.loops.append((loop, tuple(self.loops), self.frame))
            self.loops.append(loop)
            self.walk(node.body)
            self.loops.pop()
            if node.orelse is not None:
                self.walk(node.orelse)
            return False

        def visit_CompFor(self, node) -> None:
            self._bind_target(node.target, MULTI)

        # -------------------------------------------------- calls
        def visit_Call(self, node: cst.Call) -> None:
            s = self.s
            func = node.func
            qn = s.qnames(func)
            groups = {_BY_QNAME[q] for q in qn if q in _BY_QNAME}
            if any(q.endswith(_MP_SUFFIXES) for q in qn):
                groups.add("initialize_model_parallel")
            method = func.attr.value if isinstance(func, cst.Attribute) else None
            receiver = func.value if isinstance(func, cst.Attribute) else None
            call = Call(node, s, qn, frozenset(groups), method, receiver,
                        tuple(self.guards), tuple(self.loops), self.frame, self.targets.get(id(node)))
            call.index = len(s.calls)
            s.calls.append(call)
            # call sites of the script's own functions
            callee = None
            if isinstance(func, cst.Name) and not groups:
                callee = func.value
            elif isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value in ("self", "cls"):
                callee = func.attr.value
            elif method is not None and not groups:
                callee = method
            if callee is not None:
                s.callsites.setdefault(callee, []).append((call, tuple(self.guards), self.frame))
            for a in node.args:
                if isinstance(a.value, cst.Name):
                    if "spawn" in groups and a is node.args[0]:
                        s.callsites.setdefault(a.value.value, []).append((call, tuple(self.guards), self.frame))
                    else:
                        s.refs.add(a.value.value)
            if method == "add_argument":
                self._argparse(call)

        def _argparse(self, call: Call) -> None:
            s = self.s
            flags = [string_literal(a.value) for a in call.node.args if a.keyword is None and not a.star]
            flags = [f for f in flags if f]
            dest = None
            dn = call.arg_node("dest")
            if dn is not None:
                dest = string_literal(dn)
            long = [f for f in flags if f.startswith("--")]
            if dest is None:
                if long:
                    dest = long[0][2:].replace("-", "_")
                elif flags and not flags[0].startswith("-"):
                    dest = flags[0]
                elif flags:
                    dest = flags[0].lstrip("-").replace("-", "_")
            if not dest:
                return
            action = string_literal(call.arg_node("action")) if call.arg_node("action") is not None else None
            tnode = call.arg_node("type")
            typ = tnode.value if isinstance(tnode, cst.Name) else None
            if call.arg_node("required") is not None or call.has_star() or (action not in (None, "store", "store_true", "store_false")):
                entry = MULTI
            else:
                entry = ((long or flags or [dest])[0], call.arg_node("default"), self.frame, action, typ)
            if dest in s.argparse:
                s.argparse[dest] = MULTI
            else:
                s.argparse[dest] = entry

        def visit_Subscript(self, node: cst.Subscript) -> None:
            if isinstance(node.value, cst.Name) and len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index):
                idx = node.slice[0].slice.value
                if self.s.rankish(idx) or self.s.rank_kind(idx, self.frame):
                    self.s.rank_subscripts.append((node.value.value, node))
                    self.s._rank_index.append((node.value.value, idx, self.frame))
                else:
                    base = idx.left if isinstance(idx, cst.BinaryOperation) else idx
                    if isinstance(base, (cst.Name, cst.Attribute)) and _PP_RANK_NAME.match(_tail(base) or ""):
                        self.s._rank_index.append((node.value.value, idx, self.frame))

        def visit_FormattedString(self, node: cst.FormattedString) -> None:
            parts = node.parts
            if len(parts) >= 2 and isinstance(parts[0], cst.FormattedStringText) and parts[0].value.endswith("cuda:"):
                if isinstance(parts[1], cst.FormattedStringExpression):
                    self.s.fstrings.append((parts[1].expression, node, self.frame, tuple(self.guards)))

        # -------------------------------------------------- partitions
        def visit_List(self, node: cst.List) -> None:
            self._partition(node)

        def visit_Tuple(self, node: cst.Tuple) -> None:
            self._partition(node)

        def _slice_of(self, el):
            """(base text, lower node, upper node, span) for `base[a:b]` or `Sequential(*base[a:b])`."""
            if isinstance(el, cst.Call) and len(el.args) == 1 and el.args[0].star == "*":
                el = el.args[0].value
            elif isinstance(el, cst.Call) and len(el.args) == 1 and not el.args[0].star and _tail(el.func) in ("ModuleList", "Sequential", "list"):
                el = el.args[0].value
            if not isinstance(el, cst.Subscript) or len(el.slice) != 1:
                return None
            sl = el.slice[0].slice
            if not isinstance(sl, cst.Slice) or sl.step is not None:
                return None
            return _dotted(el.value) or self.s.code(el.value), sl.lower, sl.upper, el

        def _partition(self, node) -> None:
            if len(node.elements) < 2:
                return
            parts = []
            for el in node.elements:
                if isinstance(el, cst.StarredElement):
                    return
                p = self._slice_of(el.value)
                if p is None:
                    return
                parts.append(p)
            bases = {p[0] for p in parts}
            if len(bases) != 1:
                return
            self._add_partition(parts, node)

        def _add_partition(self, parts, node) -> None:
            s = self.s
            slices = []
            for _base, lo, hi, el in parts:
                a = s.value(lo, self.frame, with_span=False) if lo is not None else Value(None)
                b = s.value(hi, self.frame, with_span=False) if hi is not None else Value(None)
                if not a.known or not b.known:
                    return
                if any(v is not None and (isinstance(v, bool) or not isinstance(v, int)) for v in (a.value, b.value)):
                    return
                slices.append(Slice(a.value, b.value, el, s))
            s.partitions.append(Partition(parts[0][0], slices, node, s, frame=self.frame))

        def _rank_branch_partition(self, head) -> None:
            """if rank == 0: stage = layers[:4] / elif rank == 1: stage = layers[4:8] ..."""
            branches = []  # (k, target, (base, lo, hi, el))
            node, rank_text, open_ended = head, None, False
            while node is not None:
                t = node.test
                if not (isinstance(t, cst.Comparison) and len(t.comparisons) == 1
                        and isinstance(t.comparisons[0].operator, cst.Equal)):
                    return
                left, right = t.left, t.comparisons[0].comparator
                if isinstance(left, cst.Integer):
                    left, right = right, left
                if not isinstance(right, cst.Integer) or not self.s.rankish(left, self.frame):
                    return
                text = _dotted(left) or self.s.code(left)
                if rank_text not in (None, text):
                    return
                rank_text = text
                got = self._branch_slice(node.body)
                if got is None:
                    return
                branches.append((int(right.evaluated_value), got))
                orelse = node.orelse
                if isinstance(orelse, cst.If):
                    node = orelse
                    continue
                if isinstance(orelse, cst.Else):
                    got = self._branch_slice(orelse.body)
                    if got is None:
                        return
                    branches.append((max(k for k, _ in branches) + 1, got))
                    open_ended = True
                break
            if len(branches) < 2:
                return
            branches.sort(key=lambda b: b[0])
            if [k for k, _ in branches] != list(range(len(branches))):
                return
            targets = {g[0] for _, g in branches}
            bases = {g[1][0] for _, g in branches}
            if len(targets) != 1 or len(bases) != 1:
                return
            before = len(self.s.partitions)
            self._add_partition([g[1] for _, g in branches], head.test)
            if len(self.s.partitions) > before:
                p = self.s.partitions[-1]
                p.selector, p.open_ended = "rank", open_ended

        def _branch_slice(self, body):
            """(target, slice parts) for a branch body holding one `t = <slice of base>` assignment."""
            found = None
            for stmt in getattr(body, "body", ()):
                if not isinstance(stmt, cst.SimpleStatementLine):
                    continue
                for small in stmt.body:
                    if isinstance(small, cst.Assign) and len(small.targets) == 1:
                        part = self._slice_of(small.value)
                        if part is not None:
                            if found is not None:
                                return None
                            found = (_dotted(small.targets[0].target) or "", part)
            return found

        # -------------------------------------------------- module lists (layer counts)
        def leave_Assign(self, node: cst.Assign) -> None:
            v = node.value
            if not (isinstance(v, cst.Call) and _tail(v.func) in ("ModuleList", "Sequential") and len(v.args) == 1):
                return
            inner = v.args[0].value
            if isinstance(inner, cst.ListComp) and inner.for_in.inner_for_in is None and inner.for_in.ifs == ():
                it = inner.for_in.iter
                if isinstance(it, cst.Call) and _tail(it.func) == "range" and len(it.args) == 1:
                    n = self.s.value(it.args[0].value, self.frame, with_span=False)
                    for t in node.targets:
                        key = _tail(t.target)
                        if key:
                            self.s.layer_lists.setdefault(key, []).append(n)

    return Collector


def _exits(body) -> bool:
    import libcst as cst

    stmts = list(body.body) if hasattr(body, "body") else []
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, cst.SimpleStatementLine) and last.body:
        return isinstance(last.body[-1], (cst.Return, cst.Continue))
    if isinstance(body, cst.SimpleStatementSuite):
        return isinstance(body.body[-1], (cst.Return, cst.Continue))
    return False


def _names_in(node) -> Iterable:
    import libcst as cst

    v = _NameCollector()
    v.walk(node)
    return v.out


class _NameCollector(_Walker):
    def __init__(self) -> None:
        self.out: list = []

    def visit_Name(self, n) -> None:
        self.out.append(n)


def _Collector(script: Script):  # the class needs libcst: built on first use
    global _COLLECTOR
    if _COLLECTOR is None:
        _COLLECTOR = _collector_class()
    return _COLLECTOR(script)


_COLLECTOR = None


# ---------------------------------------------------------------------------------------------
def _post(script: Script) -> None:
    """Things that need the whole file: guards on flags bound further down, layer counts and
    selectors of partitions, meshes."""
    for guards, test, frame in script._pending_guards:
        try:
            rank, zero = script.classify_test(test, frame)
        except RecursionError:  # pragma: no cover
            continue
        if rank:
            for g in guards:
                g.rank = True
                g.zero = zero if g.branch else (None if zero is None else not zero)
    script._pending_guards = []
    for p in script.partitions:
        key = p.base.rsplit(".", 1)[-1]
        ns = script.layer_lists.get(key, [])
        known = {known_int(n) for n in ns}
        if len(ns) >= 1 and len(known) == 1 and None not in known:
            p.total = known.pop()
            p.total_source = f"{key} built with range({p.total})"
    # partitions selected by rank: `stages = [...]` then `stages[rank]`, or `[...][rank]`
    rank_subs = {}
    for name, sp in script.rank_subscripts:
        rank_subs.setdefault(name, sp)
    import libcst as cst

    for p in script.partitions:
        node = p.node
        # find the assignment target bound to this list
        for name, bs in _all_bindings(script):
            if any(b is node for b in bs) and name in rank_subs:
                p.selector = "rank"
                p.selector_span = script.span_of(rank_subs[name])
    _rank_lists(script)
    for c in script.by("init_device_mesh"):
        shape_node = c.arg_node("mesh_shape", 1)
        names_node = c.arg_node("mesh_dim_names", 2)
        shape = None
        if shape_node is not None:
            v = script.value(shape_node, c.frame)
            if v.known and isinstance(v.value, (tuple, list)) and v.value and all(
                isinstance(x, int) and not isinstance(x, bool) for x in v.value
            ):
                shape = tuple(v.value)
        names = None
        if names_node is not None:
            v = script.value(names_node, c.frame)
            if v.known and isinstance(v.value, (tuple, list)) and all(isinstance(x, str) for x in v.value):
                names = tuple(v.value)
        script.meshes.append(Mesh(c.span, shape, names, c))
    for c in script.by("device_mesh"):
        mnode = c.arg_node("mesh", 1)
        shape = None
        if mnode is not None and isinstance(mnode, (cst.List, cst.Tuple)):
            v = script.value(mnode, c.frame)
            if v.known:
                shape = _nested_shape(v.value)
        script.meshes.append(Mesh(c.span, shape, None, c))


_PARTITION_NAME = re.compile(r"layer|stage|split|partition|part(?:s)?$|boundar|bound|chunk|block|shard", re.I)
_PP_RANK_NAME = re.compile(r"^(?:pp|pipe|pipeline|stage)_?(?:rank|id|idx|index)$|^stage$", re.I)


def _rank_of_index(script: Script, idx, frame) -> tuple[str | None, bool]:
    """("global" | "pipeline" | None, plus_one) for the index of ``x[idx]``."""
    import libcst as cst

    plus = False
    if isinstance(idx, cst.BinaryOperation) and isinstance(idx.operator, cst.Add):
        a, b = idx.left, idx.right
        if isinstance(a, cst.Integer):
            a, b = b, a
        if not (isinstance(b, cst.Integer) and b.value == "1"):
            return None, False
        idx, plus = a, True
    if isinstance(idx, (cst.Name, cst.Attribute)) and _PP_RANK_NAME.match(_tail(idx) or ""):
        return "pipeline", plus
    if script.rank_kind(idx, frame) == "global":
        return "global", plus
    return None, plus


def _rank_lists(script: Script) -> None:
    import libcst as cst

    seen: dict[int, RankList] = {}
    unclear: set[int] = set()
    for name, idx, frame in script._rank_index:
        if not _PARTITION_NAME.search(name):
            continue
        b = script.binding(name, frame)
        if b is None or not isinstance(b[0], (cst.List, cst.Tuple)):
            continue
        node = b[0]
        if len(node.elements) < 2 or any(isinstance(e, cst.StarredElement) for e in node.elements):
            continue
        if any(id(p.node) == id(node) for p in script.partitions):
            continue  # a partition of module slices: PIP001/PIP002 read it already
        kind, plus = _rank_of_index(script, idx, frame)
        if kind is None or id(node) in unclear:
            continue
        rl = seen.get(id(node))
        if rl is None:
            rl = RankList(name, len(node.elements), node, script, b[1], kind, plus)
            seen[id(node)] = rl
            script.rank_lists.append(rl)
        elif rl.rank != kind:  # indexed by different ranks: unclear
            script.rank_lists.remove(rl)
            unclear.add(id(node))
        else:
            rl.boundaries = rl.boundaries or plus
    script._rank_index = []


def _all_bindings(script: Script):
    seen = set()
    frames = [script.module_frame] + [f for fs in script.functions.values() for f in fs]
    for fr in frames:
        if id(fr) in seen:
            continue
        seen.add(id(fr))
        yield from fr.bindings.items()


def _nested_shape(v) -> tuple[int, ...] | None:
    if isinstance(v, (list, tuple)):
        if not v:
            return None
        subs = [_nested_shape(x) for x in v]
        if all(s == () for s in subs):
            return (len(v),) if all(isinstance(x, int) and not isinstance(x, bool) for x in v) else None
        if None in subs or len(set(subs)) != 1:
            return None
        return (len(v),) + subs[0]
    return ()


# ---------------------------------------------------------------------------------------------
def _fact(f: FileFacts, key: str, v: Value, source: str, conv=None) -> None:
    if v.known and conv is not None:
        v = v.map(conv)
    from parallint.facts import Origin  # the call the value is an argument of: rules match on it

    f.facts.add(key, Value(v.value, v.span, v.known, v.why, source if not v.source else f"{source} ({v.source})",
                           Origin(v.origin.how, source.split("(", 1)[0])))


def _int(x):
    if isinstance(x, bool) or not isinstance(x, int):
        raise ValueError(x)
    return x


def _facts(s: Script, f: FileFacts) -> None:
    for c in s.by("init_process_group"):
        ws = s.arg(c, "world_size", with_span=True)
        if ws is not None:
            _fact(f, "parallel.world_size", ws, "init_process_group(world_size=...)", _int)
    for m in s.meshes:
        if m.shape is not None and m.names is not None and len(m.names) == len(m.shape):
            for n, d in zip(m.names, m.shape):
                key = {"dp": "parallel.dp", "tp": "parallel.tp", "pp": "parallel.pp", "cp": "parallel.cp",
                       "ep": "parallel.ep", "dp_replicate": "parallel.dp_replicate",
                       "dp_shard": "parallel.dp_shard"}.get(n)
                if key:
                    f.facts.add(key, Value(d, m.span, True, "", f"init_device_mesh(mesh_dim_names={n!r})"))
    for c in s.by("initialize_model_parallel"):
        for kw, pos, key in (("tensor_model_parallel_size", 0, "parallel.tp"),
                             ("pipeline_model_parallel_size", 1, "parallel.pp"),
                             ("virtual_pipeline_model_parallel_size", 2, "parallel.vpp"),
                             ("context_parallel_size", None, "parallel.cp"),
                             ("expert_model_parallel_size", None, "parallel.ep")):
            v = s.arg(c, kw, pos, with_span=True)
            if v is not None:
                _fact(f, key, v, f"initialize_model_parallel({kw}=...)", _int)
    for c in s.by("pl_trainer"):
        nn = s.arg(c, "num_nodes", with_span=True)
        if nn is not None:
            _fact(f, "parallel.nodes", nn, "Trainer(num_nodes=...)", _int)
        dv = s.arg(c, "devices", with_span=True)
        if dv is not None:
            def conv(x):
                if isinstance(x, (list, tuple)):
                    return len(x)
                x = _int(x)
                if x < 1:
                    raise ValueError(x)
                return x
            _fact(f, "parallel.procs_per_node", dv, "Trainer(devices=...)", conv)
        st = s.arg(c, "strategy", with_span=True)
        if st is not None and st.known and isinstance(st.value, str) and st.value.startswith("ddp_find_unused_parameters_"):
            f.facts.add("ddp.find_unused_parameters",
                        Value(st.value.endswith("_true"), st.span, True, "", f"Trainer(strategy={st.value!r})"))
    for c in s.by("accelerator"):
        v = s.arg(c, "gradient_accumulation_steps", with_span=True)
        if v is not None:
            _fact(f, "training.grad_accum", v, "Accelerator(gradient_accumulation_steps=...)", _int)
        v = s.arg(c, "mixed_precision", with_span=True)
        if v is not None and v.known and v.value in ("bf16", "fp16"):
            f.facts.add("training.precision", Value(v.value, v.span, True, "", "Accelerator(mixed_precision=...)"))
    for c in s.by("training_args"):
        for kw, key in (("per_device_train_batch_size", "training.micro_batch"),
                        ("gradient_accumulation_steps", "training.grad_accum")):
            v = s.arg(c, kw, with_span=True)
            if v is not None:
                _fact(f, key, v, f"TrainingArguments({kw}=...)", _int)
        for kw in ("bf16", "fp16"):
            v = s.arg(c, kw, with_span=True)
            if v is not None and v.known and v.value is True:
                f.facts.add("training.precision", Value(kw, v.span, True, "", f"TrainingArguments({kw}=True)"))
        v = s.arg(c, "ddp_find_unused_parameters", with_span=True)
        if v is not None:
            _fact(f, "ddp.find_unused_parameters", v, "TrainingArguments(ddp_find_unused_parameters=...)")
        ds = s.arg(c, "deepspeed", with_span=True)
        if ds is not None and ds.known and isinstance(ds.value, str) and ds.value:
            f.links.append(Value(ds.value, ds.span, True, "", "TrainingArguments(deepspeed=...)"))
    for c in s.by("ddp"):
        v = s.arg(c, "find_unused_parameters", with_span=True)
        if v is not None:
            _fact(f, "ddp.find_unused_parameters", v, "DistributedDataParallel(find_unused_parameters=...)")
    for c in s.by("ddp_kwargs"):
        v = s.arg(c, "find_unused_parameters", with_span=True)
        if v is not None:
            _fact(f, "ddp.find_unused_parameters", v, "DistributedDataParallelKwargs(find_unused_parameters=...)")
    for c in s.by("ddp_strategy"):
        v = s.arg(c, "find_unused_parameters", with_span=True)
        if v is not None:
            _fact(f, "ddp.find_unused_parameters", v, "DDPStrategy(find_unused_parameters=...)")
    for c in s.by("ds_initialize"):
        for kw in ("config", "config_params"):
            v = s.arg(c, kw, with_span=True)
            if v is not None and v.known and isinstance(v.value, str) and v.value:
                f.links.append(Value(v.value, v.span, True, "", f"deepspeed.initialize({kw}=...)"))
    if s.has("fsdp", "fully_shard"):
        f.facts.add("parallel.fsdp", Value(True, s.by("fsdp", "fully_shard")[0].span, True, "", "FSDP wrapping"))


# ---------------------------------------------------------------------------------------------
# helpers for the script rules (rules/ddp.py, pg.py, dat.py, ckp.py, pip.py, lay_mesh.py)
def script_of(f: FileFacts) -> Script | None:
    """The :class:`Script` of a file read by this reader, else None."""
    d = getattr(f, "data", None)
    return d if isinstance(d, Script) else None


def launch_world_size(job) -> tuple[int | None, Value | None]:
    """The world size the job's launcher starts (alias of parallint.model.world.job_launch_world_size)."""
    from parallint.model.world import job_launch_world_size

    return job_launch_world_size(job)


def job_scripts(job) -> list[tuple[FileFacts, Script]]:
    out = []
    for f in getattr(job, "files", ()):
        s = script_of(f)
        if s is not None:
            out.append((f, s))
    return out
