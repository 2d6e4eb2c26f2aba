"""DDP001 find-unused-parameters: find_unused_parameters=True on a model whose forward provably uses every parameter (warning), or with nothing that shows it is needed (an info hint)"""

from __future__ import annotations

import re

from parallint.model.diagnostics import Diagnostic, Severity
from parallint.model.fixes import Fix, drop_keyword
from parallint.model.rule import Example, Rule
from parallint.rules.ddp._common import _PY

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Iterable

    from parallint.model.script import Script


def script_of(f) -> "Script | None":
    """The Script of a Python file (the script model is imported only for one: a YAML check stays light)."""
    if getattr(f, "kind", None) != "python":
        return None
    from parallint.model.script import script_of as of

    return of(f)


#: torch.nn classes that hold no forward of their own (or hold parameters a forward may skip)
_NOT_A_LAYER = frozenset({"Module", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict", "Parameter",
                          "DataParallel", "DistributedDataParallel", "parallel", "functional", "init", "utils"})


#: methods that return the same module (moved or cast)
_SAME_MODULE = frozenset({"to", "cuda", "cpu", "float", "half", "bfloat16", "double", "train", "to_empty",
                          "requires_grad_"})


_NEEDED_COMMENT = re.compile(r"unused|not all|required|needed|necessary|must|otherwise|skip|frozen|freez|expert"
                             r"|branch|conditional|(?:not|n't)\s+(?:\w+\s+)?(?:use|all)\b", re.I)


#: words in a file (or its path) that show the flag is needed: manual optimisation and GANs, mixture
#: of experts, frozen weights and adapters, several modalities or heads, actor-critic RL
_NEEDS_FLAG = re.compile(
    r"automatic_optimization\s*[:=]\s*False|discriminat|adversarial|(?:hifi|style|cycle|big|vq|wgan|dc)?gan\b"
    r"|(?<![a-z])moe|moe(?![a-z])|expert|\brouter\b|mixtral"
    r"|requires_grad_?\s*(?:=|\()\s*False|freez|frozen|\bpeft\b|\blora|adapter|prefix_tuning|prompt_tuning"
    r"|condition(?:al|ing)|multimodal|modality|\bvision_|\bvisual_|vision_tower|mm_projector|aux(?:iliary)?_(?:head|loss)"
    r"|(?<![a-z])[pd]po|critic|value_head|ref_model|reference_model",
    re.I,
)


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
    return _all_layers(s, m, call.frame) or _local_model_class(s, m) or _imported_model_class(s, m)


def _imported_model_class(s: Script, node) -> str | None:
    """``Net(...)`` for a class imported from a module of the repository (``from models.mlp
    import MLP``) that :func:`_local_model_class` proves uses every parameter there."""
    import ast

    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
        return None
    from parallint.model.script import imported_class

    got = imported_class(s, node.func.id)
    if got is None:
        return None
    mod, name, rel = got
    if _local_model_class(mod, ast.Call(func=ast.Name(id=name, ctx=ast.Load()), args=[], keywords=[])) is None:
        return None
    return f"{name} from {rel}, whose forward calls every layer it registers,"


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
    facts = frozenset({"ddp.find_unused_parameters", "parallel.nodes", "parallel.procs_per_node"})
    name = "find-unused-parameters"
    severity = Severity.WARNING
    summary = ("find_unused_parameters=True on a model whose forward provably uses every parameter (warning), "
               "or with nothing that shows it is needed (an info hint)")
    #: the warning needs the model, which only a script shows; the hint reads the flag in every spelling
    kinds = _PY | frozenset({"hftrainargs", "lightning_cli", "nemo", "jobspec"})
    fix_safety = "safe"
    fix_doc = ("`--fix` removes `find_unused_parameters=True` where the warning proves every parameter is used; "
               "the info hint has no fix (only a run shows whether the flag is needed).")
    doc = """
    ## What it does
    Reads `find_unused_parameters=True` in every spelling: `DistributedDataParallel(...)`,
    Lightning's `DDPStrategy(find_unused_parameters=True)` and `strategy="ddp_find_unused_parameters_true"`
    (in a script, a LightningCLI or a NeMo/Hydra config), the HF `ddp_find_unused_parameters`
    argument (in `TrainingArguments(...)`, a YAML/JSON arguments file or `--ddp_find_unused_parameters
    true` on a launch line), accelerate's `DistributedDataParallelKwargs`, and job specs. It answers
    in three tiers:

    - **warning**: the model DDP wraps is built in the same file and provably uses every parameter:
      an `nn.Sequential` of torch.nn layers (or a single torch.nn layer), or an `nn.Module` subclass
      of the file whose `__init__` registers only torch.nn layers and whose `forward` calls every one
      of them with no branch, loop or early return.
    - **silent**: the code shows the flag is needed or costs nothing. Manual optimisation or a GAN
      (`automatic_optimization = False`, a discriminator), mixture-of-experts routing, frozen weights
      and adapters (`requires_grad_(False)`, `freeze`, PEFT/LoRA), several modalities or auxiliary
      heads, actor-critic and preference training (PPO, DPO, a reference model), a `forward` of the
      file that calls a submodule only under a branch, a comment next to the flag that gives the
      reason, a file that never trains (its name says inference, export, conversion, evaluation,
      generation or serving; a script that only evaluates; `do_train: false`), and a single process
      (`devices: 1` on one node: there is no DDP). These words are read in the file that sets the
      flag, its path, the job's script and the launch line.
    - **info** otherwise: a hint that says what the flag costs and how to check whether it is
      needed. It does not fail the default gate (`--fail-level warning`), and a `# noqa: DDP001`
      on its line is a used suppression.

    ## Why it matters
    With the flag on, DDP walks the autograd graph after every forward pass to find parameters
    that did not take part, and it cannot overlap all of its gradient all-reduce with backward.
    When every parameter is used this is pure overhead on every step: public reports show
    Lightning epochs several times slower after switching to `ddp_find_unused_parameters_true`.

    ## Example

    ## How to fix
    Drop the flag. If DDP then reports unused parameters, remove the unused submodules from the
    model or freeze them (`requires_grad_(False)`); keep the flag only for models whose forward
    really skips parameters depending on the input, or use `static_graph=True` when the set of
    used parameters is the same every step. To check a hinted flag, run a few steps: with the flag
    DDP warns on the first step when it found no unused parameter; without it DDP stops with an
    error naming the unused ones (`TORCH_DISTRIBUTED_DEBUG=DETAIL` lists them). When the flag is
    needed, say why in a comment next to it (the hint is then silent).
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
        # mixture of experts: routing leaves experts out of a step
        Example("""
            from torch.nn.parallel import DistributedDataParallel as DDP
            from mypkg.models import MoETransformer
            model = DDP(MoETransformer(cfg).cuda(), device_ids=[local_rank], find_unused_parameters=True)
        """),
        # a GAN under Lightning: manual optimisation, two optimisers
        Example("""
            import lightning as L
            from lightning.pytorch.strategies import DDPStrategy
            class GAN(L.LightningModule):
                def __init__(self):
                    super().__init__()
                    self.automatic_optimization = False
            trainer = L.Trainer(strategy=DDPStrategy(find_unused_parameters=True), devices=8)
        """),
        # LoRA adapters over a frozen base
        Example("""
            from peft import get_peft_model
            from transformers import Trainer, TrainingArguments
            model = get_peft_model(base, lora_config)
            args = TrainingArguments(output_dir="out", ddp_find_unused_parameters=True)
            Trainer(model=model, args=args).train()
        """),
        # explained next to the flag
        Example("""
            import torch.nn as nn
            from torch.nn.parallel import DistributedDataParallel as DDP
            model = nn.Sequential(nn.Linear(8, 8), nn.Linear(8, 8))
            # the second head is skipped on text-only batches, so this is required
            model = DDP(model, find_unused_parameters=True)
        """),
        # one process: no DDP at all
        Example(filename="configs/train.yaml", code="""
            trainer:
              devices: 1
              num_nodes: 1
              strategy: ddp_find_unused_parameters_true
            model:
              hidden: 512
        """),
        # a forward that calls a head only on some batches
        Example("""
            import torch.nn as nn
            from torch.nn.parallel import DistributedDataParallel as DDP
            from mypkg import Backbone
            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.body, self.head = Backbone(), nn.Linear(8, 2)
                def forward(self, x, labels=None):
                    h = self.body(x)
                    if labels is not None:
                        return self.head(h)
                    return h
            model = DDP(Net().cuda(), find_unused_parameters=True)
            loss.backward()
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
        # the hints (info): nothing shows whether the model leaves parameters unused
        Example("""
            from torch.nn.parallel import DistributedDataParallel as DDP
            from mypkg.models import build_model
            model = DDP(build_model(cfg).cuda(), device_ids=[local_rank], find_unused_parameters=True)
            loss.backward()
        """, line=3),
        Example("""
            import lightning as L
            trainer = L.Trainer(devices=8, strategy="ddp_find_unused_parameters_true")
            trainer.fit(model, datamodule=dm)
        """, line=2),
        Example("""
            import lightning as L
            from lightning.pytorch.strategies import DDPStrategy
            trainer = L.Trainer(strategy=DDPStrategy(find_unused_parameters=True), devices=8)
            trainer.fit(model)
        """, line=3),
        Example("""
            from transformers import Trainer, TrainingArguments
            args = TrainingArguments(output_dir="out", per_device_train_batch_size=8, ddp_find_unused_parameters=True)
            Trainer(model=model, args=args).train()
        """, line=2),
        Example("""
            from accelerate import Accelerator, DistributedDataParallelKwargs
            kwargs = DistributedDataParallelKwargs(find_unused_parameters=True)
            accelerator = Accelerator(kwargs_handlers=[kwargs])
            model, optimizer = accelerator.prepare(model, optimizer)
        """, line=2),
        Example(filename="configs/sft.yaml", code="""
            output_dir: out
            per_device_train_batch_size: 4
            gradient_accumulation_steps: 8
            ddp_find_unused_parameters: true
        """, line=4),
        Example(filename="launch.sh", code="""
            #!/bin/bash
            torchrun --nproc_per_node 8 train.py \\
                --output_dir out --per_device_train_batch_size 4 \\
                --ddp_find_unused_parameters true
        """, files={"train.py": """
            from transformers import HfArgumentParser, Trainer, TrainingArguments
            parser = HfArgumentParser(TrainingArguments)
            (args,) = parser.parse_args_into_dataclasses()
            Trainer(model=model, args=args).train()
        """}, paths=["launch.sh"], line=4),
    ]

    def check_file(self, f, ctx) -> Iterable[Diagnostic]:
        s = script_of(f)
        warned: set[tuple[int, int]] = set()
        if s is not None:
            for c in s.by("ddp"):
                v = s.arg(c, "find_unused_parameters")
                if v is None or not v.known or v.value is not True:
                    continue
                what = _wrapped_model_uses_every_parameter(s, c)
                if what is None:
                    continue
                span = s.arg_span(c, "find_unused_parameters")
                if _comment_says_needed(s.text, span.line):
                    warned.add((span.line, span.column))  # explained: neither a warning nor a hint
                    continue
                warned.add((span.line, span.column))
                yield self.report(
                    span,
                    f"find_unused_parameters=True, but the model DDP wraps is {what} built here: every "
                    "parameter takes part in each forward pass, so DDP searches the autograd graph after "
                    "every step for nothing and delays the gradient all-reduce; remove find_unused_parameters=True",
                    fix=Fix("remove find_unused_parameters=True", safe=True, data="find_unused_parameters"),
                )
        on = [v for v in f.facts.known("ddp.find_unused_parameters")
              if v.value is True and v.span is not None and v.span.path == f.path
              and (v.span.line, v.span.column) not in warned]
        if not on or _shows_flag_needed(f, s):
            return
        for v in on:
            if _comment_near(f.text or "", v.span.line, python=s is not None):
                continue
            yield self._hint(v)

    def check_job(self, job, ctx) -> Iterable[Diagnostic]:
        # HF TrainingArguments given on a launch line (`--ddp_find_unused_parameters true`): the
        # linker's view of that line is a file of the job that no file check sees
        views = [x for x in job.files if x.kind == "hftrainargs" and "#L" in str(x.abspath)]
        if not views:
            return
        scripts = [x for x in job.files if x.kind == "python" and "#L" not in str(x.abspath)]
        root_text = job.root.text or ""
        for view in views:
            on = [v for v in view.facts.known("ddp.find_unused_parameters") if v.value is True and v.span is not None]
            if not on:
                continue
            if any(_shows_flag_needed(x, script_of(x)) for x in scripts):
                continue
            launch_text = " ".join(str(a.value) for a in getattr(job.launch, "args", ()) or () if a.known)
            if _NEEDS_FLAG.search(launch_text):
                continue  # --use_peft, --lora_r, --freeze_vision_tower ... on the launch line
            for v in on:
                if _comment_near(root_text, v.span.line, python=False):
                    continue
                yield self._hint(v)

    def apply_fix(self, diag, text):
        return drop_keyword(text, diag.span, diag.fix.data)

    def _hint(self, v) -> Diagnostic:
        return self.report(
            v.span,
            f"find_unused_parameters is on ({v.source}): DDP then searches the autograd graph after every "
            "forward pass and cannot overlap all of its gradient all-reduce with backward, which slows "
            "every step, and nothing here shows that the model leaves parameters unused. Verify: DDP "
            "warns on the first step when it finds no unused parameter; without the flag it stops with "
            "an error naming the unused ones (TORCH_DISTRIBUTED_DEBUG=DETAIL lists them). If the set of "
            "used parameters is the same every step, static_graph=True is the cheaper alternative; "
            "remove the flag, or keep it with a comment next to it that says why it is needed",
            severity=Severity.INFO,
        )


def _comment_near(text: str, line: int, python: bool) -> bool:
    """A comment on the lines around ``line`` that explains the flag."""
    if python:
        return _comment_says_needed(text, line)
    lines = text.splitlines()
    for i in range(max(0, line - 4), min(len(lines), line + 1)):
        j = lines[i].find("#")
        if j >= 0 and _NEEDED_COMMENT.search(lines[i][j:]):
            return True
    return False


def _shows_flag_needed(f, s: Script | None) -> bool:
    """The file shows that find_unused_parameters may be needed, or that it costs nothing: manual
    optimisation or a GAN, experts, frozen weights or adapters, several modalities or heads, a
    forward of this file that calls a submodule only on some inputs, a file that never trains, or a
    single process (no DDP at all)."""
    from pathlib import PurePath

    text = f.text or ""
    parts = PurePath(f.path).parts[-2:]
    words = [w for p in parts for w in re.split(r"[^a-z]+", p.lower()) if w]
    if any(w.startswith(_NOT_TRAINING_WORDS) for w in words):
        return True
    if _NEEDS_FLAG.search(text) or _NEEDS_FLAG.search(" ".join(parts)):
        return True
    if s is not None:
        if (not re.search(r"\btrain|Trainer|\.fit\(|backward|optim|\.step\(", text)
                and re.search(r"\.eval\(\)|no_grad|inference_mode", text)):
            return True  # never trains: inference, export, conversion
        if _forward_skips_submodule(s):
            return True
    elif re.search(r"^\s*\"?do_train\"?\s*:\s*(?:false|False)\b", text, re.M):
        return True
    procs, nodes = f.facts.get("parallel.procs_per_node"), f.facts.get("parallel.nodes")
    if procs is not None and procs.value == 1 and (nodes is None or nodes.value == 1):
        return True  # one process: the flag reaches no DDP
    return False


#: words of a file's name or folder that say it never trains
_NOT_TRAINING_WORDS = ("infer", "export", "convert", "eval", "predict", "generat", "sampl", "serv", "demo")


def _forward_skips_submodule(s: Script) -> bool:
    """A ``forward`` of this file that calls a submodule (``self.x(...)``) under a branch, or never
    names a submodule its class's ``__init__`` builds (``self.head = nn.Linear(...)``)."""
    import ast

    for f in s.functions.get("forward", []):
        if f.node is None:
            continue
        init = next((g for g in s.functions.get("__init__", []) if g.parent is f.parent and g.node is not None), None)
        if init is not None:
            used = {n.attr for n in ast.walk(f.node) if isinstance(n, ast.Attribute)
                    and isinstance(n.value, ast.Name) and n.value.id == "self"}
            for st in ast.walk(init.node):
                if not (isinstance(st, ast.Assign) and isinstance(st.value, ast.Call)):
                    continue
                fn = st.value.func
                name = fn.attr if isinstance(fn, ast.Attribute) else fn.id if isinstance(fn, ast.Name) else ""
                if not name[:1].isupper():
                    continue  # not a module built here
                for tgt in st.targets:
                    if (isinstance(tgt, ast.Attribute) and isinstance(tgt.value, ast.Name) and tgt.value.id == "self"
                            and tgt.attr not in used):
                        return True
        for node in ast.walk(f.node):
            branches: list[ast.AST]
            if isinstance(node, ast.If):
                branches = [*node.body, *node.orelse]
            elif isinstance(node, ast.IfExp):
                branches = [node.body, node.orelse]
            else:
                continue
            for sub in (x for b in branches for x in ast.walk(b)):
                if (isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute)
                        and isinstance(sub.func.value, ast.Name) and sub.func.value.id == "self"):
                    return True
    return False
