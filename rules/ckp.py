"""CKP — checkpoints (CKP001, CKP002)."""

from __future__ import annotations

import re
from typing import Iterable

from parallint.model.diagnostics import Diagnostic, Severity
from parallint.model.script import Script, script_of
from parallint.model.rule import Example, Rule

_PY = frozenset({"python"})
_PER_RANK = re.compile(r"rank|process_index|ordinal|procid", re.I)


_BUFFER_NAME = re.compile(r"^(?:buf|buffer|bio|byte_?buf|bytes_?io|mem_?file|membuf|stream)$", re.I)


def _plain_distributed(s: Script) -> bool:
    """The script sets up distributed training itself (torch.distributed, deepspeed.init_distributed,
    Accelerator, Fabric, a device mesh); trainers that guard saves and map devices are left alone."""
    return s.sets_up_distributed()


def _loads_onto_gpus(s: Script) -> bool:
    """A script that runs torch.distributed (or deepspeed.init_distributed) itself. Not accelerate
    or Fabric: their saves gather to the CPU (FSDP full state dicts, ``accelerator.save``), so a
    plain ``torch.load`` there usually restores CPU tensors."""
    if s.has("hf_trainer", "training_args", "pl_trainer"):
        return False
    return (s.is_distributed() and not s.framework_managed()) or s.runs_setup("ds_init_distributed")


def _in_memory(s: Script, dest, frame) -> bool:
    """``torch.save(obj, buf)`` into an ``io.BytesIO`` (serialising, not writing a file)."""
    import ast

    for _ in range(4):
        if isinstance(dest, ast.Call):
            return bool(s.qnames(dest.func) & {"io.BytesIO", "io.StringIO", "tempfile.SpooledTemporaryFile"})
        if isinstance(dest, ast.Name):
            if _BUFFER_NAME.match(dest.id):
                return True
            b = s.binding(dest.id, frame)
            if b is None:
                return False
            dest, frame = b
            continue
        if isinstance(dest, ast.Attribute):
            return _BUFFER_NAME.match(dest.attr) is not None
        return False
    return False


class UnguardedCheckpointSave(Rule):
    code = "CKP001"
    calls = frozenset({"accelerator", "ddp", "ds_init_distributed", "fabric", "fsdp", "fully_shard", "hf_trainer",
                       "init_device_mesh", "init_process_group", "pl_trainer", "save", "training_args"})
    name = "unguarded-checkpoint-save"
    severity = Severity.WARNING
    summary = "torch.save in a distributed script not guarded by a rank-0 condition"
    kinds = _PY
    doc = """
    ## What it does
    In a script that sets up distributed training itself (`init_process_group`, DDP/FSDP,
    `deepspeed.init_distributed()`, `Accelerator()`, `lightning.Fabric(...)`, `init_device_mesh`),
    flags `torch.save(...)` reached from the script's entry point on a path with no rank condition.
    Rank conditions are followed through local variables and attributes
    (`save_logs = is_master(args)` then `if save_logs:`), helper predicates (`is_main_process()`,
    `is_rank_zero()`, `accelerator.is_main_process`, `trainer.is_global_zero`, any function or
    flag whose name says main/master/rank 0), `if local_rank in [-1, 0]:`, early returns on the
    other ranks (`if rank != 0: return`) and `@rank_zero_only`-style decorators. Saves to per-rank
    paths (a file name built from the rank) and into an `io.BytesIO` buffer are fine. Scripts whose
    loop is run by Lightning's or HF's Trainer are left alone.

    ## Why it matters
    Every rank writes the same file at the same time: N times the I/O, and on shared file
    systems interleaved or truncated checkpoints that fail to load.

    ## Example

    ## How to fix
    Save on one rank: `if dist.get_rank() == 0: torch.save(...)`, followed by `dist.barrier()` on
    all ranks if the others read it; or write per-rank files on purpose.
    """
    valid = [
        Example("""
            import torch
            import torch.distributed as dist
            dist.init_process_group("nccl")
            if dist.get_rank() == 0:
                torch.save(model.state_dict(), "ckpt.pt")
        """),
        Example("""
            import torch
            import torch.distributed as dist
            def save_on_master(obj, path):
                if not is_main_process():
                    return
                torch.save(obj, path)
            def main():
                dist.init_process_group("nccl")
                save_on_master(model.state_dict(), "ckpt.pt")
            main()
        """),
        Example("""
            import torch
            import torch.distributed as dist
            dist.init_process_group("nccl")
            rank = dist.get_rank()
            torch.save(shard, f"shard_{rank}.pt")
        """),
        Example("""
            import torch
            from accelerate import Accelerator
            accelerator = Accelerator()
            if accelerator.is_main_process:
                torch.save(accelerator.unwrap_model(model).state_dict(), "ckpt.pt")
        """),
        Example("""
            import torch
            import torch.distributed as dist
            def save(args, model):
                if args.save_logs:
                    torch.save(model.state_dict(), args.checkpoint_path)
            def main(args):
                dist.init_process_group("nccl")
                args.save_logs = args.logs != "none" and is_master(args)
                save(args, model)
            main(parse())
        """),
        Example("""
            import io
            import torch
            import torch.distributed as dist
            dist.init_process_group("nccl")
            buf = io.BytesIO()
            torch.save(state, buf)
            payload = buf.getvalue()
        """),
    ]
    invalid = [
        Example("""
            import torch
            import torch.distributed as dist
            from torch.nn.parallel import DistributedDataParallel as DDP
            def main():
                dist.init_process_group("nccl")
                model = DDP(net)
                for epoch in range(10):
                    train(model)
                    torch.save(model.state_dict(), "ckpt.pt")
            if __name__ == "__main__":
                main()
        """, line=9),
        Example("""
            import torch
            from torch.distributed import init_process_group
            from torch.nn.parallel import DistributedDataParallel as DDP
            class Trainer:
                def __init__(self, model, gpu_id):
                    self.model = DDP(model, device_ids=[gpu_id])
                def _save(self, epoch):
                    torch.save(self.model.module.state_dict(), "checkpoint.pt")
                def train(self, epochs):
                    for epoch in range(epochs):
                        self._save(epoch)
            def main(rank, world_size):
                init_process_group("nccl", rank=rank, world_size=world_size)
                Trainer(model, rank).train(10)
            main(0, 1)
        """, line=8),
        Example("""
            import torch
            from accelerate import Accelerator
            accelerator = Accelerator()
            for epoch in range(3):
                train(model)
                torch.save(accelerator.unwrap_model(model).state_dict(), "ckpt.pt")
        """, line=6),
        Example("""
            import deepspeed
            import torch
            deepspeed.init_distributed()
            engine, *_ = deepspeed.initialize(model=model, config="ds.json")
            torch.save(engine.module.state_dict(), "final.pt")
        """, line=5),
    ]

    def check_file(self, f, ctx) -> Iterable[Diagnostic]:
        s = script_of(f)
        if s is None or not _plain_distributed(s):
            return
        for c in s.by("save"):
            dest = c.arg_node("f", 1)
            if c.has_star() or dest is None or _PER_RANK.search(s.code(dest)):
                continue
            if _in_memory(s, dest, c.frame):
                continue  # serialised into memory (to send or hash), not written
            paths = s.effective_guards(c)
            if not paths:
                continue  # the file never calls the function that saves: unknown
            if any(not any(g.rank for g in p) for p in paths):
                yield self.report(
                    c.span,
                    "torch.save() runs on every rank: all processes write the same file; "
                    "guard it with `if rank == 0:` (or save per-rank files on purpose)",
                )


class LoadWithoutMapLocation(Rule):
    code = "CKP002"
    calls = frozenset({"ddp", "ds_init_distributed", "fsdp", "fully_shard", "hf_trainer", "init_process_group",
                       "load", "pl_trainer", "training_args"})
    name = "load-without-map-location"
    severity = Severity.WARNING
    summary = "torch.load without map_location in a distributed script"
    kinds = _PY
    doc = """
    ## What it does
    In a script that sets up torch.distributed itself (or calls `deepspeed.init_distributed()`),
    flags `torch.load(...)` without `map_location` (outside rank-specific branches). Scripts run
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
    ]
    invalid = [
        Example("""
            import torch
            import torch.distributed as dist
            dist.init_process_group("nccl")
            state = torch.load("ckpt.pt")
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
            if any(g.rank for g in c.frame.base_guards + c.guards) or _rank_only(s, c.frame):
                continue
            if _per_rank_file(s, c):  # `torch.load(f"part-{rank}.pt")`: each rank its own shard
                continue
            # `if gpu is None: torch.load(p) else: torch.load(p, map_location=loc)`: a deliberate choice
            if any(g.if_id == h.if_id and g.branch != h.branch for m in mapped for g in c.guards for h in m.guards):
                continue
            yield self.report(
                c.span,
                "torch.load() without map_location: every rank restores the tensors onto the GPU "
                "they were saved from (usually cuda:0); pass map_location=\"cpu\" or the local device",
            )


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
        if any(g.rank for g in caller.base_guards + guards):
            continue
        if not _rank_only(s, caller, seen | {id(frame)}):
            return False
    return True


def _per_rank_file(s, c) -> bool:
    """Whether the file ``torch.load`` reads is named after the rank (``f"{d}/part-{rank}.pt"``,
    ``path.format(rank)``, ``os.path.join(d, f"rank_{local_rank}")``): each rank loads its own
    shard, which it or a converter wrote, not one file saved from cuda:0."""
    import ast

    node = c.node.args[0] if c.node.args else next((k.value for k in c.node.keywords if k.arg == "f"), None)
    if node is None:
        return False
    return any(isinstance(sub, (ast.Name, ast.Attribute, ast.BinOp, ast.Call)) and s.rankish(sub, c.frame)
               for sub in ast.walk(node))
