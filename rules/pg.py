"""PG — process groups (PG001–PG005)."""

from __future__ import annotations

from typing import Iterable

from parallint.model.diagnostics import Diagnostic, Related, Severity
from parallint.model.script import Call, Guard, Script, job_scripts, script_of
from parallint.model.world import job_launch_world_size
from parallint.model.rule import Example, Rule

_PY = frozenset({"python"})


def _backend(s: Script, c: Call):
    v = s.arg(c, "backend", 0)
    if v is None or not v.known or not isinstance(v.value, str):
        return None, v
    return v.value.strip().lower(), v


def _reached(s: Script, c: Call) -> list[tuple[Guard, ...]] | None:
    """Guard chains under which the call runs from module level (None: the file never calls it)."""
    return s.effective_guards(c)


def _unconditional(s: Script, c: Call) -> bool:
    paths = _reached(s, c)
    if not paths:
        return False
    return any(all(g.main for g in p) for p in paths)


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


def _is_none(n) -> bool:
    """The literal ``None``."""
    import ast

    return isinstance(n, ast.Constant) and n.value is None


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
    calls = frozenset({"collective", "dataloader", "init_process_group", "set_device"})
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
    alone, as is a single-process group (`world_size=1`).

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


class BackendDeviceMismatch(Rule):
    code = "PG002"
    calls = frozenset({"ddp", "init_process_group", "set_device"})
    name = "backend-device-mismatch"
    severity = Severity.WARNING
    summary = "gloo for CUDA training (slow), or nccl in a script that never uses CUDA (error)"
    kinds = _PY
    doc = """
    ## What it does
    Flags `init_process_group("gloo")` in a script that trains on CUDA (it sets a CUDA device or
    gives DDP `device_ids`), and, as an error, `init_process_group("nccl")` in a script that wraps a
    model in DDP but never mentions CUDA or a device at all.

    ## Why it matters
    gloo all-reduces CUDA tensors through host memory: many times slower than NCCL. NCCL only
    works on CUDA tensors: a CPU model under NCCL fails at the first all-reduce.

    ## Example

    ## How to fix
    Use `nccl` for GPU training and `gloo` for CPU training, or pick by device:
    `"nccl" if torch.cuda.is_available() else "gloo"`.
    """
    valid = [
        Example("""
            import torch
            import torch.distributed as dist
            dist.init_process_group("nccl")
            torch.cuda.set_device(local_rank)
        """),
        Example("""
            import torch
            import torch.distributed as dist
            backend = "nccl" if torch.cuda.is_available() else "gloo"
            dist.init_process_group(backend)
            torch.cuda.set_device(local_rank)
        """),
        Example("""
            import torch.distributed as dist
            from torch.nn.parallel import DistributedDataParallel as DDP
            dist.init_process_group("gloo")
            model = DDP(model)
        """),
    ]
    invalid = [
        Example("""
            import torch
            import torch.distributed as dist
            dist.init_process_group(backend="gloo")
            torch.cuda.set_device(local_rank)
        """, line=3),
        Example("""
            import torch.distributed as dist
            from torch.nn.parallel import DistributedDataParallel as DDP
            dist.init_process_group("nccl")
            model = DDP(model)
        """, line=3),
    ]

    def check_file(self, f, ctx) -> Iterable[Diagnostic]:
        s = script_of(f)
        if s is None:
            return
        inits = s.by("init_process_group")
        backends = {_backend(s, c)[0] for c in inits}
        if len(inits) > 1 and len(backends) > 1:
            return  # a backend per platform or device, chosen on purpose
        for c in inits:
            b, v = _backend(s, c)
            if any(not g.main for g in c.guards):
                continue  # chosen under a condition (platform, device availability)
            if b == "gloo":
                uses_cuda = any(
                    cc.qnames & {"torch.cuda.set_device"} for cc in s.by("set_device")
                ) or any(
                    (n := cc.arg_node("device_ids", 1)) is not None
                    and not _is_none(n)
                    for cc in s.by("ddp")
                )
                if uses_cuda:
                    yield self.report(
                        s.arg_span(c, "backend", 0),
                        "gloo backend for a script that trains on CUDA: gloo moves every all-reduce "
                        "through host memory; use nccl for GPU tensors",
                    )
            elif b == "nccl" and s.has("ddp"):
                low = s.text.lower()
                if any(w in low for w in ("cuda", "device", "gpu", "local_rank")):
                    continue
                yield self.report(
                    s.arg_span(c, "backend", 0),
                    "nccl backend in a script that never puts anything on CUDA: NCCL only reduces "
                    "GPU tensors, the first all-reduce of the CPU model fails; use gloo or move the model to the GPU",
                    severity=Severity.ERROR,
                )


class WorldSizeConflict(Rule):
    code = "PG003"
    calls = frozenset({"init_process_group"})
    name = "world-size-conflict"
    severity = Severity.ERROR
    summary = "world_size=/rank= given to init_process_group disagree with the launcher"
    kinds = _PY
    doc = """
    ## What it does
    Compares `world_size=` and `rank=` hard-coded in `init_process_group(...)` with the number of
    processes the launch starts (torchrun `--nnodes × --nproc_per_node`, srun tasks, ...).

    ## Why it matters
    The rendezvous waits for `world_size` processes. More started than declared: the extra ranks
    fail or join the wrong group; fewer: everyone waits until the timeout. A constant `rank=` makes
    every process claim the same rank.

    ## Example

    ## How to fix
    Leave `world_size` and `rank` out under torchrun (they come from the environment), or read
    them from `WORLD_SIZE`/`RANK`.
    """
    valid = [
        Example(files={
            "run.sh": "torchrun --nnodes 2 --nproc_per_node 8 train.py\n",
            "train.py": """
                import torch.distributed as dist
                dist.init_process_group("nccl")
            """,
        }),
        Example(files={
            "run.sh": "torchrun --nnodes 1 --nproc_per_node 4 train.py\n",
            "train.py": """
                import torch.distributed as dist
                dist.init_process_group("nccl", world_size=4)
            """,
        }),
    ]
    invalid = [
        Example(files={
            "run.sh": "torchrun --nnodes 2 --nproc_per_node 8 train.py\n",
            "train.py": """
                import torch.distributed as dist
                dist.init_process_group("nccl", world_size=8)
            """,
        }, line=2),
        Example(files={
            "run.sh": "torchrun --nproc_per_node 4 train.py\n",
            "train.py": """
                import torch.distributed as dist
                dist.init_process_group("nccl", init_method="env://", rank=0)
            """,
        }, line=2),
    ]

    def check_job(self, job, ctx) -> Iterable[Diagnostic]:
        ws, wv = job_launch_world_size(job)
        if ws is None:
            return
        assert wv is not None  # a known world size comes with its Value
        related = [Related.at(wv.span, f"the launch starts {ws} processes ({wv.source})")] if wv.span else []
        for f, s in job_scripts(job):
            for c in s.by("init_process_group"):
                v = s.arg(c, "world_size")
                if v is not None and v.known and isinstance(v.value, int) and not isinstance(v.value, bool):
                    if v.value != ws:
                        yield self.report(
                            s.arg_span(c, "world_size"),
                            f"init_process_group(world_size={v.value}) but the launch starts {ws} processes; remove "
                            f"world_size= (the launcher sets WORLD_SIZE) or set it to {ws}",
                            related=related,
                        )
                r = s.arg(c, "rank")
                if r is not None and r.known and isinstance(r.value, int) and not isinstance(r.value, bool) and ws > 1:
                    yield self.report(
                        s.arg_span(c, "rank"),
                        f"init_process_group(rank={r.value}) is a constant but the launch starts {ws} "
                        "processes: every process claims the same rank; remove rank= (the launcher sets RANK)",
                        related=related,
                    )


_RENDEZVOUS_ENV = ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE")


class EnvRendezvousWithoutLauncher(Rule):
    code = "PG004"
    calls = frozenset({"init_process_group", "spawn"})
    name = "env-rendezvous-without-launcher"
    severity = Severity.ERROR
    summary = "env:// rendezvous in a script started by plain python with no MASTER_ADDR/PORT/RANK/WORLD_SIZE"
    kinds = _PY
    doc = """
    ## What it does
    Flags `init_process_group()` with the default `env://` rendezvous in a script that a launch
    file starts with plain `python` (not torchrun, srun, deepspeed or accelerate), when neither
    the launch nor the script sets `MASTER_ADDR`, `MASTER_PORT`, `RANK` or `WORLD_SIZE`.

    ## Why it matters
    `env://` reads those variables; plain `python` does not set them, so the process stops with
    "environment variable RANK expected, but not set" — or, with some of them set by hand on
    several machines, waits forever for peers.

    ## Example

    ## How to fix
    Start the script with `torchrun --nproc_per_node N train.py` (or srun/deepspeed/accelerate),
    or pass `init_method="tcp://host:port"` with `rank` and `world_size`.
    """
    valid = [
        Example(files={
            "run.sh": "torchrun --nproc_per_node 8 train.py\n",
            "train.py": """
                import torch.distributed as dist
                dist.init_process_group("nccl")
            """,
        }),
        Example(files={
            "run.sh": "MASTER_ADDR=localhost MASTER_PORT=29500 RANK=0 WORLD_SIZE=1 python train.py\n",
            "train.py": """
                import torch.distributed as dist
                dist.init_process_group("nccl")
            """,
        }),
        Example(files={
            "run.sh": "python train.py\n",
            "train.py": """
                import os
                import torch.distributed as dist
                if "RANK" in os.environ:
                    dist.init_process_group("nccl")
            """,
        }),
    ]
    invalid = [
        Example(files={
            "run.sh": "python train.py --epochs 3\n",
            "train.py": """
                import torch.distributed as dist
                def main():
                    dist.init_process_group(backend="nccl")
                if __name__ == "__main__":
                    main()
            """,
        }, line=3),
        Example(files={
            "train.sh": "#!/bin/bash\nexport NCCL_DEBUG=INFO\npython pretrain.py\n",
            "pretrain.py": """
                import torch.distributed as dist
                dist.init_process_group("nccl", init_method="env://")
            """,
        }, line=2),
    ]

    def check_job(self, job, ctx) -> Iterable[Diagnostic]:
        launch = job.launch
        if launch is None or getattr(launch, "launcher", None) != "python" or getattr(launch, "wrapper", None):
            return
        env = getattr(launch, "env", {}) or {}
        if any(k in env for k in _RENDEZVOUS_ENV):
            return
        for f, s in job_scripts(job):
            if any(k in s.text for k in ("MASTER_ADDR", "MASTER_PORT")) or s.has("spawn"):
                continue
            for c in s.by("init_process_group"):
                if c.has_star() or c.has_keyword("store"):
                    continue
                im = s.arg(c, "init_method", 1)
                if im is not None and not (im.known and im.value in (None, "env://")):
                    continue
                if not _unconditional(s, c):
                    continue
                yield self.report(
                    c.span,
                    "init_process_group() uses env:// rendezvous but the launch starts the script with "
                    "plain python and sets none of MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE; start it with "
                    "torchrun (or set those variables)",
                    related=[Related.at(launch.span, "started here by plain python")],
                )


def _only_call_site(s: Script, frame) -> Call | None:
    """The single call of a function the file defines once and never passes around, else None."""
    if frame.kind != "function" or frame.name in s.refs or len(s.functions.get(frame.name, ())) != 1:
        return None
    sites = s.callsites.get(frame.name, [])
    if len(sites) != 1 or sites[0][0] is None or "spawn" in sites[0][0].groups:
        return None
    return sites[0][0]


#: method calls that cannot hold a collective (logging, containers, tensor conversions)
_PLAIN_METHODS = frozenset({
    "info", "debug", "warning", "warn", "error", "exception", "critical", "log", "print", "append", "extend",
    "format", "item", "join", "write", "flush", "close", "cpu", "tolist", "numpy", "get", "items", "keys",
    "values", "update", "pop", "strip", "split", "startswith", "endswith", "replace", "lower", "upper",
    "exists", "mkdir", "makedirs", "sleep", "add_scalar", "add_scalars",
})
_PLAIN_MODULES = ("torch.", "logging.", "builtins.", "os.", "time.", "math.", "json.", "sys.", "shutil.",
                  "pathlib.", "numpy.", "random.", "warnings.", "print")


def _opaque(s: Script, c: Call) -> bool:
    """A call whose body this file does not show and that may make a collective."""
    import builtins

    import ast

    if c.groups:
        return False
    if c.qnames:
        return not all(q.startswith(_PLAIN_MODULES) for q in c.qnames)
    func = c.node.func
    if isinstance(func, ast.Name):
        if func.id in s.functions:
            return False  # defined here: its own collectives are checked where it is called
        return not hasattr(builtins, func.id)
    if c.method is not None:
        if c.method in _PLAIN_METHODS:
            return False
        recv = c.receiver
        if isinstance(recv, ast.Name) and recv.id in ("self", "cls") and c.method in s.functions:
            return False
        return True
    return True


def _other_path_hidden(s: Script, g) -> bool:
    """The ranks that do not take the guarded branch run a call this file cannot see into (the
    `else:`/`elif` branch of the same `if`): their matching collective may well be in there."""
    if g.early:
        return False  # `if rank != 0: return`: the other ranks' path is the return
    for c in s.calls:
        if any(h.if_id == g.if_id and h.branch != g.branch for h in c.guards) and _opaque(s, c):
            return True
    return False


# collective -> index of its positional `group` argument
_GROUP_POS = {
    "barrier": 0, "monitored_barrier": 0, "all_reduce": 2, "broadcast": 2, "all_gather": 2,
    "all_gather_into_tensor": 2, "reduce_scatter": 3, "reduce_scatter_tensor": 3, "reduce": 3,
    "gather": 3, "scatter": 3, "all_to_all": 2, "all_to_all_single": 4, "all_gather_object": 2,
    "broadcast_object_list": 2, "gather_object": 3, "scatter_object_list": 3,
}


class CollectiveInRankBranch(Rule):
    code = "PG005"
    calls = frozenset({"collective", "dcp_save", "fsdp", "spawn"})
    name = "collective-in-rank-branch"
    severity = Severity.ERROR
    summary = "a collective only some ranks reach (e.g. under `if rank == 0:`): the others wait forever"
    kinds = _PY
    doc = """
    ## What it does
    Flags a collective (`barrier`, `all_reduce`, `broadcast`, `all_gather`, `reduce_scatter`,
    `reduce`, ..., an FSDP model's full `state_dict()`, `torch.distributed.checkpoint.save`)
    inside a branch that depends on the rank (`if rank == 0:`, `if is_main_process():`, after
    `if rank != 0: return`), when the same function has no matching call on the other ranks' path.
    A collective is unmatched only when the other ranks' path is visible: when the `else:`/`elif`
    branch calls code this file does not show (`model.generate_other_ranks()`, an imported
    helper), the match may be in there and the rule stays silent. Collectives on an explicit
    `group=` are left alone.

    ## Why it matters
    Every rank of the group must enter the same collective. The ranks that skip the branch never
    do: the rank inside it blocks until the NCCL watchdog kills the job after 30 minutes.

    ## Example

    ## How to fix
    Move the collective out of the branch so that every rank calls it (save on rank 0, then
    `dist.barrier()` on all ranks); gather FSDP state dicts on all ranks and only write on rank 0.
    """
    valid = [
        Example("""
            import torch
            import torch.distributed as dist
            if dist.get_rank() == 0:
                torch.save(model.state_dict(), "ckpt.pt")
            dist.barrier()
        """),
        Example("""
            import torch.distributed as dist
            dist.init_process_group("nccl")
            def load(local_rank):
                if local_rank not in [-1, 0]:
                    dist.barrier()  # wait for rank 0 to download
                download()
                if local_rank == 0:
                    dist.barrier()
        """),
        # a context manager that staggers the ranks: even ones wait on entry, odd ones on exit
        Example("""
            import torch.distributed as dist
            dist.init_process_group("nccl")
            class staggered:
                def __init__(self, local_rank):
                    self.local_rank = local_rank
                def __enter__(self):
                    if self.local_rank % 2 == 0:
                        dist.barrier()
                    return self
                def __exit__(self, *exc):
                    if self.local_rank % 2 == 1:
                        dist.barrier()
                    dist.barrier()
        """),
        Example("""
            import torch.distributed as dist
            dist.init_process_group("nccl")
            if args.local_rank != -1:
                dist.all_reduce(t)
        """),
        Example("""
            import torch.distributed as dist
            dist.init_process_group("nccl")
            if rank in first_group_ranks:
                dist.all_reduce(t, group=first_group)
        """),
        Example("""
            import torch.distributed as dist
            def send_side(t):
                dist.broadcast(t, src=0)
            def recv_side(t):
                dist.broadcast(t, src=0)
            dist.init_process_group("nccl")
            if dist.get_rank() == 0:
                send_side(t)
            else:
                recv_side(t)
        """),
        # the other ranks' matching broadcast is inside a method this file does not show
        Example("""
            import torch
            import torch.distributed as dist
            def serve(model):
                if dist.get_rank() == 0:
                    run_server(model)
                    dist.broadcast(torch.tensor([1], device="cuda"), src=0)
                else:
                    model.generate_other_ranks()
        """),
    ]
    invalid = [
        Example("""
            import torch
            import torch.distributed as dist
            if dist.get_rank() == 0:
                torch.save(model.state_dict(), "ckpt.pt")
                dist.barrier()
        """, line=5),
        Example("""
            import torch.distributed as dist
            dist.init_process_group("nccl")
            def log_metrics(loss):
                if dist.get_rank() != 0:
                    return
                dist.all_reduce(loss)
                print(loss.item())
        """, line=6),
        Example("""
            import torch
            from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
            model = FSDP(model)
            if rank == 0:
                torch.save(model.state_dict(), "ckpt.pt")
        """, line=5),
        Example("""
            import torch.distributed as dist
            def evaluate(model, loader):
                loss = compute(model, loader)
                dist.all_reduce(loss)
                return loss
            def train(model, loader):
                dist.init_process_group("nccl")
                for epoch in range(10):
                    step(model, loader)
                    if dist.get_rank() == 0:
                        print(evaluate(model, loader))
        """, line=4),
    ]

    def check_file(self, f, ctx) -> Iterable[Diagnostic]:
        s = script_of(f)
        if s is None:
            return
        cands: list[tuple[Call, str]] = []
        for c in s.by("collective"):
            short = next(iter(c.qnames)).rsplit(".", 1)[-1] if c.qnames else c.func_text
            gp = _GROUP_POS.get(short)
            g = c.arg_node("group", gp)
            if g is not None and not _is_none(g):
                continue
            if c.has_star() or any(a.keyword in ("process_group", "pg") for a in c.args):
                continue
            cands.append((c, short))
        for c in s.by("dcp_save"):
            cands.append((c, "checkpoint.save"))
        fsdp_names = {c.target for c in s.by("fsdp") if c.target}
        for c in s.methods("state_dict"):
            if c.receiver is not None and s.code(c.receiver) in fsdp_names and not c.args:
                cands.append((c, "FSDP state_dict"))
        # (call, short, the rank condition, the call site it is reached through)
        entries: list[tuple[Call, str, Guard, Call | None]] = []
        for c, short in cands:
            branch = [g for g in (c.frame.base_guards + c.guards) if g.rank and not g.main]
            if branch:
                entries.append((c, short, branch[-1], None))
                continue
            site = _only_call_site(s, c.frame)
            if site is not None:
                sguards = [g for g in (site.frame.base_guards + site.guards) if g.rank and not g.main]
                if sguards:
                    entries.append((c, short, sguards[-1], site))
        for c, short, g, site in entries:
            if any(o is not c and sh == short and (og.if_id == g.if_id and og.branch != g.branch)
                   for o, sh, og, _ in entries):
                continue  # the other branch makes the same collective
            if _other_path_hidden(s, g):
                continue  # the other ranks call code this file does not show: the match may be there
            if site is None and any(o is not c and sh == short and _same_body(s, o.frame, c.frame) for o, sh in cands):
                continue  # paired with a call on the other ranks' path (the download-barrier pattern)
            what = {"FSDP state_dict": "an FSDP model's full state_dict() (an all-gather)",
                    "checkpoint.save": "torch.distributed.checkpoint.save (a collective)"}.get(short, f"{short}()")
            side = "true" if g.branch else "false"
            if site is None:
                msg = f"{what} runs only on the ranks where `{g.text}` is {side}"
                related = [Related.at(g.span, "rank-dependent condition")]
            else:
                msg = (f"{what} in {c.frame.name}(), which is only called where `{g.text}` is {side} "
                       f"(line {site.span.line})")
                related = [Related.at(site.span, f"{c.frame.name}() called only on some ranks"),
                           Related.at(g.span, "rank-dependent condition")]
            yield self.report(c.span, msg + "; the other ranks never enter it and the job hangs; move it out of the branch so "
                              "every rank calls it", related=related)


def _same_body(s, a, b) -> bool:
    """One function, or two methods of one class (:meth:`Script.same_run`, without its module-level
    case): a barrier that some ranks reach here is paired with one the other ranks reach there (a
    context manager that staggers ranks: even ranks wait in ``__enter__``, odd ones in ``__exit__``)."""
    return a is b or (a.kind != "module" and b.kind != "module" and s.same_run(a, b))
