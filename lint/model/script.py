"""The script event API: what a Python training script does, as the rules see it.

A :class:`Script` is the ``data`` of a ``python`` :class:`~parallint.model.facts.FileFacts`, built by the
Python reader (:mod:`parallint.readers.python`, which parses the file with LibCST and walks it
once). It holds every call (matched by qualified name, so ``import torch.distributed as dist`` or
``from torch.nn.parallel import DistributedDataParallel as DDP`` cannot dodge a rule) with its
arguments, position, the enclosing ``if`` conditions classified (rank-0 guard, rank branch),
enclosing loops and function; hand-written layer partitions; device meshes. Values of expressions
come from the evaluator (:mod:`parallint.model.pyeval`). Nodes are LibCST nodes; LibCST is imported
only inside the methods that need it.

For rule writers (see rules/ddp.py, pg.py, dat.py, ckp.py, pip.py, lay_mesh.py)::

    s = script_of(f)                       # the Script of a python FileFacts, else None
    job_scripts(job)                       # (FileFacts, Script) of every python file of a job
    s.by("init_process_group", "ddp")      # calls by group of qualified names (GROUPS)
    s.methods("set_epoch")                 # x.set_epoch(...) calls on anything
    s.arg(call, "world_size", pos=None)    # Value (known/unknown) or None when not passed
    s.arg_span(call, "world_size")         # where to report about that argument
    call.guards / call.loops / call.frame  # enclosing ifs (Guard.rank, .zero), loops, function
    s.effective_guards(call)               # guard chains through the file's own call sites
    s.rank_kind(expr, frame)               # "global" / "local" rank, as far as the code shows
    s.partitions, s.meshes                 # hand-written pipeline splits, device meshes
    s.is_distributed(), s.framework_managed()

The world size a job's launcher starts is :func:`parallint.model.world.job_launch_world_size`.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Callable, cast

from parallint.model.diagnostics import Span
from parallint.model.facts import FileFacts, Value
from parallint.model.pyshared import MULTI, dotted
from parallint.util.record import EqRecord, Record

import ast

if TYPE_CHECKING:  # pragma: no cover
    pass

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
    "save": ("torch.save", "safetensors.torch.save_file", "numpy.save"),
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
    # Lightning's Trainer strategy (not Fabric's: only the Trainer's fills the batch keys itself)
    "lightning_deepspeed": ("lightning.pytorch.strategies.DeepSpeedStrategy", "pytorch_lightning.strategies.DeepSpeedStrategy",
                            "lightning.pytorch.strategies.deepspeed.DeepSpeedStrategy",
                            "pytorch_lightning.strategies.deepspeed.DeepSpeedStrategy",
                            "pytorch_lightning.plugins.DeepSpeedPlugin",
                            "pytorch_lightning.plugins.training_type.DeepSpeedPlugin",
                            "pytorch_lightning.plugins.training_type.deepspeed.DeepSpeedPlugin"),
    "pl_trainer": ("lightning.Trainer", "lightning.pytorch.Trainer", "pytorch_lightning.Trainer",
                   "lightning.pytorch.trainer.Trainer", "pytorch_lightning.trainer.Trainer",
                   "lightning.pytorch.trainer.trainer.Trainer"),
    "training_args": ("transformers.TrainingArguments", "transformers.training_args.TrainingArguments",
                      "transformers.Seq2SeqTrainingArguments", "trl.SFTConfig", "trl.DPOConfig",
                      "trl.GRPOConfig", "trl.RewardConfig", "trl.KTOConfig", "trl.ORPOConfig"),
    "hf_trainer": ("transformers.Trainer", "transformers.Seq2SeqTrainer", "trl.SFTTrainer",
                   "trl.DPOTrainer", "trl.GRPOTrainer", "trl.RewardTrainer"),
    "ds_initialize": ("deepspeed.initialize",),
    "ds_init_inference": ("deepspeed.init_inference",),
    "ds_pipeline_module": ("deepspeed.pipe.PipelineModule", "deepspeed.runtime.pipe.PipelineModule",
                           "deepspeed.runtime.pipe.module.PipelineModule"),
    # ColossalAI's booster plugin: HybridParallelPlugin(tp_size=, pp_size=, zero_stage=)
    "colossal_hybrid": ("colossalai.booster.plugin.HybridParallelPlugin",
                        "colossalai.booster.plugin.hybrid_parallel_plugin.HybridParallelPlugin",
                        "colossalai.booster.plugin.MoeHybridParallelPlugin",
                        "colossalai.booster.plugin.moe_hybrid_parallel_plugin.MoeHybridParallelPlugin"),
    "ds_init_distributed": ("deepspeed.init_distributed", "deepspeed.comm.init_distributed",
                            "deepspeed.comm.comm.init_distributed"),
    "fabric": ("lightning.Fabric", "lightning.fabric.Fabric", "lightning_fabric.Fabric",
               "lightning.fabric.fabric.Fabric", "lightning_fabric.fabric.Fabric"),
    "bytes_io": ("io.BytesIO", "io.StringIO", "tempfile.SpooledTemporaryFile"),
    "spawn": ("torch.multiprocessing.spawn", "torch.multiprocessing.start_processes",
              "torch.multiprocessing.spawn.spawn", "colossalai.testing.spawn", "colossalai.testing.utils.spawn",
              "torch.multiprocessing.spawn.start_processes"),
    "get_rank": (_T + "get_rank", _T + "distributed_c10d.get_rank",
                 # Horovod's global rank, in each front end
                 "horovod.torch.rank", "horovod.tensorflow.rank", "horovod.keras.rank",
                 "horovod.tensorflow.keras.rank", "horovod.mxnet.rank"),
    "hvd_local_rank": ("horovod.torch.local_rank", "horovod.tensorflow.local_rank", "horovod.keras.local_rank",
                   "horovod.tensorflow.keras.local_rank", "horovod.mxnet.local_rank"),
    "dcp_save": (_T + "checkpoint.save", _T + "checkpoint.save_state_dict",
                 _T + "checkpoint.state_dict_saver.save", _T + "checkpoint.async_save"),
    # Horovod: its PyTorch set-up and wrapper (DAT001, CKP001), its collectives in each front end (PG005)
    "hvd_init": ("horovod.torch.init",),
    "hvd_optimizer": ("horovod.torch.DistributedOptimizer",),
    "hvd_collective": tuple(f"horovod.{fe}.{n}"
                            for fe in ("torch", "tensorflow", "keras", "tensorflow.keras", "mxnet")
                            for n in ("allreduce", "allreduce_", "allreduce_async", "allreduce_async_",
                                      "grouped_allreduce", "allgather", "allgather_object", "broadcast",
                                      "broadcast_", "broadcast_object", "broadcast_parameters",
                                      "broadcast_optimizer_state", "broadcast_variables", "alltoall",
                                      "reducescatter", "join", "barrier")),
    # TensorFlow's tf.distribute strategies (TF 2 names, their experimental and compat.v1 spellings)
    "tf_strategy": tuple(f"tensorflow.{pre}distribute.{exp}{n}"
                         for pre in ("", "compat.v1.", "compat.v2.") for exp in ("", "experimental.")
                         for n in ("MirroredStrategy", "MultiWorkerMirroredStrategy", "ParameterServerStrategy",
                                   "TPUStrategy", "CentralStorageStrategy")),
    # PyTorch RPC
    "init_rpc": (_T + "rpc.init_rpc", _T + "rpc.api.init_rpc"),
    "collective": tuple(_T + n for n in (
        "barrier", "monitored_barrier", "all_reduce", "broadcast", "all_gather", "all_gather_into_tensor",
        "reduce_scatter", "reduce_scatter_tensor", "reduce", "gather", "scatter", "all_to_all",
        "all_to_all_single", "all_gather_object", "broadcast_object_list", "gather_object",
        "scatter_object_list")),
}

FRAMEWORK_IMPORTS = {
    "accelerate": "accelerate", "lightning": "lightning", "pytorch_lightning": "lightning",
    "transformers": "transformers", "trl": "transformers", "deepspeed": "deepspeed",
    "composer": "composer", "fairseq": "fairseq", "colossalai": "colossalai", "ignite": "ignite",
    "mmengine": "mmengine", "mmcv": "mmengine", "detectron2": "detectron2", "fabric": "lightning",
    "torchtitan": "torchtitan", "megatron": "megatron", "nemo": "nemo", "torchtnt": "torchtnt",
}

_RANK_NAME = re.compile(
    r"^(?:get_)?(?:(?:local|global|ddp|ddp_local|node|world|proc|process|dist|my|cur|current|gpu|device)_)?rank(?:_id|_idx)?$"
    r"|^(?:get_)?(?:data|tensor|pipeline|model|expert|context|sequence)(?:_model)?_parallel_rank$"
    r"|^(?:dp|tp|pp|mp|ep|cp|sp)_rank$"
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


from parallint.model.pyshared import Arg as Arg, call_args as call_args, is_int as is_int  # noqa: E402 - for the rules


# ---------------------------------------------------------------------------------------------
class Guard:
    """One condition a statement runs under.

    ``rank``: the condition depends on the rank (so only some ranks take this branch).
    ``zero``: True when this branch is taken by rank 0 only (a rank-0 guard), False when rank 0
    does not take it, None when it cannot be said. ``single``: this branch runs only when the
    script is not distributed (``else:`` of ``if ddp:`` where ``ddp = int(os.environ.get("RANK",
    -1)) != -1``), so one process takes it; every rank agrees on such a test, so it is not a rank
    guard. ``text``/``span`` are computed on demand.
    """

    __slots__ = ("_script", "_node", "rank", "zero", "if_id", "branch", "early", "main", "single")

    def __init__(self, script: "Script", node: ast.AST, rank: bool, zero: bool | None, if_id: int, branch: bool,
                 early: bool = False, main: bool = False, single: bool = False) -> None:
        self._script, self._node = script, node
        self.rank, self.zero, self.if_id, self.branch, self.early, self.main = rank, zero, if_id, branch, early, main
        self.single = single

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

    def __init__(self, script: "Script", node: ast.AST, names: frozenset[str], epoch: bool) -> None:
        self._script, self._node, self.names, self.epoch, self.node_id = script, node, names, epoch, id(node)

    @property
    def span(self) -> Span:
        return self._script.span_of(self._node)

    def __repr__(self) -> str:
        return f"Loop(line={self.span.line}, epoch={self.epoch})"


class Frame(Record):
    _fields = ("kind", "name", "parent", "cls", "bindings", "params", "base_guards", "imports", "returns", "dataclass", "has_params", "node")
    _repr = ("kind", "name", "cls", "params", "base_guards", "dataclass", "has_params")
    kind: str  # module | function | class
    name: str
    parent: "Frame | None"
    cls: str | None
    bindings: dict[str, list[Any]]
    params: set[str]
    base_guards: tuple[Guard, ...]
    imports: dict[str, set[str]]
    #: the expressions of the function's `return` statements (None for a bare `return`)
    returns: list[Any]
    #: a class decorated with @dataclass (its annotated class attributes are field defaults)
    dataclass: bool
    #: the function's parameters have defaults / *args: calls may bind them
    has_params: bool
    #: the FunctionDef / ClassDef node (None for the module)
    node: Any

    def __init__(
        self,
        kind: str,
        name: str,
        parent: "Frame | None",
        cls: str | None = None,
        bindings: dict[str, list[Any]] | None = None,
        params: set[str] | None = None,
        base_guards: tuple[Guard, ...] = (),
        imports: dict[str, set[str]] | None = None,
        returns: list[Any] | None = None,
        dataclass: bool = False,
        has_params: bool = False,
        node: Any = None,
    ) -> None:
        self.kind = kind
        self.name = name
        self.parent = parent
        self.cls = cls
        self.bindings = {} if bindings is None else bindings
        self.params = set() if params is None else params
        self.base_guards = base_guards
        self.imports = {} if imports is None else imports
        self.returns = [] if returns is None else returns
        self.dataclass = dataclass
        self.has_params = has_params
        self.node = node


class Call(Record):
    _fields = ("node", "script", "qnames", "groups", "method", "receiver", "guards", "loops", "frame", "target", "index")
    _repr = ("qnames", "groups", "method", "guards", "loops", "target", "index")
    node: Any  # ast.Call
    script: "Script"
    qnames: frozenset[str]
    groups: frozenset[str]
    method: str | None  # x.foo(...) -> "foo"
    receiver: Any  # the node of x in x.foo(...)
    guards: tuple[Guard, ...]
    loops: tuple[Loop, ...]
    frame: Frame
    target: str | None  # `t = call(...)` -> "t"
    index: int  # order of appearance in the file

    def __init__(
        self,
        node: Any,
        script: "Script",
        qnames: frozenset[str],
        groups: frozenset[str],
        method: str | None,
        receiver: Any,
        guards: tuple[Guard, ...] = (),
        loops: tuple[Loop, ...] = (),
        frame: Frame = None,  # type: ignore[assignment]
        target: str | None = None,
        index: int = 0,
    ) -> None:
        self.node = node
        self.script = script
        self.qnames = qnames
        self.groups = groups
        self.method = method
        self.receiver = receiver
        self.guards = guards
        self.loops = loops
        self.frame = frame
        self.target = target
        self.index = index

    @property
    def span(self) -> Span:
        return self.script.span_of(self.node)

    @property
    def func_text(self) -> str:
        return self.script.code(self.node.func)

    @property
    def args(self) -> list["Arg"]:
        """The call's arguments in source order (positional, ``*x``, ``k=v``, ``**kw``)."""
        return call_args(self.node)

    def arg_node(self, keyword: str | None = None, pos: int | None = None) -> Any:
        """The expression passed for ``keyword`` (or positional index ``pos``), or None."""
        positional = 0
        for a in call_args(self.node):
            if a.keyword is not None:
                if keyword is not None and a.keyword == keyword:
                    return a.value
                continue
            if a.star:
                return None
            if pos is not None and positional == pos:
                return a.value
            positional += 1
        return None

    def has_star(self) -> bool:
        n = self.node
        return any(type(a) is ast.Starred for a in n.args) or any(k.arg is None for k in n.keywords)

    def has_keyword(self, keyword: str) -> bool:
        return any(k.arg == keyword for k in self.node.keywords)

    def n_positional(self) -> int:
        return sum(1 for a in self.node.args if type(a) is not ast.Starred)

    @property
    def rank_guards(self) -> list[Guard]:
        return [g for g in self.guards if g.rank]


class Slice(EqRecord):
    _fields = ("start", "stop", "node", "script")
    _repr = ("start", "stop")
    start: int | None
    stop: int | None
    node: Any
    script: "Script"

    def __init__(self, start: int | None, stop: int | None, node: Any, script: "Script") -> None:
        self.start = start
        self.stop = stop
        self.node = node
        self.script = script

    @property
    def span(self) -> Span:
        return self.script.span_of(self.node)


class Partition(EqRecord):
    """A list of slices of one module list handed out as pipeline stages."""

    _fields = ("base", "slices", "node", "script", "total", "total_source", "selector", "selector_span", "frame", "open_ended")
    _repr = ("base", "slices", "total", "total_source", "selector", "selector_span", "open_ended")
    base: str
    slices: list[Slice]
    node: Any
    script: "Script"
    total: int | None  # number of layers of `base` when the script shows it
    total_source: str
    selector: str | None  # "rank" when chosen by a rank expression
    selector_span: Span | None
    frame: Frame | None
    #: chosen by `if rank == k:` branches with a final `else:` taking every other rank
    open_ended: bool

    def __init__(
        self,
        base: str,
        slices: list[Slice],
        node: Any,
        script: "Script",
        total: int | None = None,
        total_source: str = "",
        selector: str | None = None,
        selector_span: Span | None = None,
        frame: Frame | None = None,
        open_ended: bool = False,
    ) -> None:
        self.base = base
        self.slices = slices
        self.node = node
        self.script = script
        self.total = total
        self.total_source = total_source
        self.selector = selector
        self.selector_span = selector_span
        self.frame = frame
        self.open_ended = open_ended

    @property
    def span(self) -> Span:
        return self.script.span_of(self.node)


class RankList(EqRecord):
    """A list literal of per-stage values (layer counts, boundaries, layer ids) that the script
    indexes with a rank: ``layers_per_stage[rank]``, ``bounds[rank]:bounds[rank + 1]``."""

    _fields = ("name", "length", "node", "script", "frame", "rank", "boundaries")
    _repr = ("name", "length", "rank", "boundaries")
    name: str
    length: int
    node: Any
    script: "Script"
    frame: Frame | None
    #: "global" (dist.get_rank(), RANK) or "pipeline" (pp_rank, stage_id ...)
    rank: str
    #: also indexed with rank + 1 (a list of stage boundaries: one more entry than stages)
    boundaries: bool

    def __init__(
        self,
        name: str,
        length: int,
        node: Any,
        script: "Script",
        frame: Frame | None = None,
        rank: str = "global",
        boundaries: bool = False,
    ) -> None:
        self.name = name
        self.length = length
        self.node = node
        self.script = script
        self.frame = frame
        self.rank = rank
        self.boundaries = boundaries

    @property
    def span(self) -> Span:
        return self.script.span_of(self.node)


class Mesh(EqRecord):
    _fields = ("span", "shape", "names", "call")
    span: Span
    shape: tuple[int, ...] | None  # None when not known
    names: tuple[str, ...] | None
    call: Call | None

    def __init__(
        self,
        span: Span,
        shape: tuple[int, ...] | None,
        names: tuple[str, ...] | None,
        call: Call | None = None,
    ) -> None:
        self.span = span
        self.shape = shape
        self.names = names
        self.call = call


class Script:
    """What the Python reader found in one file (``FileFacts.data`` for kind ``python``)."""

    def __init__(self, path: str, text: str, locate: Callable[[Any], Any] | None = None) -> None:
        """``locate`` is not used (positions come from the ``ast`` nodes); kept for callers."""
        self.path = path
        self.text = text
        self.abspath: Any = None  # the file on disk (set by the reader)
        #: the reader's loader of a repository module (``parallint.readers.python.load_module``),
        #: for :meth:`imported_class`; None for a module that was itself loaded that way
        self.module_loader: Callable[..., Any] | None = None
        #: (tree, called names, ``from ... import`` nodes), for ``parallint.link.hfargs`` (walked once)
        self._cli_imports: Any = None
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
        #: every option string of ``add_argument`` -> (dest, action, type name, takes nargs/const,
        #: has a type parallint cannot apply)
        self.argparse_options: dict[str, tuple[str, Any, Any, bool, bool]] = {}
        self.argparse_set_defaults: dict[str, list[tuple[Any, Frame]]] = {}
        #: why the parser's options are not all visible ('' when they are)
        self.argparse_open: str = ""
        self.argparse_abbrev: bool | None = True  # allow_abbrev (None: not a literal)
        #: set by the linker while a job's facts are computed: dest -> the launch line's Value
        self.cli_overrides: dict[str, Value] | None = None
        #: while a job's facts are recomputed: the environment the launch gives the script (the
        #: launcher's own WORLD_SIZE, the command's known exports), by variable name
        self.env_overrides: dict[str, Value] | None = None
        #: the function a click, fire or Hydra command line binds to (``readers.pycli.Entry``)
        self.cli_entry: Any = None
        self.args_names: set[str] = set()
        self.attr_bindings: dict[str, list[Any]] = {}
        self.rank_subscripts: list[tuple[str, Span]] = []  # (name, span) of name[<rank>]
        self.fstrings: list[tuple[Any, Span, Frame, tuple[Guard, ...]]] = []  # f"cuda:{x}"
        self.layer_lists: dict[str, list[Any]] = {}
        self._starts: list[int] | None = None  # offset of each line's first character, on demand
        self.import_map: dict[str, set[str]] = {}  # local name -> qualified names it may stand for
        self._module: Any = None
        self._by_group: dict[str, list[Call]] = {}
        self._evaluator: Any = None
        self._pending_guards: list[Any] = []  # guards to classify again once the whole file is read
        self._rank_index: list[Any] = []  # (name, index expression, frame) of name[<rank>]
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
            # the reader's ``ast`` tree of the file when it kept it (no second parse), else parsed here
            self._syntax_index = SyntaxIndex(self.text, getattr(self, "_ast", None), getattr(self, "_nodes", None))
            self._ast = self._nodes = None
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

    # ---------------------------------------------------------------- positions and source text
    def _line_starts(self) -> list[int]:
        if self._starts is None:
            text = self.text
            if "\r" in text:
                starts = [0]
                starts.extend(m.end() for m in _NEWLINE.finditer(text))
            else:
                import itertools

                starts = list(itertools.accumulate(map(len, text.split("\n")), lambda a, b: a + b + 1, initial=0))
                starts.pop()
            self._starts = starts
        return self._starts

    def _offset(self, line: int, col: int) -> int:
        """Offset in ``text`` of an ``ast`` position (``col`` counts UTF-8 bytes)."""
        starts = self._line_starts()
        if line < 1 or line > len(starts):
            return len(self.text)
        a = starts[line - 1]
        b = starts[line] if line < len(starts) else len(self.text)
        seg = self.text[a:b]
        if col <= 0:
            return a
        if seg.isascii():
            return a + min(col, len(seg))
        return a + len(seg.encode("utf-8", "surrogatepass")[:col].decode("utf-8", "ignore"))

    def _range(self, node: Any, inner: bool = True) -> tuple[int, int] | None:
        """(start, end) offsets of ``node`` in ``text``, as the syntax shows it: a parenthesised
        tuple without its own parentheses (``ast`` counts them in, LibCST did not), unless not
        ``inner``."""
        line = getattr(node, "lineno", None)
        if line is None:
            return None
        a = self._offset(line, node.col_offset)
        el, ec = getattr(node, "end_lineno", None), getattr(node, "end_col_offset", None)
        b = self._offset(el, ec) if el is not None and ec is not None else a
        if type(node) is ast.Tuple or type(node) is ast.GeneratorExp:
            if _own_parens(self.text, a, b, node, self._offset) and (
                    inner or (type(node) is ast.GeneratorExp and _call_paren(self.text, a))):
                a, b = self._inside_parens(a, b, node)
        return a, b

    def _inside_parens(self, a: int, b: int, node: Any) -> tuple[int, int]:
        """The span of a parenthesised tuple inside its parentheses, without the blanks and
        comments that follow ``(`` or precede ``)`` (LibCST's span of it)."""
        text = self.text
        a += 1
        while a < b - 1:
            c = text[a]
            if c in " \t\r\n\f\\":
                a += 1
            elif c == "#":
                nl = text.find("\n", a, b)
                a = b - 1 if nl < 0 else nl
            else:
                break
        e = b - 1
        elts = getattr(node, "elts", None)
        if type(node) is ast.GeneratorExp:
            g = node.generators[-1]
            end_node: Any = g.ifs[-1] if g.ifs else g.iter
            last = self._offset(end_node.end_lineno, end_node.end_col_offset)
        else:
            last = self._offset(elts[-1].end_lineno, elts[-1].end_col_offset) if elts else a
        h = text.find("#", last, e)  # a comment after the last element (the gap holds no string)
        if h >= 0:
            e = h
        while e > a and text[e - 1] in " \t\r\n\f\\":
            e -= 1
        return a, max(a, e)

    def _linecol(self, off: int) -> tuple[int, int]:
        import bisect

        starts = self._line_starts()
        i = bisect.bisect_right(starts, off) - 1
        return i + 1, off - starts[i] + 1

    def span_of(self, node: ast.AST) -> Span:
        r = self._range(node) if node is not None else None
        if r is None:
            return Span(self.path, 1, 1)
        (l1, c1), (l2, c2) = self._linecol(r[0]), self._linecol(r[1])
        return Span(self.path, l1, c1, l2, c2)

    def source(self, node: ast.AST) -> str:
        """The text of ``node`` as written, without parentheses around it."""
        r = self._range(node)
        return self.text[r[0]:r[1]] if r is not None else ""

    def qnames(self, node: ast.AST, frame: "Frame | None" = None) -> frozenset[str]:
        """Qualified names of a dotted expression through the file's imports (``dist.barrier`` ->
        ``torch.distributed.barrier``). Empty when its base name is not imported."""
        parts = []
        while type(node) is ast.Attribute:
            parts.append(node.attr)  # type: ignore[attr-defined]
            node = node.value  # type: ignore[attr-defined]
        if type(node) is not ast.Name:
            return frozenset()
        bases = self.import_map.get(node.id)  # type: ignore[attr-defined]
        if not bases:
            return frozenset()
        tail = ".".join(reversed(parts))
        return frozenset(f"{b}.{tail}" if tail else b for b in bases)

    def qname_in(self, node: ast.AST, names: set[str] | frozenset[str]) -> bool:
        qs = self.qnames(node)
        if qs:
            return bool(qs & names)
        # builtins: a bare name that is not bound anywhere in the file
        if isinstance(node, ast.Name):
            return node.id in names or f"builtins.{node.id}" in names
        return False

    def is_builtin(self, node: ast.AST) -> bool:
        if not isinstance(node, ast.Name):
            return False
        qs = self.qnames(node)
        return not qs or f"builtins.{node.id}" in qs or qs == {node.id}

    def code(self, node: ast.AST) -> str:
        """The text of ``node`` with the parentheses written around it (as LibCST's
        ``code_for_node`` gave it), taken from the file's text (nothing is regenerated)."""
        r = self._range(node, inner=False) if node is not None else None
        if r is None:
            return ""
        a, b = _paren_extend(self.text, r[0], r[1])
        seg = self.text[a:b]
        if "\n" in seg:
            seg = self._dedent(seg, getattr(node, "lineno", 0))
        return seg

    def _dedent(self, seg: str, line: int) -> str:
        """A node written over several lines, as LibCST printed it: the indentation of the block
        its statement is in is left out of the lines that continue it (not inside a string, nor
        after a backslash)."""
        indent = self._block_indent(line)
        if not indent:
            return seg
        lines = seg.split("\n")
        in_string: set[int] = set()
        try:
            import io
            import tokenize

            for tok in tokenize.generate_tokens(io.StringIO(seg).readline):
                if tok.start[0] < tok.end[0] and tok.type == tokenize.STRING:
                    in_string.update(range(tok.start[0] + 1, tok.end[0] + 1))  # 1-based rows inside it
        except (tokenize.TokenError, SyntaxError, IndentationError, ValueError):
            pass
        out = [lines[0]]
        for i in range(1, len(lines)):
            ln = lines[i]
            if (i + 1) not in in_string and not lines[i - 1].endswith("\\") and ln.startswith(indent):
                ln = ln[len(indent):]
            out.append(ln)
        return "\n".join(out)

    def _block_indent(self, line: int) -> str:
        """The indentation of the block holding the statement that ``line`` belongs to."""
        if getattr(self, "_indents", None) is None:
            starts = self._line_starts()
            text = self.text
            indents = [""] * (len(starts) + 2)

            def mark(stmts: list[Any]) -> None:
                for st in stmts:
                    first = min([st.lineno] + [d.lineno for d in getattr(st, "decorator_list", ())])
                    a = starts[first - 1] if first - 1 < len(starts) else len(text)
                    e = a
                    while e < len(text) and text[e] in " \t\f":
                        e += 1
                    ind = text[a:e]
                    for k in range(first, (st.end_lineno or st.lineno) + 1):
                        if k < len(indents):
                            indents[k] = ind
                    for name in ("body", "orelse", "finalbody", "handlers", "cases"):
                        sub = getattr(st, name, None)
                        if type(sub) is list and sub:
                            if name in ("handlers", "cases"):
                                for h in sub:
                                    mark(h.body)
                            elif isinstance(sub[0], ast.stmt):
                                mark(sub)

            mod = self._module
            if mod is not None:
                mark(mod.body)
            self._indents = indents
        ind = self._indents
        return ind[line] if 0 <= line < len(ind) else ""

    def binding(self, name: str, frame: Frame) -> tuple[Any, Frame] | None:
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

    def option(self, flag: str) -> tuple[str | None, bool]:
        """The ``add_argument`` option string a command-line word ``flag`` stands for (exact, else a
        unique prefix of a long option while ``allow_abbrev`` is on), and whether the match is
        ambiguous or uncertain (then the first item is None)."""
        opts = self.argparse_options
        if flag in opts:
            return flag, False
        if not flag.startswith("--") or self.argparse_abbrev is False:
            return None, False
        hits = [o for o in opts if o.startswith("--") and o.startswith(flag)]
        if self.argparse_abbrev is None:
            return None, True
        if len(hits) == 1:
            return hits[0], False
        return None, bool(hits)

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

    def value(self, node: ast.AST, frame: Frame, with_span: bool = True) -> Value:
        return cast(Value, self._evaluator.value(node, frame, with_span=with_span))

    def arg(self, call: Call, keyword: str | None = None, pos: int | None = None,
            with_span: bool = False) -> Value | None:
        """The resolved argument: None when not passed (and no ``**kwargs`` could pass it).

        Spans are left out unless asked for (positions cost a pass over the file): a rule that
        reports at the argument uses :meth:`arg_span`."""
        node = call.arg_node(keyword, pos)
        if node is not None:
            return self.value(node, call.frame, with_span=with_span)
        for a in call.args:
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
            for a in call.args:
                if a.star == "**":
                    node = a.value
                    break
        return self.span_of(node) if node is not None else call.span

    # ---------------------------------------------------------------- rank expressions
    def rank_kind(self, node: ast.AST | None, frame: Frame | None, depth: int = 0) -> str | None:
        """'global' / 'local' when ``node`` is the global / local rank as far as the code shows."""
        from parallint.model.pyshared import GLOBAL_RANK_ENV, LOCAL_RANK_ENV, env_name

        if depth > 6 or node is None:
            return None
        if isinstance(node, ast.Call):
            if self.qname_in(node.func, set(GROUPS["get_rank"])) and not (node.args or node.keywords):
                return "global"
            if self.qname_in(node.func, set(GROUPS["hvd_local_rank"])) and not (node.args or node.keywords):
                return "local"
            if self.qname_in(node.func, {"builtins.int", "int"}) and len(node.args) + len(node.keywords) == 1:
                return self.rank_kind(call_args(node)[0].value, frame, depth + 1)
        env = env_name(self, node)
        if env is not None:
            if env in GLOBAL_RANK_ENV:
                return "global"
            if env in LOCAL_RANK_ENV:
                return "local"
            return None
        if isinstance(node, ast.Name) and frame is not None:
            b = self.binding(node.id, frame)
            if b is not None:
                return self.rank_kind(b[0], b[1], depth + 1)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
            bs = self.attr_bindings.get(_dotted(node) or "")
            if bs and len(bs) == 1:
                return self.rank_kind(bs[0][0], bs[0][1], depth + 1)
        return None

    def rankish(self, node: ast.AST, frame: Frame | None = None) -> bool:
        """A rank-looking expression (by name or by source): for guards, where silence is the error."""
        from parallint.model.pyshared import GLOBAL_RANK_ENV, LOCAL_RANK_ENV, env_name

        if isinstance(node, ast.BinOp):  # rank % gpus_per_node, rank // tp ...
            return self.rankish(node.left, frame) or self.rankish(node.right, frame)
        if isinstance(node, (ast.Name, ast.Attribute)) and self.rank_kind(node, frame) is not None:
            return True

        if isinstance(node, ast.Call):
            if self.qname_in(node.func, {"builtins.int", "int"}) and len(node.args) + len(node.keywords) == 1:
                return self.rankish(call_args(node)[0].value)
            env = env_name(self, node)
            if env is not None:
                return env in GLOBAL_RANK_ENV or env in LOCAL_RANK_ENV or "RANK" in env
            return _RANK_NAME.match(_tail(node.func) or "") is not None
        env = env_name(self, node)
        if env is not None:
            return env in GLOBAL_RANK_ENV or env in LOCAL_RANK_ENV or "RANK" in env
        t = _tail(node)
        return t is not None and _RANK_NAME.match(t) is not None

    def rank0ish(self, node: ast.AST) -> bool:
        if isinstance(node, ast.Call):
            node = node.func
        t = _tail(node)
        return t is not None and _RANK0_NAME.match(t) is not None

    def classify_test(self, node: ast.AST, frame: Frame | None = None, depth: int = 0) -> tuple[bool, bool | None]:
        """(depends on rank, True-branch is rank-0 only / rank 0 never takes it / unknown)."""
        if depth > 6:
            return False, None
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            r, z = self.classify_test(node.operand, frame, depth + 1)
            return r, (None if z is None else not z)
        if isinstance(node, ast.BoolOp):
            return self._classify_bool(isinstance(node.op, ast.And), node.values, frame, depth)
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            left, right, op = node.left, node.comparators[0], node.ops[0]
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
            if isinstance(op, ast.Eq) and len(ints) == 1:
                return True, ints[0] == 0
            if isinstance(op, ast.NotEq) and len(ints) == 1:
                return True, (False if ints[0] == 0 else None)
            if isinstance(op, ast.In):
                return True, (True if nonneg == [0] else (None if 0 in nonneg else False))
            if isinstance(op, ast.NotIn):
                return True, (False if 0 in nonneg else None)
            if len(ints) == 1:
                k = ints[0]
                if isinstance(op, ast.Gt):
                    return True, False
                if isinstance(op, ast.LtE) and k == 0:
                    return True, True
                if isinstance(op, ast.Lt) and k == 1:
                    return True, True
                if isinstance(op, ast.GtE) and k >= 1:
                    return True, False
            return False, None
        if self.rank0ish(node):
            return True, True
        if isinstance(node, ast.Name) and frame is not None:
            b = self.binding(node.id, frame)
            if b is not None:
                return self.classify_test(b[0], b[1], depth + 1)
            return self._classify_all(frame.bindings.get(node.id) if node.id in frame.bindings else None,
                                      frame, depth)
        if isinstance(node, ast.Attribute):
            # `args.save_logs = args.logs and is_master(args)` then `if args.save_logs:` elsewhere
            bs = self.attr_bindings.get(_dotted(node) or "")
            if bs:
                return self._classify_all([b[0] for b in bs], bs[0][1], depth, [b[1] for b in bs])
        return False, None

    def single_test(self, node: ast.AST, frame: Frame | None = None, depth: int = 0) -> bool | None:
        """True when the test's True branch runs only in a run that is not distributed (a rank of
        -1: ``int(os.environ.get("RANK", -1)) == -1``, ``args.local_rank == -1``), False when its
        False branch does (``ddp = ... != -1`` then ``if ddp:``), None when it says neither."""
        if depth > 6:
            return None
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            r = self.single_test(node.operand, frame, depth + 1)
            return None if r is None else not r
        if isinstance(node, ast.BoolOp):
            got = [self.single_test(v, frame, depth + 1) for v in node.values]
            if isinstance(node.op, ast.And):  # taken only when a single-process test holds
                return True if True in got else None
            return False if False in got else None  # `not (a or b)`: needs `not a`
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            left, right, op = node.left, node.comparators[0], node.ops[0]
            if self.rankish(right, frame) and not self.rankish(left, frame):
                left, right, op = right, left, _flip(op)
            if not self.rankish(left, frame):
                return None
            ints = _int_literals(right)
            if ints != [-1]:
                return None
            if isinstance(op, (ast.Eq, ast.LtE)):
                return True
            if isinstance(op, (ast.NotEq, ast.Gt)):
                return False
            return None
        if isinstance(node, ast.Name) and frame is not None:
            b = self.binding(node.id, frame)
            if b is not None:
                return self.single_test(b[0], b[1], depth + 1)
        return None

    def _classify_bool(self, conj: bool, values: list[Any], frame: Frame | None,
                       depth: int) -> tuple[bool, bool | None]:
        """``a and b and c`` read as ``(a and b) and c``: one level per operator, as the binary
        operations of a concrete syntax tree nest (the depth limit counts them)."""
        if depth > 6:
            return False, None
        if len(values) > 2:
            r1, z1 = self._classify_bool(conj, values[:-1], frame, depth + 1)
        else:
            r1, z1 = self.classify_test(values[0], frame, depth + 1)
        r2, z2 = self.classify_test(values[-1], frame, depth + 1)
        if conj:
            return r1 or r2, (True if (z1 is True or z2 is True) else None)
        # or: rank 0 never takes it only if neither side lets rank 0 in
        return r1 or r2, (False if (z1 is False and z2 is False) else None)

    def _classify_all(self, exprs: list[Any] | None, frame: Frame | None, depth: int,
                      frames: list[Frame] | None = None) -> tuple[bool, bool | None]:
        """A name bound several times: a rank-0 guard when every binding says rank 0 only."""
        if not exprs or len(exprs) > 4 or any(e is MULTI for e in exprs):
            return False, None
        got = [self.classify_test(e, (frames[i] if frames else frame), depth + 1) for i, e in enumerate(exprs)]
        if all(r and z is True for r, z in got):
            return True, True
        return False, None

    # ---------------------------------------------------------------- reachability
    def paths(self, frame: Frame, _seen: frozenset[int] = frozenset()) -> list[tuple[Guard, ...]] | None:
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
        return a.kind == "function" and b.kind == "function" and a.parent is b.parent and cast(Frame, a.parent).kind == "class"

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

    def __init__(self, text: str, tree: Any = None, nodes: Any = None) -> None:
        """``tree``: the file's ``ast`` module when the caller has it (else ``text`` is parsed);
        ``nodes``: every node of it, as lists (the reader's depth pass gathers them), when known."""
        import ast
        import itertools

        self.names: set[str] = set()
        self.keywords: dict[str, list[Any]] = {}
        self.modules: set[str] = set()
        self.bases: set[str] = set()
        self.strings: set[str] = set()
        self.env_writes: set[str] = set()
        if tree is None:
            try:
                tree = ast.parse(text)
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                return
        # dispatch on the exact node type (cheaper than isinstance chains), which mypy does not narrow
        node: Any
        for node in (itertools.chain.from_iterable(nodes) if nodes is not None else ast.walk(tree)):
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

    def keyword_is(self, name: str, value: Any) -> bool:
        return any(v is value or (v is not ... and v == value and type(v) is type(value))
                   for v in self.keywords.get(name, ()))


def _is_environ(node: ast.AST) -> bool:
    import ast

    return (isinstance(node, ast.Attribute) and node.attr == "environ"
            and isinstance(node.value, ast.Name) and node.value.id == "os") or (
            isinstance(node, ast.Name) and node.id == "environ")


_dotted = dotted  # one helper for the script API and the evaluator (model.pyshared)


def _tail(node: Any) -> str | None:
    t = type(node)
    if t is ast.Name:
        return cast(str, node.id)
    if t is ast.Attribute:
        return cast(str, node.attr)
    if t is ast.Call:
        return _tail(node.func)
    return None


def _flip(op: ast.cmpop) -> ast.cmpop:
    m: dict[type[ast.cmpop], Callable[[], ast.cmpop]] = {ast.Lt: ast.Gt, ast.Gt: ast.Lt, ast.LtE: ast.GtE,
                                                          ast.GtE: ast.LtE}
    for a, b in m.items():
        if isinstance(op, a):
            return b()
    return op


def _int_literals(node: Any) -> list[int] | None:
    def one(n: Any) -> int | None:
        if is_int(n):
            return cast(int, n.value)
        if type(n) is ast.UnaryOp and isinstance(n.op, ast.USub) and is_int(n.operand):
            return -cast(int, getattr(n.operand, "value"))
        return None

    v = one(node)
    if v is not None:
        return [v]
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        out = []
        for el in node.elts:
            x = one(el.value if type(el) is ast.Starred else el)
            if x is None:
                return None
            out.append(x)
        return out or None
    return None


_NEWLINE = re.compile(r"\r\n?|\n")
_KEYWORDS = frozenset({
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue", "def",
    "del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import", "in", "is",
    "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while", "with", "yield"})


def _skip_ws_back(text: str, i: int) -> int:
    """Index of the last character before ``i`` that is neither blank nor in a comment (-1 if
    none)."""
    i -= 1
    while True:
        while i >= 0 and text[i] in " \t\r\n\f\\":
            i -= 1
        if i < 0:
            return i
        ls = max(text.rfind("\n", 0, i + 1), text.rfind("\r", 0, i + 1)) + 1
        h = text.find("#", ls, i + 1)
        if h < 0 or "'" in text[ls:h] or '"' in text[ls:h]:
            return i
        i = h - 1  # a comment (as far as a line without quotes before its `#` shows)


def _skip_ws(text: str, i: int) -> int:
    """Index of the first character from ``i`` that is neither blank nor in a comment."""
    n = len(text)
    while i < n:
        c = text[i]
        if c in " \t\r\n\f\\":
            i += 1
        elif c == "#":
            nl = text.find("\n", i)
            i = n if nl < 0 else nl
        else:
            break
    return i


def _paren_extend(text: str, a: int, b: int) -> tuple[int, int]:
    """(a, b) widened over the parentheses written around the expression ``text[a:b]``; a call's,
    a definition's or a class's own parentheses are not the expression's."""
    for _ in range(50):
        i, j = _skip_ws_back(text, a), _skip_ws(text, b)
        if i < 0 or j >= len(text) or text[i] != "(" or text[j] != ")" or _call_paren(text, i):
            break
        a, b = i, j + 1
    return a, b


def _call_paren(text: str, i: int) -> bool:
    """Whether the ``(`` at ``i`` opens a call's, a definition's or a class's parentheses (the
    word or closing bracket right before it, on its line), not an expression's."""
    k = i - 1
    while k >= 0 and text[k] in " \t\f":
        k -= 1
    if k < 0 or text[k] in "\r\n":
        return False
    c = text[k]
    if c in ")]\"'":
        return True  # a call: f(x), g()(x), "s"(x)
    if c.isalnum() or c == "_" or ord(c) > 127:
        e = k
        while e >= 0 and (text[e].isalnum() or text[e] == "_" or ord(text[e]) > 127):
            e -= 1
        return text[e + 1:k + 1] not in _KEYWORDS  # f(x), def f(x), class C(x)
    return False


def _own_parens(text: str, a: int, b: int, node: Any, offset: Callable[[int, int], int]) -> bool:
    """Whether ``text[a:b]`` (a tuple or generator expression as ``ast`` places it) starts and
    ends with parentheses of its own (not those of its first and last elements)."""
    if b - a < 2 or text[a] != "(" or text[b - 1] != ")":
        return False
    elts = getattr(node, "elts", None)
    if not elts:
        return True
    # the text between the elements: its parentheses, commas, blanks and comments
    depth, pos = 0, a
    for k, el in enumerate(elts + [None]):
        end = b if el is None else offset(el.lineno, el.col_offset)
        gap = text[pos:end]
        i = 0
        while i < len(gap):
            c = gap[i]
            if c == "#":
                nl = gap.find("\n", i)
                i = len(gap) if nl < 0 else nl
                continue
            if c == "(":
                depth += 1
            elif c == ")":
                depth -= 1
                if depth == 0 and not (el is None and pos + i == b - 1):
                    return False
            i += 1
        if el is not None:
            pos = offset(el.end_lineno, el.end_col_offset)
    return True


# ---------------------------------------------------------------------------------------------
# the script's data
def imported_class(s: Script, local: str, needs: str | None = None) -> "tuple[Script, str, str] | None":
    """(that module's Script, the class's name there, the module's path relative to this file) for
    the name ``local`` imported at the top of ``s`` from a module of the repository
    (``from models.mlp import MLP``, relative imports too); None otherwise. One hop: the module's
    own imports are not followed. With ``needs``, None too for a module whose text does not hold
    that word (it is then not parsed: a caller that looks for a call of ``DistributedSampler``
    there need not build the Script of every module a name comes from)."""
    import ast

    tree = getattr(s, "_module", None)
    if s.module_loader is None or s.abspath is None or tree is None or local in s.classes or local in s.functions:
        return None
    found = [(st.module or "", st.level, a.name) for st in tree.body
             if isinstance(st, ast.ImportFrom) for a in st.names if (a.asname or a.name) == local]
    if len(found) != 1:
        return None
    module, level, name = found[0]
    got = s.module_loader(s.abspath, module, level, needs) if needs else s.module_loader(s.abspath, module, level)
    if got is None:
        return None
    rel, mod = got
    return mod, name, rel


def script_of(f: FileFacts) -> Script | None:
    """The :class:`Script` of a file read by the Python reader, else None."""
    d = getattr(f, "data", None)
    return d if isinstance(d, Script) else None


def job_scripts(job: Any) -> list[tuple[FileFacts, Script]]:
    """(FileFacts, Script) of every Python file of ``job``, in the job's order."""
    out = []
    for f in getattr(job, "files", ()):
        s = script_of(f)
        if s is not None:
            out.append((f, s))
    return out
