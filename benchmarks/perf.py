"""The figures of issue 12 (performance), each side by side with its floor, in one run.

Every figure is a median of ``--repeat`` runs (default 3) of a fresh subprocess, taken in
interleaved rounds (floor, then each command, then the floor again ...) so that the load of a
shared machine falls on floor and command alike; each is printed as seconds and as a ratio to its
floor measured in the same run.

Whole trees (floor: a bare ``ast.parse`` of every ``.py``):
  parallint with its default workers, with one worker (``PARALLINT_JOBS=1``), a LibCST parse of
  every ``.py``, ``ruff check --select ALL`` (when ruff is installed), a warm cached run (when
  parallint has a content cache: a ``cache`` command), and the peak RSS of each parallint run (the
  ``wait4`` usage of that one child: the largest of its process and its waited-for workers).
  Trees: a synthetic distributed-heavy tree generated here (deterministic, any machine), the real
  trees given with ``--trees`` or else those found in /work/repos (Megatron-LM,
  DeepSpeedExamples, torchtitan), and the running interpreter's standard library (a copy of its
  ``.py`` files, without site-packages).
One-file runs, as pre-commit makes them (cold: ``--no-cache``, the file changed since the last run):
  a ~300-line training script against
  ``python -c "import libcst"``, a NeMo-style YAML and a DeepSpeed JSON against
  ``python -c "import yaml"``, ``parallint --version`` against ``python -c pass``; and the YAML as
  a hook runs it by default: the cache on and existing, the file edited before each run.
One generated 50,000-line Python file against its LibCST parse.
One file inside a large repository (issue 27; ``--megatron PATH``, else Megatron-LM found under
/work/repos): a copy of the tree (hard links where the file system allows) with a DeepSpeed JSON
and the launch line that names it, and a 16× copy (16 such trees in one repository); in each, the
warm one-file check of a Megatron YAML and of the JSON (the cache on and built by an untimed run)
against ``python -c "import yaml"``, with their peak RSS; a warm whole-tree run made after a
change in the temporary folder (and whether the run cache hit); the language server: its start-up
(``parallint server`` answering ``initialize``) against ``python -c pass``, and an edit of the
launch file analysed in a Megatron workspace (``Linter.lint`` with the edited buffer, which is what
runs after the debounce), the median over edits, after one untimed analysis.

Commands run with bytecode (as an installed tool does): ``PYTHONDONTWRITEBYTECODE`` is dropped and
``PYTHONPYCACHEPREFIX`` points at a per-user folder in the temporary directory, warmed before the
first measurement. parallint's cold runs pass ``--no-cache`` and every run gets its own
``PARALLINT_CACHE_DIR``, so nothing is written into the trees.

    python benchmarks/perf.py                  # everything (minutes on large trees)
    python benchmarks/perf.py --quick          # synthetic tree and one-file runs (seconds)
    python benchmarks/perf.py --repeat 5 --trees /path/to/repo --json out.json
    python benchmarks/perf.py --parallint /other/venv/bin/parallint   # another build ("before")
    python benchmarks/perf.py --quick --compare /other/venv/bin/parallint  # one-file runs of both, interleaved
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

REAL_TREES = ("NVIDIA+Megatron-LM", "microsoft+DeepSpeedExamples", "pytorch+torchtitan")
REPOS = Path("/work/repos")

# --------------------------------------------------------------------------- floors (run as -c)

_LIST_PY = """
import os, sys
def walk(root):
    for d, dirs, files in os.walk(root):
        dirs[:] = sorted(x for x in dirs if not x.startswith('.'))
        for f in sorted(files):
            if f.endswith('.py'):
                yield os.path.join(d, f)
"""

AST_FLOOR = _LIST_PY + """
import ast
for p in walk(sys.argv[1]):
    try:
        with open(p, 'rb') as fh:
            ast.parse(fh.read())
    except (SyntaxError, ValueError, RecursionError, MemoryError, OSError):
        pass
"""

LIBCST_FLOOR = _LIST_PY + """
import libcst
for p in walk(sys.argv[1]):
    try:
        with open(p, 'rb') as fh:
            libcst.parse_module(fh.read())
    except Exception:
        pass
"""

LIBCST_ONE = """
import sys, libcst
with open(sys.argv[1], 'rb') as fh:
    libcst.parse_module(fh.read())
"""

# --------------------------------------------------------------------------- the synthetic tree

_LIB = '''"""Model components, part {i}."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block{i}(nn.Module):
    def __init__(self, dim: int = {dim}, heads: int = {heads}, dropout: float = 0.1) -> None:
        super().__init__()
        self.dim = dim
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.norm1 = nn.LayerNorm(dim)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))
        self.drop = nn.Dropout(dropout)

    def attention(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(self.dim, dim=2)
        q = q.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        k = k.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        v = v.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = F.softmax(att, dim=-1)
        y = self.drop(att) @ v
        return self.proj(y.transpose(1, 2).contiguous().view(b, t, c))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attention(self.norm1(x))
        return x + self.mlp(self.norm2(x))

'''

_LIB_HELPER = '''
def helper_{i}_{k}(values, scale={k}):
    """Scale, clip and summarise a list of numbers."""
    out = []
    for v in values:
        if v is None:
            continue
        w = v * scale
        if w > {lim}:
            w = {lim}
        elif w < -{lim}:
            w = -{lim}
        out.append(w)
    total = sum(out)
    mean = total / len(out) if out else 0.0
    return {{"total": total, "mean": mean, "count": len(out), "name": "h{i}_{k}"}}

'''

_TRAIN_HEAD = '''"""Training entry point {i}."""

import argparse
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
{imports}
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default={epochs})
    p.add_argument("--batch-size", type=int, default={batch})
    p.add_argument("--lr", type=float, default=3e-4)
    p.add_argument("--local_rank", type=int, default=-1)
    p.add_argument("--deepspeed_config", type=str, default=None)
    return p.parse_args()


class Net(nn.Module):
    def __init__(self, dim={dim}):
        super().__init__()
        self.layers = nn.Sequential(*[nn.Linear(dim, dim) for _ in range({layers})])
        self.head = nn.Linear(dim, 10)

    def forward(self, x):
        return self.head(self.layers(x))


def setup():
    dist.init_process_group(backend="nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    return local_rank

'''

_TRAIN_DDP = '''
def train(args):
    local_rank = setup()
    model = Net().cuda(local_rank)
    model = DDP(model, device_ids=[local_rank]{unused})
    data = TensorDataset(torch.randn(4096, {dim}), torch.randint(0, 10, (4096,)))
    sampler = DistributedSampler(data)
    loader = DataLoader(data, batch_size=args.batch_size, sampler=sampler)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        for x, y in loader:
            loss = nn.functional.cross_entropy(model(x.cuda()), y.cuda())
            opt.zero_grad()
            loss.backward()
            opt.step()
        if dist.get_rank() == 0:
            torch.save(model.state_dict(), f"ckpt_{{epoch}}.pt")
        dist.barrier()
    dist.destroy_process_group()

'''

_TRAIN_DS = '''
def train(args):
    setup()
    model = Net()
    engine, opt, _, _ = deepspeed.initialize(args=args, model=model, model_parameters=model.parameters(),
                                             config=args.deepspeed_config)
    data = TensorDataset(torch.randn(4096, {dim}), torch.randint(0, 10, (4096,)))
    loader = DataLoader(data, batch_size=args.batch_size, sampler=DistributedSampler(data))
    for epoch in range(args.epochs):
        for x, y in loader:
            loss = nn.functional.cross_entropy(engine(x.to(engine.device)), y.to(engine.device))
            engine.backward(loss)
            engine.step()
        engine.save_checkpoint("checkpoints", tag=f"epoch{{epoch}}")

'''

_TRAIN_FSDP = '''
def train(args):
    local_rank = setup()
    model = FSDP(Net().cuda(local_rank))
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
    x = torch.randn(args.batch_size, {dim}, device="cuda")
    for step in range(100 * args.epochs):
        loss = model(x).sum()
        loss.backward()
        opt.step()
        opt.zero_grad()
        if step % 10 == 0:
            t = torch.tensor([loss.item()], device="cuda")
            dist.all_reduce(t)
    dist.destroy_process_group()

'''

_EXTRA = '''
def evaluate_{k}(model, loader, device="cuda"):
    """Accuracy and mean loss over a loader."""
    model.eval()
    correct, total, loss_sum = 0, 0, 0.0
    with torch.no_grad():
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            out = model(x)
            loss_sum += nn.functional.cross_entropy(out, y, reduction="sum").item()
            correct += (out.argmax(dim=-1) == y).sum().item()
            total += y.numel()
    model.train()
    return {{"acc": correct / max(total, 1), "loss": loss_sum / max(total, 1), "step": {k}}}


def log_{k}(stats, every={k}, start=None):
    """Print a line of statistics."""
    start = start or time.time()
    if int(os.environ.get("RANK", "0")) != 0:
        return
    parts = [f"{{key}}={{value:.4f}}" for key, value in sorted(stats.items()) if isinstance(value, float)]
    print(f"[{{time.time() - start:8.1f}}s] " + " ".join(parts), flush=True)

'''

_TRAIN_MAIN = '''
if __name__ == "__main__":
    train(parse_args())
'''

_KINDS = (
    ("ddp", "from torch.nn.parallel import DistributedDataParallel as DDP", _TRAIN_DDP),
    ("ds", "import deepspeed", _TRAIN_DS),
    ("fsdp", "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP", _TRAIN_FSDP),
)


def training_script(i: int, extras: int = 0) -> str:
    kind, imports, body = _KINDS[i % len(_KINDS)]
    dim = 256 * (1 + i % 4)
    text = _TRAIN_HEAD.format(i=i, imports=imports, epochs=1 + i % 5, batch=4 * (1 + i % 3), dim=dim, layers=2 + i % 6)
    text += body.format(dim=dim, unused=", find_unused_parameters=True" if i % 7 == 0 else "")
    text += "".join(_EXTRA.format(k=k) for k in range(extras))
    return text + _TRAIN_MAIN


def script_of_lines(lines: int) -> str:
    """A training script of about ``lines`` lines (the pre-commit case)."""
    extras = 0
    while training_script(0, extras).count("\n") < lines:
        extras += 1
    return training_script(0, extras)


def deepspeed_json(i: int) -> str:
    micro, accum, world = 1 + i % 4, 1 + i % 3, 16
    cfg = {
        "train_batch_size": micro * accum * world,
        "train_micro_batch_size_per_gpu": micro,
        "gradient_accumulation_steps": accum,
        "gradient_clipping": 1.0,
        "zero_optimization": {"stage": 1 + i % 3, "overlap_comm": True, "contiguous_gradients": True,
                              "reduce_bucket_size": 500000000},
        "bf16": {"enabled": True},
        "optimizer": {"type": "AdamW", "params": {"lr": 3e-4, "betas": [0.9, 0.95], "weight_decay": 0.1}},
        "scheduler": {"type": "WarmupLR", "params": {"warmup_min_lr": 0, "warmup_max_lr": 3e-4,
                                                     "warmup_num_steps": 1000}},
        "wall_clock_breakdown": False,
    }
    return json.dumps(cfg, indent=2) + "\n"


def nemo_yaml(i: int) -> str:
    tp, pp = (1, 2, 4, 8)[i % 4], (1, 2)[i % 2]
    layers = 24 + 8 * (i % 3)
    return f"""name: gpt_{i}
trainer:
  devices: 8
  num_nodes: {1 + i % 4}
  accelerator: gpu
  precision: bf16-mixed
  max_steps: 100000
  val_check_interval: 1000
  log_every_n_steps: 10
  gradient_clip_val: 1.0
exp_manager:
  explicit_log_dir: null
  create_checkpoint_callback: true
  checkpoint_callback_params:
    monitor: val_loss
    save_top_k: 3
    mode: min
model:
  micro_batch_size: {1 + i % 4}
  global_batch_size: {64 * (1 + i % 4)}
  tensor_model_parallel_size: {tp}
  pipeline_model_parallel_size: {pp}
  encoder_seq_length: 2048
  max_position_embeddings: 2048
  num_layers: {layers}
  hidden_size: 2048
  ffn_hidden_size: 8192
  num_attention_heads: 16
  init_method_std: 0.02
  hidden_dropout: 0.1
  attention_dropout: 0.1
  kv_channels: null
  apply_query_key_layer_scaling: true
  layernorm_epsilon: 1e-5
  make_vocab_size_divisible_by: 128
  pre_process: true
  post_process: true
  persist_layer_norm: true
  gradient_as_bucket_view: true
  activations_checkpoint_granularity: selective
  sequence_parallel: {str(tp > 1).lower()}
  tokenizer:
    library: megatron
    type: GPT2BPETokenizer
  optim:
    name: distributed_fused_adam
    lr: 2e-4
    weight_decay: 0.01
    betas: [0.9, 0.98]
    sched:
      name: CosineAnnealing
      warmup_steps: 500
      min_lr: 2e-5
"""


def launch_script(i: int) -> str:
    kind = _KINDS[i % len(_KINDS)][0]
    nodes = 1 + i % 4
    head = f"#!/bin/bash\n#SBATCH --job-name=train{i}\n#SBATCH --nodes={nodes}\n#SBATCH --gres=gpu:8\n#SBATCH --time=04:00:00\n\nset -euo pipefail\n"
    if kind == "ds":
        return head + f"deepspeed --num_nodes {nodes} --num_gpus 8 train_{i}.py --deepspeed_config configs/ds_{i}.json\n"
    return head + (f"MASTER_ADDR=$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | head -n 1)\n"
                   f"srun torchrun --nnodes {nodes} --nproc_per_node 8 --rdzv_backend c10d "
                   f"--rdzv_endpoint \"$MASTER_ADDR:29500\" train_{i}.py --batch-size {4 * (1 + i % 3)}\n")


def build_synthetic(root: Path, scale: float = 1.0) -> None:
    """A distributed-heavy tree: training scripts (DDP, DeepSpeed, FSDP), sbatch/torchrun and
    deepspeed launch scripts, DeepSpeed JSON and NeMo YAML configs, and plain library code."""
    n_scripts = max(3, int(90 * scale))
    n_lib = max(4, int(400 * scale))
    (root / "configs").mkdir(parents=True, exist_ok=True)
    (root / "models").mkdir(exist_ok=True)
    (root / "scripts").mkdir(exist_ok=True)
    (root / "models" / "__init__.py").write_text("")
    for i in range(n_scripts):
        (root / f"train_{i}.py").write_text(training_script(i, extras=i % 4))
        (root / "scripts" / f"launch_{i}.sh").write_text(launch_script(i))
        (root / "configs" / f"ds_{i}.json").write_text(deepspeed_json(i))
        (root / "configs" / f"gpt_{i}.yaml").write_text(nemo_yaml(i))
    for i in range(n_lib):
        text = _LIB.format(i=i, dim=128 * (1 + i % 8), heads=4 * (1 + i % 4))
        text += "".join(_LIB_HELPER.format(i=i, k=k, lim=10 + k) for k in range(6))
        (root / "models" / f"block_{i}.py").write_text(text)


def big_file(lines: int = 50_000) -> str:
    """A generated Python module of about ``lines`` lines that parallint has to parse (it calls
    torch.distributed): a long utility module of the kind some repositories keep."""
    head = "import os\n\nimport torch\nimport torch.distributed as dist\n\n\n"
    block = '''def reduce_{k}(t, group=None, op=dist.ReduceOp.SUM):
    """All-reduce ``t`` in place when more than one rank runs ({k})."""
    if not dist.is_available() or not dist.is_initialized():
        return t
    if dist.get_world_size(group) == 1:
        return t
    dist.all_reduce(t, op=op, group=group)
    return t / dist.get_world_size(group)


class Meter{k}:
    def __init__(self, name="m{k}", window={w}):
        self.name = name
        self.window = window
        self.values = []

    def update(self, value):
        self.values.append(float(value))
        if len(self.values) > self.window:
            self.values.pop(0)

    def mean(self):
        return sum(self.values) / max(len(self.values), 1)


'''
    per = block.count("\n")
    return head + "".join(block.format(k=k, w=10 + k % 90) for k in range(max(1, lines // per)))


# --------------------------------------------------------------------------- large repositories

#: `parallint server` (argv[1]) answering `initialize`: the time a client waits for it
SERVER_START = r"""
import json, subprocess, sys
body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                   "params": {"processId": None, "rootUri": None, "capabilities": {}}}).encode()
p = subprocess.Popen([sys.argv[1], "server"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
p.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
p.stdin.flush()
head = b""
while not head.endswith(b"\r\n\r\n"):
    c = p.stdout.read(1)
    if not c:
        sys.exit("no answer")
    head += c
p.kill()
p.wait()
"""

#: a Megatron workspace (argv[1]): its launch file edited N (argv[2]) times, each analysed as the
#: server does after the debounce (Linter.lint with the buffer); prints JSON
LSP_EDIT = r"""
import json, statistics, sys, time
from pathlib import Path
from parallint.cli.server import Linter
root = Path(sys.argv[1]).resolve()
target = root / "run_ds_perf.sh"
lin = Linter(root)
text = target.read_text()
t0 = time.perf_counter()
lin.buffers[target] = text
lin.lint(target)
first = time.perf_counter() - t0
times = []
for i in range(int(sys.argv[2])):
    lin.buffers[target] = text + f"# edit {i}\n"
    t0 = time.perf_counter()
    lin.lint(target)
    times.append(time.perf_counter() - t0)
print(json.dumps({"file": target.name, "median_ms": statistics.median(times) * 1000, "edits": len(times),
                  "first_ms": first * 1000, "runs_ms": [t * 1000 for t in times]}))
"""


def _link_copy(src: Path, dst: Path) -> None:
    """A copy of ``src`` made of hard links where the file system allows (no bytes copied)."""
    def link(a: str, b: str) -> None:
        try:
            os.link(a, b)
        except OSError:
            shutil.copy2(a, b)

    shutil.copytree(src, dst, symlinks=True, copy_function=link,
                    ignore=lambda d, names: [n for n in names if n in (".git", ".parallint_cache")])


def _plant_json(root: Path) -> None:
    """A DeepSpeed JSON and the launch line that names it (Megatron-LM holds none of its own)."""
    (root / "ds_config_perf.json").write_text(deepspeed_json(3))
    (root / "run_ds_perf.sh").write_text("#!/bin/bash\ndeepspeed --num_gpus 8 pretrain_gpt.py "
                                         "--deepspeed --deepspeed_config ds_config_perf.json\n")


def _a_megatron_yaml(root: Path) -> str | None:
    """A Megatron model_config.yaml of the functional tests, the first in sorted order."""
    found = sorted(root.glob("tests/functional_tests/test_cases/*/*/model_config.yaml"))
    return str(found[0].relative_to(root)) if found else None


# --------------------------------------------------------------------------- measuring


@dataclass
class Figure:
    label: str
    cmd: list[str]
    cwd: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    times: list[float] = field(default_factory=list)
    rss: list[int] = field(default_factory=list)  # KiB
    cpu: list[float] = field(default_factory=list)  # user + system seconds (its waited-for workers included)
    failed: str = ""
    #: run before each timed run, untimed (e.g. edit the file a pre-commit run would check)
    prepare: Callable[[], None] | None = None

    @property
    def median(self) -> float:
        return statistics.median(self.times) if self.times else float("nan")

    @property
    def cpu_median(self) -> float:
        return statistics.median(self.cpu) if self.cpu else float("nan")

    @property
    def rss_mb(self) -> float:
        return max(self.rss) / 1024 if self.rss else float("nan")


def _run(fig: Figure, base_env: dict[str, str]) -> None:
    """One run of ``fig`` as a child of this process; its own wall time and wait4 usage."""
    env = dict(base_env, **fig.env)
    if fig.prepare is not None:
        fig.prepare()
    with tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(fig.cmd, cwd=fig.cwd, env=env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            err.seek(0)
            tail = err.read().decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
            fig.failed = f"exit {proc.returncode}: {tail[0][:160]}"
    fig.times.append(elapsed)
    fig.rss.append(usage.ru_maxrss)
    fig.cpu.append(usage.ru_utime + usage.ru_stime)


def measure(figures: list[Figure], repeat: int, base_env: dict[str, str]) -> None:
    """``repeat`` interleaved rounds over ``figures`` (the floor is the first)."""
    for _ in range(repeat):
        for fig in figures:
            if not fig.failed:
                _run(fig, base_env)


def _fmt(fig: Figure | None, floor: Figure | None) -> str:
    if fig is None:
        return "—"
    if fig.failed:
        return "failed"
    s = f"{fig.median:.3f} s" if fig.median < 10 else f"{fig.median:.1f} s"
    if floor is None or fig is floor:
        return s
    return f"{s} ({fig.median / floor.median:.2f}×)"


# --------------------------------------------------------------------------- the run


class Bench:
    def __init__(self, args: argparse.Namespace, work: Path) -> None:
        self.args = args
        self.work = work
        self.py = sys.executable
        self.exe = args.parallint or str(Path(sys.executable).with_name("parallint"))
        if not Path(self.exe).exists():
            sys.exit(f"perf: no parallint at {self.exe} (give --parallint PATH)")
        self.ruff = shutil.which("ruff") or (str(Path(sys.executable).with_name("ruff"))
                                             if Path(sys.executable).with_name("ruff").exists() else None)
        env = dict(os.environ)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env.pop("PARALLINT_JOBS", None)
        env.pop("PARALLINT_DEBUG", None)
        env["PYTHONPYCACHEPREFIX"] = str(Path(tempfile.gettempdir()) / f"parallint-perf-pyc-{os.getuid()}")
        env["PARALLINT_CACHE_DIR"] = str(work / "cache")
        self.env = env
        self.help = self._capture([self.exe, "--help"]) + self._capture([self.exe, "check", "--help"])
        self.has_no_cache = "--no-cache" in self.help
        # a content cache comes with a `cache` command (cache clean); the link index alone is not one
        self.has_cache = self.has_no_cache and any(
            line.split()[:1] == ["cache"] or line.strip().startswith("│ cache ") for line in self.help.splitlines())
        self.notes: list[str] = []
        self.results: dict = {"meta": {}, "trees": [], "one_file": [], "big_file": None, "large_repo": [],
                              "lsp_edit": None}

    def _capture(self, cmd: list[str]) -> str:
        try:
            return subprocess.run(cmd, capture_output=True, text=True, env=getattr(self, "env", None),
                                  timeout=120).stdout
        except (OSError, subprocess.TimeoutExpired):
            return ""

    def warm(self, tree: Path) -> None:
        """Compile the bytecode of everything the measured commands import (not measured)."""
        for cmd in ([self.exe, "--version"], [self.py, "-c", "import libcst, yaml, jsonschema, ast"],
                    [self.exe, "check", "--format", "json", "--exit-zero", *self._no_cache(), str(tree)]):
            subprocess.run(cmd, env=dict(self.env, PARALLINT_JOBS="1"), capture_output=True)

    def _no_cache(self) -> list[str]:
        return ["--no-cache"] if self.has_no_cache else []

    def _check(self, tree: Path, *extra: str) -> list[str]:
        return [self.exe, "check", "--format", "json", "--exit-zero", *extra, str(tree)]

    # ---- whole trees

    def tree(self, name: str, root: Path, libcst: bool = True, one_worker: bool = True) -> None:
        pys = sum(1 for d, dirs, fs in os.walk(root) for f in fs if f.endswith(".py")
                  and not any(part.startswith(".") for part in Path(d).relative_to(root).parts))
        floor = Figure("ast.parse", [self.py, "-c", AST_FLOOR, str(root)])
        figs = [floor, Figure("parallint", self._check(root, *self._no_cache()))]
        if one_worker:
            figs.append(Figure("parallint 1 worker", self._check(root, *self._no_cache()), env={"PARALLINT_JOBS": "1"}))
        if self.args.baseline:  # another build, in the same rounds
            base = [self.args.baseline, *self._check(root, *self._no_cache())[1:]]
            figs.append(Figure("parallint baseline", base))
            if one_worker:
                figs.append(Figure("parallint baseline 1 worker", base, env={"PARALLINT_JOBS": "1"}))
        if self.args.estimate:
            figs.append(Figure("parallint estimate", [self.exe, "estimate", "--format", "json", str(root)]))
            if self.args.baseline:
                figs.append(Figure("parallint baseline estimate",
                                   [self.args.baseline, "estimate", "--format", "json", str(root)]))
        if self.args.lean:
            libcst = False
        if libcst:
            figs.append(Figure("LibCST parse", [self.py, "-c", LIBCST_FLOOR, str(root)]))
        if self.ruff and not self.args.lean:
            figs.append(Figure("ruff --select ALL", [self.ruff, "check", "--isolated", "--select", "ALL", "--no-cache",
                                                     "--exit-zero", "--quiet", str(root)]))
        if self.has_cache and not self.args.lean:
            warm_dir = str(self.work / f"cache-warm-{len(self.results['trees'])}")
            subprocess.run(self._check(root), env=dict(self.env, PARALLINT_CACHE_DIR=warm_dir), capture_output=True)
            figs.append(Figure("parallint warm cache", self._check(root), env={"PARALLINT_CACHE_DIR": warm_dir}))
        print(f"  measuring {name} ({pys} .py) ...", file=sys.stderr, flush=True)
        measure(figs, self.args.repeat, self.env)
        by = {f.label: f for f in figs}
        row = {"tree": name, "path": str(root), "py_files": pys, "figures": {}}
        for f in figs:
            row["figures"][f.label] = {
                "median_s": f.median, "runs_s": f.times, "ratio": f.median / floor.median if floor.times else None,
                "cpu_s": f.cpu_median, "cpu_ratio": f.cpu_median / floor.cpu_median if floor.cpu else None,
                "peak_rss_mb": f.rss_mb if f.label.startswith("parallint") else None, "failed": f.failed or None}
        row["_by"] = by
        self.results["trees"].append(row)
        print("    " + ", ".join(f"{f.label} {_fmt(f, floor)}" for f in figs), file=sys.stderr, flush=True)
        print("    CPU: " + ", ".join(f"{f.label} {f.cpu_median:.2f} s ({f.cpu_median / floor.cpu_median:.2f}×)"
                                  for f in figs if f.cpu), file=sys.stderr, flush=True)

    # ---- one-file runs

    def one_file(self) -> None:
        d = self.work / "onefile"
        d.mkdir()
        (d / "train.py").write_text(script_of_lines(300))
        (d / "nemo_gpt.yaml").write_text(nemo_yaml(3))
        (d / "ds_config.json").write_text(deepspeed_json(3))
        lines = (d / "train.py").read_text().count("\n")
        imp_libcst = Figure('python -c "import libcst"', [self.py, "-c", "import libcst"], cwd=str(d))
        imp_yaml = Figure('python -c "import yaml"', [self.py, "-c", "import yaml"], cwd=str(d))
        bare = Figure("python -c pass", [self.py, "-c", "pass"], cwd=str(d))
        runs = [
            (Figure(f"check a {lines}-line training script", [self.exe, "check", "--exit-zero", *self._no_cache(), "train.py"], cwd=str(d)),
             imp_libcst, 1.3),
            (Figure("check a NeMo-style YAML", [self.exe, "check", "--exit-zero", *self._no_cache(), "nemo_gpt.yaml"], cwd=str(d)), imp_yaml, 2.0),
            (Figure("check a DeepSpeed JSON", [self.exe, "check", "--exit-zero", *self._no_cache(), "ds_config.json"], cwd=str(d)), imp_yaml, 2.0),
        ]
        if self.has_cache:  # as a pre-commit hook runs: the cache on, the file edited since the last run
            edited = d / "nemo_edited.yaml"
            edits = iter(range(1, 1 << 30))

            def edit() -> None:
                edited.write_text(nemo_yaml(3) + f"# edit {next(edits)}\n")

            edit()
            cache = {"PARALLINT_CACHE_DIR": str(self.work / "cache-onefile")}
            subprocess.run([self.exe, "check", "--exit-zero", edited.name], cwd=str(d), env=dict(self.env, **cache),
                           capture_output=True)  # the cache exists, as after an earlier commit
            runs.append((Figure("check a NeMo-style YAML, cache on, edited", [self.exe, "check", "--exit-zero", edited.name],
                                cwd=str(d), env=cache, prepare=edit), imp_yaml, 2.0))
        runs += [
            (Figure("parallint --version", [self.exe, "--version"], cwd=str(d)), bare, None),
        ]
        other = []
        if self.args.compare:  # the same runs of another build, in the same interleaved rounds
            for fig, floor, target in runs:
                cmd = [self.args.compare] + fig.cmd[1:]
                other.append((Figure(f"{fig.label} [{self.args.compare}]", cmd, cwd=fig.cwd, env=fig.env, prepare=fig.prepare),
                              floor, target))
        print("  measuring one-file runs ...", file=sys.stderr, flush=True)
        measure([bare, imp_yaml, imp_libcst] + [r[0] for r in runs + other], self.args.repeat, self.env)
        for fig, floor, target in runs + other:
            self.results["one_file"].append({
                "run": fig.label, "median_s": fig.median, "runs_s": fig.times, "floor": floor.label,
                "floor_s": floor.median, "ratio": fig.median / floor.median, "target": target,
                "failed": fig.failed or None})

    def big(self) -> None:
        d = self.work / "bigfile"
        d.mkdir()
        path = d / "big_module.py"
        path.write_text(big_file())
        floor = Figure("LibCST parse", [self.py, "-c", LIBCST_ONE, str(path)], cwd=str(d))
        fig = Figure("parallint check", [self.exe, "check", "--exit-zero", *self._no_cache(), "big_module.py"], cwd=str(d))
        print("  measuring the 50k-line file ...", file=sys.stderr, flush=True)
        measure([floor, fig], self.args.repeat, self.env)
        self.results["big_file"] = {"lines": path.read_text().count("\n"), "bytes": path.stat().st_size,
                                    "parallint_s": fig.median, "libcst_s": floor.median,
                                    "ratio": fig.median / floor.median, "target": 1.5, "failed": fig.failed or None}

    # ---- one file inside a large repository (issue 27)

    def large_repo(self, source: Path) -> None:
        work = self.work / "large"
        one = work / "x1"
        _link_copy(source, one / "megatron")
        _plant_json(one / "megatron")
        (one / ".git").mkdir()
        sixteen = work / "x16"
        for i in range(16):
            _link_copy(source, sixteen / f"copy{i:02d}")
            _plant_json(sixteen / f"copy{i:02d}")
        (sixteen / ".git").mkdir()
        yaml_rel = _a_megatron_yaml(one / "megatron")
        if yaml_rel is None:
            self.notes.append(f"{source}: no Megatron model_config.yaml, no one-file figures")
            return
        imp_yaml = Figure('python -c "import yaml"', [self.py, "-c", "import yaml"], cwd=str(one))
        bare = Figure("python -c pass", [self.py, "-c", "pass"], cwd=str(one))
        figs: list[tuple[Figure, Figure]] = []
        for label, root, sub in (("1×", one, "megatron"), ("16×", sixteen, "copy07")):
            cache = {"PARALLINT_CACHE_DIR": str(work / f"cache-{label}")}
            for kind, rel in (("YAML", yaml_rel), ("JSON", "ds_config_perf.json")):
                target = root / sub / rel
                cmd = [self.exe, "check", "--exit-zero", str(target)]
                subprocess.run(cmd, cwd=str(root), env=dict(self.env, **cache), capture_output=True)  # builds the index
                figs.append((Figure(f"warm one-file {kind} check, Megatron {label}", cmd, cwd=str(root), env=cache), imp_yaml))
        # a warm whole-tree run after a change in the temporary folder (Megatron's launch lines name /tmp/...)
        tmp_cache = {"PARALLINT_CACHE_DIR": str(work / "cache-tmp")}
        whole = [self.exe, "check", "--format", "json", "--exit-zero", str(one / "megatron")]
        subprocess.run(whole, cwd=str(one), env=dict(self.env, **tmp_cache), capture_output=True)
        scratch = Path(tempfile.gettempdir())
        stamps = iter(range(1 << 30))

        def tmp_change() -> None:
            (scratch / f"parallint-perf-{os.getpid()}-{next(stamps)}.tmp").write_text("x")

        tmp_fig = Figure("warm whole-tree run after a /tmp change, Megatron 1×", whole, cwd=str(one), env=tmp_cache,
                         prepare=tmp_change)
        lsp_py = str(Path(self.exe).with_name("python"))
        start = Figure("server start-up (initialize answered)", [lsp_py, "-c", SERVER_START, self.exe], cwd=str(one))
        print("  measuring one file inside a large repository ...", file=sys.stderr, flush=True)
        measure([bare, imp_yaml] + [f for f, _ in figs] + [tmp_fig, start], self.args.repeat, self.env)
        traced = subprocess.run(whole, cwd=str(one), env=dict(self.env, **tmp_cache, PARALLINT_CACHE_TRACE="1"),
                                capture_output=True, text=True, stdin=subprocess.DEVNULL)
        tmp_change()
        traced = subprocess.run(whole, cwd=str(one), env=dict(self.env, **tmp_cache, PARALLINT_CACHE_TRACE="1"),
                                capture_output=True, text=True, stdin=subprocess.DEVNULL)
        outcome = " ".join(ln.split("run cache: ", 1)[1] for ln in traced.stderr.splitlines() if "run cache: " in ln)
        for p in scratch.glob(f"parallint-perf-{os.getpid()}-*.tmp"):
            p.unlink()
        rows = self.results["large_repo"] = []
        for fig, floor in figs + [(tmp_fig, None), (start, bare)]:
            rows.append({"run": fig.label, "median_s": fig.median, "runs_s": fig.times, "peak_rss_mb": fig.rss_mb,
                         "floor": floor.label if floor else None, "floor_s": floor.median if floor else None,
                         "ratio": fig.median / floor.median if floor else None, "failed": fig.failed or None})
        rows[-2]["run cache"] = outcome
        # the language server's edit, in one process (what runs after the debounce)
        edit = subprocess.run([lsp_py, "-c", LSP_EDIT, str(one / "megatron"), str(max(self.args.repeat, 5))],
                              env=self.env, capture_output=True, text=True, stdin=subprocess.DEVNULL)
        try:
            ms = json.loads(edit.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            ms = {"failed": (edit.stderr.strip().splitlines() or ["?"])[-1][:160]}
        self.results["lsp_edit"] = ms
        x1 = [r for r in rows if r["run"].endswith("Megatron 1×") and "one-file" in r["run"]]
        x16 = [r for r in rows if r["run"].endswith("Megatron 16×")]
        for a, b in zip(x1, x16):
            b["vs_1x_time"] = b["median_s"] / a["median_s"] if a["median_s"] else None
            b["vs_1x_rss"] = b["peak_rss_mb"] / a["peak_rss_mb"] if a["peak_rss_mb"] else None

    # ---- output

    def print_tables(self) -> None:
        cols = ["ast.parse", "parallint", "parallint 1 worker", "LibCST parse", "ruff --select ALL", "parallint warm cache"]
        heads = ["tree", "ast.parse", "parallint, default workers", "parallint, 1 worker", "LibCST parse of all .py",
                 "ruff --select ALL", "warm cached run", "peak RSS (MB, in column order)"]
        print("\nWhole trees (ratio to ast.parse of every .py; targets: Megatron-LM ≤ 2× default, ≤ 3× one worker;"
              " warm ≤ 0.5×; stdlib ≤ 0.5×; peak RSS on Megatron-LM ≤ 250 MB)\n")
        extra = [c for c in ("parallint baseline", "parallint baseline 1 worker", "parallint estimate",
                             "parallint baseline estimate")
                 if any(c in row["_by"] for row in self.results["trees"])]
        if extra:
            heads[-1:-1] = [c.replace("parallint ", "") for c in extra]
            cols += extra
        print("| " + " | ".join(heads) + " |")
        print("|" + "---|" * len(heads))
        for row in self.results["trees"]:
            by = row["_by"]
            floor = by.get("ast.parse")
            cells = [f"{row['tree']} ({row['py_files']} .py)"] + [_fmt(by.get(c), floor) for c in cols]
            rss = [f"{by[c].rss_mb:.0f} MB" for c in ("parallint", "parallint 1 worker", *extra) if c in by and by[c].rss]
            print("| " + " | ".join(cells + [" / ".join(rss) or "—"]) + " |")
        if self.results["one_file"]:
            print("\nOne-file runs, as pre-commit makes them\n")
            print("| run | time | floor | floor time | ratio | target |")
            print("|---|---|---|---|---|---|")
            for r in self.results["one_file"]:
                t = "failed" if r["failed"] else f"{r['median_s'] * 1000:.0f} ms"
                tgt = f"≤ {r['target']}×" if r["target"] else ""
                print(f"| {r['run']} | {t} | {r['floor']} | {r['floor_s'] * 1000:.0f} ms | {r['ratio']:.2f}× | {tgt} |")
        b = self.results["big_file"]
        if b:
            took = "failed" if b["failed"] else f"{b['parallint_s']:.2f} s"
            print(f"\nOne {b['lines']:,}-line file ({b['bytes'] / 1e6:.1f} MB): parallint {took}, "
                  f"its LibCST parse {b['libcst_s']:.2f} s: {b['ratio']:.2f}× (target ≤ 1.5×)")
        if self.results.get("large_repo"):
            print("\nOne file inside a large repository (targets: warm YAML/JSON ≤ 1.5× import yaml; 16× within"
                  " 10 % of 1× in time and RSS; server start-up ≤ 300 ms)\n")
            print("| run | time | peak RSS | floor | floor time | ratio | 16× / 1× time, RSS |")
            print("|---|---|---|---|---|---|---|")
            for r in self.results["large_repo"]:
                t = "failed" if r["failed"] else f"{r['median_s'] * 1000:.0f} ms"
                ratio = f"{r['ratio']:.2f}×" if r["ratio"] else ""
                floor = f"{r['floor_s'] * 1000:.0f} ms" if r["floor_s"] else ""
                vs = f"{r['vs_1x_time']:.2f}, {r['vs_1x_rss']:.2f}" if r.get("vs_1x_time") else r.get("run cache", "")
                print(f"| {r['run']} | {t} | {r['peak_rss_mb']:.0f} MB | {r['floor'] or ''} | {floor} | {ratio} | {vs} |")
            e = self.results.get("lsp_edit") or {}
            if "median_ms" in e:
                print(f"\nLanguage server, Megatron workspace: an edit of {e['file']} analysed in {e['median_ms']:.0f} ms"
                      f" (median of {e['edits']}; first analysis {e['first_ms']:.0f} ms; target ≤ 50 ms)")
            elif e:
                print(f"\nLanguage server edit: failed ({e.get('failed')})")
        for note in self.notes:
            print(f"note: {note}")
        for row in self.results["trees"]:
            for f in row["_by"].values():
                if f.failed:
                    print(f"note: {row['tree']}: {f.label} {f.failed}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="synthetic tree and one-file runs only")
    ap.add_argument("--repeat", type=int, default=3, help="runs per figure (median)")
    ap.add_argument("--trees", nargs="+", metavar="PATH", help="real trees (default: those found in /work/repos)")
    ap.add_argument("--no-stdlib", action="store_true", help="skip CPython's standard library")
    ap.add_argument("--json", metavar="OUT", help="also write every figure as JSON")
    ap.add_argument("--parallint", metavar="EXE", help="the parallint command (default: next to this Python)")
    ap.add_argument("--compare", metavar="EXE", help="one-file runs of another parallint too (e.g. main's), interleaved")
    ap.add_argument("--megatron", metavar="PATH", help="Megatron-LM for the one-file-in-a-large-repository figures"
                    " (also with --quick)")
    ap.add_argument("--scale", type=float, default=None, help="size of the synthetic tree (1.0 full, 0.1 quick)")
    ap.add_argument("--trees-only", action="store_true", help="only the trees given with --trees (no synthetic tree, "
                    "standard library, one-file runs, big file, nor the large-repository figures unless --megatron)")
    ap.add_argument("--lean", action="store_true", help="trees: the floor and parallint only (no LibCST, ruff, warm)")
    ap.add_argument("--baseline", metavar="EXE", help="trees: another parallint too (default and 1 worker), interleaved")
    ap.add_argument("--estimate", action="store_true", help="trees: `parallint estimate` over the tree too "
                    "(and the --baseline build's)")
    args = ap.parse_args(argv)
    if args.repeat < 1:
        ap.error("--repeat must be at least 1")
    with tempfile.TemporaryDirectory(prefix="parallint-perf-") as tmp:
        work = Path(tmp)
        bench = Bench(args, work)
        synth = work / "synthetic"
        build_synthetic(synth, args.scale if args.scale is not None else (0.1 if args.quick else 1.0))
        print(f"perf: {bench.exe}, {args.repeat} run(s) per figure, {os.cpu_count()} CPUs", file=sys.stderr)
        bench.warm(synth)
        if not bench.ruff:
            bench.notes.append("ruff is not installed: no ruff column")
        if not bench.has_cache:
            bench.notes.append("this parallint has no content cache (no `cache` command): no warm cached run")
        if not args.trees_only:
            bench.tree("synthetic", synth)
        if args.trees_only:
            for t in (Path(t) for t in args.trees or ()):
                bench.tree(t.name, t)
        elif not args.quick:
            trees = [Path(t) for t in args.trees] if args.trees else [REPOS / n for n in REAL_TREES if (REPOS / n).is_dir()]
            for t in trees:
                if t.is_dir():
                    bench.tree(t.name, t)
                else:
                    bench.notes.append(f"{t}: not a folder, skipped")
            if not args.no_stdlib:
                stdlib = work / "stdlib"
                shutil.copytree(sysconfig.get_paths()["stdlib"], stdlib, symlinks=True,
                                ignore=lambda d, names: [n for n in names if n in ("site-packages", "dist-packages",
                                                         "__pycache__") or (not n.endswith(".py") and
                                                         not os.path.isdir(os.path.join(d, n)))])
                bench.tree(f"CPython {sys.version_info[0]}.{sys.version_info[1]} Lib", stdlib, libcst=False)
                bench.notes.append("the standard library row (its .py files, site-packages left out) has no LibCST column")
        if not args.trees_only:
            bench.one_file()
        if not args.quick and not args.trees_only:
            bench.big()
        mega = Path(args.megatron) if args.megatron else next(
            (p for p in [REPOS / "NVIDIA+Megatron-LM", *sorted(REPOS.glob("*/NVIDIA+Megatron-LM"))] if p.is_dir()), None)
        if ((not args.quick and not args.trees_only) or args.megatron) and mega is not None and bench.has_cache:
            bench.large_repo(mega)
        bench.print_tables()
        if args.json:
            out = dict(bench.results)
            out["trees"] = [{k: v for k, v in row.items() if k != "_by"} for row in out["trees"]]
            out["meta"] = {"parallint": bench.exe, "python": sys.version.split()[0], "repeat": args.repeat,
                           "cpus": os.cpu_count(), "ruff": bench.ruff, "content_cache": bench.has_cache,
                           "notes": bench.notes}
            Path(args.json).write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
