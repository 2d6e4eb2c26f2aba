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


def _serve(conn, fn: Callable[[Any], Any]) -> None:  # pragma: no cover - runs in the child
    # the parent handles Ctrl-C; a worker just stops when its pipe closes
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    while True:
        try:
            item = conn.recv()
        except (EOFError, OSError):
            break
        if item is None:
            break
        try:
            result = ("ok", fn(item))
        except BaseException as exc:  # noqa: BLE001 - reported, never raised in the worker
            result = ("error", f"{type(exc).__name__}: {exc}")
        try:
            conn.send(result)
        except Exception as exc:  # an unpicklable result: say so instead of dying
            conn.send(("error", f"result could not be sent back ({type(exc).__name__}: {exc})"))
    conn.close()


class _Worker:
    def __init__(self, ctx, fn) -> None:
        parent, child = ctx.Pipe(duplex=True)
        self.proc = ctx.Process(target=_serve, args=(child, fn), daemon=True)
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
        idle: Callable[[], bool] | None = None) -> Iterator[tuple[int, bool, Any]]:
    """Apply ``fn`` to every item in forked workers; yields (index, True, result) or
    (index, False, reason) in completion order. At most ``timeout`` seconds per item.

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
                    w = _Worker(ctx, fn)
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
