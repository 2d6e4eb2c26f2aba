"""DDP002 global-rank-as-device: the global rank selects the CUDA device in a job that spans several nodes (use the local rank)"""

from __future__ import annotations

from typing import Iterable

from parallint.model.diagnostics import Diagnostic, Severity
from parallint.model.rule import Example, Rule
from parallint.model.script import Script, job_scripts


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


def _own_local_device(s: Script) -> "tuple[str, int] | None":
    """(its source, its line) for ``<global rank> % torch.cuda.device_count()`` written in the
    script: the code itself says that the global rank is not the device index."""
    import ast

    counts = [c for c in s.calls if "torch.cuda.device_count" in c.qnames]
    tree = getattr(s, "_module", None)
    if not counts or tree is None:
        return None
    mods = {id(n.right): n for n in ast.walk(tree) if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mod)}
    for c in counts:
        parent = mods.get(id(c.node))
        if parent is not None and s.rank_kind(parent.left, c.frame) == "global":
            return s.code(parent), s.span_of(parent).line
    return None


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
    Flags the global rank (`dist.get_rank()`, `RANK`, `SLURM_PROCID`, Horovod's `hvd.rank()`, or
    a variable holding one)
    used to pick the GPU (`device_ids=[rank]`, `torch.cuda.set_device(rank)`, `.to(rank)`,
    `.cuda(rank)`, `torch.device("cuda", rank)`, `f"cuda:{rank}"`) in a script that a linked launch
    starts on more than one node (torchrun `--nnodes 2`, `srun -N 4`, `horovodrun -np 16 -H
    a:8,b:8`, a Lightning
    `Trainer(num_nodes=2)` ...).

    On one node the global rank *is* the local rank, so the pattern is only a bug when the job
    spans nodes. Without a launch that gives the node count, the script's own code can say so: a
    script that computes its local device as `rank % torch.cuda.device_count()` and then hands the
    bare global rank to `device_ids=[rank]` or `.to(rank)` expects several nodes, and is flagged
    (unless a linked launch says one node). The rule therefore stays silent when the script is not started by a launch that
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
        # the same helper, reached through `-m`, on one node
        Example(files={
            "run.sh": "torchrun --nnodes 1 --nproc-per-node 4 -m gen.generate\n",
            "gen/__init__.py": "",
            "gen/generate.py": """
                from gen.dist import init_distributed
                def main():
                    init_distributed()
            """,
            "gen/dist.py": """
                import os
                import torch
                import torch.distributed as dist
                def init_distributed():
                    dist.init_process_group("nccl")
                    torch.cuda.set_device(int(os.environ["RANK"]))
            """,
        }),
        # the same script handing DDP the local device it computed
        Example("""
            import torch
            import torch.distributed as dist
            from torch.nn.parallel import DistributedDataParallel as DDP
            dist.init_process_group("nccl")
            rank = dist.get_rank()
            device = rank % torch.cuda.device_count()
            torch.cuda.set_device(device)
            model = DDP(model.cuda(), device_ids=[device])
        """),
        # Horovod: the same job with the local rank, and the global rank where -np fits one node
        Example(files={
            "run.sh": "horovodrun -np 16 -H node1:8,node2:8 python train.py\n",
            "train.py": """
                import torch
                import horovod.torch as hvd
                hvd.init()
                torch.cuda.set_device(hvd.local_rank())
            """,
        }),
        Example(files={
            "run.sh": "horovodrun -np 4 -H node1:4,node2:4 python train.py\n",
            "train.py": """
                import torch
                import horovod.torch as hvd
                hvd.init()
                torch.cuda.set_device(hvd.rank())
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
        # the mistake is in a helper module that the launched module imports
        Example(
            files={
                "run.sh": "torchrun --nnodes 2 --nproc-per-node 4 --rdzv-endpoint $HEAD:29500 -m gen.generate\n",
                "gen/__init__.py": "",
                "gen/generate.py": """
                    from gen.dist import init_distributed
                    def main():
                        init_distributed()
                """,
                "gen/dist.py": """
                    import os
                    import torch
                    import torch.distributed as dist
                    def init_distributed():
                        dist.init_process_group("nccl")
                        torch.cuda.set_device(int(os.environ["RANK"]))
                """,
            },
            line=6,
        ),
        # no launch: the script itself computes the local device, then uses the global rank
        Example("""
            import torch
            import torch.distributed as dist
            from torch.nn.parallel import DistributedDataParallel as DDP
            dist.init_process_group("nccl")
            rank = dist.get_rank()
            torch.cuda.set_device(rank % torch.cuda.device_count())
            model = DDP(model.cuda(), device_ids=[rank])
        """, line=7),
        # Horovod: two nodes of eight slots each
        Example(files={
            "run.sh": "horovodrun -np 16 -H node1:8,node2:8 python train.py\n",
            "train.py": """
                import torch
                import horovod.torch as hvd
                hvd.init()
                torch.cuda.set_device(hvd.rank())
            """,
        }, line=4),
    ]

    def _findings(self, f, s: Script, nodes: int, via: str | None = None,
                  local: "tuple[str, int] | None" = None) -> Iterable[Diagnostic]:
        seen = set()
        reach = f" (this module is imported by {via}, which the job starts)" if via else ""
        for node, frame, what in _device_uses(s):
            if s.rank_kind(node, frame) != "global":
                continue
            span = s.span_of(node)
            if (span.line, span.column) in seen:
                continue
            seen.add((span.line, span.column))
            if local is not None:
                yield self.report(
                    span,
                    f"the global rank `{s.code(node)}` selects the device in {what}, but this script "
                    f"computes its local device as `{local[0]}` (line {local[1]}), so it expects several "
                    f"nodes{reach}: there ranks >= the GPUs per node ask for a device that does not exist; "
                    "use that local device",
                )
                continue
            local_name = "hvd.local_rank()" if "horovod" in (s.text or "") else "LOCAL_RANK"
            yield self.report(
                span,
                f"the global rank `{s.code(node)}` selects the device in {what}, but this job spans "
                f"{nodes} nodes{reach}: ranks >= the GPUs per node ask for a device that does not exist; "
                f"use the local rank ({local_name})",
            )

    def check_job(self, job, ctx) -> Iterable[Diagnostic]:
        nodes = job.int("parallel.nodes")
        if nodes is not None and nodes <= 1:
            return  # one node: the global rank is the local rank
        for f, s in job_scripts(job):
            if s.has("spawn"):
                continue  # workers started on this host: a single-node harness
            if nodes is not None:
                yield from self._findings(f, s, nodes, job.imported.get(f.abspath))
                continue
            # no node count: the script's own code may still show that it expects several nodes
            local = _own_local_device(s)
            if local is not None:
                yield from self._findings(f, s, 0, job.imported.get(f.abspath), local)
