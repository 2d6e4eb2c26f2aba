"""CKP001 unguarded-checkpoint-save: torch.save in a distributed script not guarded by a rank-0 condition"""

from __future__ import annotations

import re
from typing import Iterable

from parallint.model.diagnostics import Diagnostic, Severity
from parallint.model.rule import Example, Rule
from parallint.model.script import Script, script_of
from parallint.rules.ckp._common import _PY, per_rank_path, per_item_path, skips_done_items




_BUFFER_NAME = re.compile(r"^(?:buf|buffer|bio|byte_?buf|bytes_?io|mem_?file|membuf|stream)$", re.I)


def _plain_distributed(s: Script) -> bool:
    """The script sets up distributed training itself (torch.distributed, deepspeed.init_distributed,
    Accelerator, Fabric, a device mesh); trainers that guard saves and map devices are left alone."""
    return s.sets_up_distributed() or _horovod(s)


def _horovod(s: Script) -> bool:
    """Horovod's PyTorch front end set up by the script (``hvd.init()`` run from its entry point
    and a ``hvd.DistributedOptimizer``), with no trainer that guards saves itself."""
    if s.has("hf_trainer", "training_args", "pl_trainer"):
        return False
    return s.runs_setup("hvd_init") and s.has("hvd_optimizer")


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


#: the writers besides torch.save: (the name a message gives, (its path keyword, its position))
_WRITERS = {"safetensors.torch.save_file": ("safetensors.torch.save_file", ("filename", 1)),
            "numpy.save": ("np.save", ("file", 0))}


def _writer(c) -> "tuple[str, tuple[str, int]]":
    for q in c.qnames:
        if q in _WRITERS:
            return _WRITERS[q]
    return "torch.save", ("f", 1)


class UnguardedCheckpointSave(Rule):
    code = "CKP001"
    calls = frozenset({"accelerator", "ddp", "ds_init_distributed", "fabric", "fsdp", "fully_shard", "hf_trainer",
                       "init_device_mesh", "init_process_group", "pl_trainer", "save", "training_args",
                       "hvd_init", "hvd_optimizer"})
    name = "unguarded-checkpoint-save"
    severity = Severity.WARNING
    summary = "torch.save in a distributed script not guarded by a rank-0 condition"
    kinds = _PY
    doc = """
    ## What it does
    In a script that sets up distributed training itself (`init_process_group`, DDP/FSDP,
    `deepspeed.init_distributed()`, `Accelerator()`, `lightning.Fabric(...)`, `init_device_mesh`,
    Horovod's `hvd.init()` with `hvd.DistributedOptimizer`),
    flags `torch.save(...)` (and the other writers of one file from tensors:
    `safetensors.torch.save_file(...)`, `np.save(...)`) reached from the script's entry point on a
    path with no rank condition.
    Rank conditions are followed through local variables and attributes
    (`save_logs = is_master(args)` then `if save_logs:`), helper predicates (`is_main_process()`,
    `is_rank_zero()`, `accelerator.is_main_process`, `trainer.is_global_zero`, any function or
    flag whose name says main/master/rank 0), `if hvd.rank() == 0:`, `if local_rank in [-1, 0]:`, early returns on the
    other ranks (`if rank != 0: return`) and `@rank_zero_only`-style decorators. Saves to per-rank
    paths (a file name built from the rank, directly or in the variable the path is built from,
    the data- or model-parallel rank included) and into an `io.BytesIO` buffer are fine, and so are
    one-file-per-item outputs: a save after `if os.path.exists(path): continue` (or that path with
    the suffix `np.save` appends), and a path named after the items of an enclosing `for` loop whose
    iterable may differ between ranks (a data loader's batches, a list passed in; not `range(...)`,
    a literal, a dict's entries or the model's modules), which each rank may run over its own shard.
    Scripts whose
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
        # data-parallel rank 0 of each model-parallel group writes its shard; each rank its optimizer file
        Example("""
            import torch
            import torch.distributed as dist
            def save(model, opt, path):
                if fs_init.get_data_parallel_rank() == 0:
                    fn = f"consolidated.{fs_init.get_model_parallel_rank():02d}.pth"
                    torch.save(model.state_dict(), os.path.join(path, fn))
                opt_fn = f"optimizer.{dist.get_rank():05d}-of-{dist.get_world_size():05d}.pth"
                torch.save(opt.state_dict(), os.path.join(path, opt_fn))
            def main():
                dist.init_process_group("nccl")
                save(model, opt, "out")
            main()
        """),
        # a data-preparation loop: each item's file is skipped by the processes that find it done
        Example("""
            import os
            import torch
            import torch.distributed as dist
            dist.init_process_group("nccl")
            for path in paths:
                out = os.path.join(args.save_root, os.path.basename(path))
                if os.path.exists(out):
                    continue
                torch.save(encode(path), out)
        """),
        # np.save appends ".npy": the file skipped is the file written
        Example("""
            import os
            import numpy as np
            import torch.distributed as dist
            dist.init_process_group("nccl")
            for name in names:
                save_path = os.path.join(out_dir, name)
                if os.path.exists(f"{save_path}.npy"):
                    continue
                np.save(save_path, encode(name))
        """),
        # one file per item of what this rank computed (a sharded loader's results)
        Example("""
            import os
            import numpy as np
            from accelerate import Accelerator

            def save_results(results, paths, out_dir):
                for res, p in zip(results, paths):
                    file_name = p.split(".")[0] + ".npy"
                    np.save(os.path.join(out_dir, file_name), res)

            def main(loader):
                accelerator = Accelerator()
                loader = accelerator.prepare(loader)
                for batch, paths in loader:
                    save_results(encode(batch), paths, "features")

            if __name__ == "__main__":
                main(make_loader())
        """),
        Example("""
            import numpy as np
            import torch.distributed as dist
            dist.init_process_group("nccl")
            rank = dist.get_rank()
            np.save(f"embeddings_{rank}.npy", embed(shard))
            if rank == 0:
                np.save("labels.npy", labels)
        """),
        # Horovod: rank 0 writes the checkpoint
        Example("""
            import torch
            import horovod.torch as hvd
            hvd.init()
            optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.01 * hvd.size()))
            for epoch in range(3):
                train(epoch)
                if hvd.rank() == 0:
                    torch.save(model.state_dict(), f"checkpoint-{epoch}.pth.tar")
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
        Example("""
            import numpy as np
            import torch.distributed as dist
            from safetensors.torch import save_file
            dist.init_process_group("nccl")
            for epoch in range(3):
                train(model)
                save_file(model.state_dict(), "model.safetensors")
        """, line=7),
        Example("""
            import torch
            import horovod.torch as hvd
            hvd.init()
            optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.01 * hvd.size()))
            for epoch in range(3):
                train(epoch)
                torch.save(model.state_dict(), f"checkpoint-{epoch}.pth.tar")
        """, line=7),
    ]

    def check_file(self, f, ctx) -> Iterable[Diagnostic]:
        s = script_of(f)
        if s is None or not _plain_distributed(s):
            return
        hvd = not s.sets_up_distributed()  # Horovod's set-up: its rank in the advice
        for c in s.by("save"):
            what, (kw, pos) = _writer(c)
            dest = c.arg_node(kw, pos)
            if c.has_star() or dest is None or per_rank_path(s, dest, c.frame):
                continue
            if _in_memory(s, dest, c.frame):
                continue  # serialised into memory (to send or hash), not written
            if skips_done_items(s, c, dest):
                continue  # a per-item file that the other processes skip once it exists
            if per_item_path(s, c, dest):
                continue  # named after the items of a loop each rank may run over its own shard
            paths = s.effective_guards(c)
            if not paths:
                continue  # the file never calls the function that saves: unknown
            if any(not any(g.rank or g.single for g in p) for p in paths):
                yield self.report(
                    c.span,
                    f"{what}() runs on every rank: all processes write the same file; "
                    + ("guard it with `if hvd.rank() == 0:` (or save per-rank files on purpose)"
                       if hvd else "guard it with `if rank == 0:` (or save per-rank files on purpose)"),
                )
