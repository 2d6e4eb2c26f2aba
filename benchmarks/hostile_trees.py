"""Hostile trees: ``parallint check`` on trees built to hurt a walker, timed with peak memory.

Builds each tree in a temporary folder, runs the installed CLI on it as a user would (a whole
tree, and a one-file check inside it), and prints wall time, the child's peak resident set, the
exit status and the number of findings. Every tree also holds one planted mistake (DDP001), so a
run that walked away or gave up shows as a missing finding.

    python benchmarks/hostile_trees.py [--files 100000] [--depth 2000] [--json out.json]

Trees: ``many-files`` (N one-line Python and shell files in 1,000 folders), ``deep`` (a chain of
D nested folders with a DeepSpeed batch mistake, BAT, at the bottom), ``odd-names`` (file and folder names that are
not UTF-8, with newlines, and 255 bytes long), ``links`` (a link to ``/``, a ``data -> /usr`` link,
a link loop, a dangling link). Nothing here is asserted: the figures go in the closing note; the
tests keep the behaviour (``tests/hostile/``, ``tests/test_security.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MISTAKE = ("import torch\nimport torch.distributed as dist\n"
           "from torch.nn.parallel import DistributedDataParallel as DDP\n"
           "dist.init_process_group('nccl')\n"
           "model = DDP(torch.nn.Linear(2, 2).cuda(), find_unused_parameters=True)\n")


BOTTOM = '{"train_batch_size": 32, "train_micro_batch_size_per_gpu": 3, "gradient_accumulation_steps": 1}\n'


def _cli() -> list[str]:
    exe = Path(sys.executable).with_name("parallint")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "parallint"]


def many_files(root: Path, n: int) -> Path:
    for i in range(n):
        d = root / f"d{i % 1000:03d}"
        if i < 1000:
            d.mkdir()
        name = f"f{i}.py" if i % 2 else f"f{i}.sh"
        (d / name).write_text("x = 1\n" if name.endswith(".py") else "echo hi\n")
    (root / "train.py").write_text(MISTAKE)
    return root / "train.py"


def deep(root: Path, depth: int) -> Path:
    # os.makedirs on one long path would pass PATH_MAX; descend with relative steps instead
    fd = os.open(root, os.O_RDONLY)
    try:
        for _ in range(depth):
            os.mkdir("d", dir_fd=fd)
            nfd = os.open("d", os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = nfd
        wfd = os.open("ds_config.json", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
        os.write(wfd, BOTTOM.encode())
        os.close(wfd)
    finally:
        os.close(fd)
    (root / "train.py").write_text(MISTAKE)
    return root / "train.py"


def odd_names(root: Path) -> Path:
    base = os.fsencode(root)
    for raw in (b"\xff\xfe.py", b"caf\xe9.sh", b"new\nline.py", b"a" * 250 + b".py", b"\xc3(.yaml"):
        with open(base + b"/" + raw, "wb") as fh:
            fh.write(b"x = 1\n" if raw.endswith(b".py") else b"a: 1\n")
    os.mkdir(base + b"/dir\xff")
    with open(base + b"/dir\xff/run\xfe.sh", "wb") as fh:
        fh.write(b"torchrun --nproc_per_node 8 train.py\n")
    (root / "train.py").write_text(MISTAKE)
    return root / "train.py"


def links(root: Path) -> Path:
    os.symlink("/", root / "rootlink")
    os.symlink("/usr", root / "data")
    (root / "loop").mkdir()
    os.symlink("..", root / "loop" / "up")
    os.symlink(root / "missing", root / "dangling.py")
    (root / "train.py").write_text(MISTAKE)
    return root / "train.py"


def _run(args: list[str], cwd: Path, timeout: float = 600) -> dict:
    """Run the CLI; its wall time, and its peak resident set (the largest of the process and
    the workers it reaped, from wait4)."""
    import threading

    t = time.perf_counter()
    p = subprocess.Popen(_cli() + args + ["--no-cache", "--format", "json"], cwd=cwd, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, env=dict(os.environ, PARALLINT_NO_CACHE="1"))
    chunks: list[bytes] = []
    reader = threading.Thread(target=lambda: chunks.append(p.stdout.read()), daemon=True)  # type: ignore[union-attr]
    reader.start()
    timer = threading.Timer(timeout, p.kill)
    timer.start()
    _, status, usage = os.wait4(p.pid, 0)
    timer.cancel()
    reader.join()
    wall = time.perf_counter() - t
    rc = os.waitstatus_to_exitcode(status)
    try:
        data = json.loads(b"".join(chunks) or b"[]")
        found = data if isinstance(data, list) else data.get("diagnostics", [])
        codes = sorted({d["code"] for d in found})
    except ValueError:
        codes = ["(output not JSON)"]
    return {"wall_s": round(wall, 2), "peak_mb": round(usage.ru_maxrss / 1024, 1), "rc": rc, "codes": codes}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=100_000)
    ap.add_argument("--depth", type=int, default=2000)
    ap.add_argument("--json")
    args = ap.parse_args()
    trees = {"links": links, "odd-names": odd_names, "deep": lambda r: deep(r, args.depth),
             "many-files": lambda r: many_files(r, args.files)}
    results = {}
    for name, build in trees.items():
        tmp = Path(tempfile.mkdtemp(prefix=f"parallint-hostile-{name}-"))
        try:
            (tmp / ".git").mkdir()
            t = time.perf_counter()
            target = build(tmp)
            built = time.perf_counter() - t
            whole = _run(["check", "."], tmp)
            one = _run(["check", str(target.relative_to(tmp))], tmp)
            results[name] = {"build_s": round(built, 1), "check .": whole, "check FILE": one}
            for mode in ("check .", "check FILE"):
                r = results[name][mode]
                print(f"{name:11} {mode:10} {r['wall_s']:7.2f} s  peak {r['peak_mb']:>7} MB  "
                      f"exit {r['rc']}  {','.join(r['codes']) or 'no findings'}", flush=True)
        finally:
            subprocess.run(["rm", "-rf", str(tmp)], check=False)  # (rmtree recurses: too deep)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
