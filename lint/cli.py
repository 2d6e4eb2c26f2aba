"""The command line: ``parallint check|rules|rule|show|estimate|plan``.

Start-up matters (pre-commit runs this on every commit): only typer is imported up front; the
engine, readers, LibCST and jsonschema load when a command needs them.
"""

from __future__ import annotations

import sys
from typing import List, Optional

import typer

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    help="Static linter and pre-launch checker for distributed PyTorch training.",
    context_settings={"help_option_names": ["-h", "--help"]},
)

#: the exit-status contract (docs/failure-contract.md): 0 clean, 1 findings, 2 usage or internal
#: error. A crash is never 1: main() turns any escaped exception into a one-line error and 2.
EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def _fail(message: str) -> "typer.Exit":
    typer.echo(f"parallint: error: {message}", err=True)
    return typer.Exit(EXIT_ERROR)


def _version(value: bool) -> None:
    if value:
        from parallint import __version__

        typer.echo(f"parallint {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version and exit."),
) -> None:
    """Static linter and pre-launch checker for distributed PyTorch training."""


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
    from parallint.limits import max_file_size

    cap = max_file_size(settings)
    stream = getattr(sys.stdin, "buffer", None)
    if stream is None:  # pragma: no cover - a replaced sys.stdin
        return sys.stdin.read(cap + 1)
    return stream.read(cap + 1).decode("utf-8", errors="replace")


def _positive(option: str, value: Optional[int], low: int = 1, high: int = 1 << 20) -> None:
    """A one-line error (exit 2) naming ``option`` unless ``low <= value <= high``."""
    if value is not None and not low <= value <= high:
        raise _fail(f"{option} must be an integer from {low} to {high} (got {value})")


def _load_config(config_path: Optional[str]):
    from parallint.config import ConfigError, load_config

    try:
        return load_config(config_path)
    except ConfigError as exc:
        raise _fail(str(exc))


@app.command()
def check(
    paths: List[str] = typer.Argument(None, help="Files or folders (default: .); '-' reads standard input."),
    output_format: str = typer.Option("text", "--format", help="text, json, sarif, github, junit, gitlab or checkstyle."),
    output_file: Optional[str] = typer.Option(None, "--output-file", "-o", help="Write the report to this file instead of standard output."),
    statistics: bool = typer.Option(False, "--statistics", help="Text format: add how many findings each rule made."),
    show_docs_link: bool = typer.Option(False, "--show-docs-link", help="Text format: add each rule's documentation link."),
    config_path: Optional[str] = typer.Option(None, "--config", help="Configuration file (pyproject.toml or parallint.toml)."),
    select: Optional[List[str]] = typer.Option(None, "--select", help="Rules to run (codes, prefixes, names); replaces the configured selection."),
    extend_select: Optional[List[str]] = typer.Option(None, "--extend-select", help="Rules to add to the selection."),
    ignore: Optional[List[str]] = typer.Option(None, "--ignore", help="Rules to skip (added to the configured ones)."),
    fail_level: Optional[str] = typer.Option(None, "--fail-level", help="Lowest severity that makes the exit code 1: info, warning (default) or error."),
    exit_zero: bool = typer.Option(False, "--exit-zero", help="Exit 0 even when there are findings."),
    stdin_filename: Optional[str] = typer.Option(None, "--stdin-filename", help="The file name standing for standard input with '-'."),
    gpu: Optional[str] = typer.Option(None, "--gpu", help="GPU type when the files do not say (e.g. A100-80GB)."),
    include_tests: bool = typer.Option(False, "--include-tests", help="Also check test files and folders found by walking a folder (tests/, test_*.py, conftest.py ...)."),
    max_file_size: Optional[str] = typer.Option(None, "--max-file-size", help="Files larger than this are not analysed (SYN002), e.g. 4MB; default 2MB."),
    all_job_findings: bool = typer.Option(False, "--all-job-findings", help="For files given by name: report every finding of the jobs that include them, not only those located in them."),
    related_findings: bool = typer.Option(False, "--related-findings", help="For files given by name: also report findings elsewhere in their jobs that cite them (a launch edit that breaks a config's batch identity)."),
    no_cache: bool = typer.Option(False, "--no-cache", help="Neither read nor write the cache (.parallint_cache/: per-file results and the link index)."),
    baseline: Optional[str] = typer.Option(None, "--baseline", help="Report only findings not recorded in this baseline file."),
    write_baseline: Optional[str] = typer.Option(None, "--write-baseline", help="Record every current finding in this baseline file and exit 0."),
    add_noqa: bool = typer.Option(False, "--add-noqa", help="Write '# noqa: CODE' on the line of each finding (not in JSON or inside strings) and exit 0."),
) -> None:
    """Check files and folders for distributed-training mistakes.

    A file given by name is checked in every job that includes it (the launch files and configs
    naming it are found below the repository root), and the findings located in it are reported,
    the same as a whole-repository run reports there."""
    from parallint.diagnostics import Severity
    from parallint.registry import RegistryError, UnknownSelector, get_registry
    from parallint.report import FORMATS, render
    from parallint.index import check_files

    if output_format not in FORMATS:
        raise _fail(f"unknown format '{output_format}' (expected one of: {', '.join(FORMATS)})")
    _check_gpu(gpu)
    try:
        reg = get_registry()
    except RegistryError as exc:
        raise _fail(str(exc))
    max_size = None
    if max_file_size is not None:
        from parallint.limits import parse_size

        try:
            max_size = parse_size(max_file_size)
        except ValueError as exc:
            raise _fail(f"--max-file-size: {exc}")

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
            raise _fail(f"unknown rule selector '{exc.args[0]}' (see 'parallint rules')")
        except ValueError as exc:
            raise _fail(str(exc))
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
            raise _fail("reading standard input ('-') needs --stdin-filename NAME")
        stdin = (stdin_filename, "")  # read below, once the buffer's settings (size cap) are known
        paths = []
    elif "-" in paths:
        raise _fail("'-' (standard input) cannot be combined with other paths")
    elif not paths:
        paths = ["."]

    # settings per file: the nearest configuration up from each path (--config: that one for all)
    from parallint.config import ConfigError, configs_for

    try:
        groups = configs_for(paths, stdin[0] if stdin else None, config_path)
    except ConfigError as exc:
        raise _fail(str(exc))
    from parallint.runner import Result

    result, rules, failing, levels = Result([], 0), [], False, {}
    for config, group_paths, with_stdin in groups:
        group_rules, level = selection(config)
        run_codes, part_levels = None, {}
        if not config_path:  # configurations nested in walked folders: run what any of them selects
            from parallint.index import nested_configs

            try:
                nested = nested_configs(group_paths, config)
            except ConfigError as exc:
                raise _fail(str(exc))
            if nested:
                run_codes = {r.code for r in group_rules}
                group_rules = list(group_rules) + [r for c in nested for r in selection(c)[0] if r not in group_rules]
        if with_stdin and stdin is not None:
            stdin = (stdin[0], _read_stdin(config.settings))
        try:
            part = check_files(group_paths, config, group_rules, stdin=stdin if with_stdin else None,
                               all_job_findings=all_job_findings, use_cache=not no_cache,
                               related_findings=related_findings)
        except Exception as exc:  # pragma: no cover - last line of defence
            import os

            if os.environ.get("PARALLINT_DEBUG"):
                raise
            raise _fail(f"internal error: {type(exc).__name__}: {exc}")
        if not config_path:  # nested configurations inside walked folders
            from parallint.index import nested_settings_filter

            try:
                part.diagnostics = nested_settings_filter(part.diagnostics, config, selection,
                                                          levels=part_levels, run_codes=run_codes)
            except ConfigError as exc:
                raise _fail(str(exc))
        levels.update((id(d), part_levels.get(id(d), level)) for d in part.diagnostics)
        failing = failing or any(d.severity >= levels[id(d)] for d in part.diagnostics)
        result.diagnostics.extend(part.diagnostics)
        result.files_checked += part.files_checked
        result.errors.extend(part.errors)
        rules.extend(r for r in group_rules if r not in rules)
    if len(groups) > 1:
        from parallint.diagnostics import Diagnostic

        result.diagnostics.sort(key=Diagnostic.sort_key)
    if write_baseline or baseline:
        from pathlib import Path as _Path

        from parallint.baseline import BaselineError, filter_new, write

        if write_baseline:
            n = write(write_baseline, result.diagnostics, _Path.cwd())
            typer.echo(f"Wrote {n} finding{'s' if n != 1 else ''} to {write_baseline}.")
            raise typer.Exit(EXIT_ERROR if result.errors else EXIT_OK)
        try:
            result.diagnostics, _ = filter_new(result.diagnostics, baseline, _Path.cwd())
        except BaselineError as exc:
            raise _fail(str(exc))
        failing = any(d.severity >= lv for d, lv in ((d, levels.get(id(d), Severity.WARNING)) for d in result.diagnostics))
    if add_noqa:
        from parallint.suppress import add_noqa as write_noqa

        added, skipped = write_noqa(result.diagnostics, __import__("pathlib").Path.cwd())
        typer.echo(f"Added {added} noqa code{'s' if added != 1 else ''}.")
        for where in skipped:
            typer.echo(f"parallint: {where}: no comment can go on this line (JSON, a string or a continuation); not suppressed", err=True)
        raise typer.Exit(EXIT_ERROR if result.errors else EXIT_OK)
    from parallint.report import Options, use_color

    tty = output_file is None and use_color(sys.stdout)
    opts = Options(color=tty, code_frame=output_file is None and _isatty(sys.stdout),
                   show_docs_link=show_docs_link, statistics=statistics)
    report = render(output_format, result.diagnostics, result.files_checked, rules, opts)
    if output_file:
        from parallint.suppress import _atomic_write

        try:
            import os as _os

            _os.makedirs(_os.path.dirname(_os.path.abspath(output_file)), exist_ok=True)
            _atomic_write(output_file, report)
        except OSError as exc:
            raise _fail(f"{output_file}: cannot write the report: {exc.strerror or exc}")
    else:
        sys.stdout.write(report)
    for err in result.errors:
        typer.echo(f"parallint: error: {err}", err=True)
    if result.errors:
        raise typer.Exit(EXIT_ERROR)
    if not exit_zero and failing:
        raise typer.Exit(EXIT_FINDINGS)
    raise typer.Exit(EXIT_OK)


def _isatty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


@app.command("rules")
def list_rules(
    output_format: str = typer.Option("text", "--format", help="text, json or markdown."),
    write_docs: Optional[str] = typer.Option(None, "--write-docs", help="Write one Markdown page per rule (CODE.md) and an index into this folder (docs/rules)."),
) -> None:
    """List every rule: code, name, severity and what it checks."""
    from parallint.registry import RegistryError, get_registry

    try:
        reg = get_registry()
    except RegistryError as exc:
        raise _fail(str(exc))
    if write_docs:
        from parallint.ruledocs import write_rule_docs

        written = write_rule_docs(reg.rules, write_docs)
        typer.echo(f"Wrote {written} files to {write_docs}.")
        return
    if output_format == "json":
        import json

        typer.echo(json.dumps([
            {"code": r.code, "name": r.name, "severity": str(r.severity), "summary": r.summary}
            for r in reg.rules
        ], indent=2))
        return
    if output_format == "markdown":
        typer.echo(rules_markdown(reg.rules), nl=False)
        return
    if output_format != "text":
        raise _fail(f"unknown format '{output_format}' (expected text, json or markdown)")
    wc = max((len(r.name) for r in reg.rules), default=4)
    for r in reg.rules:
        typer.echo(f"{r.code}  {r.name:<{wc}}  {str(r.severity):<7}  {r.summary}")


def rules_markdown(rules) -> str:
    """The README's rule table (tests keep README.md in step with it)."""
    lines = ["| code | name | severity | what it checks |", "|---|---|---|---|"]
    for r in rules:
        lines.append(f"| {r.code} | {r.name} | {r.severity} | {r.summary.replace('|', '/')} |")
    return "\n".join(lines) + "\n"


@app.command("rule")
def show_rule(code: str = typer.Argument(..., help="A rule code or name, e.g. DDP001 or find-unused-parameters.")) -> None:
    """Print a rule's documentation."""
    from parallint.registry import RegistryError, get_registry

    try:
        reg = get_registry()
    except RegistryError as exc:
        raise _fail(str(exc))
    rule = reg.lookup(code)
    if rule is None:
        raise _fail(f"unknown rule '{code}' (see 'parallint rules')")
    from parallint.examples import finding_lines

    typer.echo(rule.documentation(finding_lines(rule)), nl=False)


@app.command()
def show(
    paths: List[str] = typer.Argument(..., help="Files or folders."),
    config_path: Optional[str] = typer.Option(None, "--config", help="Configuration file."),
) -> None:
    """Print each job parallint assembled (its facts and where each came from) as YAML."""
    from parallint.runner import build_jobs
    from parallint.show import render_jobs

    config = _load_config(config_path)
    jobs = build_jobs(paths, config)
    sys.stdout.write(render_jobs(jobs, config.settings))


def _check_gpu(gpu: Optional[str]) -> None:
    if gpu:
        from parallint.estimate_ux import gpu_error

        msg = gpu_error(gpu)
        if msg:
            raise _fail(msg)


def _presets(preset: Optional[str], paths: Optional[List[str]], settings: dict) -> list:
    from parallint.estimate_ux import preset_error, preset_spec

    if preset:
        msg = preset_error(preset)
        if msg:
            raise _fail(msg)
        return [preset_spec(preset, settings)]
    if not paths:
        raise _fail("give a job-spec file (or any files parallint reads), or --preset NAME (see 'parallint presets')")
    return []


@app.command("presets")
def list_presets() -> None:
    """List the bundled model presets (for --preset and the job spec's model.preset)."""
    from parallint.estimate_ux import presets_table

    typer.echo(presets_table(), nl=False)


@app.command()
def estimate(
    paths: List[str] = typer.Argument(None, help="A job-spec file, or any files parallint reads."),
    preset: Optional[str] = typer.Option(None, "--preset", help="A bundled model preset instead of files (see 'parallint presets')."),
    gpu: Optional[str] = typer.Option(None, "--gpu", help="GPU type, e.g. H100-80GB."),
    tp: Optional[int] = typer.Option(None, "--tp", help="Tensor-parallel degree."),
    pp: Optional[int] = typer.Option(None, "--pp", help="Pipeline-parallel degree."),
    dp: Optional[int] = typer.Option(None, "--dp", help="Data-parallel degree."),
    zero_stage: Optional[int] = typer.Option(None, "--zero-stage", help="ZeRO stage (0-3; FSDP full shard = 3)."),
    micro_batch: Optional[int] = typer.Option(None, "--micro-batch", help="Micro-batch size per GPU."),
    recompute: Optional[str] = typer.Option(None, "--recompute", help="none, selective or full."),
    output_format: str = typer.Option("text", "--format", help="text or json."),
    config_path: Optional[str] = typer.Option(None, "--config", help="Configuration file."),
) -> None:
    """Estimate per-GPU training memory for every job."""
    from parallint.estimate_cmd import estimate_main

    for option, value in (("--tp", tp), ("--pp", pp), ("--dp", dp), ("--micro-batch", micro_batch)):
        _positive(option, value)
    _positive("--zero-stage", zero_stage, 0, 3)
    if recompute is not None and recompute not in ("none", "selective", "full"):
        raise _fail(f"--recompute must be none, selective or full (got {recompute!r})")
    if output_format not in ("text", "json"):
        raise _fail(f"unknown format '{output_format}' (expected text or json)")
    config = _load_config(config_path)
    _check_gpu(gpu)
    extra = _presets(preset, paths, config.settings)
    overrides = {k: v for k, v in dict(gpu=gpu, tp=tp, pp=pp, dp=dp, zero_stage=zero_stage,
                                         micro_batch=micro_batch, recompute=recompute).items() if v is not None}
    raise typer.Exit(estimate_main(list(paths or []), overrides, output_format, config.settings, extra=extra))


@app.command()
def plan(
    paths: List[str] = typer.Argument(None, help="A job-spec file, or any files parallint reads."),
    preset: Optional[str] = typer.Option(None, "--preset", help="A bundled model preset instead of files (see 'parallint presets')."),
    gpus: int = typer.Option(..., "--gpus", help="How many GPUs the job gets."),
    gpu: Optional[str] = typer.Option(None, "--gpu", help="GPU type, e.g. A100-80GB."),
    output_format: str = typer.Option("text", "--format", help="text or json."),
    config_path: Optional[str] = typer.Option(None, "--config", help="Configuration file."),
) -> None:
    """List the layouts that satisfy every layout rule and fit in memory, best first."""
    from parallint.estimate_cmd import MAX_GPUS, plan_main

    _positive("--gpus", gpus, 1, MAX_GPUS)
    if output_format not in ("text", "json"):
        raise _fail(f"unknown format '{output_format}' (expected text or json)")
    config = _load_config(config_path)
    _check_gpu(gpu)
    extra = _presets(preset, paths, config.settings)
    raise typer.Exit(plan_main(list(paths or []), gpus, gpu, output_format, config.settings, extra=extra))


@app.command()
def server() -> None:
    """Run the Language Server on standard input/output (needs the 'lsp' extra: pygls)."""
    try:
        import pygls  # noqa: F401
    except ImportError:
        raise _fail("the language server needs pygls: pip install 'parallint[lsp]'")
    from parallint.server import main as serve

    serve()


@app.command("cache")
def cache_command(
    action: str = typer.Argument(..., help="clean: remove the cache of the repository PATH is in."),
    path: str = typer.Argument(".", help="A path inside the repository (default: the working directory)."),
) -> None:
    """Manage the cache (.parallint_cache/, or $PARALLINT_CACHE_DIR): per-file results and the link index."""
    if action != "clean":
        raise _fail(f"unknown cache action '{action}' (expected: clean)")
    import os
    from pathlib import Path

    from parallint.cache import clean
    from parallint.index import cache_dir, find_root

    folder = cache_dir(find_root(Path(os.path.abspath(path))))
    removed = clean(folder)
    typer.echo(f"removed {folder}" if removed else f"no cache at {folder}")


def _tolerant_streams() -> None:
    """Output never fails to encode: a character the terminal's encoding lacks (or a lone
    surrogate from a file name in a foreign encoding) is escaped, not a UnicodeEncodeError."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(errors="backslashreplace")
        except (AttributeError, ValueError, OSError):  # pragma: no cover - a replaced stream
            pass


def main() -> None:
    import os

    _tolerant_streams()
    try:
        app()
    except KeyboardInterrupt:  # pragma: no cover
        sys.exit(130)
    except SystemExit:
        raise
    except Exception as exc:  # never a traceback, never exit 1
        if os.environ.get("PARALLINT_DEBUG"):
            raise
        typer.echo(f"parallint: error: internal error: {type(exc).__name__}: {exc} "
                   "(set PARALLINT_DEBUG=1 for a traceback)", err=True)
        sys.exit(EXIT_ERROR)


if __name__ == "__main__":  # pragma: no cover
    main()
