"""Worker processes that can be killed: the per-file wall-clock limit that really binds.

Native parsers (LibCST, tree-sitter, libyaml) cannot be interrupted from inside the process, and
a crash in one (a stack overflow is a SIGSEGV) would take the whole run with it. Here each item
goes to a forked worker with a deadline; a worker that overruns it is killed, a worker that dies is
replaced, and the item comes back as a reason ("timed out after 20 s", "parser crashed (signal
SIGSEGV)") that the runner turns into a SYN002 finding. The other items go on in fresh workers.

Only for POSIX with ``fork`` (the worker inherits the parent's state, so nothing is pickled on
the way in but the item itself); elsewhere :func:`available` is False and the runner parses in
its own process.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from typing import Any, Callable, Iterable, Iterator

#: seconds a killed worker gets to go before SIGKILL
_GRACE = 0.5


def available() -> bool:
    if sys.platform == "win32" or not hasattr(os, "fork"):
        return False
    import multiprocessing

    return "fork" in multiprocessing.get_all_start_methods()


#: seconds between two looks of a worker at whether its parent is still there
_WATCH = 0.25


def _bind_to_parent(ppid: int) -> None:  # pragma: no cover - runs in the child
    """Make this worker die with the process that forked it, however that one ends (SIGKILL, an
    OOM kill, SIGTERM): a worker left behind would hold the run's stdout and stderr open, and
    ``$(parallint ...)`` or a CI log pipe would never end.

    On Linux the kernel sends SIGKILL when the parent goes (``PR_SET_PDEATHSIG``); everywhere a
    daemon thread also watches the parent id, which changes when the parent is gone, and the
    worker leaves at once. The pipe is no signal here: the next workers, forked later, hold copies
    of its other end. The worker's stdout and stderr are /dev/null: it answers only on its pipe,
    so it can neither hold the run's output open nor write into it."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # 1 = PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.dup2(null, 2)
        os.close(null)
    except OSError:
        pass
    if os.getppid() != ppid:  # the parent went before the line above was in place
        os._exit(0)
    import threading

    def watch() -> None:
        while True:
            time.sleep(_WATCH)
            if os.getppid() != ppid:
                os._exit(0)

    threading.Thread(target=watch, name="parallint-parent-watch", daemon=True).start()


def _data_bytes() -> int | None:
    """This process's data size now (``VmData``: heap and private mappings), where /proc says."""
    try:
        with open("/proc/self/status", "rb") as f:
            for line in f:
                if line.startswith(b"VmData:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _bound_memory(memory: int | None) -> None:  # pragma: no cover - runs in the child
    """At most ``memory`` more bytes of data for this worker than it inherited (``RLIMIT_DATA``,
    which Linux applies to the heap and to private mappings): a reader that grows past it gets a
    MemoryError, and its file becomes one SYN002, instead of the kernel killing the run."""
    if not memory:
        return
    try:
        import resource

        now = _data_bytes()
        if now is None:
            return
        soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
        want = now + memory
        if hard != resource.RLIM_INFINITY:
            want = min(want, hard)
        if soft == resource.RLIM_INFINITY or want < soft:
            resource.setrlimit(resource.RLIMIT_DATA, (want, hard))
    except (ImportError, OSError, ValueError):
        pass


def _serve(conn, fn: Callable[[Any], Any], ppid: int, memory: int | None) -> None:  # pragma: no cover - runs in the child
    # the parent handles Ctrl-C; a worker just stops when its pipe closes or its parent goes
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _bind_to_parent(ppid)
    _bound_memory(memory)
    while True:
        try:
            item = conn.recv()
        except (EOFError, OSError):
            break
        if item is None:
            break
        try:
            result = ("ok", fn(item))
        except MemoryError:
            result = ("memory", "")
        except BaseException as exc:  # noqa: BLE001 - reported, never raised in the worker
            result = ("error", f"{type(exc).__name__}: {exc}")
        try:
            conn.send(result)
        except Exception as exc:  # an unpicklable result: say so instead of dying
            conn.send(("error", f"result could not be sent back ({type(exc).__name__}: {exc})"))
    conn.close()


class _Worker:
    def __init__(self, ctx, fn, memory: int | None = None) -> None:
        parent, child = ctx.Pipe(duplex=True)
        self.proc = ctx.Process(target=_serve, args=(child, fn, os.getpid(), memory), daemon=True)
        self.proc.start()
        child.close()
        self.conn = parent
        self.item: Any = None
        self.index = -1
        self.deadline = 0.0

    def stop(self, kill: bool = False) -> None:
        try:
            if kill:
                self.proc.kill()
            else:
                self.conn.send(None)
        except (OSError, ValueError, BrokenPipeError):
            pass
        self.proc.join(_GRACE)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join(_GRACE)
        try:
            self.conn.close()
        except OSError:
            pass


def _mib(n: int | None) -> str:
    return f"{(n or 0) / 1024**2:g}"


def _death(proc) -> str:
    code = proc.exitcode
    if code is not None and code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"parser crashed (signal {name})"
    return f"parser crashed (worker exited with status {code})"


def run(items: Iterable[Any], fn: Callable[[Any], Any], workers: int, timeout: float,
        idle: Callable[[], bool] | None = None, memory: int | None = None) -> Iterator[tuple[int, bool, Any]]:
    """Apply ``fn`` to every item in forked workers; yields (index, True, result) or
    (index, False, reason) in completion order. At most ``timeout`` seconds per item, and (where
    the system allows a data limit) at most ``memory`` more bytes per worker: an item over it is
    ``(index, False, "over the memory limit ...")`` and its worker is replaced.

    ``idle()``, when given, is work for this process: it is called whenever every worker is busy
    (one small unit each time; it returns False when there is no more), instead of waiting."""
    import multiprocessing
    from multiprocessing.connection import wait

    ctx = multiprocessing.get_context("fork")
    todo = list(enumerate(items))
    todo.reverse()  # pop() from the end keeps the input order
    pool: list[_Worker] = []
    busy: dict[Any, _Worker] = {}
    try:
        while todo or busy:
            while todo and len(busy) < workers:
                w = next((x for x in pool if x.index == -1), None)
                if w is None:
                    w = _Worker(ctx, fn, memory)
                    pool.append(w)
                idx, item = todo.pop()
                w.index, w.item, w.deadline = idx, item, time.monotonic() + timeout
                try:
                    w.conn.send(item)
                except (OSError, ValueError) as exc:
                    pool.remove(w)
                    w.stop(kill=True)
                    yield idx, False, f"could not be sent to a worker ({exc})"
                    continue
                busy[w.conn] = w
            if not busy:
                continue
            if idle is not None and not idle():
                idle = None
            now = time.monotonic()
            wait_for = 0.0 if idle is not None else max(0.0, min(w.deadline for w in busy.values()) - now)
            ready = wait(list(busy), timeout=wait_for)
            for conn in ready:
                w = busy.pop(conn)
                idx = w.index
                try:
                    status, payload = conn.recv()
                except (EOFError, OSError):
                    w.proc.join(_GRACE)
                    reason = _death(w.proc)
                    pool.remove(w)
                    w.stop(kill=True)
                    yield idx, False, reason
                    continue
                w.index, w.item = -1, None
                if status == "ok":
                    yield idx, True, payload
                elif status == "memory":  # a fresh worker for the next item: this heap is spent
                    pool.remove(w)
                    w.stop(kill=True)
                    yield idx, False, f"over the memory limit ({_mib(memory)} MiB more than a worker starts with)"
                else:
                    yield idx, False, f"reader crashed ({payload})"
            now = time.monotonic()
            for conn, w in list(busy.items()):
                if w.deadline <= now:
                    busy.pop(conn)
                    pool.remove(w)
                    idx = w.index
                    w.stop(kill=True)
                    yield idx, False, f"timed out after {timeout:g} s"
    finally:
        for w in pool:
            w.stop(kill=bool(busy))
