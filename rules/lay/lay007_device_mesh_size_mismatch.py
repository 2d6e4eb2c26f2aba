"""LAY007 device-mesh-size-mismatch: the product of an init_device_mesh/DeviceMesh shape differs from the world size"""

from __future__ import annotations

import math
from typing import Iterable

from parallint.model.diagnostics import Diagnostic, Related, Severity
from parallint.model.rule import Example, Rule
from parallint.model.script import job_scripts, script_of
from parallint.model.world import job_launch_world_size


def _script_launcher_world(job):
    """The world a launcher inside the job's script starts (Ray Train ``ScalingConfig``,
    ``mp.spawn``, ``os.environ["WORLD_SIZE"]``): a known world-size fact of the launcher layer."""
    from parallint.model.facts import known_int

    vals = [v for v in job.facts.all("parallel.world_size") if v.origin.via == "launcher"]
    known = {known_int(v) for v in vals}
    if len(known) != 1 or None in known:
        return None, None
    return known_int(vals[0]), vals[0]


class DeviceMeshSizeMismatch(Rule):
    code = "LAY007"
    facts = frozenset({"parallel.world_size"})
    name = "device-mesh-size-mismatch"
    severity = Severity.ERROR
    summary = "the product of an init_device_mesh/DeviceMesh shape differs from the world size"
    kinds = frozenset({"python"})
    doc = """
    ## What it does
    Multiplies the shape given to `init_device_mesh(device, mesh_shape)` (or the nested rank list
    of `DeviceMesh(device, [[...], ...])`) and compares it with the world size: the one passed to
    `init_process_group(world_size=...)` in the same script, or the one the launch starts (a
    launcher inside the script counts too: Ray Train's `ScalingConfig(num_workers=...)`,
    `mp.spawn(nprocs=...)` on one node, `os.environ["WORLD_SIZE"]`, submitit's
    `update_parameters(nodes=..., tasks_per_node=...)`).

    The shape is resolved within the file: literals and constants, argparse defaults
    (`args.tp`), fields of a `@dataclass` built in the file (the keyword passed, else the field's
    default, unless the code assigns the field later) and the single return value of a
    parameterless function defined in the file. Degrees that come from another module (an
    argparse namespace built elsewhere, Megatron's `get_args()`, a config object loaded at run
    time), from the environment or from a function's arguments stay unknown, and the rule is
    silent on them.

    ## Why it matters
    A mesh must cover every rank exactly once. `init_device_mesh` raises at start-up when the
    shape does not multiply to the world size, after the job got its GPUs.

    ## Example

    ## How to fix
    Derive one dimension from the world size: `(world_size // tp, tp)`.
    """
    valid = [
        Example("""
            import torch.distributed as dist
            from torch.distributed.device_mesh import init_device_mesh
            dist.init_process_group("nccl", world_size=8)
            mesh = init_device_mesh("cuda", (2, 4), mesh_dim_names=("dp", "tp"))
        """),
        Example("""
            import torch.distributed as dist
            from torch.distributed.device_mesh import init_device_mesh
            world = dist.get_world_size()
            mesh = init_device_mesh("cuda", (world // 4, 4))
        """),
        Example(files={
            "run.sh": "torchrun --nnodes 2 --nproc_per_node 8 train.py\n",
            "train.py": """
                from torch.distributed.device_mesh import init_device_mesh
                TP = 8
                mesh = init_device_mesh("cuda", (2, TP), mesh_dim_names=("dp", "tp"))
            """,
        }),
    ]
    invalid = [
        Example(files={
            "run.sh": "torchrun --nnodes 1 --nproc_per_node 8 train.py\n",
            "train.py": """
                from dataclasses import dataclass
                from torch.distributed.device_mesh import init_device_mesh
                @dataclass
                class Parallelism:
                    dp: int = 2
                    tp: int = 8
                cfg = Parallelism()
                mesh = init_device_mesh("cuda", (cfg.dp, cfg.tp), mesh_dim_names=("dp", "tp"))
            """,
        }, line=8),
        Example("""
            import torch.distributed as dist
            from torch.distributed.device_mesh import init_device_mesh
            dist.init_process_group("nccl", world_size=16)
            mesh = init_device_mesh("cuda", (2, 4), mesh_dim_names=("dp", "tp"))
        """, line=4),
        Example("""
            import torch.distributed as dist
            from torch.distributed.device_mesh import DeviceMesh
            dist.init_process_group("nccl", world_size=8)
            mesh = DeviceMesh("cuda", [[0, 1], [2, 3]])
        """, line=4),
        Example(files={
            "run.sh": "torchrun --nnodes 2 --nproc_per_node 8 train.py\n",
            "train.py": """
                from torch.distributed.device_mesh import init_device_mesh
                mesh = init_device_mesh("cuda", (4, 8), mesh_dim_names=("dp", "tp"))
            """,
        }, line=2),
    ]

    def _check(self, s, ws: int, what: str, related=(), frame=None) -> Iterable[Diagnostic]:
        for m in s.meshes:
            if m.shape is None:
                continue
            if frame is not None and (m.call is None or not s.same_run(frame, m.call.frame)):
                continue
            n = math.prod(m.shape)
            if n != ws:
                shape = "×".join(str(d) for d in m.shape)
                yield self.report(
                    m.span,
                    f"device mesh {shape} covers {n} ranks but {what} is {ws}; change the mesh "
                    f"shape so its product is {ws}",
                    related=related,
                )

    def check_file(self, f, ctx) -> Iterable[Diagnostic]:
        s = script_of(f)
        if s is None:
            return
        for ws, frame in s.world_sizes():
            rel = [Related.at(ws.span, "world size stated here")] if ws.span else []
            yield from self._check(s, ws.value, "init_process_group(world_size=...)", rel, frame)

    def check_job(self, job, ctx) -> Iterable[Diagnostic]:
        ws, wv = job_launch_world_size(job)
        if ws is None:
            ws, wv = _script_launcher_world(job)
        if ws is None:
            return
        assert wv is not None  # a known world size comes with its Value
        rel = [Related.at(wv.span, f"{ws} processes ({wv.source})")] if wv.span else []
        for f, s in job_scripts(job):
            if f.facts.int("parallel.world_size") is not None:
                continue  # checked against the script's own world size
            yield from self._check(s, ws, "the number of processes the launch starts", rel)
