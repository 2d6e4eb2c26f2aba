"""``parallint preflight [--exec] -- COMMAND...``: the pre-launch check, on the node, before the launch.

The command line becomes a launch file held in memory (``parallint-preflight.sh`` at the
repository root, never written): the distributed environment variables in force
(:func:`parallint.discover.host.launch_environment`) as ``export`` lines, a comment with what the
host offers, then the command, quoted as the shell would take it (``sh -c SCRIPT``: the script
itself). Its scheduler context is the real one: the nodes (``SLURM_NNODES``), the GPUs per node
(``SLURM_GPUS_ON_NODE``, else the host's GPU count), the GPU model and its real memory, each with
origin ``environment`` or ``host``. The normal check then runs over the repository with that file
standing in, the way ``check --stdin-filename`` has a buffer stand for a file: the command links
the script and configs it names, and the whole rule set runs on the job.

Like ``check`` it is parsed here without typer (start-up: it runs in front of every launch); help
and usage errors go to the typer app. Exit 0 clean, 1 findings, 2 usage or internal error; with
``--exec`` and clean, the process becomes the command (``os.execvp``).
"""

from __future__ import annotations

import os
import sys

from parallint.cli.check import EXIT_ERROR, EXIT_FINDINGS, EXIT_OK, Exit, echo, fail

TYPE_CHECKING = False  # typing itself is not imported: preflight runs before every launch
if TYPE_CHECKING:  # pragma: no cover
    from typing import Any, List, Optional

    from parallint.discover.host import Host

#: the launch file that stands for the command, at the repository root (held in memory only)
LAUNCH_NAME = "parallint-preflight.sh"

PREFLIGHT_FLAGS = {"--exec": "exec_", "--show": "show"}
PREFLIGHT_VALUES = {"--root": "root", "--config": "config_path", "--format": "output_format",
                    "--fail-level": "fail_level"}
PREFLIGHT_LISTS = {"--select": "select", "--ignore": "ignore"}
SHELLS = ("sh", "bash", "dash", "zsh")


def parse_preflight(args: List[str]) -> Optional[dict]:
    """``preflight``'s arguments as :func:`run_preflight`'s keywords, or None when typer must
    parse them (help, an unknown option, no ``--``)."""
    kw: dict[str, Any] = {}
    i, n = 0, len(args)
    while i < n:
        a = args[i]
        i += 1
        if a == "--":
            kw["command"] = args[i:]
            return kw
        name, eq, value = a.partition("=") if a.startswith("--") else (a, "", "")
        if name in PREFLIGHT_FLAGS and not eq:
            kw[PREFLIGHT_FLAGS[name]] = True
            continue
        if name in PREFLIGHT_VALUES or name in PREFLIGHT_LISTS:
            if not eq:
                if i >= n or args[i].startswith("-"):
                    return None
                value = args[i]
                i += 1
            if name in PREFLIGHT_VALUES:
                kw[PREFLIGHT_VALUES[name]] = value
            else:
                kw.setdefault(PREFLIGHT_LISTS[name], []).append(value)
            continue
        return None
    return None  # no `--`: typer says what is missing


def _quote(word: str) -> str:
    import shlex

    return shlex.quote(word)


def command_text(command: List[str]) -> str:
    """The command as one shell line; ``sh -c SCRIPT ...``: the script (the shell it names would
    run it with the same environment)."""
    if len(command) >= 3 and os.path.basename(command[0]) in SHELLS and command[1].startswith("-") \
            and not command[1].startswith("--") and "c" in command[1]:
        return command[2] if command[2].endswith("\n") else command[2] + "\n"
    return " ".join(_quote(w) for w in command) + "\n"


def _host_lines(host: Host) -> List[str]:
    """The comment lines that say what the host offers (the findings' notes point at them)."""
    lines = []
    if host.gpus:
        names = sorted({g.name for g in host.gpus})
        mems = sorted({g.memory_bytes for g in host.gpus if g.memory_bytes})
        mem = f", {mems[0] >> 20} MiB each" if len(mems) == 1 else ""
        lines.append(f"# host: {len(host.gpus)} GPU(s), {' / '.join(names)}{mem} ({host.gpu_source})")
    elif host.gpus is not None:
        lines.append(f"# host: no GPU ({host.gpu_source})")
    if host.driver:
        lines.append(f"# host: driver {host.driver} ({host.driver_source})")
    return lines


#: the packages whose installed versions the launch file's comment lists, in this order
INSTALLED_ORDER = ("torch", "deepspeed", "transformers", "accelerate", "flash-attn", "nccl")
INSTALLED_PREFIX = "# host: installed "


def _installed_line(host: Host) -> Optional[str]:
    """The comment line that lists the installed versions (the version facts point at it)."""
    got = [f"{n} {host.packages[n][0]}" for n in INSTALLED_ORDER if n in host.packages]
    return INSTALLED_PREFIX + ", ".join(got) + " (site-packages)" if got else None


def launch_file(command: List[str], env: dict, host: Host) -> tuple[str, dict[str, int]]:
    """The launch file's text, and the line of each variable's ``export`` ('#host': the GPU line)."""
    lines = ["#!/bin/sh", "# parallint preflight: the launch command as it runs here, in its environment"]
    where: dict[str, int] = {}
    host_lines = _host_lines(host)
    if host_lines:
        where["#host"] = len(lines) + 1
    lines.extend(host_lines)
    installed = _installed_line(host)
    if installed is not None:
        lines.append(installed)
        where["#installed"] = len(lines)
    for name, value in env.items():
        lines.append(f"export {name}={_quote(value)}")
        where[name] = len(lines)
    return "\n".join(lines) + "\n" + command_text(command), where


def _int(text: Optional[str]) -> Optional[int]:
    """A positive count as Slurm writes it (``4``, ``4(x2)``: the first figure)."""
    if not text:
        return None
    head = text.split("(", 1)[0].split(",", 1)[0].strip()
    return int(head) if head.isdigit() and int(head) > 0 else None


def scheduler_facts(env: dict, host: Host, display: str, where: dict[str, int]):
    """The scheduler context the environment and the host give the command (a FactMap)."""
    from parallint.model.diagnostics import Span
    from parallint.model.facts import FactMap, Value
    from parallint.model.origin import How, Origin

    facts = FactMap()

    def at(key: str, length: int = 0) -> Optional[Span]:
        line = where.get(key)
        return Span(display, line, 1, line, 1 + length) if line else None

    for name in ("SLURM_NNODES", "SLURM_JOB_NUM_NODES"):
        n = _int(env.get(name))
        if n is not None:
            facts.add("parallel.nodes", Value(n, at(name), True, "", f"environment {name}",
                                              Origin(How.ENVIRONMENT, "scheduler")))
            break
    gpn = _int(env.get("SLURM_GPUS_ON_NODE"))
    if gpn is not None:
        facts.add("hardware.gpus_per_node_requested",
                  Value(gpn, at("SLURM_GPUS_ON_NODE"), True, "", "environment SLURM_GPUS_ON_NODE",
                        Origin(How.ENVIRONMENT, "scheduler")))
    elif host.gpus:
        facts.add("hardware.gpus_per_node_requested",
                  Value(len(host.gpus), at("#host"), True, "", f"host {host.gpu_source}",
                        Origin(How.HOST, "scheduler")))
    names = {g.name for g in host.gpus or ()}
    if len(names) == 1:
        from parallint.estimator.gpus import resolve_gpu

        raw = names.pop()
        g = resolve_gpu(raw)
        facts.add("hardware.gpu", Value(g.name if g is not None else raw, at("#host"), True, "",
                                        f"host {host.gpu_source}: {raw}", Origin(How.HOST)))
    if host.infiniband is not None:
        facts.add("hardware.infiniband_devices", Value(len(host.infiniband), at("#host"), True, "",
                                                       "host /sys/class/infiniband", Origin(How.HOST, "scheduler")))
    mems = [g.memory_bytes for g in host.gpus or ()]
    if mems and all(mems):
        low = min(m for m in mems if m)
        facts.add("hardware.gpu_memory_bytes", Value(low, at("#host"), True, "",
                                                     f"host {host.gpu_source}: {low >> 20} MiB", Origin(How.HOST)))
    return facts


def installed_versions(host: Host, display: str, where: dict[str, int], text: str) -> list:
    """The version facts of the packages installed here (``version.torch`` ... with origin
    ``host``, via ``installed``), each with its span on the launch file's ``# host: installed``
    line; none when the command names a container image (it runs there, not in this
    environment)."""
    from parallint.readers import versions as rv

    line_no = where.get("#installed")
    if line_no is None or rv.names_image(text):
        return []
    line = text.splitlines()[line_no - 1]
    out: list = []
    for name in INSTALLED_ORDER:
        got = host.packages.get(name)
        if got is not None:
            out += rv.installed(name, got[0], display, line_no, line.find(f"{name} {got[0]}") + 1)
    return out


def run_preflight(command: Optional[List[str]] = None, exec_: bool = False, show: bool = False,
                  root: Optional[str] = None, config_path: Optional[str] = None, output_format: str = "text",
                  fail_level: Optional[str] = None, select: Optional[List[str]] = None,
                  ignore: Optional[List[str]] = None) -> int:
    """``parallint preflight``; the exit status (it does not return when it runs the command)."""
    try:
        code, argv = _preflight(list(command or []), exec_, show, root, config_path, output_format, fail_level,
                                select, ignore)
    except Exit as exc:
        return exc.code
    if argv is None:
        return code
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execvp(argv[0], argv)
    except OSError as exc:  # as a shell says it: 127 not found, 126 not runnable
        echo(f"parallint: error: cannot run {argv[0]}: {exc.strerror or exc}", err=True)
        return 127 if isinstance(exc, FileNotFoundError) else 126
    return EXIT_ERROR  # pragma: no cover - execvp does not return


def _split(values: Optional[List[str]]) -> List[str]:
    return [x.strip() for v in values or () for x in v.split(",") if x.strip()]


def _preflight(command, exec_, show, root, config_path, output_format, fail_level, select, ignore):
    from pathlib import Path

    if not command:
        raise fail("give the launch command after '--': parallint preflight [--exec] -- torchrun ...")
    if output_format not in ("text", "json"):
        raise fail(f"unknown format '{output_format}' (expected text or json)")
    top = Path(os.path.abspath(root or "."))
    if not top.is_dir():
        raise fail(f"--root {root}: not a folder")
    from parallint.discover import host as hostmod

    smi = hostmod.start_nvidia_smi(str(top))  # runs while the configuration and rules load
    env = hostmod.launch_environment(os.environ)
    from parallint.discover.settings import ConfigError, load_config

    try:
        config = load_config(config_path, top)
    except ConfigError as exc:
        raise fail(str(exc))
    from parallint.engine.registry import RegistryError, UnknownSelector, lazy_registry
    from parallint.model.diagnostics import Severity

    settings = config.settings
    try:
        reg = lazy_registry()
        sel = _split(select) if select else settings.get("select")
        ign = list(settings.get("ignore", [])) + _split(ignore)
        ext = list(settings.get("extend-select", []))
        for group in (sel or [], ext, ign):
            reg.validate_selectors(group)
        level = Severity.parse(fail_level) if fail_level else config.fail_level
    except RegistryError as exc:
        raise fail(str(exc))
    except UnknownSelector as exc:
        raise fail(f"unknown rule selector '{exc.args[0]}' (see 'parallint rules')")
    except ValueError as exc:
        raise fail(str(exc))
    rules = reg.enabled(sel, ext, ign)
    host = hostmod.probe(smi)

    from parallint.engine.runner import Runner

    runner = Runner(config, Path.cwd())
    ap = top / LAUNCH_NAME
    from parallint.discover.walk import display_path

    display = display_path(ap, runner.cwd)
    text, where = launch_file(command, env, host)
    runner.stdin[ap] = text
    runner.context[ap] = scheduler_facts(env, host, display, where)
    from parallint.link import versions as link_versions

    link_versions.set_installed(installed_versions(host, display, where, text))  # after Runner(): it resets them
    f = runner.read(ap, explicit=True)
    result = runner.check([], rules, files=job_files(runner, f))
    if show:
        from parallint.report.show import render_jobs

        sys.stdout.write(render_facts(env, host, display, text))
        jobs = [j for j in result.jobs if any(x.abspath == ap for x in j.files)]
        if jobs:
            sys.stdout.write("\n# the job, as the rules saw it\n")
            sys.stdout.write(render_jobs(jobs, settings))
        return EXIT_OK, None
    from parallint.report.formats import Options, render

    failing = any(d.severity >= level for d in result.diagnostics)
    report = render(output_format, result.diagnostics, result.files_checked, rules, Options())
    # with --exec the command's output is the job's: the check's report goes to standard error
    (sys.stderr if exec_ else sys.stdout).write(report)
    for err in result.errors:
        echo(f"parallint: error: {err}", err=True)
    if result.errors:
        return EXIT_ERROR, None
    if failing:
        return EXIT_FINDINGS, None
    return EXIT_OK, (command if exec_ else None)


def job_files(runner: Any, f: Any) -> list:
    """The launch file and every file its jobs take in (the script, its configs): the file rules
    run on each of them too, as on the files ``check`` is given (the job is about to run them)."""
    if f is None:
        return []
    out, seen = [f], {f.abspath}
    for job in runner.jobs([f]):
        for x in job.files:
            if x.abspath in seen:
                continue
            seen.add(x.abspath)
            got = runner.cache.get(x.abspath)
            if got is not None:
                out.append(got)
    return out


def render_facts(env: dict, host: Host, display: str, text: str) -> str:
    """What ``--show`` prints: every fact preflight took from the environment and the host, with
    its origin, and the launch file that stands for the command."""
    import json

    def q(v: Any) -> str:
        return json.dumps(v)

    out = ["# parallint preflight: the facts it used", "environment:  # origin: environment"]
    out += [f"  {k}: {q(v)}" for k, v in env.items()] or ["  {}"]
    out.append("host:  # origin: host")
    if host.gpus is None:
        out.append("  gpus: null  # unknown: " + ("; ".join(host.notes) or "no nvidia-smi, no /proc/driver/nvidia"))
    else:
        out.append(f"  gpus: {len(host.gpus)}  # {host.gpu_source}")
        for i, g in enumerate(host.gpus):
            mem = f", memory_bytes: {g.memory_bytes}" if g.memory_bytes else ""
            out.append(f"  gpu{i}: {{name: {q(g.name)}{mem}}}  # {host.gpu_source}")
    out.append(f"  driver: {q(host.driver)}" + (f"  # {host.driver_source}" if host.driver else ""))
    for name in ("torch", "deepspeed", "transformers", "accelerate", "megatron-core", "nccl"):
        got = host.packages.get(name)
        out.append(f"  {name}: {q(got[0])}  # {got[1]}" if got else f"  {name}: null  # not installed here")
    if host.packages:
        from parallint.readers.versions import names_image

        out.append("  # the installed versions are not used: the command names a container image" if names_image(text)
                   else "  # the installed versions replace the repository's pins of the same packages (version.*)")
    out.append(f"  infiniband: {q(host.infiniband)}  # /sys/class/infiniband")
    out.append(f"  nvidia_peermem: {q(host.peermem)}  # /proc/modules")
    if host.notes and host.gpus is not None:
        out.append(f"  # {'; '.join(host.notes)}")
    out.append(f"\n# the launch file that stands for the command ({display}, held in memory)")
    out += [f"# {i:3}  {ln}" for i, ln in enumerate(text.splitlines(), 1)]
    return "\n".join(out) + "\n"
