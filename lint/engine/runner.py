"""The engine: discover -> read -> link -> rules -> suppress -> sort.

``check_paths`` is what ``parallint check`` runs; ``build_jobs`` is what ``show``, ``estimate`` and
``plan`` use. A reader or rule that fails on one file never stops the others (the failure contract,
docs/failure-contract.md): a syntax error is a SYN001 finding; a file that cannot be analysed (too
large, too complex, timed out, crashed a parser, unreadable, binary, not a regular file) is one
SYN002 finding; a rule failure is a one-line internal error (exit 2).

Work per file is bounded: a size cap (``max-file-size``), the cheap guards of
:mod:`parallint.util.guards` before any native parser, and a wall-clock limit (``file-timeout``) that
binds: Python files of a large run, and any large Python file, are parsed in worker processes
that are killed when they overrun it (:mod:`parallint.engine.workers`); in this process the limit is an
alarm that readers cannot swallow.
"""

from __future__ import annotations

import errno
import functools
import gc
import importlib
import os
import re
import stat
import sys
from pathlib import Path

try:  # the C module itself: `signal` wraps it in enums (a millisecond at every start)
    import _signal as signal
except ImportError:  # pragma: no cover - another Python implementation
    import signal  # type: ignore[no-redef]

from parallint.util import deps as _deps
from parallint.discover.classify import READERS, claims_suffix, classify
from parallint.discover.settings import Config
from parallint.model.diagnostics import Diagnostic, Severity, Span
from parallint.discover.walk import Candidate, Excluder, discover, display_path
from parallint.model.facts import FactMap, FileFacts
from parallint.model.rule import Context
from parallint.util.record import EqRecord

from parallint.util.limits import DEFAULT_FILE_TIMEOUT, DEFAULT_MAX_FILE_SIZE

TYPE_CHECKING = False  # typing is not imported at run time (start-up, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Any, Callable

MAX_BYTES = DEFAULT_MAX_FILE_SIZE  # kept for callers; the run uses the configured cap
READ_TIMEOUT_S = DEFAULT_FILE_TIMEOUT
#: bytes of an over-size or binary file looked at to decide whether it is ours at all
HEAD_BYTES = 64 * 1024
#: a Python file this large is parsed in a killable worker even in a small run
RISKY_BYTES = 256 * 1024
#: a shell file or Makefile this large is first read in a killable worker (tree-sitter's error
#: recovery is quadratic: 4,000 lines of `[[x]]` take 3.6 s inside the native parser, where no
#: alarm can stop it); only when that finishes in time is it read here
RISKY_SHELL_BYTES = 16 * 1024
PROBE_KINDS = frozenset({"shell", "makefile"})


def _plan(spec: dict, gpus: int, gpu: str | None, headroom: float) -> list:
    """:meth:`Context.plan` for the rules: ``plan``'s candidates filtered by the real LAY/BAT rules
    (:func:`parallint.engine.layouts.plan`)."""
    from parallint.engine.layouts import plan

    return plan(spec, gpus, gpu, headroom)


def _accept(spec: dict, gpus_per_node: int | None) -> bool:
    """:meth:`Context.accepts` for the rules: whether ``plan``'s filter, the real LAY/BAT rules,
    keeps the layout of ``spec`` (:func:`parallint.engine.layouts.rules_accept`)."""
    from parallint.engine.layouts import rules_accept

    return rules_accept(spec, gpus_per_node)


class Result(EqRecord):
    _fields = ("diagnostics", "files_checked", "errors", "jobs")
    diagnostics: list[Diagnostic]
    files_checked: int
    errors: list[str]  # one-line problems (missing paths, rule crashes)
    jobs: list

    def __init__(
        self,
        diagnostics: list[Diagnostic],
        files_checked: int,
        errors: list[str] | None = None,
        jobs: list | None = None,
    ) -> None:
        self.diagnostics = diagnostics
        self.files_checked = files_checked
        self.errors = [] if errors is None else errors
        self.jobs = [] if jobs is None else jobs


#: kinds parsed in worker processes when a run has many of them (LibCST dominates run time)
PARALLEL_KINDS = frozenset({"python"})
PARALLEL_MIN_FILES = 24
#: findings one rule may give one file or job (see :meth:`Runner._run`)
MAX_FINDINGS_PER_RULE = 200
#: dropped syntax trees between two runs of the garbage collector while it is paused
RECLAIM_EVERY = 16
_WORKER: "tuple[Runner, list] | None" = None


def _workers() -> int:
    if sys.platform == "win32" or os.environ.get("PARALLINT_JOBS") == "1":
        return 1
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        n = os.cpu_count() or 1
    env = os.environ.get("PARALLINT_JOBS", "")
    return max(1, min(int(env) if env.isdigit() else n, 8))


#: a file at least this large keeps its pre-parse guard's verdict for the run (see Runner._load):
#: the Python guard tokenizes the whole text, 0.4 s for a 1.8 MB file
GUARD_MEMO_BYTES = 64 * 1024
#: Python source (bytes) that keeps one worker busy long enough to repay its start and the results
#: it sends back: a tree with less to check in workers is checked in this process. torchtitan
#: (2.1 MB to check in workers) and DeepSpeedExamples (1.9 MB) took 15-20 % more CPU and more wall
#: time with 2 workers than with one; Megatron-LM (8.2 MB) less wall time
WORKER_BYTES = 3_000_000


def _pool_size(work: int) -> int:
    """How many workers to check ``work`` bytes of Python with: ``PARALLINT_JOBS`` when set; else
    no more than the work keeps busy (:data:`WORKER_BYTES` each) nor than the CPUs that other
    processes leave free (the load average; this process mostly waits while its workers run). 1
    means no pool: a worker on a CPU that another process holds only adds the cost of sending its
    results back, and then default workers would be slower than one."""
    n = _workers()
    if n <= 1 or os.environ.get("PARALLINT_JOBS", "").isdigit():
        return n
    try:
        busy = os.getloadavg()[0]  # other processes wanting a CPU, over the last minute
    except (AttributeError, OSError):
        busy = 0.0
    free = int(n - busy + 0.5)
    return max(1, min(n, free, work // WORKER_BYTES))


def _versions(f: FileFacts):
    """The version facts of the jobs ``f`` roots (:func:`parallint.link.versions.for_file`), for
    file rules (``Context.versions``)."""
    from parallint.link.versions import for_file

    return for_file(f)


def _probe(item: tuple[Path, str, str, str]) -> bool:
    """In a worker: read one file and throw the result away (only whether it finishes matters)."""
    runner, _ = _WORKER
    runner._parse(*item)
    return True


def _work(item: tuple[Path, str, str, str]):
    """In a worker: parse one file and run the file rules on it, and the job rules on the job the
    file makes on its own; the syntax tree stays here (dropped once those rules are done)."""
    runner, rules = _WORKER
    rec = _deps.recording()
    if rec is not None:
        rec.take()  # what the parent had recorded before the fork is the parent's
    _deps.side_start()
    try:
        f = runner._parse(*item)
        early = None
        if f is not None:
            runner.cache[f.abspath] = f
            early = (*runner._alone(f, rules), _deps.side_take())
            _drop(f)
    finally:
        _deps.side_take()  # stop collecting, whatever happened
    runner._reclaim()
    errors = list(runner.errors)
    runner.errors.clear()
    return f, early, errors, (rec.take() if rec is not None else None)


def _gate(rules: list[type]) -> Any:
    """The Python reader's CallGate for ``rules`` (their declared qualified names added), or None
    when a rule may look at Python files without declaring what it matches: a plugin rule for
    Python files that declares no calls, or a plugin job rule (it may read any script)."""
    from parallint.readers.python import CallGate
    from parallint.model.rule import Rule

    extra: set[str] = set()
    for r in rules:
        builtin = r.__module__.startswith("parallint.rules.")
        if not builtin and (("python" in r.kinds and not r.calls) or r.check_job is not Rule.check_job):
            return None
        extra.update(c for c in r.calls if "." in c)
    return CallGate(extra)


def _launches_inside(display: str, text: str) -> bool:
    """Whether a Python file states launch facts of its own (a submitted command line, Ray
    Train, submitit, NeMo-Run, Fabric, mp.spawn ... see parallint.link.pylaunch) or holds a word a
    plugin asks for: its standalone job then has facts that job rules read, so it is read whole."""
    from parallint.discover.classify import PLUGIN_NEEDLES
    from parallint.link.pylaunch import scan

    if "CommandFunction" in text or any(n in text for n in PLUGIN_NEEDLES["python"]):
        return True
    return scan(display, text) is not None


def _drop(f: FileFacts) -> None:
    """Drop the reader's payload (the Python reader's Script and its syntax tree) once the file's
    rules are done. The Script and its calls, guards and frames point at each other; emptying it
    breaks those cycles, so the tree is freed at once by reference counting instead of waiting
    for (and costing) a scan of the cyclic garbage collector."""
    data, f.data = f.data, None
    attrs = getattr(data, "__dict__", None)
    if f.kind in PARALLEL_KINDS and isinstance(attrs, dict):
        attrs.clear()


def _syn(path: str, message: str, line: int = 1, column: int = 1) -> Diagnostic:
    return Diagnostic("SYN001", "parse-error", Severity.ERROR, message, Span(path, line, column))


def not_analysed(path: str, reason: str, line: int = 1) -> Diagnostic:
    """The SYN002 finding for a file that was not analysed; ``reason`` starts with one of: too
    large, too complex, timed out, parser crashed / reader crashed, unreadable, binary, not a
    regular file."""
    from parallint.util.limits import clean_text

    # a file outside the repository is not a fault of the checked tree: a hint, not a failed gate
    severity = Severity.INFO if reason.startswith("outside the repository") else Severity.WARNING
    return Diagnostic("SYN002", "not-analysed", severity,
                      clean_text(f"not analysed: {reason}; {_not_analysed_fix(reason)}"), Span(path, line, 1))


def _not_analysed_fix(reason: str) -> str:
    """SYN002's fix clause, by the reason's first words."""
    for start, fix in (("too large", "raise max-file-size or exclude the file"),
                       ("timed out", "raise file-timeout or exclude the file"),
                       ("over the memory limit", "raise file-memory or exclude the file"),
                       ("too complex", "simplify the file or exclude it"),
                       ("unreadable", "make the file readable or exclude it"),
                       ("outside the repository", "what it holds is not checked; keep it in the "
                        "repository, or name it on the command line to check it")):
        if reason.startswith(start):
            return fix
    return "exclude the file (`exclude` in the configuration)"


def _declared_python(display: str, raw: bytes) -> str | None:
    """The text of a Python file that is not UTF-8 but declares its encoding (PEP 263:
    ``# -*- coding: latin-1 -*-`` on its first or second line), as Python decodes it; None for
    any other file, or when the declared encoding does not decode it either."""
    if not display.endswith((".py", ".pyi")) or b"coding" not in raw[:1024]:
        return None
    import io
    import tokenize

    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
        return raw.decode(encoding) if encoding not in ("utf-8", "utf-8-sig") else None
    except (SyntaxError, LookupError, UnicodeDecodeError):
        return None


def _escaped_byte(text: str) -> int | None:
    """Where standard input, decoded with ``surrogateescape``, held its first byte that is not
    UTF-8 (a lone surrogate from ``\udc80`` to ``\udcff``); None when it was all UTF-8."""
    from parallint.util.limits import _unprintable

    m = _unprintable().search(text)
    return m.start() if m and "\udc80" <= m.group(0) <= "\udcff" else None


def _at_overridden(d: Diagnostic, over: "dict[str, frozenset[tuple[int, int]]]") -> bool:
    """A finding in a NeMo YAML at (or related to) a default that every launch of it overrides
    (:func:`parallint.link.hydralaunch.superseded`): that value never runs."""
    spans = over.get(d.span.path) if d.span is not None else None
    if not spans:
        return False
    if (d.span.line, d.span.column) in spans:
        return True
    return any(r.path == d.span.path and (r.line, r.column) in spans for r in d.related)


def _printable(d: Diagnostic) -> Diagnostic:
    """``d`` with lone surrogates (a ``"\\ud800"`` escape in a JSON value) replaced in its
    messages, so that no output format fails to encode it."""
    from parallint.util.record import replace

    from parallint.util.limits import clean_text

    msg = clean_text(d.message)
    related = tuple(replace(r, message=clean_text(r.message)) if clean_text(r.message) != r.message else r
                    for r in d.related)
    if msg is d.message and all(a is b for a, b in zip(related, d.related)):
        return d
    return replace(d, message=msg, related=related)


#: reader messages (SYN001) that are really a limit of parallint, not a syntax error
@functools.cache  # compiled at the first use, not at import (start-up)
def _limit_message() -> re.Pattern[str]:
    return re.compile(
        r"too complex|nested too deeply|too deeply nested|nested deeper than|nested more than|"
        r"more than \d+ (?:YAML nodes|JSON values)|limit for checking")


#: config kinds an entry script loads through Hydra (``@hydra_runner`` / ``@hydra.main``) and may
#: overwrite keys of before anything reads them (:func:`parallint.link.jobs.hydra_assignments`)
_HYDRA_KINDS = frozenset({"nemo"})


class _QuietGc:
    """Pause the cyclic garbage collector while files are read: what exists now (modules, rule
    tables) is frozen out of its scans, and the dropped syntax trees are collected every
    :data:`RECLAIM_EVERY` files (:meth:`Runner._reclaim`) instead of the whole heap being rescanned
    as the trees pile up. Nested or re-entrant use leaves the collector as it found it; with
    ``active`` False it does nothing (a few files, as a pre-commit hook gives: not worth a full
    collection up front). A class, not ``contextlib.contextmanager``: a one-file check does not
    import contextlib (start-up)."""

    __slots__ = ("active", "collect")

    def __init__(self, active: bool = True, collect: bool = True) -> None:
        self.active = active
        self.collect = collect  # False: the heap is large and long-lived (the language server's
        # kept facts), so a full collection up front costs seconds at each edit; what is garbage
        # now is frozen with the rest and collected after the run, by the collector's own schedule

    def __enter__(self) -> None:
        if not self.active or not gc.isenabled():
            self.active = False
            return
        if self.collect:
            gc.collect()
        gc.freeze()
        gc.disable()

    def __exit__(self, *exc: object) -> None:
        if self.active:
            gc.unfreeze()
            gc.enable()


class Stopped(BaseException):
    """Raised out of a run whose ``Runner.stop()`` says it is no longer wanted (the language
    server: a newer edit of the document arrived); a BaseException, so that no reader's or rule's
    ``except Exception`` takes it for a failure of its own."""


class _Timeout(BaseException):
    """Raised by the alarm; a BaseException, so a reader's ``except Exception`` cannot swallow it."""


class _TimeLimit:
    """Raise :class:`_Timeout` in the main thread after ``seconds`` of wall time (SIGALRM); does
    nothing where there is no alarm (Windows, another thread) or for ``seconds`` <= 0."""

    __slots__ = ("seconds", "old")

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.old: object = None

    def __enter__(self) -> None:
        if not hasattr(signal, "SIGALRM") or sys.platform == "win32" or self.seconds <= 0:
            self.seconds = 0
            return
        try:
            self.old = signal.signal(signal.SIGALRM, _raise_timeout)
        except ValueError:  # not the main thread
            self.seconds = 0
            return
        signal.setitimer(signal.ITIMER_REAL, self.seconds)

    def __exit__(self, *exc: object) -> None:
        if self.seconds > 0:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self.old)  # type: ignore[arg-type]


def _raise_timeout(signum, frame):  # pragma: no cover - timing dependent
    raise _Timeout()


class Runner:
    def __init__(self, config: Config, cwd: Path | None = None) -> None:
        from parallint.util.limits import file_memory, file_timeout, max_file_size

        self.config = config
        self.cwd = cwd or Path.cwd()
        self.cache: dict[Path, FileFacts | None] = {}
        #: files read because a launch line starts them (see :meth:`read`)
        self._launched: set[Path] = set()
        self.errors: list[str] = []
        self.stdin: dict[Path, str] = {}
        #: the scheduler context a shell buffer of ``stdin`` runs in, known from outside its text
        #: (``parallint preflight``: the real environment and host)
        self.context: dict[Path, FactMap] = {}
        #: called with (files read, files to read) as reading goes on (check's progress line)
        self.progress: Callable[[int, int], None] | None = None
        self._done = self._total = 0
        self._pid = os.getpid()  # a forked worker never reports progress (its parent does)
        from parallint.util.boundary import Boundary

        self.boundary = Boundary()  # widened by each path the run is given (parallint.util.boundary)
        self.debug = bool(os.environ.get("PARALLINT_DEBUG"))
        self.early: dict[Path, list[Diagnostic]] = {}  # file-rule findings made in workers
        self.early_job: dict[Path, list[Diagnostic]] = {}  # ... and of the file's standalone job
        self.stripped: set[Path] = set()  # checked on its own and dropped: no syntax tree here
        self.alone: dict[Path, tuple[Path, ...]] = {}  # the files of the file's standalone job
        #: other repository files the reader or a file rule read for the file (an imported
        #: module's parser or model class): a cached result holds only while they are unchanged
        self.side: dict[Path, tuple[str, ...]] = {}
        self.dropped = 0  # files read (see _reclaim)
        self.reparsed = 0  # files parsed a second time (see rehydrate): 0 but for odd links
        self.gate: Any = None  # the Python reader's CallGate for this run's rules (see _gate)
        self.pool = 1  # workers for the Python files (see _pool_size)
        #: the pre-parse guard's verdict on the large files loaded so far: (kind, text, reason)
        self._guarded: dict[Path, tuple[str, str, str | None]] = {}
        #: build_jobs(lean=True): keep the syntax trees of linked scripts only (see _read_pending)
        self.lean = False
        self.gated: set[Path] = set()  # Python files read through the gate
        self.store: Any = None  # parallint.engine.cache.FileCache when the run uses the content cache
        self._keys: dict[Path, str] = {}  # cache keys of the files checked on their own
        self._erred: set[Path] = set()  # files a rule failed on (their results are not cached)
        self.max_bytes = max_file_size(config.settings)
        self.timeout = file_timeout(config.settings)
        self.memory = file_memory(config.settings)
        #: parallint.engine.kept.KeptFacts: what earlier runs read (the language server), or None
        self.kept: Any = None
        #: asked before each file is read and each rule runs: True abandons the run (Stopped)
        self.stop: Callable[[], bool] | None = None
        for mod in ("parallint.link.megatron_table", "parallint.link.jobs", "parallint.link.hydrascripts",
                    "parallint.link.versions", "parallint.link.imports", "parallint.readers.python",
                    "parallint.readers.pyparser_import", "parallint.model.pyshared"):  # an earlier run's
            if mod in sys.modules:
                sys.modules[mod].reset()

    # reading ------------------------------------------------------------------------------
    def read(self, abspath: Path, explicit: bool = False, launched: bool = False) -> FileFacts | None:
        """The file's facts (cached); ``launched``: a launch line starts it, so a ``.py`` file is
        read as Python even when nothing in it looks distributed (its imports do the work)."""
        if abspath in self.cache and (self.cache[abspath] is not None or not launched
                                      or abspath in self._launched):
            return self.cache[abspath]
        if self.stop is not None and self.stop():
            raise Stopped
        if launched:
            self._launched.add(abspath)
        self.cache[abspath] = None  # cycle guard while reading
        facts = self._read(abspath, explicit, launched)
        self.cache[abspath] = facts
        return facts

    def _read(self, abspath: Path, explicit: bool, launched: bool = False) -> FileFacts | None:
        loaded = self._load(abspath, explicit, launched)
        if loaded is None or isinstance(loaded, FileFacts):
            return loaded
        if self.kept is not None and abspath not in self.gated and abspath not in self.context:
            return self.kept.parse(self, *loaded)  # type: ignore[no-any-return]
        return self._parse(*loaded)

    def _raw(self, abspath: Path) -> "tuple[bytes, int] | str":
        """(bytes, size) of a regular file, at most the cap + 1 bytes; or the reason it cannot
        be read. Opened without blocking and checked to be a regular file before any read (a
        FIFO, socket or device is never read from)."""
        flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
        try:
            fd = os.open(abspath, flags)
        except OSError as exc:
            if exc.errno == errno.ENXIO:  # opening a socket
                return "not a regular file (socket)"
            return f"unreadable ({exc.strerror or exc})"
        except ValueError as exc:  # a NUL in the name
            return f"unreadable ({exc})"
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                what = ("FIFO" if stat.S_ISFIFO(st.st_mode) else "socket" if stat.S_ISSOCK(st.st_mode)
                        else "device" if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode)
                        else "folder" if stat.S_ISDIR(st.st_mode) else "special file")
                return f"not a regular file ({what})"
            # an over-size file: only its head (to tell whether it is ours at all)
            want = HEAD_BYTES if st.st_size > self.max_bytes else self.max_bytes + 1
            chunks, got = [], 0
            while got < want:
                b = os.read(fd, min(want - got, 1 << 20))
                if not b:
                    break
                chunks.append(b)
                got += len(b)
            return b"".join(chunks), max(st.st_size, got)
        except OSError as exc:
            return f"unreadable ({exc.strerror or exc})"
        finally:
            os.close(fd)

    def _load(self, abspath: Path, explicit: bool, launched: bool = False) -> "FileFacts | tuple[Path, str, str, str] | None":
        """Bytes, decoding, classification and the pre-parse guards: cheap, no parser. Returns
        (abspath, display, text, kind) for a file a reader must parse, a FileFacts carrying the
        SYN001/SYN002 finding for a file that cannot be parsed, or None when it is not ours."""
        display = display_path(abspath, self.cwd)
        if explicit:
            self.boundary.add(abspath)
        elif self.boundary and not self.boundary.holds(abspath):
            # named by a link, a launch line or a config, but outside the repository: say so, and
            # never read it (its keys and values would reach the findings and the CI log)
            return self._skipped(abspath, display, "outside the repository (linked, not read)") \
                if claims_suffix(display) else None
        if abspath in self.stdin:
            text, decode_error, raw = self.stdin[abspath], None, b""
            if len(text) > self.max_bytes:
                kind = classify(display, text[:HEAD_BYTES]) or ("unknown" if claims_suffix(display) else None)
                return self._skipped(abspath, display, f"too large ({len(text)} characters on standard input; "
                                     f"limit {self.max_bytes} bytes, setting max-file-size)", kind or "unknown")
            if "\x00" in text[:8192]:  # as for a file: binary is SYN002, never "not ours"
                kind = classify(display, text[:HEAD_BYTES].replace("\x00", ""))
                return self._skipped(abspath, display, "binary input (contains NUL bytes)", kind or "unknown")
            bad = _escaped_byte(text)
            if bad is not None:
                kind = classify(display, text[:HEAD_BYTES].encode("utf-8", "surrogateescape")
                                .decode("utf-8", "replace")) or "unknown"
                start = len(text[:bad].encode("utf-8", "surrogateescape"))
                return self._broken(abspath, display, f"invalid UTF-8 at byte {start}", kind,
                                    text[:bad].count("\n") + 1)
            if text.startswith("\ufeff"):
                text = text[1:]
        else:
            got = self._raw(abspath)
            if isinstance(got, str):
                return self._skipped(abspath, display, got) if claims_suffix(display) else None
            raw, size = got
            if _deps.recording() is not None:
                _deps.note_read(abspath, raw, size)
            if size > self.max_bytes:
                head = raw[:HEAD_BYTES].decode("utf-8", errors="replace")
                kind = classify(display, head)
                if kind is None and not (explicit and claims_suffix(display)):
                    return None
                return self._skipped(abspath, display, f"too large ({size} bytes; limit {self.max_bytes}, "
                                     "setting max-file-size)", kind or "unknown")
            if b"\x00" in raw[:8192]:
                kind = classify(display, raw[:HEAD_BYTES].decode("utf-8", errors="replace"))
                if kind is None and not (explicit and claims_suffix(display)):
                    return None
                return self._skipped(abspath, display, "binary file (contains NUL bytes)", kind or "unknown")
            try:
                text, decode_error = raw.decode("utf-8"), None
            except UnicodeDecodeError as exc:
                text, decode_error = _declared_python(display, raw), None
                if text is None:
                    text, decode_error = raw.decode("utf-8", errors="replace"), exc
            if text.startswith("\ufeff"):
                text = text[1:]
        try:
            kind = classify(display, text)
        except RecursionError:
            kind = None
        if kind is None and launched and display.endswith(".py"):
            kind = "python"  # started by a launch line: a training entry point, whatever it holds
        if kind is None:
            return None
        if decode_error is not None:
            line = raw[: decode_error.start].count(b"\n") + 1
            return self._broken(abspath, display, f"invalid UTF-8 at byte {decode_error.start}", kind, line)
        from parallint.util.guards import guard

        known = self._guarded.get(abspath)
        if known is not None and known[0] == kind and known[1] == text:
            reason = known[2]  # loaded again in this run (a one-file check loads its target twice)
        else:
            reason = guard(kind, display, text)
            if len(text) >= GUARD_MEMO_BYTES or self.kept is not None:
                self._guarded[abspath] = (kind, text, reason)
        if reason is not None:
            return self._skipped(abspath, display, reason, kind)
        return abspath, display, text, kind

    def _tick(self) -> None:
        """One more file read (``progress``: the terminal's progress line)."""
        if self.progress is not None and os.getpid() == self._pid:
            self._done += 1
            self.progress(self._done, max(self._done, self._total))

    def _parse(self, abspath: Path, display: str, text: str, kind: str) -> FileFacts | None:
        self._tick()
        module = READERS.get(kind)
        try:
            reader = importlib.import_module(f"parallint.readers.{module}")
        except ImportError:
            return None  # reader for this kind not available
        cap = getattr(reader, "MAX_BYTES", None)
        if isinstance(cap, int) and len(text) > cap:
            return self._skipped(abspath, display, f"too large ({len(text)} characters; the {kind} reader "
                                 f"stops at {cap})", kind)
        gate = None
        if kind in PARALLEL_KINDS and abspath in self.gated and not _launches_inside(display, text):
            gate = self.gate
        try:
            with _TimeLimit(self.timeout):
                if abspath in self.context and kind == "shell":
                    facts = reader.read(display, abspath, text, scheduler_facts=self.context[abspath])
                else:
                    facts = reader.read(display, abspath, text) if gate is None else \
                        reader.read(display, abspath, text, gate=gate)
        except _Timeout:
            return self._skipped(abspath, display, f"timed out after {self.timeout:g} s (setting file-timeout)", kind)
        except RecursionError:
            return self._skipped(abspath, display, "too complex (nested too deeply to read)", kind)
        except MemoryError:
            return self._skipped(abspath, display, "too complex (out of memory while reading)", kind)
        except Exception as exc:  # never a traceback for the user
            if self.debug:
                raise
            return self._skipped(abspath, display, f"reader crashed ({type(exc).__name__}: {exc})", kind)
        if facts is not None:
            self._relabel(facts)
            if facts.kind in _HYDRA_KINDS and facts.facts:
                from parallint.link.jobs import hydra_assignments, repo_root

                hydra_assignments(facts, repo_root(abspath.parent))
        return facts

    @staticmethod
    def _relabel(facts: FileFacts) -> None:
        """A reader's SYN001 that reports one of its limits (nesting, node count) is SYN002."""
        for i, d in enumerate(facts.diagnostics):
            if d.code == "SYN001" and _limit_message().search(d.message):
                at = d.message.find("too complex")
                reason = d.message[at:].strip() if at >= 0 else f"too complex ({d.message})"
                if reason.count("(") > reason.count(")"):
                    reason += ")" * (reason.count("(") - reason.count(")"))
                facts.diagnostics[i] = not_analysed(d.span.path, reason, d.span.line)

    def _broken(self, abspath: Path, display: str, message: str, kind: str = "unknown", line: int = 1) -> FileFacts:
        f = FileFacts(display, abspath, kind, "")
        f.diagnostics.append(_syn(display, message, line))
        return f

    def _skipped(self, abspath: Path, display: str, reason: str, kind: str = "unknown", line: int = 1) -> FileFacts:
        f = FileFacts(display, abspath, kind, "")
        f.diagnostics.append(not_analysed(display, reason, line))
        return f

    # the pipeline -------------------------------------------------------------------------
    def collect(self, paths: list[str], rules: list[type] = ()) -> list[FileFacts]:
        """Every file below ``paths`` that a reader takes.

        Files that are not Python are read first, here: their launches and links say which
        Python scripts a job links. With ``rules``, every other Python file is read once and
        checked at once (its file rules and the rules of the job it makes on its own), and its
        syntax tree is dropped; with enough of them (or a large one) that happens in worker
        processes that are killed when they overrun the time limit. The linked scripts are read
        here (while the workers run) and keep their syntax tree for the job rules: no file is
        parsed twice. The cyclic garbage collector is paused while reading (the trees are large
        and mostly short-lived); garbage is collected every few files instead."""
        excluder = Excluder(
            self.config.exclude, self.config.base, self.config.get("respect-gitignore", True),
            bool(self.config.get("include-tests", False)),
        )
        skipped: list[tuple[Path, str]] = []
        for p in paths:
            self.boundary.add(self.cwd / p)
        cands: list[Candidate] = discover(paths, excluder, self.cwd, self.errors, skipped)
        slots: list[Path] = []
        for folder, reason in skipped:
            ap = Path(os.path.abspath(folder))
            if ap not in self.cache:
                self.cache[ap] = self._skipped(ap, display_path(ap, self.cwd), reason)
                slots.append(ap)
        pending: list[tuple[Path, str, str, str]] = []
        for c in cands:
            if c.abspath in self.cache:
                slots.append(c.abspath)
                continue
            loaded = self._load(c.abspath, c.explicit)
            if loaded is None or isinstance(loaded, FileFacts):
                self.cache[c.abspath] = loaded
            else:
                pending.append(loaded)
            slots.append(c.abspath)
        self._total += len(pending)
        with _QuietGc(active=len(pending) >= RECLAIM_EVERY, collect=self.kept is None):
            self._read_pending(pending, rules)
        return [f for f in (self.cache.get(a) for a in slots) if f is not None]

    def _read_pending(self, pending: list[tuple[Path, str, str, str]], rules: list[type]) -> None:
        # Python files that can state a launch (TorchX components) are read with the launch files
        python = [p for p in pending if p[3] in PARALLEL_KINDS and "torchx" not in p[2]]
        others = [p for p in pending if p[3] not in PARALLEL_KINDS or "torchx" in p[2]]
        risky = [p for p in others if p[3] in PROBE_KINDS and len(p[2]) > RISKY_SHELL_BYTES]
        if self.kept is not None:  # the language server: the large Python files are probed too,
            # unless their facts are kept (a killable worker read them before)
            risky = [p for p in risky + [p for p in python if len(p[2]) > RISKY_BYTES]
                     if not self.kept.holds(self, *p)]
        if risky:
            self._probe_in_workers(risky)
        if self.kept is not None:
            # every file read here and kept with its syntax tree (the rules run on it in check(),
            # as on a linked script): the next analysis takes it from the kept facts
            for item in others + python:
                if item[0] not in self.cache:
                    if self.stop is not None and self.stop():
                        raise Stopped
                    self.cache[item[0]] = self.kept.parse(self, *item)
            return
        for item in others:
            if item[0] not in self.cache:
                self.cache[item[0]] = self._parse(*item)
                self._reclaim()
        if not (rules and python):
            # lean (estimate, plan): the facts are what a job needs, so a file no launch or link
            # names keeps only its facts, as a file checked on its own does in check
            linked = self._linked({p[0] for p in python}) if self.lean and python else None
            if linked is not None:
                # ... and is read through the gate for the facts a job spec reads (and the
                # files a script links): a file with no call that states one is not walked
                from parallint.estimator.spec import SPEC_INPUTS
                from parallint.readers.python import LINKS, CallGate

                self.gate = CallGate.for_facts(SPEC_INPUTS | {LINKS})
                self.gated = {p[0] for p in python if p[0] not in linked}
            for item in python:
                if item[0] not in self.cache:
                    f = self.cache[item[0]] = self._parse(*item)
                    if linked is not None and f is not None and item[0] not in linked:
                        _drop(f)
                        self.stripped.add(item[0])
                        self._reclaim()
            return
        linked = self._linked({p[0] for p in python})
        if self.store is not None and self.store.usable:
            python = [p for p in python if p[0] in linked or not self._cached(p)]
        self.gate = _gate(rules)
        if self.gate is not None:
            self.gated = {p[0] for p in python if p[0] not in linked}
        from parallint.engine import workers

        self.pool = 1
        if len(python) >= PARALLEL_MIN_FILES and _workers() > 1:
            self.pool = _pool_size(sum(len(p[2]) for p in python if p[0] not in linked))
        many = self.pool > 1
        remote: list[tuple[Path, str, str, str]] = []
        if workers.available():  # (multiprocessing is only imported here)
            remote = [p for p in python if len(p[2]) > RISKY_BYTES or (many and p[0] not in linked)]
        far = {p[0] for p in remote}
        local = iter([p for p in python if p[0] not in far])
        instances = [r() for r in rules]

        def one() -> bool:
            """Read the next local file (between the workers' results); False when none is left."""
            item = next(local, None)
            if item is None:
                return False
            if item[0] not in self.cache:
                self._read_local(item, instances, keep=item[0] in linked)
            return True

        if remote:
            self._parse_in_workers(remote, rules, one)
        while one():
            pass
        if self._keys:
            self._store_results()

    def _cached(self, item: tuple[Path, str, str, str]) -> bool:
        """Take a file's results from the content cache (parallint.engine.cache); False on a miss (its
        key is kept, to store the results once the file is checked)."""
        abspath, display, text, _kind = item
        key = self.store.entry_key(abspath, display, text)
        hit = self.store.get(key)
        if hit is not None:
            self._tick()
            try:
                f, early = hit
                f.text = text
                self.cache[abspath] = f
                self._keep_early(abspath, early)
                self.stripped.add(abspath)
                return True
            except Exception:  # noqa: BLE001 - an entry of another shape: a miss
                self.cache.pop(abspath, None)
        self._keys[abspath] = key
        return False

    def _store_results(self) -> None:
        from copy import copy

        for abspath, key in self._keys.items():
            f = self.cache.get(abspath)
            if f is None or abspath not in self.early or abspath in self._erred:
                continue
            bare = copy(f)
            bare.text, bare.data = "", None
            members = self.alone.get(abspath, ())
            early = (self.early[abspath], self.early_job[abspath], members)
            side = [Path(p) for p in self.side.get(abspath, ()) if Path(p) not in members]
            self.store.put(key, (bare, early), [m for m in members if m != abspath] + side)
        self._keys.clear()

    def _read_local(self, item: tuple[Path, str, str, str], rules: list, keep: bool) -> None:
        """Read one Python file here. A linked script keeps its syntax tree (its job's rules need
        it; its own rules run with the others); any other file is checked now and then dropped."""
        _deps.side_start()
        try:
            f = self._parse(*item)
            self.cache[item[0]] = f
            if f is not None and not keep:
                errors = len(self.errors)
                self._keep_early(f.abspath, (*self._alone(f, rules), _deps.side_take()))
                if len(self.errors) > errors:
                    self._erred.add(f.abspath)
                if f.data is not None:
                    _drop(f)
                    self.stripped.add(f.abspath)
        finally:
            _deps.side_take()  # stop collecting (a linked script keeps no result of its own)
        self._reclaim()

    def _alone(self, f: FileFacts, rules: list) -> tuple[list[Diagnostic], list[Diagnostic], tuple[Path, ...]]:
        """The findings of the file rules on ``f`` and of the job rules on the job ``f`` makes on
        its own (in case no launch takes it in: decided after linking), with that job's files."""
        from parallint.link.jobs import standalone_job

        ctx = Context(self.config.settings, self.cwd, self.read, _plan, _versions, _accept)
        diags: list[Diagnostic] = []
        for rule in rules:
            if f.kind in rule.kinds:
                diags.extend(self._run(rule, "check_file", f, ctx, f.path))
        job = standalone_job(f, self.read)
        job_diags: list[Diagnostic] = []
        for rule in rules:
            job_diags.extend(self._run(rule, "check_job", job, ctx, job.name))
        return diags, job_diags, tuple(x.abspath for x in job.files)

    def _keep_early(self, abspath: Path, early) -> None:
        diags, job_diags, members, *side = early
        self.early[abspath], self.early_job[abspath] = diags, job_diags
        self.alone[abspath] = members
        self.side[abspath] = side[0] if side else ()

    def _reclaim(self) -> None:
        """While the collector is paused: collect what is left of the dropped trees (and any other
        cyclic garbage) every few files read, and freeze what survives (so that it is not scanned
        again)."""
        self.dropped += 1
        if self.dropped % RECLAIM_EVERY == 0 and not gc.isenabled():
            gc.collect()
            gc.freeze()

    def _linked(self, python: set[Path]) -> set[Path]:
        """The Python files among ``python`` that the files read so far (launch files, configs)
        or the configured links name: the scripts whose syntax tree job rules need."""
        from parallint.link.jobs import repo_root, resolve_link

        out: set[Path] = set()
        for entry in self.config.get("links", []) or []:
            for p in [entry.get("launch")] + list(entry.get("files", [])):
                if p:
                    out.add((self.config.base / p).resolve())
        roots: dict[Path, Path] = {}
        for f in list(self.cache.values()):
            if f is None or not (f.launches or f.links):
                continue
            base = f.abspath.parent
            root = roots.get(base)
            if root is None:
                root = roots[base] = repo_root(base)
            for launch in f.launches:
                if launch.script is not None:
                    hit = resolve_link(launch.script, base, root, module=bool(launch.is_module))
                    if hit is not None:
                        out.add(hit)
                for link in launch.links:
                    out.add(resolve_link(link, base, root))  # type: ignore[arg-type]
            for link in f.links:
                out.add(resolve_link(link, base, root))  # type: ignore[arg-type]
        out.discard(None)  # type: ignore[arg-type]
        return {p for p in out if p in python} | {p for p in python if p.resolve() in out}

    def _reason(self, payload: str) -> str:
        if payload.startswith("timed out"):  # the worker is killed a second after the limit
            return f"timed out after {self.timeout:g} s (setting file-timeout)"
        if payload.startswith("over the memory limit"):
            return payload[:-1] + ", setting file-memory)"
        return payload

    def _probe_in_workers(self, items: list[tuple[Path, str, str, str]]) -> None:
        """Read each item once in a killable worker; one that times out or crashes there becomes
        its SYN002 finding here (the others are then read in this process)."""
        from parallint.engine import workers

        if not workers.available():
            return
        global _WORKER
        _WORKER = (self, [])
        for mod in {READERS.get(item[3]) for item in items}:
            try:
                importlib.import_module(f"parallint.readers.{mod}")
            except ImportError:
                pass
        try:
            for idx, ok, payload in workers.run(items, _probe, max(1, min(_workers(), len(items))),
                                                self.timeout + 1, memory=self.memory):
                if not ok:
                    item = items[idx]
                    self.cache[item[0]] = self._skipped(item[0], item[1], self._reason(payload), item[3])
        except Exception:  # workers that cannot start: read here, under the alarm
            if self.debug:
                raise
        finally:
            _WORKER = None

    def _parse_in_workers(self, items: list[tuple[Path, str, str, str]], rules: list[type],
                          idle: Callable[[], bool] | None = None) -> None:
        """Parse ``items`` in workers (and run their file rules and standalone-job rules there);
        ``idle()`` is work for this process while it waits for them."""
        from parallint.engine import workers

        global _WORKER
        _WORKER = (self, [r() for r in rules])
        n = max(1, min(self.pool, len(items)))
        # import the readers once here: forked workers inherit them instead of each paying the
        # import inside its first file's time limit (the Python reader needs no LibCST)
        for mod in {READERS.get(item[3]) for item in items}:
            try:
                importlib.import_module(f"parallint.readers.{mod}")
            except ImportError:
                pass
        try:
            for idx, ok, payload in workers.run(items, _work, n, self.timeout + 1, idle, self.memory):
                item = items[idx]
                self._tick()
                if not ok:
                    self.cache[item[0]] = self._skipped(item[0], item[1], self._reason(payload), item[3])
                    continue
                f, early, errors, record = payload
                if record is not None and _deps.recording() is not None:
                    _deps.recording().merge(record)  # what the worker read, for the run cache
                self.cache[item[0]] = f
                if f is not None and early is not None:
                    self._keep_early(item[0], early)
                    self.stripped.add(item[0])
                if errors:
                    self._erred.add(item[0])
                self.errors.extend(errors)
        except Exception:  # workers that cannot start: parse here instead
            if self.debug:
                raise
            for item in items:
                if item[0] not in self.cache:
                    self.cache[item[0]] = self._parse(*item)
        finally:
            _WORKER = None

    def rehydrate(self, f: FileFacts) -> FileFacts:
        """A file checked on its own comes back without its syntax tree; a job rule that needs it
        after all (a script that only a file read later links) gets it parsed again here."""
        if f.abspath not in self.stripped:
            return f
        self.stripped.discard(f.abspath)
        self.reparsed += 1
        self.gated.discard(f.abspath)
        fresh = self._parse(f.abspath, f.path, f.text, f.kind) or f
        self.cache[f.abspath] = fresh
        return fresh

    def jobs(self, files: list[FileFacts]):
        from parallint.link.jobs import build_jobs

        return build_jobs(files, self.read, self.config.get("links", []), self.config.base, self._settled,
                          sizing=self.lean)

    def _settled(self, f: FileFacts, members: tuple[Path, ...]) -> bool:
        """Whether the rules of ``f``'s own job, with these member files, ran already (see
        :meth:`_alone`): check() then takes their findings, not the job's."""
        return f.abspath in self.early_job and self.alone.get(f.abspath) == members

    def check(self, paths: list[str], rules: list[type], files: list[FileFacts] | None = None) -> Result:
        if files is None:
            files = self.collect(paths, rules)
        ctx = Context(self.config.settings, self.cwd, self.read, _plan, _versions, _accept)
        instances = [r() for r in rules]
        enabled = {r.code for r in rules}
        diags: list[Diagnostic] = []
        for f in files:
            diags.extend(d for d in f.diagnostics if d.code in enabled)
            if f.abspath in self.early:
                diags.extend(self.early.pop(f.abspath))
                continue
            for rule in instances:
                if f.kind in rule.kinds:
                    diags.extend(self._run(rule, "check_file", f, ctx, f.path))
        jobs = self.jobs(files) if files else []
        for job in jobs:
            root = job.root.abspath
            if job.launch is None and root in self.early_job and \
                    self.alone.get(root) == tuple(x.abspath for x in job.files):
                diags.extend(self.early_job.pop(root))  # the job the file makes on its own
                continue
            if self.stripped:
                job.files = [self.rehydrate(f) for f in job.files]
            for rule in instances:
                diags.extend(self._run(rule, "check_job", job, ctx, job.name))
        # findings in linked files that were not named on the command line are still reported
        listed: dict[Any, list[FileFacts]] = {}  # (``f in files`` by abspath: equal records share it)
        for x in files:
            listed.setdefault(x.abspath, []).append(x)
        for f in list(self.cache.values()):
            if f is not None and not any(x is f or x == f for x in listed.get(f.abspath, ())):
                diags.extend(d for d in f.diagnostics if d.code in enabled)
        if any(job.hydra_config is not None for job in jobs):  # a NeMo YAML run with Hydra overrides
            from parallint.link.hydralaunch import superseded

            over = superseded(jobs)
            diags = [d for d in diags if not _at_overridden(d, over)]
        diags = [_printable(d) for d in self._suppress(self._dedupe(diags), files, enabled)]
        diags.sort(key=Diagnostic.sort_key)
        return Result(diags, len(files), self.errors, jobs)

    def _run(self, rule, method: str, target, ctx: Context, where: str) -> list[Diagnostic]:
        """One rule on one file or job. At most :data:`MAX_FINDINGS_PER_RULE` findings are taken
        (the rule's generator is not run further), then one that says the rest is not listed: a
        hostile file of 4,000 repeated keys costs what 200 cost."""
        if self.stop is not None and self.stop():
            raise Stopped
        out: list[Diagnostic] = []
        try:
            for d in getattr(rule, method)(target, ctx) or ():
                if len(out) == MAX_FINDINGS_PER_RULE:
                    out.append(Diagnostic(d.code, d.name, Severity.INFO,
                                          f"more {d.code} findings in {where} are not listed (at most "
                                          f"{MAX_FINDINGS_PER_RULE} a rule, file or job); fix these and "
                                          f"run again", d.span))
                    break
                out.append(d)
            return out
        except Exception as exc:
            if self.debug:
                raise
            self.errors.append(f"internal error in {rule.code} on {where}: {type(exc).__name__}: {exc}")
            return []

    @staticmethod
    def _dedupe(diags: list[Diagnostic]) -> list[Diagnostic]:
        """Identical findings once; where one rule reports one position at several severities (a
        script that a one-node and a multi-node launch both start), only the most severe."""
        top: dict[tuple, Diagnostic] = {}
        for d in diags:
            key = (d.code, d.span.path, d.span.line, d.span.column)
            if key not in top or d.severity > top[key].severity:
                top[key] = d
        seen, out = set(), []
        for d in diags:
            pos = (d.code, d.span.path, d.span.line, d.span.column)
            key = pos + (d.message,)
            if d.severity == top[pos].severity and key not in seen:
                seen.add(key)
                out.append(d)
        return out

    def _suppress(self, diags: list[Diagnostic], files: list[FileFacts] = (), enabled: set[str] = frozenset()) -> list[Diagnostic]:
        from parallint.engine.suppress import apply

        return apply(diags, list(self.cache.values()), {f.abspath for f in files}, self.config, enabled, self.cwd)


def check_paths(paths: list[str], config: Config, rules: list[type] | None = None,
                stdin: tuple[str, str] | None = None, cwd: Path | None = None) -> Result:
    """Run every enabled rule over ``paths``. ``stdin`` = (file name, content) for ``check -``."""
    from parallint.engine.registry import get_registry

    reg = get_registry()
    if rules is None:
        rules = reg.enabled(config.get("select"), config.get("extend-select", []), config.get("ignore", []))
    runner = Runner(config, cwd)
    if stdin is not None:
        # the buffer stands for the file on disk; other files are read from disk for links
        name, content = stdin
        ap = Path(os.path.abspath(runner.cwd / name))
        runner.stdin[ap] = content
        f = runner.read(ap, explicit=True)
        return runner.check([], rules, files=[f] if f is not None else [])
    return runner.check(paths, rules)


def build_jobs(paths: list[str], config: Config | dict | None = None, cwd: Path | None = None, lean: bool = False):
    """The jobs parallint assembles from ``paths`` (for show / estimate / plan). ``lean``: only
    the jobs' facts are wanted (estimate, plan): the Python files that no launch or link names
    keep their facts, not their syntax trees, so memory stays bounded as in ``check``."""
    if config is None:
        config = Config()
    elif isinstance(config, dict):
        config = Config(None, cwd or Path.cwd(), config)
    runner = Runner(config, cwd)
    runner.lean = lean
    files = runner.collect(paths)
    return runner.jobs(files)
