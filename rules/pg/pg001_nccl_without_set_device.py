"""PG001 nccl-without-set-device: NCCL process group with no torch.cuda.set_device(...), in a script that uses the current device"""

from __future__ import annotations

import re
from typing import Iterable

from parallint.model.diagnostics import Diagnostic, Related, Severity
from parallint.model.rule import Example, Rule
from parallint.model.script import Call, Script, script_of
from parallint.rules.pg._common import _PY, _backend, _reached


#: ``assert os.environ["LOCAL_RANK"] == "0"`` (or ``int(...) == 0``, ``.get(...)``, ``getenv``): the script
#: stops unless it is the node's only process, so GPU 0 is its GPU
_ONLY_LOCAL_RANK_0 = re.compile(
    r"(?m)^\s*assert\s+\(?\s*(?:int\s*\(\s*)?os\.(?:environ\s*\[\s*|environ\.get\s*\(\s*|getenv\s*\(\s*)"
    r"[\"']LOCAL_RANK[\"'][^)\]]*[)\]]\s*\)?\s*==\s*(?:0\b|[\"']0[\"'])")


def _one_process_per_node(s: Script) -> bool:
    return bool(_ONLY_LOCAL_RANK_0.search(s.text or ""))


def _sets_visible_devices(s: Script) -> bool:
    """The script pins each process to its GPU through CUDA_VISIBLE_DEVICES (in its code, not in
    a comment)."""
    return "CUDA_VISIBLE_DEVICES" in s.env_writes()


_OBJECT_COLLECTIVES = frozenset({"all_gather_object", "broadcast_object_list", "gather_object",
                                 "scatter_object_list"})


_CURRENT_DEVICE_CALLS = frozenset({"torch.cuda.synchronize", "torch.cuda.empty_cache", "torch.cuda.memory_allocated",
                                   "torch.cuda.max_memory_allocated", "torch.cuda.memory_reserved",
                                   "torch.cuda.max_memory_reserved", "torch.cuda.reset_peak_memory_stats",
                                   "torch.cuda.current_device", "torch.cuda.mem_get_info", "torch.cuda.Stream",
                                   "torch.cuda.Event", "torch.cuda.current_stream"})


def _plain_cuda(s: Script, v) -> bool:
    """The one string literal "cuda" (no prefix, no concatenation)."""
    import ast

    return isinstance(v, ast.Constant) and v.value == "cuda" and s.source(v).strip("'\"") == "cuda"


def _default_gpu_use(s: Script) -> tuple[Call, str] | None:
    """A call that works on the *current* CUDA device (GPU 0 unless set_device says otherwise):
    what makes a missing set_device matter. None when every use names its device."""
    for c in s.calls:
        if c.method == "cuda" and not c.groups and not c.args:
            return c, "`.cuda()` with no device"
        if c.method == "to" and not c.groups and c.args:
            v = c.arg_node("device", 0)
            if _plain_cuda(s, v):
                return c, '`.to("cuda")` with no index'
        if "torch.device" in c.qnames and len(c.args) == 1:
            v = c.args[0].value
            if _plain_cuda(s, v):
                return c, '`torch.device("cuda")` with no index'
        if c.qnames & _CURRENT_DEVICE_CALLS and not c.args:
            return c, f"`{c.func_text}()` on the current device"
        short = next(iter(c.qnames)).rsplit(".", 1)[-1] if "collective" in c.groups else ""
        if short in _OBJECT_COLLECTIVES and not c.has_keyword("device") and not c.has_star():
            return c, f"`{short}()`, which stages objects on the current device"
    for c in s.by("dataloader"):
        pm = s.arg(c, "pin_memory", 7)
        if pm is not None and pm.known and pm.value is True:
            return c, "`DataLoader(pin_memory=True)`, whose pinning thread opens a context on the current device"
    return None


class NcclWithoutSetDevice(Rule):
    code = "PG001"
    calls = frozenset({"accelerator", "collective", "dataloader", "init_process_group", "set_device"})
    name = "nccl-without-set-device"
    severity = Severity.WARNING
    summary = "NCCL process group with no torch.cuda.set_device(...), in a script that uses the current device"
    kinds = _PY
    doc = """
    ## What it does
    Flags `init_process_group("nccl")` in a script that never selects its GPU with
    `torch.cuda.set_device(...)` (nor `device_id=` on the call, nor `CUDA_VISIBLE_DEVICES` set in
    the code), when the script itself runs that call and also does something on the *current*
    device: `.cuda()` or `torch.device("cuda")` with no index, `DataLoader(pin_memory=True)`,
    object collectives (`all_gather_object`, `broadcast_object_list` ...) without `device=`,
    `torch.cuda.synchronize()`/`empty_cache()`/memory statistics with no device. A script that
    places every tensor on `cuda:LOCAL_RANK` explicitly never touches the default GPU and is left
    alone, as is a single-process group (`world_size=1`), a script that makes accelerate's
    `Accelerator()` (it sets each process's device) and one that asserts it is its node's only
    process (`assert os.environ["LOCAL_RANK"] == "0"`).

    ## Why it matters
    Without `set_device` the current device of every rank is GPU 0. Whatever runs on the current
    device runs there for all ranks: N CUDA contexts and pinned-memory threads crowd GPU 0 (out of
    memory on GPU 0 only), and object collectives stage every rank's data on GPU 0, which
    NCCL then treats as the same device across ranks and hangs or errors.

    ## Example

    ## How to fix
    Call `torch.cuda.set_device(local_rank)` before `init_process_group`, or pass
    `device_id=torch.device("cuda", local_rank)` to it.
    """
    valid = [
        Example("""
            import os
            import torch
            import torch.distributed as dist
            local_rank = int(os.environ["LOCAL_RANK"])
            torch.cuda.set_device(local_rank)
            dist.init_process_group("nccl")
            x = torch.zeros(1).cuda()
        """),
        Example("""
            import torch.distributed as dist
            def setup(backend):
                dist.init_process_group(backend)
            setup("gloo")
        """),
        Example("""
            import torch.distributed as dist
            def setup():
                dist.init_process_group("nccl")
                dist.all_gather_object(out, obj)
        """),
        # every tensor on an explicit device: nothing uses the default GPU
        Example("""
            import os
            import torch
            import torch.distributed as dist
            device = torch.device("cuda", int(os.environ["LOCAL_RANK"]))
            dist.init_process_group("nccl")
            t = torch.randn(4, device=device)
            dist.all_reduce(t)
        """),
        # accelerate's Accelerator() calls torch.cuda.set_device for its process
        Example("""
            import torch
            import torch.distributed as dist
            from accelerate import Accelerator
            accelerator = Accelerator()
            if not dist.is_initialized():
                dist.init_process_group(backend="nccl")
            torch.cuda.empty_cache()
        """),
        # one process per node, asserted: GPU 0 is the process's own GPU
        Example("""
            import os
            import torch
            assert os.environ["LOCAL_RANK"] == "0", "run with --nproc_per_node=1"
            torch.distributed.init_process_group(backend="nccl")
            torch.distributed.all_gather_object(hosts, name)
        """),
    ]
    invalid = [
        Example("""
            import os
            import torch.distributed as dist
            from torch.nn.parallel import DistributedDataParallel as DDP
            from torch.utils.data import DataLoader, DistributedSampler
            def main():
                dist.init_process_group(backend="nccl")
                local_rank = int(os.environ["LOCAL_RANK"])
                model = DDP(net.to(local_rank), device_ids=[local_rank])
                loader = DataLoader(ds, sampler=DistributedSampler(ds), pin_memory=True)
            if __name__ == "__main__":
                main()
        """, line=6),
        Example("""
            import argparse
            import torch.distributed as dist
            parser = argparse.ArgumentParser()
            parser.add_argument("--dist-backend", default="nccl")
            args = parser.parse_args()
            dist.init_process_group(backend=args.dist_backend)
            dist.broadcast_object_list(config, src=0)
        """, line=6),
    ]

    def check_file(self, f, ctx) -> Iterable[Diagnostic]:
        s = script_of(f)
        if s is None:
            return
        if s.has("set_device") or s.methods("set_device") or s.methods("set_device_index") or _sets_visible_devices(s):
            return
        if s.has("accelerator"):
            return  # accelerate's Accelerator sets each process's device when it is made
        if _one_process_per_node(s):
            return  # the script asserts it is the node's only process: GPU 0 is its GPU
        inits = [c for c in s.by("init_process_group") if _backend(s, c)[0] == "nccl"
                 and not c.has_keyword("device_id") and not c.has_star()]
        if not inits:
            return
        use = _default_gpu_use(s)
        if use is None:
            return  # every tensor names its device: GPU 0 is not touched by the other ranks
        for c in inits:
            ws = s.arg(c, "world_size")
            if ws is not None and ws.known and ws.value == 1:
                continue  # one process: GPU 0 is its GPU
            if _reached(s, c) is None:
                continue
            yield self.report(
                c.span,
                f"NCCL process group initialised but the script never calls torch.cuda.set_device(), "
                f"and it uses the current device ({use[1]}, line {use[0].span.line}): every rank does that "
                "on GPU 0; call torch.cuda.set_device(local_rank) before it",
                related=[Related.at(use[0].span, "runs on the current device: GPU 0 on every rank")],
            )
