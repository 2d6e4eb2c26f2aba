"""A fast mutation fuzzer for the long campaign: the same targets and seeds as
``tests/fuzz/`` (Hypothesis, which CI runs as a short derandomised slice), without Hypothesis'
per-input generation cost, so that 100,000 inputs per reader fit in an afternoon on two cores.

Every input is a pure function of (campaign seed, target, index): ``--replay TARGET INDEX`` prints
and re-runs one. Each target runs in a child process that a watchdog in the parent kills when an
input makes no progress for ``--hang-s`` seconds (a hang is then recorded with its index, and a
fresh child goes on after it); a child that dies (a segfault in a native parser) is recorded as a
crash the same way. An input is *slow* when it takes more than ``--deadline-ms`` of CPU time (CPU
time, not wall time: the campaign is meant to run niced beside other work; wall time is kept too).
Memory per input: each child's peak resident set, and the most one input raised it (with that
input's index, to replay).

    python benchmarks/fuzz_campaign.py --engine mutate --examples 100000 --jobs 2 --nice 10
    python benchmarks/fuzz_mutate.py --replay python 4711
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FUZZ = ROOT / "tests" / "fuzz"

#: stats key -> what the child runs (file-reader targets are the keys of seeds.FILES)
OTHER_TARGETS = ("classify+sniff", "command lines", "megatron args", "[tool.parallint]", "estimate/plan")


def _modules():
    sys.path.insert(0, str(FUZZ))
    import harness  # noqa: PLC0415
    import seeds  # noqa: PLC0415
    from test_fuzz import FRAGMENTS  # noqa: PLC0415

    return harness, seeds, FRAGMENTS


def targets() -> list[str]:
    _, seeds, _ = _modules()
    return sorted(seeds.FILES) + list(OTHER_TARGETS)


# ----------------------------------------------------------------------------- generators
_ODD = "\x00\ufeff\u00e9\u2028\U0001f600\ud800\x7f\x1b\t\r"


def _rand_text(r: random.Random, n: int) -> str:
    pool = "abcxyz019 _-.:=,;/\\'\"()[]{}<>$#@!%&*|~`\n" + _ODD
    return "".join(r.choice(pool) for _ in range(n))


def mutate(r: random.Random, text: str, frags: list[str], others: list[str]) -> str:
    for _ in range(r.randint(0, 6)):
        op = r.randrange(7)
        i = r.randint(0, len(text))
        if op == 0:
            text = text[:i] + r.choice(frags) + text[i:]
        elif op == 1:
            text = text[:i] + text[i + r.randint(1, 40):]
        elif op == 2:  # a long run: quadratic behaviour shows here
            text = text[:i] + r.choice(frags) * r.randint(2, 3000) + text[i:]
        elif op == 3:
            j = r.randint(i, min(len(text), i + 200))
            text = text[:j] + text[i:j] * r.randint(1, 20) + text[j:]
        elif op == 4:
            text = text[:i] + _rand_text(r, r.randint(0, 30)) + text[i:]
        elif op == 5:  # splice a piece of another seed
            o = r.choice(others)
            j = r.randint(0, len(o))
            text = text[:i] + o[j:j + r.randint(1, 120)] + text[i:]
        else:
            j = r.randint(0, len(text))
            text = text[:i] + text[j:j + 60] + text[i:]
    return text


def file_input(r: random.Random, seed_texts, frags, all_seeds) -> str:
    roll = r.random()
    if roll < 0.8:
        return mutate(r, r.choice(seed_texts), frags, all_seeds)
    if roll < 0.92:
        return "".join(r.choice(frags) for _ in range(r.randint(0, 80)))
    return _rand_text(r, r.randint(0, 200))


def make_input(target: str, index: int, campaign_seed: int):
    """The input number ``index`` of ``target``: (callable, printable input)."""
    harness, seeds, frags = _modules()
    r = random.Random(f"{campaign_seed}:{target}:{index}")
    all_seeds = [t for _, _, ts in seeds.FILES.values() for t in ts]
    if target in seeds.FILES:
        kinds, name, seed_texts = seeds.FILES[target]
        kind = r.choice(kinds)
        text = file_input(r, seed_texts, frags, all_seeds)
        return (lambda: harness.engine(kind, name, text)), f"[{kind} {name}]\n{text}"
    if target == "classify+sniff":
        name = r.choice(["a.yaml", "a.yml", "a.json", "a.toml", "a.py", "a.sh", "Makefile", "run",
                         "pyproject.toml"])
        text = file_input(r, all_seeds, frags, all_seeds)
        return (lambda: harness.classify_and_read(name, text)), f"[{name}]\n{text}"
    if target == "command lines":
        words = [_word(r, seeds.COMMAND_WORDS) for _ in range(r.randint(0, 30))]
        return (lambda: harness.command_line(words)), repr(words)
    if target == "megatron args":
        words = ["--use-mcore-models"] + [_mword(r, seeds.MEGATRON_FLAGS) for _ in range(r.randint(0, 40))]
        return (lambda: harness.megatron(words)), repr(words)
    if target == "[tool.parallint]":
        name = r.choice(["parallint.toml", "pyproject.toml"])
        if r.random() < 0.5:
            text = mutate(r, seeds.TOOL_CONFIG, frags, all_seeds)
        else:
            text = "[tool.parallint]\n" + "".join(f"{_tkey(r)} = {_tvalue(r, 0)}\n" for _ in range(r.randint(0, 8)))
        return (lambda: harness.tool_config(text, name)), f"[{name}]\n{text}"
    if target == "estimate/plan":
        spec, gpus, overrides = _spec(r)
        return (lambda: harness.numbers(spec, gpus, overrides)), repr((spec, gpus, overrides))
    if target == "_selftest":  # the watchdog's own test: input 3 hangs, input 6 kills its process
        def selftest() -> None:
            if index == 3:
                time.sleep(3600)
            if index == 6:
                os.kill(os.getpid(), signal.SIGSEGV)
        return selftest, f"selftest {index}"
    raise SystemExit(f"unknown target {target!r}; known: {', '.join(targets())}")


def _int(r: random.Random) -> int:
    return r.choice([r.randint(-5, 64), r.randint(-2**63, 2**63), 0, 1, 2**31, 10**12, 10**20])


def _word(r: random.Random, words: list):
    roll = r.random()
    if roll < 0.7:
        return r.choice(words)
    return str(_int(r)) if roll < 0.85 else _rand_text(r, r.randint(0, 12))


def _mword(r: random.Random, flags: list):
    roll = r.random()
    if roll < 0.45:
        return r.choice(flags)
    if roll < 0.55:
        return r.choice(flags) + "="
    if roll < 0.8:
        return str(_int(r))
    if roll < 0.93:
        return r.choice(["true", "false", "", "auto", "1.5", "x", None])
    return _rand_text(r, r.randint(0, 8))


_TKEYS = ["select", "ignore", "extend-select", "exclude", "extend-exclude", "per-file-ignores",
          "respect-gitignore", "fail-level", "gpu", "gpus-per-node", "memory-headroom", "links",
          "include-tests", "max-file-size", "file-timeout"]


def _tkey(r: random.Random) -> str:
    if r.random() < 0.8:
        return r.choice(_TKEYS)
    return "".join(r.choice("abcz.-") for _ in range(r.randint(1, 12)))


def _tvalue(r: random.Random, depth: int) -> str:
    roll = r.random()
    if roll < 0.2 and depth < 4:
        return "[" + ", ".join(_tvalue(r, depth + 1) for _ in range(r.randint(0, 4))) + "]"
    if roll < 0.45:
        return str(r.randint(-2**70, 2**70))
    if roll < 0.55:
        return r.choice(["true", "false"])
    if roll < 0.8:
        s = _rand_text(r, r.randint(0, 10)).replace("\\", "\\\\").replace('"', '\\"')
        return f'"{s}"'
    return r.choice(['"4MB"', '"x"', '["DDP"]', '"warning"', "1.5", "-3", "inf"])


def _num(r: random.Random):
    roll = r.random()
    if roll < 0.5:
        return r.randint(-3, 64)
    if roll < 0.7:
        return r.randint(-2**63, 2**63)
    if roll < 0.8:
        return r.choice([0, 1, 2**31, 10**9])
    if roll < 0.9:
        return r.choice([float("nan"), float("inf"), -float("inf"), r.uniform(-1e6, 1e6)])
    return r.choice(["8", "x", "", "auto", None, True])


def _spec(r: random.Random):
    def some(keys, gen):
        return {k: gen() for k in keys if r.random() < 0.5}

    model = some(("layers", "hidden", "heads", "kv_heads", "vocab", "seq_len", "ffn", "num_experts", "top_k",
                  "param_count"), lambda: _num(r))
    if r.random() < 0.5:
        model["preset"] = r.choice(["llama-2-7b", "gpt2-xl", "nope"])
    spec = {
        "model": model,
        "parallel": some(("tp", "pp", "dp", "cp", "ep", "vpp", "world_size", "nodes", "gpus_per_node",
                          "zero_stage"), lambda: _num(r)),
        "training": some(("micro_batch", "global_batch", "grad_accum"), lambda: _num(r)),
        "hardware": {"gpu": r.choice(["H100-80GB", "A100-40GB", "x", 7])} if r.random() < 0.5 else {},
    }
    if r.random() < 0.5:
        spec["training"]["precision"] = r.choice(["bf16", "fp16", "fp32", "16", "weird", _num(r)])
    if r.random() < 0.3:
        spec["training"]["recompute"] = r.choice(["none", "selective", "full", 3, None])
    gpus = r.choice([r.randint(1, 4096), 2**31, 720720, 2**40, 999_999_937])
    overrides = {}
    for k, hi in (("tp", 1 << 20), ("pp", 64), ("micro_batch", 1 << 20)):
        if r.random() < 0.3:
            overrides[k] = r.randint(1, hi)
    return spec, gpus, overrides


# ----------------------------------------------------------------------------- the child
def child(target: str, start: int, stop: int, campaign_seed: int, state_path: str, deadline: float) -> None:
    """Run inputs [start, stop) of ``target``. Before each input its index goes into the first
    line of ``state_path`` (the parent's watchdog reads it); every few hundred inputs, and at the
    end, the stats follow as JSON."""
    harness, _, _ = _modules()
    make_input(target, 0, campaign_seed)[0]()  # imports and caches outside the timed inputs
    import resource

    def peak_kb() -> int:  # the child's peak resident set (KiB on Linux)
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

    stats = {"inputs": 0, "crashes": [], "slow": [], "cpu_s": 0.0, "slowest_cpu_s": 0.0, "slowest_index": None,
             "slowest_wall_s": 0.0, "peak_rss_mb": 0.0, "rss_step_mb": 0.0, "rss_step_index": None}
    fd = os.open(state_path, os.O_RDWR | os.O_CREAT)

    def save(done: int) -> None:
        data = f"{done:>12}\n".encode() + json.dumps({"done": done, **stats}).encode() + b"\n"
        os.pwrite(fd, data, 0)
        os.ftruncate(fd, len(data))

    for i in range(start, stop):
        os.pwrite(fd, f"{i:>12}\n".encode(), 0)
        run, shown = make_input(target, i, campaign_seed)
        m0 = peak_kb()
        c0, w0 = time.process_time(), time.perf_counter()
        try:
            run()
        except harness.Crash as exc:
            stats["crashes"].append([i, str(exc)[:300]])
        except Exception as exc:  # noqa: BLE001
            stats["crashes"].append([i, f"{type(exc).__name__}: {exc}"[:300]])
        cpu, wall = time.process_time() - c0, time.perf_counter() - w0
        m1 = peak_kb()
        if (m1 - m0) / 1024 > stats["rss_step_mb"]:  # the input that raised the peak the most
            stats["rss_step_mb"], stats["rss_step_index"] = round((m1 - m0) / 1024, 1), i
        stats["peak_rss_mb"] = round(m1 / 1024, 1)
        stats["inputs"] += 1
        stats["cpu_s"] += cpu
        if cpu > stats["slowest_cpu_s"]:
            stats["slowest_cpu_s"], stats["slowest_index"] = cpu, i
        stats["slowest_wall_s"] = max(stats["slowest_wall_s"], wall)
        if cpu > deadline:
            stats["slow"].append([i, round(cpu, 3)])
        if stats["inputs"] % 250 == 0:
            save(i + 1)
    save(stop)
    os.close(fd)


# ----------------------------------------------------------------------------- the parent
class Run:
    """One target's campaign: a child process at a time, restarted after a hang or a death."""

    def __init__(self, target: str, n: int, seed: int, deadline: float, hang_s: float, nice: int, tmp: Path):
        self.target, self.n, self.seed, self.deadline, self.hang_s, self.nice = target, n, seed, deadline, hang_s, nice
        self.state = tmp / (target.replace("/", "_").replace(" ", "_").strip("[]") + ".state")
        self.next = 0
        self.child_start = 0
        self.proc: subprocess.Popen | None = None
        self.last_index: int | None = None
        self.last_change = 0.0
        self.hangs: list[list] = []
        self.deaths: list[list] = []
        self.total = {"inputs": 0, "crashes": [], "slow": [], "cpu_s": 0.0, "slowest_cpu_s": 0.0,
                      "slowest_index": None, "slowest_wall_s": 0.0, "peak_rss_mb": 0.0, "rss_step_mb": 0.0,
                      "rss_step_index": None}
        self.started = time.monotonic()

    def start(self) -> None:
        self.state.write_bytes(b"")
        self.child_start = self.next
        cmd = [sys.executable, __file__, "--child", self.target, str(self.next), str(self.n), str(self.seed),
               str(self.state), str(self.deadline)]
        nice = self.nice
        self.proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     preexec_fn=(lambda: os.nice(nice)) if nice else None)
        self.last_index, self.last_change = None, time.monotonic()

    def _read(self) -> tuple[int | None, dict | None]:
        try:
            raw = self.state.read_bytes()
        except OSError:
            return None, None
        head, _, rest = raw.partition(b"\n")
        idx = int(head) if head.strip().isdigit() else None
        blob = rest.strip()
        try:
            return idx, (json.loads(blob) if blob else None)
        except ValueError:
            return idx, None

    def _absorb(self, stats: dict | None, failed_at: int | None = None) -> None:
        """Add a child's stats; for a child that hung or died at input ``failed_at``, count every
        input it started (the stats on disk lag by up to 250 inputs)."""
        t = self.total
        if failed_at is not None:
            t["inputs"] += failed_at - self.child_start + 1
        elif stats:
            t["inputs"] += stats["inputs"]
        if not stats:
            return
        t["cpu_s"] += stats["cpu_s"]
        t["crashes"] += stats["crashes"]
        t["slow"] += stats["slow"]
        if stats["slowest_cpu_s"] > t["slowest_cpu_s"]:
            t["slowest_cpu_s"], t["slowest_index"] = stats["slowest_cpu_s"], stats["slowest_index"]
        t["slowest_wall_s"] = max(t["slowest_wall_s"], stats["slowest_wall_s"])
        t["peak_rss_mb"] = max(t["peak_rss_mb"], stats.get("peak_rss_mb", 0.0))
        if stats.get("rss_step_mb", 0.0) > t["rss_step_mb"]:
            t["rss_step_mb"], t["rss_step_index"] = stats["rss_step_mb"], stats.get("rss_step_index")

    def poll(self) -> bool:
        """Advance; True when this target is finished."""
        assert self.proc is not None
        idx, _ = self._read()
        now = time.monotonic()
        if idx != self.last_index:
            self.last_index, self.last_change = idx, now
        code = self.proc.poll()
        # a child that has not reached its first input is importing: a loaded machine may take a
        # while, which is not a hang of any input
        limit = self.hang_s if idx is not None else max(self.hang_s * 10, 120.0)
        if code is None and now - self.last_change > limit:
            self.proc.kill()
            self.proc.wait()
            _, stats = self._read()
            self._absorb(stats, idx if idx is not None else self.child_start)
            self.hangs.append([idx, f"no progress for {self.hang_s:.0f} s"])
            return self._restart(idx)
        if code is None:
            return False
        idx, stats = self._read()
        if code == 0 and stats and stats["done"] >= self.n:
            self._absorb(stats)
            return True
        self._absorb(stats, idx if idx is not None else self.child_start)
        err = (self.proc.stderr.read().decode(errors="replace") if self.proc.stderr else "").strip()
        self.deaths.append([idx, f"child exited {code}: {err.splitlines()[-1] if err else ''}"[:300]])
        return self._restart(idx)

    def _restart(self, idx: int | None) -> bool:
        self.next = (idx if idx is not None else self.child_start) + 1
        if self.next >= self.n or len(self.hangs) + len(self.deaths) > 20:
            return True
        self.start()
        return False


def campaign(args) -> dict:
    names = args.only or targets()
    tmp = Path(tempfile.mkdtemp(prefix="parallint-mutfuzz-"))
    pending = [Run(t, args.examples, args.seed, args.deadline_ms / 1000, args.hang_s, args.nice, tmp) for t in names]
    running: list[Run] = []
    done: list[Run] = []
    try:
        while pending or running:
            while pending and len(running) < args.jobs:
                r = pending.pop(0)
                r.started = time.monotonic()
                r.start()
                running.append(r)
            time.sleep(0.5)
            for r in list(running):
                if r.poll():
                    running.remove(r)
                    done.append(r)
                    print(_line(r, time.monotonic() - r.started), flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)  # the per-target state files
    summary = {}
    for r in done:
        t = r.total
        summary[r.target] = {"inputs": t["inputs"], "crashes": t["crashes"] + r.deaths, "hangs": r.hangs,
                             "slow": t["slow"], "slowest_cpu_s": round(t["slowest_cpu_s"], 3),
                             "slowest_index": t["slowest_index"], "slowest_wall_s": round(t["slowest_wall_s"], 3),
                             "mean_ms": round(1000 * t["cpu_s"] / max(1, t["inputs"]), 2),
                             "peak_rss_mb": t["peak_rss_mb"], "rss_step_mb": t["rss_step_mb"],
                             "rss_step_index": t["rss_step_index"]}
    return summary


def _line(r: Run, took: float) -> str:
    t = r.total
    return (f"{r.target:16} {t['inputs']:>8} inputs  {len(t['crashes']) + len(r.deaths):>3} crashes  "
            f"{len(r.hangs):>3} hangs  {len(t['slow']):>3} slow  slowest {t['slowest_cpu_s']:.3f} s cpu "
            f"(#{t['slowest_index']})  {took:.0f} s")


def table(summary: dict, seed: int) -> str:
    rows = [f"{'reader':16} {'inputs':>8} {'crashes':>7} {'hangs':>5} {'slow':>5} {'slowest cpu s':>13} "
            f"{'slowest wall s':>14} {'mean ms':>8} {'peak MB':>8} {'max step MB':>11}  slowest input"]
    for k, s in summary.items():
        rows.append(f"{k:16} {s['inputs']:>8} {len(s['crashes']):>7} {len(s['hangs']):>5} {len(s['slow']):>5} "
                    f"{s['slowest_cpu_s']:>13.3f} {s['slowest_wall_s']:>14.3f} {s['mean_ms']:>8} "
                    f"{s.get('peak_rss_mb', 0):>8} {s.get('rss_step_mb', 0):>11}  "
                    f"--replay '{k}' {s['slowest_index']} --seed {seed}")
    bad = [(k, what, x) for k, s in summary.items() for what in ("crashes", "hangs", "slow") for x in s[what]]
    for k, what, x in bad[:40]:
        rows.append(f"  {k}: {what[:-1] if what != 'slow' else 'slow'} at input {x[0]}: {x[1]}")
    return "\n".join(rows)


def replay(target: str, index: int, seed: int) -> int:
    run, shown = make_input(target, index, seed)
    text = shown if len(shown) < 4000 else shown[:4000] + f"... ({len(shown)} chars)"
    print(text.encode("utf-8", "backslashreplace").decode("utf-8"))  # inputs may hold lone surrogates
    c0, w0 = time.process_time(), time.perf_counter()
    try:
        run()
        outcome = "ok"
    except Exception as exc:  # noqa: BLE001
        outcome = f"{type(exc).__name__}: {exc}"
    print(f"--> {outcome}; {time.process_time() - c0:.3f} s cpu, {time.perf_counter() - w0:.3f} s wall")
    return 0 if outcome == "ok" else 1


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        t, start, stop, seed, state, deadline = argv[1:7]
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        child(t, int(start), int(stop), int(seed), state, float(deadline))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--examples", type=int, default=100_000, help="inputs per reader")
    ap.add_argument("--only", nargs="*", help="targets (default: all; see --list)")
    ap.add_argument("--jobs", type=int, default=1, help="targets run at once")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--deadline-ms", type=int, default=1000, help="CPU time over which an input is slow")
    ap.add_argument("--hang-s", type=float, default=60, help="wall seconds without progress = a hang")
    ap.add_argument("--nice", type=int, default=0)
    ap.add_argument("--json", help="write the summary here")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--replay", nargs=2, metavar=("TARGET", "INDEX"))
    args = ap.parse_args(argv)
    if args.list:
        print("\n".join(targets()))
        return 0
    if args.replay:
        return replay(args.replay[0], int(args.replay[1]), args.seed)
    summary = campaign(args)
    print("\n" + table(summary, args.seed))
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=1))
    return 0 if not any(s["crashes"] or s["hangs"] or s["slow"] for s in summary.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
