"""The engine: discover -> read -> link -> rules -> suppress -> sort.

``check_paths`` is what ``parallint check`` runs; ``build_jobs`` is what ``show``, ``estimate`` and
``plan`` use. A reader or rule that fails on one file never stops the others: a reader failure
becomes a SYN001 finding, a rule failure a one-line internal error (exit 2).
"""

from __future__ import annotations

import importlib
import os
import signal
import sys
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from parallint.classify import READERS, claims_suffix, classify
from parallint.config import Config
from parallint.diagnostics import Diagnostic, Severity, Span
from parallint.discover import Candidate, Excluder, discover, display_path
from parallint.facts import FileFacts

MAX_BYTES = 4 * 1024 * 1024
READ_TIMEOUT_S = 30


@dataclass
class Context:
    """What rules may use besides the file or job they are given."""

    config: dict[str, Any]
    cwd: Path
    _runner: "Runner"

    def read(self, path: str | Path) -> FileFacts | None:
        p = Path(path)
        if not p.is_absolute():
            p = self.cwd / p
        return self._runner.read(Path(os.path.abspath(p)))


@dataclass
class Result:
    diagnostics: list[Diagnostic]
    files_checked: int
    errors: list[str] = field(default_factory=list)  # one-line problems (missing paths, rule crashes)
    jobs: list = field(default_factory=list)


#: kinds parsed in worker processes when a run has many of them (LibCST dominates run time)
PARALLEL_KINDS = frozenset({"python"})
PARALLEL_MIN_FILES = 24
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


def _work(item: tuple[Path, str, str, str]):
    """In a worker: parse one file and run the file rules on it; the syntax tree stays here."""
    from parallint.link import standalone_job

    runner, rules = _WORKER
    f = runner._parse(*item)
    diags: list[Diagnostic] = []
    job_diags: list[Diagnostic] = []
    if f is not None:
        runner.cache[f.abspath] = f
        ctx = Context(runner.config.settings, runner.cwd, runner)
        for rule in rules:
            if f.kind in rule.kinds:
                diags.extend(runner._run(rule, "check_file", f, ctx, f.path))
        # the job the file makes on its own, in case no launch takes it in (decided later)
        job = standalone_job(f, runner.read)
        for rule in rules:
            job_diags.extend(runner._run(rule, "check_job", job, ctx, job.name))
        f.data = None
    errors = list(runner.errors)
    runner.errors.clear()
    return f, (diags, job_diags), errors


def _syn(path: str, message: str, line: int = 1, column: int = 1) -> Diagnostic:
    return Diagnostic("SYN001", "parse-error", Severity.ERROR, message, Span(path, line, column))


class _Timeout(Exception):
    pass


@contextmanager
def _time_limit(seconds: int) -> Iterator[None]:
    if not hasattr(signal, "SIGALRM") or sys.platform == "win32":
        yield
        return
    try:
        old = signal.signal(signal.SIGALRM, _raise_timeout)
    except ValueError:  # not the main thread
        yield
        return
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _raise_timeout(signum, frame):  # pragma: no cover - timing dependent
    raise _Timeout()


class Runner:
    def __init__(self, config: Config, cwd: Path | None = None) -> None:
        self.config = config
        self.cwd = cwd or Path.cwd()
        self.cache: dict[Path, FileFacts | None] = {}
        self.errors: list[str] = []
        self.stdin: dict[Path, str] = {}
        self.debug = bool(os.environ.get("PARALLINT_DEBUG"))
        self.early: dict[Path, list[Diagnostic]] = {}  # file-rule findings made in workers
        self.early_job: dict[Path, list[Diagnostic]] = {}  # ... and of the file's standalone job
        self.stripped: set[Path] = set()  # parsed in a worker: no syntax tree here

    # reading ------------------------------------------------------------------------------
    def read(self, abspath: Path, explicit: bool = False) -> FileFacts | None:
        if abspath in self.cache:
            return self.cache[abspath]
        self.cache[abspath] = None  # cycle guard while reading
        facts = self._read(abspath, explicit)
        self.cache[abspath] = facts
        return facts

    def _read(self, abspath: Path, explicit: bool) -> FileFacts | None:
        loaded = self._load(abspath, explicit)
        if loaded is None or isinstance(loaded, FileFacts):
            return loaded
        return self._parse(*loaded)

    def _load(self, abspath: Path, explicit: bool) -> "FileFacts | tuple[Path, str, str, str] | None":
        """Bytes, decoding and classification: cheap, no parser. Returns (abspath, display, text,
        kind) for a file a reader must parse, a FileFacts carrying SYN001 for a broken one, or None."""
        display = display_path(abspath, self.cwd)
        if abspath in self.stdin:
            text, decode_error = self.stdin[abspath], None
        else:
            try:
                size = abspath.stat().st_size
                if size > MAX_BYTES:
                    if claims_suffix(display) and explicit:
                        return self._broken(abspath, display, f"file too large to check ({size} bytes; limit {MAX_BYTES})")
                    return None
                with open(abspath, "rb") as fh:
                    raw = fh.read(MAX_BYTES + 1)
            except OSError as exc:
                if claims_suffix(display):
                    return self._broken(abspath, display, f"cannot read file: {exc.strerror or exc}")
                return None
            if b"\x00" in raw[:8192]:
                if explicit and claims_suffix(display):
                    return self._broken(abspath, display, "binary file (contains NUL bytes)")
                return None
            try:
                text, decode_error = raw.decode("utf-8"), None
            except UnicodeDecodeError as exc:
                text, decode_error = raw.decode("utf-8", errors="replace"), exc
            if text.startswith("\ufeff"):
                text = text[1:]
        kind = classify(display, text)
        if kind is None:
            return None
        if decode_error is not None:
            line = raw[: decode_error.start].count(b"\n") + 1
            return self._broken(abspath, display, f"invalid UTF-8 at byte {decode_error.start}", kind, line)
        return abspath, display, text, kind

    def _parse(self, abspath: Path, display: str, text: str, kind: str) -> FileFacts | None:
        module = READERS.get(kind)
        try:
            reader = importlib.import_module(f"parallint.readers.{module}")
        except ImportError:
            return None  # reader for this kind not available
        try:
            with _time_limit(READ_TIMEOUT_S):
                facts = reader.read(display, abspath, text)
        except _Timeout:
            return self._broken(abspath, display, f"reading took longer than {READ_TIMEOUT_S} s; file skipped", kind)
        except RecursionError:
            return self._broken(abspath, display, "nested too deeply to read", kind)
        except Exception as exc:  # never a traceback for the user
            if self.debug:
                raise
            return self._broken(abspath, display, f"could not be read ({type(exc).__name__}: {exc})", kind)
        return facts

    def _broken(self, abspath: Path, display: str, message: str, kind: str = "unknown", line: int = 1) -> FileFacts:
        f = FileFacts(display, abspath, kind, "")
        f.diagnostics.append(_syn(display, message, line))
        return f

    # the pipeline -------------------------------------------------------------------------
    def collect(self, paths: list[str], rules: list[type] = ()) -> list[FileFacts]:
        """Every file below ``paths`` that a reader takes. With ``rules`` and enough Python files,
        the Python files are parsed (and their file rules run) in worker processes."""
        excluder = Excluder(
            self.config.exclude, self.config.base, self.config.get("respect-gitignore", True)
        )
        cands: list[Candidate] = discover(paths, excluder, self.cwd, self.errors)
        slots: list[Path] = []
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
        python = [p for p in pending if p[3] in PARALLEL_KINDS]
        if rules and len(python) >= PARALLEL_MIN_FILES and _workers() > 1:
            self._parse_in_workers(python, rules)
            pending = [p for p in pending if p[3] not in PARALLEL_KINDS]
        for item in pending:
            self.cache[item[0]] = self._parse(*item)
        return [f for f in (self.cache.get(a) for a in slots) if f is not None]

    def _parse_in_workers(self, items: list[tuple[Path, str, str, str]], rules: list[type]) -> None:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        global _WORKER
        _WORKER = (self, [r() for r in rules])
        try:
            ctx = multiprocessing.get_context("fork")
            with ProcessPoolExecutor(max_workers=_workers(), mp_context=ctx) as pool:
                for item, (f, diags, errors) in zip(items, pool.map(_work, items, chunksize=4)):
                    self.cache[item[0]] = f
                    if f is not None:
                        self.early[item[0]], self.early_job[item[0]] = diags
                        self.stripped.add(item[0])
                    self.errors.extend(errors)
        except Exception:  # a pool that cannot start: parse here instead
            if self.debug:
                raise
            for item in items:
                if self.cache.get(item[0]) is None:
                    self.early.pop(item[0], None)
                    self.early_job.pop(item[0], None)
                    self.stripped.discard(item[0])
                    self.cache[item[0]] = self._parse(*item)
        finally:
            _WORKER = None

    def rehydrate(self, f: FileFacts) -> FileFacts:
        """A file parsed in a worker comes back without its syntax tree; job rules that need it
        get it parsed again here (only scripts that a launch links)."""
        if f.abspath not in self.stripped:
            return f
        self.stripped.discard(f.abspath)
        fresh = self._parse(f.abspath, f.path, f.text, f.kind) or f
        self.cache[f.abspath] = fresh
        return fresh

    def jobs(self, files: list[FileFacts]):
        from parallint.link import build_jobs

        return build_jobs(files, self.read, self.config.get("links", []), self.config.base)

    def check(self, paths: list[str], rules: list[type], files: list[FileFacts] | None = None) -> Result:
        if files is None:
            files = self.collect(paths, rules)
        ctx = Context(self.config.settings, self.cwd, self)
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
            if job.launch is None and job.root.abspath in self.early_job:
                diags.extend(self.early_job.pop(job.root.abspath))
                continue
            if self.stripped:
                job.files = [self.rehydrate(f) for f in job.files]
            for rule in instances:
                diags.extend(self._run(rule, "check_job", job, ctx, job.name))
        # findings in linked files that were not named on the command line are still reported
        for f in list(self.cache.values()):
            if f is not None and f not in files:
                diags.extend(d for d in f.diagnostics if d.code in enabled)
        diags = self._suppress(self._dedupe(diags), files, enabled)
        diags.sort(key=Diagnostic.sort_key)
        return Result(diags, len(files), self.errors, jobs)

    def _run(self, rule, method: str, target, ctx: Context, where: str) -> list[Diagnostic]:
        try:
            return list(getattr(rule, method)(target, ctx) or ())
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
        from parallint.suppress import apply

        return apply(diags, list(self.cache.values()), {f.abspath for f in files}, self.config, enabled, self.cwd)


def check_paths(paths: list[str], config: Config, rules: list[type] | None = None,
                stdin: tuple[str, str] | None = None, cwd: Path | None = None) -> Result:
    """Run every enabled rule over ``paths``. ``stdin`` = (file name, content) for ``check -``."""
    from parallint.registry import get_registry

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


def build_jobs(paths: list[str], config: Config | dict | None = None, cwd: Path | None = None):
    """The jobs parallint assembles from ``paths`` (for show / estimate / plan)."""
    if config is None:
        config = Config()
    elif isinstance(config, dict):
        config = Config(None, cwd or Path.cwd(), config)
    runner = Runner(config, cwd)
    files = runner.collect(paths)
    return runner.jobs(files)
