from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
CORPUS = SHARED / "corpus"


#: a training script with one planted mistake: DDP001 on line PLANTED_DDP_LINE
PLANTED_DDP_SCRIPT = """\
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    model = torch.nn.Linear(8, 8).cuda()
    model = DDP(model, device_ids=[local_rank], find_unused_parameters=True)
"""
PLANTED_DDP_LINE = 13


def run_cli(*args: str, cwd: Path | None = None, stdin: str | None = None, env: dict | None = None):
    """Run the installed ``parallint`` command the way a user does; returns CompletedProcess."""
    full_env = dict(os.environ)
    full_env.pop("PARALLINT_DEBUG", None)
    if env:
        full_env.update(env)
    exe = Path(sys.executable).with_name("parallint")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "parallint"]
    return subprocess.run(
        cmd + list(args), cwd=cwd, input=stdin, capture_output=True, text=True, env=full_env, timeout=300
    )


@pytest.fixture
def cli():
    return run_cli


def write_tree(base: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        p = base / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")


def rule_family(name: str):
    """A rule family as one namespace for tests: its rule classes (one module each, see
    ``rules/<family>/``) and its shared helpers (``_common``), by name."""
    import importlib
    import pkgutil
    from types import SimpleNamespace

    pkg = importlib.import_module(f"parallint.rules.{name}")
    out: dict = {}
    for info in pkgutil.iter_modules(pkg.__path__):
        mod = importlib.import_module(f"{pkg.__name__}.{info.name}")
        out.update({k: v for k, v in vars(mod).items() if not k.startswith("__")})
    return SimpleNamespace(**out)
