"""``parallint check`` without typer: its implementation and a parser for its plain invocations.

:mod:`parallint.cli.main` runs it straight from the command line (pre-commit's ``parallint check
FILE...`` never imports typer); :mod:`parallint.cli.app` declares the same options with their
help and calls :func:`run_check` too.
"""

from __future__ import annotations

import sys
TYPE_CHECKING = False  # typing itself is not imported: `parallint --version` needs none of it
if TYPE_CHECKING:  # pragma: no cover
    from typing import Any, List, Optional

#: the exit-status contract (docs/failure-contract.md): 0 clean, 1 findings, 2 usage or internal
#: error. A crash is never 1: main() turns any escaped exception into a one-line error and 2.
EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
#: at most this many files named: the run keeps the cyclic garbage collector off throughout
QUIET_GC_FILES = 16


class Exit(Exception):
    """Leave ``check`` with this exit status (typer.Exit without typer)."""

    def __init__(self, code: int = EXIT_OK) -> None:
        super().__init__(code)
        self.code = code


def echo(message: str, err: bool = False) -> None:
    """What ``typer.echo`` (click.echo) does with a line of text: ANSI escapes stripped unless the
    stream is a terminal, a newline, a flush."""
    stream = sys.stderr if err else sys.stdout
    if "\x1b" in message and not _isatty(stream):
        import re

        message = re.sub(r"\033\[[;?0-9]*[a-zA-Z]", "", message)
    stream.write(message + "\n")
    stream.flush()


def fail(message: str) -> Exit:
    for line in message.splitlines() or [""]:  # several problems: one error line each
        echo(f"parallint: error: {line}", err=True)
    return Exit(EXIT_ERROR)


def _split(values: Optional[List[str]]) -> Optional[List[str]]:
    if values is None:
        return None
    out: List[str] = []
    for v in values:
        out.extend(x.strip() for x in v.split(",") if x.strip())
    return out


def _read_stdin(settings: dict) -> str:
    """Standard input, at most the size cap + 1 bytes (more is never read: the runner reports the
    buffer as too large)."""
    from parallint.util.limits import max_file_size

    cap = max_file_size(settings)
    stream = getattr(sys.stdin, "buffer", None)
    if stream is None:  # pragma: no cover - a replaced sys.stdin
        return sys.stdin.read(cap + 1)
    raw = stream.read(cap + 1)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:  # kept as lone surrogates: the runner names the first bad byte
        return raw.decode("utf-8", errors="surrogateescape")


def _isatty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def _check_gpu(gpu: Optional[str]) -> None:
    if gpu:
        from parallint.cli.estimate_ux import gpu_error

        msg = gpu_error(gpu)
        if msg:
            raise fail(msg)


def run_check(paths: Optional[List[str]] = None, output_format: str = "text", output_file: Optional[str] = None,
              statistics: bool = False, show_docs_link: bool = False, config_path: Optional[str] = None,
              select: Optional[List[str]] = None, extend_select: Optional[List[str]] = None,
              ignore: Optional[List[str]] = None, fail_level: Optional[str] = None, exit_zero: bool = False,
              stdin_filename: Optional[str] = None, gpu: Optional[str] = None, include_tests: bool = False,
              max_file_size: Optional[str] = None, all_job_findings: bool = False, related_findings: bool = False,
              no_cache: bool = False,
              baseline: Optional[str] = None, write_baseline: Optional[str] = None, add_noqa: bool = False,
              fix: bool = False, unsafe_fixes: bool = False, diff: bool = False, quiet: bool = False) -> int:
    """``parallint check`` (see :func:`parallint.cli.app.check` for the options); the exit status."""
    import gc

    # a few files a hook names (no folder): a run of a few hundred milliseconds at most, mostly
    # imports, which the cyclic collector would scan over and over (more files: as before, the
    # runner pauses and collects while it reads them)
    no_gc = gc.isenabled() and _files_only(paths) and len(paths or ()) <= QUIET_GC_FILES
    if no_gc:
        gc.disable()
    try:
        _check(paths, output_format, output_file, statistics, show_docs_link, config_path, select, extend_select,
               ignore, fail_level, exit_zero, stdin_filename, gpu, include_tests, max_file_size, all_job_findings,
               related_findings, no_cache, baseline, write_baseline, add_noqa, fix, unsafe_fixes, diff, quiet)
    except Exit as exc:
        return exc.code
    finally:
        if no_gc:
            gc.enable()
    return EXIT_OK


def _files_only(paths: Optional[List[str]]) -> bool:
    """Whether ``check`` was given files (or standard input) and no folder."""
    import os

    return bool(paths) and not any(os.path.isdir(p) for p in paths or ())


def _check(paths, output_format, output_file, statistics, show_docs_link, config_path, select, extend_select,
           ignore, fail_level, exit_zero, stdin_filename, gpu, include_tests, max_file_size, all_job_findings,
           related_findings, no_cache, baseline, write_baseline, add_noqa, fix=False, unsafe_fixes=False,
           diff=False, quiet=False) -> None:
    from parallint.model.diagnostics import Severity
    from parallint.engine.registry import RegistryError, UnknownSelector, get_registry, lazy_registry
    from parallint.report.formats import FORMATS, render
    from parallint.engine.index import check_files

    if output_format not in FORMATS:
        raise fail(f"unknown format '{output_format}' (expected one of: {', '.join(FORMATS)})")
    if unsafe_fixes and not (fix or diff):
        raise fail("--unsafe-fixes needs --fix or --diff")
    if (fix or diff) and (add_noqa or write_baseline):
        raise fail("--fix and --diff cannot be combined with --add-noqa or --write-baseline")
    if (fix or diff) and "-" in (paths or ()):
        raise fail("--fix and --diff change files: name them instead of '-' (standard input)")
    _check_gpu(gpu)
    try:
        # files as a hook names them: import the rule modules their jobs need (a folder: all of
        # them, before any worker process starts)
        reg = lazy_registry() if _files_only(paths) else get_registry()
    except RegistryError as exc:
        raise fail(str(exc))
    max_size = None
    if max_file_size is not None:
        from parallint.util.limits import parse_size

        try:
            max_size = parse_size(max_file_size)
        except ValueError as exc:
            raise fail(f"--max-file-size: {exc}")

    def selection(config):
        settings = config.settings
        sel = _split(select) if select else settings.get("select")
        ext = list(settings.get("extend-select", [])) + (_split(extend_select) or [])
        ign = list(settings.get("ignore", [])) + (_split(ignore) or [])
        try:
            for group in (sel or [], ext, ign):
                reg.validate_selectors(group)
            for sels in settings.get("per-file-ignores", {}).values():
                reg.validate_selectors(sels)
            level = Severity.parse(fail_level) if fail_level else config.fail_level
        except UnknownSelector as exc:
            raise fail(f"unknown rule selector '{exc.args[0]}' (see 'parallint rules')")
        except ValueError as exc:
            raise fail(str(exc))
        if gpu:
            settings["gpu"] = gpu
        if include_tests:
            settings["include-tests"] = True
        if max_size is not None:
            settings["max-file-size"] = max_size
        return reg.enabled(sel, ext, ign), level

    stdin = None
    paths = list(paths or [])
    if paths == ["-"]:
        if not stdin_filename:
            raise fail("reading standard input ('-') needs --stdin-filename NAME")
        import os as _os

        if stdin_filename.endswith(("/", _os.sep)) or _os.path.isdir(stdin_filename):
            raise fail(f"--stdin-filename {stdin_filename!r} is a folder; give the name of the file the "
                       "standard input stands for (for example train.py)")
        stdin = (stdin_filename, "")  # read below, once the buffer's settings (size cap) are known
        paths = []
    elif "-" in paths:
        raise fail("'-' (standard input) cannot be combined with other paths")
    elif not paths:
        paths = ["."]

    # settings per file: the nearest configuration up from each path (--config: that one for all)
    from parallint.discover.settings import ConfigError, configs_for

    try:
        groups = configs_for(paths, stdin[0] if stdin else None, config_path)
    except ConfigError as exc:
        raise fail(str(exc))
    from parallint.engine.runner import Result

    result, failing = Result([], 0), False
    rules: list = []
    levels: dict = {}
    for config, group_paths, with_stdin in groups:
        group_rules, level = selection(config)
        run_codes: Optional[set] = None
        part_levels: dict = {}
        if not config_path:  # configurations nested in walked folders: run what any of them selects
            from parallint.engine.index import nested_configs

            try:
                nested = nested_configs(group_paths, config)
            except ConfigError as exc:
                raise fail(str(exc))
            if nested:
                run_codes = {r.code for r in group_rules}
                group_rules = list(group_rules) + [r for c in nested for r in selection(c)[0] if r not in group_rules]
        if with_stdin and stdin is not None:
            stdin = (stdin[0], _read_stdin(config.settings))
        progress = None if quiet else Progress.on_terminal()
        try:
            part = check_files(group_paths, config, group_rules, stdin=stdin if with_stdin else None,
                               all_job_findings=all_job_findings, use_cache=not no_cache,
                               related_findings=related_findings, progress=progress)
        except Exception as exc:  # pragma: no cover - last line of defence
            import os

            if os.environ.get("PARALLINT_DEBUG"):
                raise
            raise fail(f"internal error: {type(exc).__name__}: {exc}")
        finally:
            if progress is not None:
                progress.clear()
        if not config_path:  # nested configurations inside walked folders
            from parallint.engine.index import nested_settings_filter

            try:
                part.diagnostics = nested_settings_filter(part.diagnostics, config, selection,
                                                          levels=part_levels, run_codes=run_codes)
            except ConfigError as exc:
                raise fail(str(exc))
        levels.update((id(d), part_levels.get(id(d), level)) for d in part.diagnostics)
        failing = failing or any(d.severity >= levels[id(d)] for d in part.diagnostics)
        result.diagnostics.extend(part.diagnostics)
        result.files_checked += part.files_checked
        result.errors.extend(part.errors)
        rules.extend(r for r in group_rules if r not in rules)
    if len(groups) > 1:
        from parallint.model.diagnostics import Diagnostic

        result.diagnostics.sort(key=Diagnostic.sort_key)
    if write_baseline or baseline:
        from pathlib import Path as _Path

        from parallint.report.baseline import BaselineError, filter_new, write

        if write_baseline:
            n = write(write_baseline, result.diagnostics, _Path.cwd())
            echo(f"Wrote {n} finding{'s' if n != 1 else ''} to {write_baseline}.")
            raise Exit(EXIT_ERROR if result.errors else EXIT_OK)
        try:
            result.diagnostics, _ = filter_new(result.diagnostics, baseline, _Path.cwd())
        except BaselineError as exc:
            raise fail(str(exc))
        failing = any(d.severity >= lv for d, lv in ((d, levels.get(id(d), Severity.WARNING)) for d in result.diagnostics))
    if fix or diff:
        _fix(result, fix, unsafe_fixes, diff)
        if diff or result.errors:
            raise Exit(EXIT_ERROR if result.errors else EXIT_OK)
        # what is left: the same check again over the files as they now are
        _check(paths, output_format, output_file, statistics, show_docs_link, config_path,
               select, extend_select, ignore, fail_level, exit_zero, stdin_filename, gpu, include_tests,
               max_file_size, all_job_findings, related_findings, no_cache, baseline, write_baseline, add_noqa)
    if add_noqa:
        from parallint.report.noqa import add_noqa as write_noqa

        added, skipped = write_noqa(result.diagnostics, __import__("pathlib").Path.cwd())
        echo(f"Added {added} noqa code{'s' if added != 1 else ''}.")
        for where in skipped:
            echo(f"parallint: {where}: no comment can go on this line (JSON, a string or a continuation); not suppressed", err=True)
        raise Exit(EXIT_ERROR if result.errors else EXIT_OK)
    from parallint.report.formats import Options, use_color

    tty = output_file is None and use_color(sys.stdout)
    opts = Options(color=tty, code_frame=output_file is None and _isatty(sys.stdout),
                   show_docs_link=show_docs_link, statistics=statistics)
    report = render(output_format, result.diagnostics, result.files_checked, rules, opts)
    if result.errors and not result.diagnostics and output_format == "text" and not output_file:
        report = ""  # "All checks passed" above an error (a missing path) would say the opposite
    if quiet and output_format == "text":  # the findings only, without the summary line
        report = "".join(ln for ln in report.splitlines(keepends=True)
                         if not ln.startswith(("All checks passed", "Found ")))
    if output_file:
        from parallint.util.safeio import atomic_write

        try:
            import os as _os

            _os.makedirs(_os.path.dirname(_os.path.abspath(output_file)), exist_ok=True)
            atomic_write(output_file, report)
        except OSError as exc:
            raise fail(f"{output_file}: cannot write the report: {exc.strerror or exc}")
    else:
        sys.stdout.write(report)
    for err in result.errors:
        echo(f"parallint: error: {err}", err=True)
    if result.errors:
        raise Exit(EXIT_ERROR)
    if not exit_zero and failing:
        raise Exit(EXIT_FINDINGS)
    raise Exit(EXIT_OK)


def _fix(result, fix: bool, unsafe: bool, diff: bool) -> None:
    """``--fix`` (write) or ``--diff`` (print): the fixes of the findings, with a count on stderr.
    ``--diff`` exits 1 when there is something to fix (as a check with findings does)."""
    from pathlib import Path

    from parallint.report import fixer

    plans = fixer.plan(result.diagnostics, Path.cwd(), unsafe)
    made = sum(len(p.fixed) for p in plans if p.after != p.before)
    skipped = [(p.path, d, why) for p in plans for d, why in p.skipped]
    hidden = sum(1 for d in result.diagnostics if d.fix is not None and not d.fix.safe) if not unsafe else 0
    if diff:
        sys.stdout.write("".join(p.diff() for p in plans if p.fixed and p.after != p.before))
    else:
        try:
            fixer.write(plans)
        except OSError as exc:
            raise fail(f"cannot write a fixed file: {exc}")
    for path, d, why in skipped:
        echo(f"parallint: {path}:{d.span.line}: {d.code} not fixed: {why}", err=True)
    verb = "Would fix" if diff else "Fixed"
    tail = f" ({hidden} more with --unsafe-fixes)" if hidden else ""
    echo(f"{verb} {made} finding{'s' if made != 1 else ''}{tail}.", err=True)
    if diff and made:
        raise Exit(EXIT_FINDINGS)


class Progress:
    """The progress line on a terminal's standard error: files read of files to read, and the
    time so far; shown after half a second (a quick run prints nothing), redrawn at most ten times
    a second, and erased when reading ends."""

    DELAY_S, EVERY_S = 0.5, 0.1

    def __init__(self, stream) -> None:
        import time

        self.stream = stream
        self.clock = time.monotonic
        self.start = self.last = self.clock()
        self.shown = False

    @classmethod
    def on_terminal(cls) -> "Optional[Progress]":
        """A progress line when standard error is a terminal, else None (piped, CI logs)."""
        return cls(sys.stderr) if _isatty(sys.stderr) else None

    def __call__(self, done: int, total: int) -> None:
        now = self.clock()
        if now - self.start < self.DELAY_S or now - self.last < self.EVERY_S:
            return
        self.last = now
        self.shown = True
        self.stream.write(f"\rparallint: {done}/{total} files read, {now - self.start:.1f} s\x1b[K")
        self.stream.flush()

    def clear(self) -> None:
        if self.shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self.shown = False


#: ``check``'s options, as cli_typer declares them: flag -> parameter (tests/test_startup.py)
CHECK_FLAGS = {"--statistics": "statistics", "--show-docs-link": "show_docs_link", "--exit-zero": "exit_zero",
               "--include-tests": "include_tests", "--all-job-findings": "all_job_findings",
               "--related-findings": "related_findings", "--no-cache": "no_cache",
               "--add-noqa": "add_noqa", "--fix": "fix", "--unsafe-fixes": "unsafe_fixes", "--diff": "diff",
               "--quiet": "quiet", "-q": "quiet"}
CHECK_VALUES = {"--format": "output_format", "--output-file": "output_file", "-o": "output_file",
                "--config": "config_path", "--fail-level": "fail_level", "--stdin-filename": "stdin_filename",
                "--gpu": "gpu", "--max-file-size": "max_file_size", "--baseline": "baseline",
                "--write-baseline": "write_baseline"}
CHECK_LISTS = {"--select": "select", "--extend-select": "extend_select", "--ignore": "ignore"}


def parse_check(args: List[str]) -> Optional[dict]:
    """``check``'s arguments as run_check's keywords, or None for anything but the plain case
    (typer then parses, helps or reports the usage error exactly as it always has)."""
    kw: dict[str, Any] = {}
    paths: List[str] = []
    i, n = 0, len(args)
    while i < n:
        a = args[i]
        i += 1
        if a == "--":
            paths.extend(args[i:])
            break
        if a == "-" or not a.startswith("-"):
            paths.append(a)
            continue
        name, eq, value = a.partition("=") if a.startswith("--") else (a, "", "")
        if name in CHECK_FLAGS and not eq:
            kw[CHECK_FLAGS[name]] = True
            continue
        if name in CHECK_VALUES or name in CHECK_LISTS:
            if not eq:
                if i >= n or args[i].startswith("-"):
                    return None  # a missing value, or one click may read differently
                value = args[i]
                i += 1
            if name in CHECK_VALUES:
                kw[CHECK_VALUES[name]] = value
            else:
                kw.setdefault(CHECK_LISTS[name], []).append(value)
            continue
        return None  # --help, -h, an unknown or clustered option
    kw["paths"] = paths or None
    return kw


def tolerant_streams() -> None:
    """Output never fails to encode: a character the terminal's encoding lacks (or a lone
    surrogate from a file name in a foreign encoding) is escaped, not a UnicodeEncodeError."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(errors="backslashreplace")  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):  # pragma: no cover - a replaced stream
            pass
