"""The command line: ``parallint check|preflight|rules|rule|show|estimate|plan``, as a typer app.

It defines the interface (commands, options, help). The entry, ``parallint.cli.main.main``, runs the
plain ``check`` and ``--version`` without importing this module (see :mod:`parallint.cli.main` and
:mod:`parallint.cli.check`); the
engine, readers, LibCST and jsonschema load when a command needs them.
"""

from __future__ import annotations

import sys
from typing import List, Optional

import typer

from parallint.cli.check import EXIT_ERROR, run_check, tolerant_streams

app = typer.Typer(
    add_completion=False,
    suggest_commands=False,  # click already says "Did you mean"; typer's own would say it twice
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    help="Static linter and pre-launch checker for distributed PyTorch training.",
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _fail(message: str) -> "typer.Exit":
    for line in message.splitlines() or [""]:  # several problems: one error line each
        typer.echo(f"parallint: error: {line}", err=True)
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


def _positive(option: str, value: Optional[int], low: int = 1, high: int = 1 << 20) -> None:
    """A one-line error (exit 2) naming ``option`` unless ``low <= value <= high``."""
    if value is not None and not low <= value <= high:
        raise _fail(f"{option} must be an integer from {low} to {high} (got {value})")


def _load_config(config_path: Optional[str]):
    from parallint.discover.settings import ConfigError, load_config

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
    fix: bool = typer.Option(False, "--fix", help="Make the safe fixes the findings propose, then report what is left."),
    unsafe_fixes: bool = typer.Option(False, "--unsafe-fixes", help="With --fix or --diff: also the fixes that may change what the job does."),
    diff: bool = typer.Option(False, "--diff", help="Print the fixes as a unified diff and change nothing (exit 1 when there is one)."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Only the findings: no progress line on a terminal, no summary line."),
) -> None:
    """Check files and folders for distributed-training mistakes.

    A file given by name is checked in every job that includes it (the launch files and configs
    naming it are found below the repository root), and the findings located in it are reported,
    the same as a whole-repository run reports there."""
    raise typer.Exit(run_check(
        paths=paths, output_format=output_format, output_file=output_file, statistics=statistics,
        show_docs_link=show_docs_link, config_path=config_path, select=select, extend_select=extend_select,
        ignore=ignore, fail_level=fail_level, exit_zero=exit_zero, stdin_filename=stdin_filename, gpu=gpu,
        include_tests=include_tests, max_file_size=max_file_size, all_job_findings=all_job_findings,
        related_findings=related_findings, no_cache=no_cache, baseline=baseline, write_baseline=write_baseline,
        add_noqa=add_noqa, fix=fix, unsafe_fixes=unsafe_fixes, diff=diff, quiet=quiet))


@app.command("rules")
def list_rules(
    output_format: str = typer.Option("text", "--format", help="text, json or markdown."),
    write_docs: Optional[str] = typer.Option(None, "--write-docs", help="Write one Markdown page per rule (CODE.md) and an index into this folder (docs/rules)."),
) -> None:
    """List every rule: code, name, severity and what it checks."""
    from parallint.engine.registry import RegistryError, get_registry

    try:
        reg = get_registry()
    except RegistryError as exc:
        raise _fail(str(exc))
    if write_docs:
        from parallint.report.ruledocs import write_rule_docs

        written = write_rule_docs(reg.rules, write_docs)
        typer.echo(f"Wrote {written} files to {write_docs}.")
        return
    if output_format == "json":
        import json

        typer.echo(json.dumps([
            {"code": r.code, "name": r.name, "severity": str(r.severity), "summary": r.summary,
             "fix": getattr(r, "fix_safety", "") or None}
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
    from parallint.engine.registry import RegistryError, get_registry

    try:
        reg = get_registry()
    except RegistryError as exc:
        raise _fail(str(exc))
    rule = reg.lookup(code)
    if rule is None:
        raise _fail(f"unknown rule '{code}' (see 'parallint rules')")
    from parallint.engine.examples import finding_lines

    typer.echo(rule.documentation(finding_lines(rule)), nl=False)


@app.command()
def show(
    paths: List[str] = typer.Argument(..., help="Files or folders."),
    config_path: Optional[str] = typer.Option(None, "--config", help="Configuration file."),
) -> None:
    """Print each job parallint assembled (its facts and where each came from) as YAML."""
    from parallint.engine.runner import build_jobs
    from parallint.report.show import render_jobs

    config = _load_config(config_path)
    jobs = build_jobs(paths, config)
    sys.stdout.write(render_jobs(jobs, config.settings))


def _check_gpu(gpu: Optional[str]) -> None:
    if gpu:
        from parallint.cli.estimate_ux import gpu_error

        msg = gpu_error(gpu)
        if msg:
            raise _fail(msg)


def _presets(preset: Optional[str], paths: Optional[List[str]], settings: dict) -> list:
    from parallint.cli.estimate_ux import preset_error, preset_spec

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
    from parallint.cli.estimate_ux import presets_table

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
    recompute: Optional[str] = typer.Option(None, "--recompute", help="none, selective (Megatron), full or op (PyTorch op-level selective checkpointing)."),
    recompute_every: Optional[int] = typer.Option(None, "--recompute-every", help="With full recompute: checkpoint every n-th layer."),
    peft: Optional[str] = typer.Option(None, "--peft", help="none, lora or qlora."),
    lora_rank: Optional[int] = typer.Option(None, "--lora-rank", help="LoRA rank r."),
    lora_targets: Optional[str] = typer.Option(None, "--lora-targets", help="Adapted layers: q,k,v,o,gate,up,down or all."),
    base_quant: Optional[str] = typer.Option(None, "--base-quant", help="Frozen base weights: none, nf4, nf4_dq or int8."),
    loss: Optional[str] = typer.Option(None, "--loss", help="Cross-entropy: standard, chunked, fused or compiled."),
    precision: Optional[str] = typer.Option(None, "--precision", help="bf16, fp16 or fp32."),
    master_weights: Optional[bool] = typer.Option(None, "--master-weights/--pure-bf16", help="fp32 master weights (mixed precision) or pure 16-bit states."),
    compile_: Optional[bool] = typer.Option(None, "--compile/--no-compile", help="torch.compile fuses pointwise ops."),
    autocast: Optional[bool] = typer.Option(None, "--autocast/--no-autocast", help="torch.autocast mixed precision over fp32 weights."),
    fp8: Optional[bool] = typer.Option(None, "--fp8/--no-fp8", help="float8 linears with float8 all-gather."),
    offload_optimizer: Optional[bool] = typer.Option(None, "--offload-optimizer/--no-offload-optimizer", help="Optimizer states on the CPU."),
    offload_params: Optional[bool] = typer.Option(None, "--offload-params/--no-offload-params", help="Parameters on the CPU."),
    output_format: str = typer.Option("text", "--format", help="text (with a bar of the memory against the card), json or svg (the bars as a picture)."),
    config_path: Optional[str] = typer.Option(None, "--config", help="Configuration file."),
) -> None:
    """Estimate per-GPU training memory for every job."""
    from parallint.cli.estimate import estimate_main

    for option, value in (("--tp", tp), ("--pp", pp), ("--dp", dp), ("--micro-batch", micro_batch)):
        _positive(option, value)
    _positive("--zero-stage", zero_stage, 0, 3)
    if recompute is not None and recompute not in ("none", "selective", "full", "op"):
        raise _fail(f"--recompute must be none, selective, full or op (got {recompute!r})")
    _positive("--recompute-every", recompute_every)
    _positive("--lora-rank", lora_rank)
    for option, choice, allowed in (("--peft", peft, ("none", "lora", "qlora")),
                                   ("--base-quant", base_quant, ("none", "nf4", "nf4_dq", "int8")),
                                   ("--loss", loss, ("standard", "chunked", "fused", "compiled")),
                                   ("--precision", precision, ("bf16", "fp16", "fp32"))):
        if choice is not None and choice not in allowed:
            raise _fail(f"{option} must be {', '.join(allowed[:-1])} or {allowed[-1]} (got {choice!r})")
    if output_format not in ("text", "json", "svg"):
        raise _fail(f"unknown format '{output_format}' (expected text, json or svg)")
    config = _load_config(config_path)
    _check_gpu(gpu)
    extra = _presets(preset, paths, config.settings)
    overrides = {k: v for k, v in dict(gpu=gpu, tp=tp, pp=pp, dp=dp, zero_stage=zero_stage,
                                         micro_batch=micro_batch, recompute=recompute,
                                         recompute_every=recompute_every, peft=peft, lora_rank=lora_rank,
                                         lora_targets=lora_targets, base_quant=base_quant, loss=loss,
                                         precision=precision, master_weights=master_weights,
                                         compile=compile_, autocast=autocast, fp8=fp8, offload_optimizer=offload_optimizer,
                                         offload_params=offload_params).items() if v is not None}
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
    from parallint.cli.estimate import MAX_GPUS, plan_main

    _positive("--gpus", gpus, 1, MAX_GPUS)
    if output_format not in ("text", "json"):
        raise _fail(f"unknown format '{output_format}' (expected text or json)")
    config = _load_config(config_path)
    _check_gpu(gpu)
    extra = _presets(preset, paths, config.settings)
    raise typer.Exit(plan_main(list(paths or []), gpus, gpu, output_format, config.settings, extra=extra))


@app.command(context_settings={"allow_interspersed_args": False})
def preflight(
    command: List[str] = typer.Argument(None, help="The launch command, after '--' (e.g. -- torchrun --nnodes 2 ... train.py)."),
    exec_: bool = typer.Option(False, "--exec", help="When clean, replace parallint with the command (os.execvp): a drop-in prefix."),
    show: bool = typer.Option(False, "--show", help="Print the facts taken from the environment and the host, with their origins, and the job; check nothing, run nothing."),
    root: Optional[str] = typer.Option(None, "--root", help="The repository the command runs in (default: the working directory)."),
    config_path: Optional[str] = typer.Option(None, "--config", help="Configuration file (pyproject.toml or parallint.toml)."),
    output_format: str = typer.Option("text", "--format", help="text or json."),
    fail_level: Optional[str] = typer.Option(None, "--fail-level", help="Lowest severity that fails the check: info, warning (default) or error."),
    select: Optional[List[str]] = typer.Option(None, "--select", help="Rules to run (codes, prefixes, names)."),
    ignore: Optional[List[str]] = typer.Option(None, "--ignore", help="Rules to skip."),
) -> None:
    """Check a launch command on the node, just before it runs.

    The real environment (SLURM_*, MASTER_*, WORLD_SIZE, CUDA_VISIBLE_DEVICES, NCCL_* ...) and the
    host (GPUs and their memory from nvidia-smi or /proc/driver/nvidia, driver, packages,
    InfiniBand) fill in what a static check leaves unknown; every rule runs on the job. Exit 0
    clean, 1 findings, 2 error."""
    from parallint.cli.preflight import run_preflight

    if not command:
        raise _fail("give the launch command after '--': parallint preflight [--exec] -- torchrun ...")
    raise typer.Exit(run_preflight(command=command, exec_=exec_, show=show, root=root, config_path=config_path,
                                   output_format=output_format, fail_level=fail_level, select=select,
                                   ignore=ignore))


@app.command()
def server(
    stdio: bool = typer.Option(False, "--stdio", help="Talk over standard input/output (the default and only transport; accepted because most clients pass it)."),
) -> None:
    """Run the Language Server on standard input/output."""
    from parallint.cli.server import main as serve

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

    from parallint.engine.cache import clean
    from parallint.engine.index import cache_dir, find_root

    folder = cache_dir(find_root(Path(os.path.abspath(path))))
    removed = clean(folder)
    typer.echo(f"removed {folder}" if removed else f"no cache at {folder}")


def main() -> None:
    import os

    tolerant_streams()
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
