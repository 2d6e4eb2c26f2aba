"""CKP002 load-without-map-location: torch.load without map_location in a distributed script"""

from __future__ import annotations

from typing import Iterable

from parallint.model.diagnostics import Diagnostic, Severity
from parallint.model.fixes import Fix, add_keyword
from parallint.model.rule import Example, Rule
from parallint.model.script import Script, script_of
from parallint.rules.ckp._common import _PY, per_rank_path, reaches_state_load


def _loads_onto_gpus(s: Script) -> bool:
    """A script that runs torch.distributed (or deepspeed.init_distributed) itself. Not accelerate
    or Fabric: their saves gather to the CPU (FSDP full state dicts, ``accelerator.save``), so a
    plain ``torch.load`` there usually restores CPU tensors."""
    if s.has("hf_trainer", "training_args", "pl_trainer"):
        return False
    return (s.is_distributed() and not s.framework_managed()) or s.runs_setup("ds_init_distributed")


def _rank_only(s, frame, seen: frozenset[int] = frozenset()) -> bool:
    """Whether every call of the function ``frame`` in this file runs under a rank condition, at
    the call site or (recursively) around its caller: ``if get_rank() == 0: state =
    load_state_dict(path)`` makes the helper's ``torch.load`` one rank's. False when the file never
    calls it (the callers are elsewhere: unknown)."""
    if frame.kind != "function" or id(frame) in seen or len(seen) > 8:
        return False
    sites = s.callsites.get(frame.name, [])
    if not sites:
        return False
    for _call, guards, caller in sites:
        if any(g.rank or g.single for g in caller.base_guards + guards):
            continue
        if not _rank_only(s, caller, seen | {id(frame)}):
            return False
    return True


def _per_rank_file(s, c) -> bool:
    """Whether the file ``torch.load`` reads is named after the rank (``f"{d}/part-{rank}.pt"``,
    ``path.format(rank)``, ``os.path.join(d, f"rank_{local_rank}")``, or a path variable built so,
    including the data- or model-parallel rank: ``f"consolidated.{mp_rank:02d}.pth"``): each rank
    loads its own shard, which it or a converter wrote, not one file saved from cuda:0."""
    node = c.node.args[0] if c.node.args else next((k.value for k in c.node.keywords if k.arg == "f"), None)
    return node is not None and per_rank_path(s, node, c.frame)


class LoadWithoutMapLocation(Rule):
    code = "CKP002"
    calls = frozenset({"ddp", "ds_init_distributed", "fsdp", "fully_shard", "hf_trainer", "init_process_group",
                       "load", "pl_trainer", "training_args"})
    name = "load-without-map-location"
    severity = Severity.WARNING
    summary = "torch.load without map_location in a distributed script"
    fix_safety = "unsafe"
    fix_doc = ("`--unsafe-fixes` adds `map_location=\"cpu\"` to the call: the tensors then load on the CPU, "
               "and code that expects them on a GPU must move them.")
    kinds = _PY
    doc = """
    ## What it does
    In a script that sets up torch.distributed itself (or calls `deepspeed.init_distributed()`),
    flags `torch.load(...)` without `map_location` (outside rank-specific branches) whose result
    is handed to a model's or an optimizer's `load_state_dict`: directly, through a variable bound
    to it (`sd = torch.load(p)` then `model.load_state_dict(sd["model"])`), or through a function
    of the file that returns it. A load whose result never reaches such a state (a pickled
    argparse Namespace, a loss scaler's or a sampler's state, which hold no GPU tensors) and a
    load of a file named after the rank (the global, local, data- or model-parallel one, also
    through the variable the path is built in: each rank reads its own shard) are left alone. Scripts run
    by accelerate or Lightning Fabric are left alone: their checkpoint helpers gather state to the
    CPU, so a plain `torch.load` there usually restores CPU tensors.

    ## Why it matters
    Tensors saved from `cuda:0` are restored onto `cuda:0` on every rank: all processes allocate
    the checkpoint on GPU 0, which runs out of memory or slows down, and the other GPUs' copies
    end up on the wrong device.

    ## Example

    ## How to fix
    `torch.load(path, map_location="cpu")` then `model.load_state_dict(state)`, or
    `map_location=f"cuda:{local_rank}"`.
    """
    valid = [
        Example("""
            import torch
            import torch.distributed as dist
            dist.init_process_group("nccl")
            state = torch.load("ckpt.pt", map_location="cpu")
        """),
        Example("""
            import torch
            state = torch.load("ckpt.pt")
        """),
        # Fabric gathers FSDP state to the CPU when it saves: a plain load restores CPU tensors
        Example("""
            import torch
            import lightning as L
            fabric = L.Fabric(devices=8, strategy="fsdp")
            fabric.launch()
            fabric.save("ckpt.pt", {"model": model})
            state = torch.load("ckpt.pt", weights_only=True)
        """),
        # each rank reads its own shard, named after its rank
        Example("""
            import torch
            import torch.distributed as dist
            dist.init_process_group("nccl")
            rank = dist.get_rank()
            state = torch.load(f"{ckpt_dir}/part-{rank}.pt")
        """),
        # the helper runs on rank 0 only: every call of it is under a rank condition
        Example("""
            import torch
            import torch.distributed as dist
            def load_state(path):
                return torch.load(path)
            def build(model, path):
                if dist.get_rank() == 0:
                    model.load_state_dict(load_state(path))
                dist.barrier()
            dist.init_process_group("nccl")
        """),
        # a pickled argparse Namespace: read for its attributes, no tensors
        Example("""
            import torch
            import torch.distributed as dist
            dist.init_process_group("nccl")
            train_args = torch.load(os.path.join(args.ckpt, "model_args.pth"))
            print(train_args.model_parallel_size)
        """),
        # the path variable is named after the model-parallel rank; the scaler's state holds scalars
        Example("""
            import torch
            import torch.distributed as dist
            dist.init_process_group("nccl")
            mp_rank = fs_init.get_model_parallel_rank()
            path = os.path.join(args.resume, f"consolidated.{mp_rank:02d}.other.pth")
            other = torch.load(path)
            loss_scaler.load_state_dict(other["scaler"])
            rs_path = os.path.join(args.resume, f"rank-specific-{dist.get_rank():05d}.pth")
            model.load_state_dict(torch.load(rs_path))
        """),
    ]
    invalid = [
        Example("""
            import torch
            import torch.distributed as dist
            dist.init_process_group("nccl")
            state = torch.load("ckpt.pt")
            model.load_state_dict(state["model"])
        """, line=4),
        Example("""
            import torch
            from torch.nn.parallel import DistributedDataParallel as DDP
            def resume(model, path):
                model.load_state_dict(torch.load(path, weights_only=True))
                return DDP(model, device_ids=[local_rank])
        """, line=4),
        Example("""
            import deepspeed
            import torch
            deepspeed.init_distributed()
            if args.student_checkpoint is not None:
                model.load_state_dict(torch.load(args.student_checkpoint))
        """, line=5),
        # one of the helper's calls is on every rank
        Example("""
            import torch
            import torch.distributed as dist
            def load_state(path):
                return torch.load(path)
            def build(model, path):
                if dist.get_rank() == 0:
                    model.load_state_dict(load_state(path))
                return load_state(path + ".ema")
            dist.init_process_group("nccl")
        """, line=4),
    ]

    def check_file(self, f, ctx) -> Iterable[Diagnostic]:
        s = script_of(f)
        if s is None or not _loads_onto_gpus(s):
            return
        loads = s.by("load")
        mapped = [c for c in loads if s.arg(c, "map_location", 1) is not None]
        for c in loads:
            if c in mapped:
                continue
            if any(g.rank or g.single for g in c.frame.base_guards + c.guards) or _rank_only(s, c.frame):
                continue
            if _per_rank_file(s, c):  # `torch.load(f"part-{rank}.pt")`: each rank its own shard
                continue
            if not reaches_state_load(s, c):
                continue  # no model or optimizer state shown to receive it: no GPU tensors in evidence
            # `if gpu is None: torch.load(p) else: torch.load(p, map_location=loc)`: a deliberate choice
            if any(g.if_id == h.if_id and g.branch != h.branch for m in mapped for g in c.guards for h in m.guards):
                continue
            yield self.report(
                c.span,
                "torch.load() without map_location: every rank restores the tensors onto the GPU "
                "they were saved from (usually cuda:0); pass map_location=\"cpu\" or the local device",
                fix=Fix('pass map_location="cpu"', safe=False, data='"cpu"'),
            )

    def apply_fix(self, diag, text):
        return add_keyword(text, diag.span, "map_location", diag.fix.data)
