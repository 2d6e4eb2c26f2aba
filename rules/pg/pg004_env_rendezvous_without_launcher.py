"""PG004 env-rendezvous-without-launcher: env:// rendezvous in a script started by plain python with no MASTER_ADDR/PORT/RANK/WORLD_SIZE"""

from __future__ import annotations

from typing import Iterable

from parallint.model.diagnostics import Diagnostic, Related, Severity
from parallint.model.rule import Example, Rule
from parallint.model.script import Call, Script, job_scripts
from parallint.rules.pg._common import _PY, _reached


def _unconditional(s: Script, c: Call) -> bool:
    paths = _reached(s, c)
    if not paths:
        return False
    return any(all(g.main for g in p) for p in paths)


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
