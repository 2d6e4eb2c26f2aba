"""DDP — data-parallel wrappers (DDP001–DDP004)."""

from __future__ import annotations

import re
from typing import Iterable

from parallint.model.diagnostics import Diagnostic, Severity
from parallint.model.script import Script, job_scripts, script_of
from parallint.model.rule import Example, Rule

_PY = frozenset({"python"})


#: torch.nn classes that hold no forward of their own (or hold parameters a forward may skip)
_NOT_A_LAYER = frozenset({"Module", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict", "Parameter",
                          "DataParallel", "DistributedDataParallel", "parallel", "functional", "init", "utils"})
#: methods that return the same module (moved or cast)
_SAME_MODULE = frozenset({"to", "cuda", "cpu", "float", "half", "bfloat16", "double", "train", "to_empty",
                          "requires_grad_"})
_NEEDED_COMMENT = re.compile(r"unused|not all|required|needed|necessary|must|otherwise|skip|frozen|freez|expert"
                             r"|branch|conditional", re.I)


def _all_layers(s: Script, node, frame, depth: int = 0) -> str | None:
    """A description when ``node`` is a model built here whose forward uses every parameter: an
    ``nn.Sequential`` of torch.nn layers (or one torch.nn layer), possibly moved with ``.cuda()``
    / ``.to()``. None when that cannot be shown."""
    import ast

    from parallint.model.script import call_args

    if depth > 6 or node is None:
        return None
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in _SAME_MODULE and not s.qnames(func):
            if func.attr == "requires_grad_":
                return None  # parameters frozen or not: not shown
            return _all_layers(s, func.value, frame, depth + 1)
        qs = s.qnames(func)
        if not qs:
            return None
        if any(q in ("torch.nn.Sequential", "torch.nn.modules.container.Sequential") for q in qs):
            args = call_args(node)
            if not args or any(a.star or a.keyword is not None for a in args):
                return None
            if all(_all_layers(s, a.value, frame, depth + 1) for a in args):
                return "an nn.Sequential of torch.nn layers"
            return None
        for q in qs:
            parts = q.split(".")
            if (len(parts) == 3 and parts[:2] == ["torch", "nn"] and parts[2][:1].isupper()
                    and parts[2] not in _NOT_A_LAYER):
                return f"torch.nn.{parts[2]}"
        return None
    if isinstance(node, ast.Name) and frame is not None:
        b = s.binding(node.id, frame)
        if b is not None:
            return _all_layers(s, b[0], b[1], depth + 1)
        return None
    return None


def _local_model_class(s: Script, node) -> str | None:
    """``Net(...)`` for an ``nn.Module`` subclass of this file whose ``__init__`` only registers
    torch.nn layers and whose ``forward`` calls every one of them, with no branch, loop or
    exception handler: every parameter takes part in every step."""
    import ast

    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
        return None
    name = node.func.id
    classes = s.classes.get(name, [])
    if len(classes) != 1 or name in s.import_map or classes[0].node is None:
        return None
    cdef = classes[0].node
    if len(cdef.bases) != 1 or not (s.qnames(cdef.bases[0]) & {"torch.nn.Module", "torch.nn.modules.module.Module"}):
        return None
    methods = {f.name: f for fs in s.functions.values() for f in fs if f.parent is classes[0]}
    init, fwd = methods.get("__init__"), methods.get("forward")
    if init is None or fwd is None or fwd.node is None:
        return None
    layers: set[str] = set()
    for key, bs in s.attr_bindings.items():
        if not key.startswith("self.") or key.count(".") != 1:
            continue
        mine = [(e, fr) for e, fr in bs if fr.parent is classes[0] or fr is init]
        if not mine:
            continue
        if any(fr is not init for _e, fr in mine) or len(mine) != 1:
            return None  # assigned outside __init__ or twice: not a fixed set of layers
        expr = mine[0][0]
        if isinstance(expr, ast.Call):
            if _all_layers(s, expr, init) is None:
                return None  # a submodule that is not a plain torch.nn layer: may skip parameters
            layers.add(key[5:])
    if not layers or s.methods("add_module") or s.methods("register_module") or s.methods("register_parameter"):
        return None
    if _has_branches(fwd.node.body):
        return None
    called = {c.method for c in s.calls if c.frame is fwd and c.method and isinstance(c.receiver, ast.Name)
              and c.receiver.id == "self"}
    if layers - called:
        return None
    return f"{name}, a module of this file whose forward calls every layer it registers"


def _has_branches(body: list) -> bool:
    """A branch, loop, exception handler, nested function or `with` in the statements ``body``, or
    more than one line of it (among its own statements) that returns."""
    import ast

    branching = (ast.If, ast.IfExp, ast.For, ast.AsyncFor, ast.While, ast.Try, ast.BoolOp, ast.FunctionDef,
                 ast.AsyncFunctionDef, ast.Lambda, ast.With, ast.AsyncWith)
    for st in body:
        for node in ast.walk(st):
            if isinstance(node, branching):
                return True
    return len({st.lineno for st in body if isinstance(st, ast.Return)}) > 1


def _previous_binding(s: Script, call, name: str):
    """The expression ``name`` was built from before ``name = DDP(name, ...)`` in the same scope,
    passing over moves (``name = name.to(device)``)."""
    import ast

    from parallint.model.pyshared import MULTI

    bs = call.frame.bindings.get(name, [])
    for i, b in enumerate(bs):
        if b is call.node:
            j = i - 1
            while j >= 0:
                prev = bs[j]
                if prev is MULTI:
                    return None
                f = prev.func if isinstance(prev, ast.Call) else None
                if (isinstance(f, ast.Attribute) and f.attr in _SAME_MODULE and f.attr != "requires_grad_"
                        and isinstance(f.value, ast.Name) and f.value.id == name):
                    j -= 1
                    continue
                return prev
            return None
    return None


def _wrapped_model_uses_every_parameter(s: Script, call) -> str | None:
    import ast

    m = call.arg_node("module", 0)
    if m is None:
        return None
    if isinstance(m, ast.Name):
        prev = _previous_binding(s, call, m.id)
        if prev is not None:
            m = prev
    while isinstance(m, ast.Call) and isinstance(m.func, ast.Attribute) and m.func.attr in _SAME_MODULE \
            and m.func.attr != "requires_grad_" and not s.qnames(m.func):
        m = m.func.value
    return _all_layers(s, m, call.frame) or _local_model_class(s, m)


def _comment_says_needed(text: str, line: int) -> bool:
    """A comment on the lines around ``line`` explaining the flag ("not all experts are routed")."""
    import io
    import tokenize

    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT and line - 3 <= tok.start[0] <= line + 1:
                if _NEEDED_COMMENT.search(tok.string):
                    return True
            if tok.start[0] > line + 1:
                break
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return True  # cannot tell: stay silent
    return False


class FindUnusedParameters(Rule):
    code = "DDP001"
    calls = frozenset({"ddp"})
    facts = frozenset({"ddp.find_unused_parameters"})
    name = "find-unused-parameters"
    severity = Severity.WARNING
    summary = "find_unused_parameters=True on a model whose forward provably uses every parameter"
    kinds = _PY  # configs state the flag but never show the model: no evidence either way
    doc = """
    ## What it does
    Flags `DistributedDataParallel(..., find_unused_parameters=True)` when the script shows that the
    flag cannot be needed: the model DDP wraps is built in the same file as an `nn.Sequential` of
    torch.nn layers (or a single torch.nn layer), or is an `nn.Module` subclass of the file whose
    `__init__` registers only torch.nn layers and whose `forward` calls every one of them with no
    branch, loop or early return: every parameter takes part in every step.

    The flag is often *required*: GANs and manual optimisation (`automatic_optimization = False`,
    several optimisers), mixture-of-experts routing, multimodal and conditional-branch models,
    adapters over frozen weights, and configs that never train (inference, export, conversion).
    Whether a model leaves parameters unused is a property of its forward, which a linter rarely
    sees. So the rule fires only on positive evidence that every parameter is used, and is silent
    otherwise: on `DDPStrategy(find_unused_parameters=True)`, the HF `ddp_find_unused_parameters`
    argument, accelerate's `DistributedDataParallelKwargs`, Lightning strategy strings and YAML/JSON
    configs (none of them show the model), and when a comment next to the flag explains it.

    ## Why it matters
    With the flag on, DDP walks the autograd graph after every forward pass to find parameters
    that did not take part, and it cannot overlap all of its gradient all-reduce with backward.
    When every parameter is used this is pure overhead on every step.

    ## Example

    ## How to fix
    Drop the flag. If DDP then reports unused parameters, remove the unused submodules from the
    model or freeze them (`requires_grad_(False)`); keep the flag only for models whose forward
    really skips parameters depending on the input, or use `static_graph=True` when the set of
    used parameters is the same every step.
    """
    valid = [
        Example("""
            import torch.distributed as dist
            from torch.nn.parallel import DistributedDataParallel as DDP
            model = DDP(model, device_ids=[local_rank])
        """),
        Example("""
            import os
            import torch.nn as nn
            from torch.nn.parallel import DistributedDataParallel as DDP
            model = nn.Sequential(nn.Linear(8, 8), nn.ReLU())
            model = DDP(model, find_unused_parameters=os.environ.get("FIND_UNUSED") == "1")
        """),
        # a model this file does not build: nothing shows every parameter is used
        Example("""
            from torch.nn.parallel import DistributedDataParallel as DDP
            from mypkg.models import MoETransformer
            model = DDP(MoETransformer(cfg).cuda(), device_ids=[local_rank], find_unused_parameters=True)
        """),
        # a GAN under Lightning: manual optimisation, two optimisers
        Example("""
            import lightning as L
            from lightning.pytorch.strategies import DDPStrategy
            trainer = L.Trainer(strategy=DDPStrategy(find_unused_parameters=True), devices=8)
        """),
        Example("""
            from transformers import TrainingArguments
            args = TrainingArguments(output_dir="out", ddp_find_unused_parameters=True)
        """),
        # explained next to the flag
        Example("""
            import torch.nn as nn
            from torch.nn.parallel import DistributedDataParallel as DDP
            model = nn.Sequential(nn.Linear(8, 8), nn.Linear(8, 8))
            # the second head is skipped on text-only batches, so this is required
            model = DDP(model, find_unused_parameters=True)
        """),
    ]
    invalid = [
        Example("""
            import torch.nn as nn
            import torch.nn.parallel as par
            model = nn.Sequential(nn.Linear(128, 256), nn.ReLU(), nn.Linear(256, 10)).cuda(local_rank)
            model = par.DistributedDataParallel(model, device_ids=[local_rank], find_unused_parameters=True)
        """, line=4),
        Example("""
            import torch.nn as nn
            from torch.nn.parallel import DistributedDataParallel as DDP
            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc1 = nn.Linear(784, 128)
                    self.fc2 = nn.Linear(128, 10)
                def forward(self, x):
                    return self.fc2(self.fc1(x).relu())
            model = DDP(Net().cuda(), device_ids=[local_rank], find_unused_parameters=True)
        """, line=10),
        Example("""
            import torch
            from torch.nn.parallel import DistributedDataParallel as DDP
            FIND_UNUSED = True
            net = DDP(torch.nn.Linear(1024, 1024).to(local_rank), device_ids=[local_rank], find_unused_parameters=FIND_UNUSED)
        """, line=4),
    ]

    def check_file(self, f, ctx) -> Iterable[Diagnostic]:
        s = script_of(f)
        if s is None:
            return  # configs and framework arguments never show the model: no evidence either way
        for c in s.by("ddp"):
            v = s.arg(c, "find_unused_parameters")
            if v is None or not v.known or v.value is not True:
                continue
            what = _wrapped_model_uses_every_parameter(s, c)
            if what is None:
                continue
            span = s.arg_span(c, "find_unused_parameters")
            if _comment_says_needed(s.text, span.line):
                continue
            yield self.report(
                span,
                f"find_unused_parameters=True, but the model DDP wraps is {what} built here: every "
                "parameter takes part in each forward pass, so DDP searches the autograd graph after "
                "every step for nothing and delays the gradient all-reduce; remove find_unused_parameters=True",
            )


def _single_element(n):
    """The one element's expression of a one-element list, tuple, set or dict display (a dict's
    value; a ``*x`` element's ``x``), else None."""
    import ast

    if isinstance(n, (ast.List, ast.Tuple, ast.Set)) and len(n.elts) == 1:
        e = n.elts[0]
        return e.value if isinstance(e, ast.Starred) else e
    if isinstance(n, ast.Dict) and len(n.values) == 1:
        return n.values[0]
    return None


def _device_uses(s: Script):
    """(expression node, span, frame, what) for every place an expression selects the device."""
    for c in s.by("ddp"):
        n = c.arg_node("device_ids", 1)
        one = _single_element(n)
        if one is not None:
            yield one, c.frame, "device_ids=[...]"
    for c in s.by("set_device"):
        if c.qnames & {"torch.cuda.set_device", "torch.accelerator.set_device_index"}:
            n = c.arg_node("device", 0)
            if n is not None:
                yield n, c.frame, "torch.cuda.set_device(...)"
    for c in s.calls:
        if c.method in ("to", "cuda") and not c.groups and c.receiver is not None:
            n = c.arg_node("device", 0)
            if n is not None:
                yield n, c.frame, f".{c.method}(...)"
        elif "torch.device" in c.qnames:
            n = c.arg_node("index", 1)
            if n is not None:
                yield n, c.frame, "torch.device(...)"
    for expr, _span, frame, _guards in s.fstrings:
        yield expr, frame, 'f"cuda:{...}"'


class GlobalRankAsDevice(Rule):
    code = "DDP002"
    calls = frozenset({"ddp", "set_device", "spawn"})
    facts = frozenset({"parallel.nodes"})
    name = "global-rank-as-device"
    severity = Severity.ERROR
    summary = "the global rank selects the CUDA device in a job that spans several nodes (use the local rank)"
    kinds = frozenset()  # job-level: only a launch that spans several nodes makes it a bug
    doc = """
    ## What it does
    Flags the global rank (`dist.get_rank()`, `RANK`, `SLURM_PROCID`, or a variable holding one)
    used to pick the GPU (`device_ids=[rank]`, `torch.cuda.set_device(rank)`, `.to(rank)`,
    `.cuda(rank)`, `torch.device("cuda", rank)`, `f"cuda:{rank}"`) in a script that a linked launch
    starts on more than one node (torchrun `--nnodes 2`, `srun -N 4`, a Lightning
    `Trainer(num_nodes=2)` ...).

    On one node the global rank *is* the local rank, so the pattern is only a bug when the job
    spans nodes. The rule therefore stays silent when the script is not started by a launch that
    says how many nodes it uses (a script checked alone, a launch with an unknown `--nnodes`), when
    the launch is one node, and in scripts that start their own workers with
    `torch.multiprocessing.spawn` / `colossalai.testing.spawn` (a harness on one host). Test
    suites that spawn ranks on localhost are single-node by construction and are never flagged.
    The verdict comes from the script and the launches linked to it, never from other files that
    happen to be in the run.

    ## Why it matters
    Device indices are per node (0..7 on an 8-GPU box) while the global rank runs over the whole
    job. On the second node rank 8 asks for `cuda:8`, which does not exist: "invalid device
    ordinal".

    ## Example

    ## How to fix
    Use the local rank: `local_rank = int(os.environ["LOCAL_RANK"])` (set by torchrun, accelerate
    and DeepSpeed launchers; `SLURM_LOCALID` under srun), or `rank % torch.cuda.device_count()`.
    """
    valid = [
        Example(files={
            "run.sh": "torchrun --nnodes 2 --nproc_per_node 8 train.py\n",
            "train.py": """
                import os
                import torch
                import torch.distributed as dist
                from torch.nn.parallel import DistributedDataParallel as DDP
                local_rank = int(os.environ["LOCAL_RANK"])
                torch.cuda.set_device(local_rank)
                model = DDP(model.to(local_rank), device_ids=[local_rank])
            """,
        }),
        Example("""
            import torch
            import torch.distributed as dist
            rank = dist.get_rank()
            device_id = rank % torch.cuda.device_count()
            model = model.to(device_id)
        """),
        # a test harness on one host: the global rank is the local rank
        Example("""
            import torch
            import torch.distributed as dist
            import torch.multiprocessing as mp
            def run(rank, world_size):
                dist.init_process_group("nccl", rank=rank, world_size=world_size)
                torch.cuda.set_device(dist.get_rank())
            def test_allreduce():
                mp.spawn(run, args=(2,), nprocs=2)
        """, filename="tests/test_allreduce.py"),
        # one node: correct today, and nothing says the job ever grows
        Example(files={
            "run.sh": "torchrun --nnodes 1 --nproc_per_node 8 train.py\n",
            "train.py": """
                import os
                import torch
                import torch.distributed as dist
                dist.init_process_group("nccl")
                torch.cuda.set_device(int(os.environ["RANK"]))
            """,
        }),
    ]
    invalid = [
        Example(
            files={
                "run.sh": "torchrun --nnodes 2 --nproc_per_node 8 train.py\n",
                "train.py": """
                    import os
                    import torch
                    import torch.distributed as dist
                    dist.init_process_group("nccl")
                    rank = int(os.environ["RANK"])
                    model = model.cuda(rank)
                """,
            },
            line=6,
        ),
        Example(
            files={
                "job.sbatch": "#!/bin/bash\n#SBATCH --nodes=4\n#SBATCH --ntasks-per-node=8\nsrun python train.py\n",
                "train.py": """
                    import torch
                    import torch.distributed as dist
                    from torch.nn.parallel import DistributedDataParallel as DDP
                    dist.init_process_group("nccl")
                    rank = dist.get_rank()
                    torch.cuda.set_device(rank)
                    model = DDP(model, device_ids=[rank])
                """,
            },
            line=6, count=2,
        ),
    ]

    def _findings(self, f, s: Script, nodes: int) -> Iterable[Diagnostic]:
        seen = set()
        for node, frame, what in _device_uses(s):
            if s.rank_kind(node, frame) != "global":
                continue
            span = s.span_of(node)
            if (span.line, span.column) in seen:
                continue
            seen.add((span.line, span.column))
            yield self.report(
                span,
                f"the global rank `{s.code(node)}` selects the device in {what}, but this job spans "
                f"{nodes} nodes: ranks >= the GPUs per node ask for a device that does not exist; "
                "use the local rank (LOCAL_RANK)",
            )

    def check_job(self, job, ctx) -> Iterable[Diagnostic]:
        nodes = job.int("parallel.nodes")
        if nodes is None or nodes <= 1:
            return  # one node, or unknown: the global rank is (or may be) the local rank
        for f, s in job_scripts(job):
            if s.has("spawn"):
                continue  # workers started on this host: a single-node harness
            yield from self._findings(f, s, nodes)


class ReentrantCheckpointUnderDDP(Rule):
    code = "DDP003"
    calls = frozenset({"checkpoint", "ddp"})
    name = "reentrant-checkpoint-under-ddp"
    severity = Severity.WARNING
    summary = "torch.utils.checkpoint.checkpoint without use_reentrant=False in a DDP-trained script"
    kinds = _PY
    doc = """
    ## What it does
    Flags `torch.utils.checkpoint.checkpoint(...)` calls that do not pass `use_reentrant=False` in a
    script that wraps its model in DistributedDataParallel (unless the DDP model uses
    `static_graph=True`).

    ## Why it matters
    Reentrant checkpointing runs a second, hidden backward pass. DDP's reducer then sees a
    parameter become ready twice or never and stops with "Expected to mark a variable ready only
    once" or hangs, in particular with `find_unused_parameters=True` or parameters shared
    between checkpointed blocks. PyTorch also warns that the reentrant default is going away.

    ## Example

    ## How to fix
    Pass `use_reentrant=False` (the non-reentrant implementation works with DDP), or build DDP
    with `static_graph=True`.
    """
    valid = [
        Example("""
            import torch.utils.checkpoint as cp
            from torch.nn.parallel import DistributedDataParallel as DDP
            def forward(block, x):
                return cp.checkpoint(block, x, use_reentrant=False)
            model = DDP(model, device_ids=[local_rank])
        """),
        Example("""
            from torch.utils.checkpoint import checkpoint
            def forward(block, x):
                return checkpoint(block, x)
        """),
        Example("""
            from torch.utils.checkpoint import checkpoint
            from torch.nn.parallel import DistributedDataParallel as DDP
            def forward(block, x):
                return checkpoint(block, x)
            model = DDP(model, device_ids=[local_rank], static_graph=True)
        """),
    ]
    invalid = [
        Example("""
            from torch.utils.checkpoint import checkpoint
            from torch.nn.parallel import DistributedDataParallel as DDP
            def forward(block, x):
                return checkpoint(block, x)
            model = DDP(model, device_ids=[local_rank])
        """, line=4),
        Example("""
            import torch
            def forward(block, x):
                return torch.utils.checkpoint.checkpoint(block, x, use_reentrant=True)
            model = torch.nn.parallel.DistributedDataParallel(model)
        """, line=3),
    ]

    def check_file(self, f, ctx) -> Iterable[Diagnostic]:
        s = script_of(f)
        if s is None or not s.has("ddp"):
            return
        static = [s.arg(c, "static_graph") for c in s.by("ddp")]
        if all(v is not None and (not v.known or v.value is True) for v in static):
            return  # every DDP here is static (or may be)
        if s.methods("_set_static_graph"):
            return
        for c in s.by("checkpoint"):
            v = s.arg(c, "use_reentrant")
            if v is None:
                msg = "checkpoint() without use_reentrant=False under DDP: the reentrant default"
            elif v.known and v.value is True:
                msg = "checkpoint(use_reentrant=True) under DDP: reentrant checkpointing"
            else:
                continue
            yield self.report(
                c.span,
                f"{msg} re-runs backward behind DDP's reducer (\"mark a variable ready only once\"); "
                "pass use_reentrant=False or use DDP(static_graph=True)",
            )


class MultipleDeviceIds(Rule):
    code = "DDP004"
    calls = frozenset({"ddp"})
    name = "multiple-device-ids"
    severity = Severity.ERROR
    summary = "DistributedDataParallel device_ids with more than one element"
    kinds = _PY
    doc = """
    ## What it does
    Flags `DistributedDataParallel(..., device_ids=[...])` given more than one device.

    ## Why it matters
    Single-process multi-device DDP was removed: DDP raises "device_ids can only be None or
    contain a single element" when the job starts, after the GPUs are allocated.

    ## Example

    ## How to fix
    Start one process per GPU (torchrun `--nproc_per_node`) and pass each process its own device:
    `device_ids=[local_rank]`.
    """
    valid = [
        Example("""
            from torch.nn.parallel import DistributedDataParallel as DDP
            model = DDP(model, device_ids=[local_rank], output_device=local_rank)
        """),
        Example("""
            import torch
            model = torch.nn.DataParallel(model, device_ids=[0, 1, 2, 3])
        """),
    ]
    invalid = [
        Example("""
            from torch.nn.parallel import DistributedDataParallel as DDP
            model = DDP(model, device_ids=[0, 1, 2, 3])
        """, line=2),
        Example("""
            import torch
            GPUS = list(range(2))
            model = torch.nn.parallel.DistributedDataParallel(model, device_ids=GPUS)
        """, line=3),
    ]

    def check_file(self, f, ctx) -> Iterable[Diagnostic]:
        s = script_of(f)
        if s is None:
            return
        for c in s.by("ddp"):
            v = s.arg(c, "device_ids", 1)
            if v is None or not v.known or not isinstance(v.value, (list, tuple)):
                continue
            if len(v.value) > 1:
                yield self.report(
                    s.arg_span(c, "device_ids", 1),
                    f"DistributedDataParallel got device_ids with {len(v.value)} devices "
                    f"({list(v.value)!r}); DDP accepts one device per process; pass device_ids=[local_rank] and "
                    "start one process per GPU",
                )


__all__ = ["FindUnusedParameters", "GlobalRankAsDevice", "ReentrantCheckpointUnderDDP", "MultipleDeviceIds"]
