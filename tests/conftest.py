from __future__ import annotations

import gc
import io
import locale
import os
import signal
import subprocess
import sys
import traceback
import types
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


def run_cli_process(*args: str, cwd: Path | None = None, stdin: str | None = None, env: dict | None = None):
    """Run the installed ``parallint`` command in a new process, the way a user does; returns
    CompletedProcess. For what needs a process: start-up and lazy imports, signals, forked workers,
    the interpreter's environment (``PYTHON*``, the locale), the exit status as the shell sees it."""
    full_env = dict(os.environ)
    full_env.pop("PARALLINT_DEBUG", None)
    if env:
        full_env.update(env)
    cmd = _command()
    return subprocess.run(
        cmd + list(args), cwd=cwd, input=stdin, capture_output=True, text=True, env=full_env, timeout=300
    )


def _command() -> list[str]:
    exe = Path(sys.executable).with_name("parallint")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "parallint"]


def _interpreter(script: str) -> str:
    """The interpreter a console script's ``#!`` line names (``sys.executable`` of its runs)."""
    try:
        with open(script, "rb") as fh:
            line = fh.readline().decode("utf-8", "replace").strip()
    except OSError:
        return sys.executable
    return line[2:].strip() if line.startswith("#!/") and " " not in line else sys.executable


#: environment variables the interpreter reads when it starts (encodings, paths, modes): a run
#: that sets one goes to a new process, where it takes effect as it would for a user
_START_UP_ENV = ("PYTHON", "LC_")
_START_UP_NAMES = frozenset({"LANG", "LANGUAGE"})


def _needs_a_process(env: dict) -> bool:
    """Whether a run with ``env`` added must be a new process: it sets a variable the interpreter
    reads at start-up, or asks for worker processes (forked from parallint, not from the tests)."""
    jobs = env.get("PARALLINT_JOBS", "")
    return any(k.startswith(_START_UP_ENV) or k in _START_UP_NAMES for k in env) or (jobs.isdigit() and jobs != "1")


def run_cli(*args: str, cwd: Path | None = None, stdin: str | None = None, env: dict | None = None):
    """Run ``parallint ARGS`` as a user does and return what a process would (a CompletedProcess:
    returncode, stdout, stderr as text): in this process through the console script's entry point
    (:func:`run_cli_in_process`), or in a new one (:func:`run_cli_process`) when ``env`` sets a
    variable the interpreter reads at start-up or asks for worker processes, or when
    ``PARALLINT_TEST_SUBPROCESS=1`` (the whole suite the old way). ``PARALLINT_TEST_COMPARE=FILE``
    runs each in-process call in a process too and appends every difference to FILE (a command
    that changes files, ``--fix`` or ``cache clean``, differs there by its nature: the second run
    sees what the first changed)."""
    if os.environ.get("PARALLINT_TEST_SUBPROCESS") == "1" or (env and _needs_a_process(env)):
        return run_cli_process(*args, cwd=cwd, stdin=stdin, env=env)
    result = run_cli_in_process(*args, cwd=cwd, stdin=stdin, env=env)
    compare = os.environ.get("PARALLINT_TEST_COMPARE")
    if compare:
        other = run_cli_process(*args, cwd=cwd, stdin=stdin, env=env)
        diff = [k for k in ("returncode", "stdout", "stderr") if getattr(result, k) != getattr(other, k)]
        if diff:
            with open(compare, "a", encoding="utf-8") as fh:
                fh.write(repr({"test": os.environ.get("PYTEST_CURRENT_TEST"), "args": args, "differ": diff,
                               "in_process": [getattr(result, k) for k in diff],
                               "process": [getattr(other, k) for k in diff]}) + "\n")
    return result


def _exit_status(code: object, err) -> int:
    """The status a process ends with after ``sys.exit(code)``."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=err)
    return 1


def _decoded(data: bytes) -> str:
    """What ``subprocess.run(..., text=True)`` makes of a stream's bytes (universal newlines)."""
    return data.decode(locale.getpreferredencoding(False)).replace("\r\n", "\n").replace("\r", "\n")


def run_cli_in_process(*args: str, cwd: Path | None = None, stdin: str | None = None, env: dict | None = None):
    """``parallint ARGS`` through the console script's entry point (``parallint.cli.main:main``) in
    this process, as a new process would see it: ``sys.argv``, ``sys.executable`` (the script's
    ``#!``), the working folder, the environment (``PARALLINT_DEBUG`` unset, ``env`` added),
    standard input (``stdin``, else empty) and output streams of its own (bytes, in the locale's
    encoding, not terminals), the exit status from ``SystemExit`` (an uncaught exception: its
    traceback and 1, as the interpreter does). Whatever the run changes in the process-wide state
    is put back: the environment, the folder, the streams, ``sys.argv``, ``sys.executable``,
    ``__main__``, the SIGINT and SIGALRM handlers and the garbage collector (a run freezes and
    pauses it)."""
    from parallint.cli import main as entry

    enc = locale.getpreferredencoding(False)
    out_bytes, err_bytes = io.BytesIO(), io.BytesIO()
    out = io.TextIOWrapper(out_bytes, encoding=enc, errors="strict", write_through=True)
    err = io.TextIOWrapper(err_bytes, encoding=enc, errors="backslashreplace", write_through=True)
    inp = io.TextIOWrapper(io.BytesIO((stdin or "").encode(enc)), encoding=enc)
    saved_env = dict(os.environ)
    saved_cwd = os.getcwd()
    saved_argv, saved_main, saved_executable = sys.argv, sys.modules["__main__"], sys.executable
    saved_streams = sys.stdin, sys.stdout, sys.stderr
    saved_signals = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGALRM)}
    gc_enabled = gc.isenabled()
    cmd = _command()
    code = 0
    try:
        os.environ.pop("PARALLINT_DEBUG", None)
        os.environ.update(env or {})
        if cwd is not None:
            os.chdir(cwd)
        sys.argv = [cmd[0], *args]
        sys.executable = _interpreter(cmd[0])  # part of the run cache's key
        # the console script's __main__: no package (click names the program after argv[0])
        sys.modules["__main__"] = types.ModuleType("__main__")
        sys.stdin, sys.stdout, sys.stderr = inp, out, err
        try:
            entry.main()
        except SystemExit as exc:
            code = _exit_status(exc.code, err)
        except BaseException:  # what the interpreter does with an uncaught exception
            traceback.print_exc(file=err)
            code = 1
        for stream in (out, err):
            try:
                stream.flush()
            except (OSError, ValueError):  # pragma: no cover - a stream the run closed
                pass
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved_streams
        sys.argv, sys.executable = saved_argv, saved_executable
        sys.modules["__main__"] = saved_main
        os.chdir(saved_cwd)
        if os.environ != saved_env:
            os.environ.clear()
            os.environ.update(saved_env)
        for sig, handler in saved_signals.items():
            signal.signal(sig, handler)
        gc.unfreeze()
        if gc_enabled:
            gc.enable()
    return subprocess.CompletedProcess(cmd + list(args), code, _decoded(out_bytes.getvalue()),
                                       _decoded(err_bytes.getvalue()))


@pytest.fixture(autouse=True)
def _nothing_kept_after_a_test():
    """A language-server test turns on the tables kept across runs (module state); the tests after
    it in the same process must see a run's own state, as a ``parallint check`` process does."""
    yield
    for name in ("parallint.link.megatron_table", "parallint.readers.pyparser_import", "parallint.link.imports"):
        mod = sys.modules.get(name)
        if mod is not None:
            mod.keep(False)
    py = sys.modules.get("parallint.readers.python")
    if py is not None and py._KEEP:
        py.keep_modules(0)


@pytest.fixture
def cli():
    return run_cli


def write_tree(base: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        p = base / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")


def age_tree(root: Path, seconds: float = 30) -> None:
    """Every time stamp below ``root`` ``seconds`` into the past: a checkout, not files written a
    moment ago (a stat signature younger than the cache's racy window is never trusted)."""
    import time

    past = time.time() - seconds
    for d, dirs, files in os.walk(root):
        for n in files + dirs:
            os.utime(os.path.join(d, n), (past, past), follow_symlinks=False)
    os.utime(root, (past, past))


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
