"""Linking: facts from several files become jobs.

A launch command links to every file it names that exists (its script or ``-m`` module, the
``--deepspeed_config``, ``--config_file``, ``--job.config_file`` and model configs), resolved
against the launch file's folder and then the repository root; linked files' own links are
followed too (a script naming its DeepSpeed JSON), with a depth limit and a cycle guard.
``[tool.parallint] links`` declares links the files cannot show. Every file that no launch took
in becomes a job of its own (its rules then see only what that file states).
"""

from __future__ import annotations

import os
from pathlib import Path

from parallint.model.facts import FileFacts, Value
from parallint.model.job import Job

TYPE_CHECKING = False  # typing is not imported at run time (start-up, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Callable

    Reader = Callable[[Path], "FileFacts | None"]

MAX_DEPTH = 3


_ROOTS: dict[Path, Path] = {}  # repo_root per folder, for one run (see reset)


def reset() -> None:
    """Forget the repository roots found by an earlier run."""
    _ROOTS.clear()


def repo_root(start: Path) -> Path:
    """The nearest folder at or above ``start`` with ``.git``, ``pyproject.toml`` or ``setup.py``
    (else ``start``); remembered for the run, as every file of a folder asks for it."""
    hit = _ROOTS.get(start)
    if hit is None:
        hit = _ROOTS[start] = _repo_root(start)
    return hit


#: what marks a repository's top folder (see :func:`repo_root`)
ROOT_MARKERS = (".git", "pyproject.toml", "setup.py")


def _repo_root(start: Path) -> Path:
    for d in (start, *start.parents):
        if (d / ".git").exists() or (d / "pyproject.toml").is_file() or (d / "setup.py").is_file():
            return d
    return start


#: launch-line options whose value is a config file the launcher or the script opens at start
CONFIG_OPTIONS = frozenset({"--deepspeed", "--deepspeed_config", "--config_file", "--deepspeed_config_file"})


def _plain_relative(value: Value) -> bool:
    """A literal relative file path, with nothing the shell or the program would expand."""
    if not value.known or not isinstance(value.value, str):
        return False
    raw = value.value.strip().strip("'\"")
    return bool(raw) and not raw.startswith(("/", "~", "-")) and not any(c in raw for c in "$<>{}*?[]%\x00\\") \
        and raw.lower().endswith((".json", ".yaml", ".yml"))


def _note_missing(job: Job, value: Value, base: Path, root: Path) -> None:
    """Record in ``job.missing`` a config link that names no file (resolve_link found none): a
    literal relative path in no git submodule of the repository (a submodule that is not checked
    out holds it) and in no folder between the naming file's and the repository root (a script in
    ``project/bash_script/`` run from ``project/``), with a close name in its folder or None."""
    import difflib

    from parallint.link.megatron_table import _in_submodule

    if not _plain_relative(value):
        return
    raw = str(value.value).strip().strip("'\"")
    try:
        if _in_submodule(root, raw):
            return
    except (OSError, ValueError):
        return
    note = _probed()
    try:
        top = root.resolve()
        for up in base.resolve().parents:  # the folders strictly between the file's and the root
            if up == top or top not in up.parents:
                break
            if note is not None:
                note(up / raw)
            if (up / raw).is_file():
                return  # right when the command runs from a folder above (the project's own folder)
        # a tree with no repository marker (a copy without .git): its root is the launch file's own
        # folder, so a path from the folder parallint runs in, above the file, may be the right one
        here = Path.cwd().resolve()
        if top == base.resolve() and here in base.resolve().parents:
            if note is not None:
                note(here / raw)
            if (here / raw).is_file():
                return
    except (OSError, ValueError):
        return
    folder, _, name = raw.rpartition("/")
    close = None
    for top in dict.fromkeys((base, root)):
        d = top / folder if folder else top
        try:
            names = [e.name for e in os.scandir(d) if e.is_file() and os.path.splitext(e.name)[1] == os.path.splitext(name)[1]]
        except OSError:
            continue
        stem = os.path.splitext(name)[0].lower()
        holds = sorted((n for n in names if stem in n.lower()),
                       key=lambda n: (len(n), n))  # ds_config_zero3.json for zero3.json
        hit = holds[:1] or difflib.get_close_matches(name, sorted(names)[:2000], n=1, cutoff=0.75)
        if hit:
            close = (folder + "/" if folder else "") + hit[0]
            break
    job.missing.append((value, close))


def resolve_link(value: Value, base: Path, root: Path, module: bool = False) -> Path | None:
    """The existing file a link names, or None (unknown values and missing files link nothing)."""
    if not value.known or not isinstance(value.value, str):
        return None
    raw = value.value.strip().strip("'\"")
    if not raw or "$" in raw or "<" in raw or "\x00" in raw:
        return None
    cands: list[str] = []
    if module:
        mod = raw.replace(".", "/")
        cands = [mod + ".py", mod + "/__main__.py"]
    else:
        cands = [raw]
    folders = [base] if base == root else [base, root]
    note = _probed()
    for c in cands:
        p = Path(os.path.expanduser(c))  # never raises on an unknown `~user`
        for cand in ([p] if p.is_absolute() else [folder / p for folder in folders]):
            if note is not None:
                note(cand)  # a file that appears there later links (the run cache's manifest)
            try:
                if cand.is_file():
                    return cand.resolve()
            except (OSError, ValueError):
                continue
    return None


def _probed():
    """parallint.engine.cache.note_probe while a run is recorded, else None."""
    from parallint.util import deps

    return deps.note_probe if deps.recording() is not None else None


def _attach(job: Job, target: Path | None, read: Reader, root: Path, seen: set[Path], depth: int,
            launched: bool = False) -> None:
    """Add the file at ``target`` (and, depth permitting, the files it names) to ``job``;
    ``launched``: it is the script a launch line starts (read as Python whatever it holds)."""
    if target is None or target in seen or depth > MAX_DEPTH:
        return
    seen.add(target)
    linked = read(target, launched=True) if launched else read(target)  # type: ignore[call-arg]
    if linked is None:
        return
    job.files.append(linked)
    job.facts.extend(linked.facts)
    _follow(job, linked, read, root, seen, depth + 1)


def _module_top(script_path: Path | None, name: object) -> Path | None:
    """The folder ``python -m <name>`` runs in, from the file it found: ``gen/generate.py`` for
    ``gen.generate`` is two levels under it (``gen/generate/__main__.py``, three)."""
    if script_path is None or not isinstance(name, str):
        return None
    depth = len([p for p in name.strip().strip("'\"").split(".") if p]) + (script_path.name == "__main__.py")
    top = script_path
    for _ in range(depth):
        top = top.parent
    return top


def _attach_imports(job: Job, script_path: Path | None, read: Reader, seen: set[Path],
                    top: Path | None = None) -> None:
    """The repository modules the launched script imports (:mod:`parallint.link.imports`) that are
    parallint's files join ``job``: their script events with the launch's facts (a helper that
    picks the device by the global rank, on two nodes). Their own facts stay out of the job."""
    if script_path is None or not str(script_path).endswith(".py"):
        return
    from parallint.link import imports

    entry = next((x for x in job.files if x.abspath == script_path), None)
    by = entry.path if entry is not None else script_path.name
    for p in imports.modules(script_path, top):
        if p in seen:
            continue
        f = read(p)
        if f is None or f.kind != "python":
            continue
        seen.add(p)
        job.files.append(f)
        job.imported[p] = by


def _follow(job: Job, f: FileFacts, read: Reader, root: Path, seen: set[Path], depth: int) -> None:
    for link in f.links:
        target = resolve_link(link, f.abspath.parent, root)
        if target is None and job.launch is not None and f.kind == "accelerate" and \
                str(link.source).endswith("deepspeed_config_file"):
            _note_missing(job, link, f.abspath.parent, root)  # accelerate opens it at start-up
        _attach(job, target, read, root, seen, depth)


def build_jobs(files: list[FileFacts], read: Reader, declared: list[dict], base: Path,
               settled: "Callable[[FileFacts, tuple[Path, ...]], bool] | None" = None,
               sizing: bool = False) -> list[Job]:
    """The jobs of ``files``: one per launch, one per declared group, and the job of every other
    file on its own. ``settled(file, members)`` says that the rules of a file's own job (with
    those member files) have run already (in a worker): that job is assembled without the facts
    only its rules would read (the script's own launcher, see :func:`pylaunch.attach`).
    ``sizing``: only the facts a job spec reads are wanted (estimate, plan): no version facts and
    no table of the flags a launched Megatron script accepts (only rules read them)."""
    jobs: list[Job] = []
    taken: set[Path] = set()
    declared_for: dict[Path, list[Path]] = {}
    groups: list[list[Path]] = []
    for entry in declared:
        targets = [(base / p).resolve() for p in entry.get("files", [])]
        if entry.get("launch"):
            declared_for.setdefault((base / entry["launch"]).resolve(), []).extend(targets)
        else:
            groups.append(targets)

    for f in files:
        if not f.launches:
            continue
        root = repo_root(f.abspath.parent)
        for launch in f.launches:
            job = Job(name=f"{f.path}:{launch.span.line}", root=f, launch=launch, files=[f])
            job.facts.extend(launch.facts)
            job.facts.extend(f.facts)
            seen = {f.abspath}
            script_path = None
            if launch.script is not None:
                module = launch.is_module
                script_path = resolve_link(launch.script, f.abspath.parent, root, module=module)
                launch.script_path = script_path
                launch.repo_root = repo_root(script_path.parent) if script_path is not None else root
                _attach(job, script_path, read, root, seen, 1, launched=True)
                _attach_imports(job, script_path, read, seen,
                                _module_top(script_path, launch.script.value) if module else None)
            if launch.megatron_flags and not sizing:  # the flags the launched Megatron script accepts (CFG006 reads them)
                from parallint.link import megatron_table

                try:
                    launch.megatron_table = megatron_table.accepted_flags(launch, launch.megatron_flags)
                except Exception:  # noqa: BLE001 - an unreadable table is an unknown one, never a crash
                    launch.megatron_table = None
            for link in launch.links:
                if link is not launch.script:
                    target = resolve_link(link, f.abspath.parent, root)
                    if target is None and link.source in CONFIG_OPTIONS:
                        _note_missing(job, link, f.abspath.parent, root)
                    _attach(job, target, read, root, seen, 1)
            for target in declared_for.get(f.abspath, []):
                _attach(job, target, read, root, seen, 1)
            script = next((x for x in job.files if script_path is not None and x.abspath == script_path), None)
            if script is not None:  # the launch line's arguments over argparse defaults, its environment
                from parallint.link import scriptargs

                scriptargs.rebind(job, launch, script)
                script = next((x for x in job.files if x.abspath == script_path), None)
            from parallint.link import hfargs
            from parallint.link import pylaunch

            hfargs.attach(job, launch, script, read, root, resolve_link)  # HF TrainingArguments given as flags on the launch line
            from parallint.link import frameworkcli

            frameworkcli.attach(job, launch, script, root, resolve_link, read)  # detectron2 / verl: world and batch from the line
            from parallint.link import hydralaunch

            hydralaunch.attach(job, launch, script, read, root, seen, hydra_assignments)  # a NeMo YAML with the line's Hydra overrides
            pylaunch.attach(job, script, root)  # launchers inside the script (Ray Train, submitit, NeMo-Run ...)
            job.loopback_masters = [v for v in map(pylaunch.loopback_master, job.files) if v is not None]
            if not sizing:
                _versions(job)
            taken.update(seen)
            jobs.append(job)

    for group in groups:
        members = [m for m in (read(p) for p in group) if m is not None]
        if not members:
            continue
        job = Job(name=members[0].path, root=members[0], files=members)
        for m in members:
            job.facts.extend(m.facts)
            taken.add(m.abspath)
        if not sizing:
            _versions(job)
        jobs.append(job)

    for f in files:
        if f.abspath in taken or f.launches:
            continue
        jobs.append(standalone_job(f, read, settled, sizing))
    return jobs


def standalone_job(f: FileFacts, read: Reader,
                   settled: "Callable[[FileFacts, tuple[Path, ...]], bool] | None" = None,
                   sizing: bool = False) -> Job:
    """The job of a file that no launch takes in: the file and the files it names (``sizing``:
    see :func:`build_jobs`)."""
    job = Job(name=f.path, root=f, files=[f])
    job.facts.extend(f.facts)
    root = repo_root(f.abspath.parent)
    _follow(job, f, read, root, {f.abspath}, 1)
    # without a launch, only Python files state launch facts (pylaunch.attach does nothing else):
    # a config's own job imports no launch scanner
    if (settled is None or not settled(f, tuple(x.abspath for x in job.files))) and \
            any(x.kind == "python" for x in job.files):
        from parallint.link import pylaunch

        pylaunch.attach(job, None, root)
    if not sizing:
        _versions(job)
    return job


def _versions(job: Job) -> None:
    """The version facts that reach ``job`` (:mod:`parallint.link.versions`)."""
    from parallint.link import versions

    versions.attach(job)


def hydra_assignments(f: FileFacts, root: Path) -> None:
    """The facts of ``f`` read from keys that its Hydra entry script overwrites after loading it
    (``cfg.model.global_batch_size = ...``) become unknown: the file's value never runs. The runner
    calls it as the file is read, before any rule sees the file."""
    from parallint.link import hydrascripts

    marked = any(os.path.exists(root / m) for m in ROOT_MARKERS)  # a real top, not a fallback
    keys = hydrascripts.assigned_keys(f.abspath, root, root if marked else None)
    if not keys:
        return
    from parallint.readers.cfgutil import mask_facts

    def reason(v: Value) -> str | None:
        hit = _set_by(v.source, keys)
        if hit is None:
            return None
        script, line = keys[hit]
        return f"{hit} is set by {script}:{line} after the config is loaded"

    mask_facts(f, "", reason=reason)


def _set_by(source: str, keys: dict[str, tuple[str, int]]) -> str | None:
    """The assigned key a fact's source reads (``nemo.yaml model.global_batch_size``; a key set
    whole, ``cfg.model = ...``, covers everything under it), or None."""
    for word in source.split():
        k = word
        while k:
            if k in keys:
                return k
            k = k.rpartition(".")[0]
    return None
