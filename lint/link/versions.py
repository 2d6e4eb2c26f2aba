"""Which version facts reach a job (:mod:`parallint.model.versions`).

Two levels, the more specific first:

1. **the launch file's own**: the container images the job's launch file names
   (``srun --container-image``, ``#SBATCH --container-image``, Kubernetes ``image:``, SkyPilot
   ``image_id: docker:...``) and its ``module load cuda/X`` lines;
2. **the repository's**: the version files (requirements*.txt, ``pyproject.toml``, ``setup.cfg``,
   ``setup.py``, ``environment.yml``, ``uv.lock``, ``poetry.lock``, Dockerfiles) in the folder of
   the job's root file and in each folder above it up to its repository root (``boundary.find_root``),
   plus ``requirements/`` and ``docker/`` beside them. They apply to every job of that part of the
   repository.

Where the launch file states a package (its image bundles torch), the repository's statements of
that package are dropped for the job: the image is what runs. Otherwise every statement is kept,
as alternatives (a rule concludes only what holds for all of them).

Under ``parallint preflight`` the versions **installed** on the node (:func:`set_installed`,
origin ``host``) come between the two: a package installed there replaces the repository's
statements of it (what is installed is what runs; a pin is what someone meant to install), and
a launch file's own image still replaces both (preflight states nothing installed when its
command names an image: the command runs in the container, not in this environment).

Files are read through the repository boundary (``boundary.read_inside``), at most
:data:`MAX_BYTES` each, once per run; the run cache and the content cache record what was read and
looked for.
"""

from __future__ import annotations

import os
from pathlib import Path

from parallint.model.facts import FactMap, FileFacts

TYPE_CHECKING = False  # typing is not imported at run time (start-up, docs/architecture.md)
if TYPE_CHECKING:
    from parallint.readers.versions import Stated

MAX_BYTES = 4 * 1024 * 1024
MAX_FILES = 24  # version files read per folder (a folder of 300 requirements files is not a job's)
#: the kinds of files that name a job's own image or modules
LAUNCH_KINDS = frozenset({"shell", "makefile", "kube", "skypilot"})
#: the version files whose absence is recorded (a file created later must change the result)
_EXPECTED = ("requirements.txt", "pyproject.toml", "setup.py", "setup.cfg", "environment.yml", "uv.lock",
             "poetry.lock", "Dockerfile")
_SUBFOLDERS = ("requirements", "docker")

_FOLDERS: dict[Path, "list[tuple[str, Path, Stated]]"] = {}  # folder -> its version files' facts (one run)
_TOUCHED: dict[Path, list[Path]] = {}  # folder -> the files read or looked for there
_LAUNCH: dict[Path, "Stated"] = {}
_INSTALLED: "Stated" = []  # what parallint preflight found installed on the node (this run)


def reset() -> None:
    """Forget what an earlier run read (and what it found installed)."""
    _FOLDERS.clear()
    _TOUCHED.clear()
    _LAUNCH.clear()
    _ROOTS.clear()
    _INSTALLED.clear()


def set_installed(stated: "Stated") -> None:
    """The versions installed on the node, for this run (``parallint preflight``): for every
    file, they replace the repository's statements of the same packages (see the module's doc)."""
    _INSTALLED[:] = list(stated)


def _display(target: Path, anchor: FileFacts) -> str:
    """``target``'s display path, from the anchor file's (both relative to the working folder)."""
    import posixpath

    rel = os.path.relpath(target, anchor.abspath.parent).replace(os.sep, "/")
    if os.path.isabs(anchor.path):
        return target.as_posix()
    return posixpath.normpath(posixpath.join(posixpath.dirname(anchor.path), rel))


def _read(target: Path, anchor: FileFacts) -> str | None:
    from parallint.util.boundary import read_inside

    data = read_inside(target, anchor.abspath, MAX_BYTES)
    if data is None:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _folder(folder: Path, anchor: FileFacts) -> "list[tuple[str, Path, Stated]]":
    from parallint.util import deps

    hit = _FOLDERS.get(folder)
    if hit is not None:
        for p in _TOUCHED.get(folder, ()):
            deps.note_side_read(p)  # every file's cached result depends on them, not only the first's
        return hit
    from parallint.readers import versions as rv

    out: "list[tuple[str, Path, Stated]]" = []
    _FOLDERS[folder] = out
    touched = _TOUCHED[folder] = []
    try:
        names = sorted(e.name for e in os.scandir(folder))
    except OSError:
        return out
    deps.note_listing(folder, names)
    for name in _EXPECTED:
        if name not in names:
            deps.note_probe(folder / name)
            deps.note_side_read(folder / name)  # a file created there later drops a cached result
            touched.append(folder / name)
    todo = [(rv.kind_of(n), folder / n) for n in names]
    for sub in _SUBFOLDERS:
        if sub in names and (folder / sub).is_dir() and not (folder / sub).is_symlink():
            try:
                inner = sorted(e.name for e in os.scandir(folder / sub))
            except OSError:
                continue
            deps.note_listing(folder / sub, inner)
            todo += [("requirements" if sub == "requirements" and n.endswith(".txt") else rv.kind_of(n), folder / sub / n)
                     for n in inner]
    seen: set[Path] = set()
    queue = [(k, p) for k, p in todo if k is not None][:MAX_FILES]
    while queue and len(seen) < MAX_FILES:
        kind, path = queue.pop(0)
        if path in seen or not path.is_file():
            continue
        seen.add(path)
        touched.append(path)
        text = _read(path, anchor)
        if text is None:
            continue
        display = _display(path, anchor)
        stated, includes = rv.read(kind, display, text)
        out.append((kind, path, stated))
        for inc in includes:  # -r other.txt, relative to the including file
            if "$" in inc or inc.startswith(("http:", "https:")):
                continue
            queue.append(("requirements", (path.parent / inc)))
    return out


_ROOTS: dict[Path, Path] = {}


def _root(start: Path) -> Path:
    """The repository ``start`` is in (``boundary.find_root``: the nearest ``.git``, else
    ``pyproject.toml``), remembered for the run."""
    hit = _ROOTS.get(start)
    if hit is None:
        from parallint.util.boundary import find_root

        hit = _ROOTS[start] = find_root(start)
    return hit


def repository_facts(f: FileFacts) -> "Stated":
    """The version statements of the repository part ``f`` belongs to (see the module's doc)."""
    start = f.abspath.parent
    root = _root(start)
    folders = [start]
    if root != start and root in start.parents:
        for p in start.parents:
            folders.append(p)
            if p == root:
                break
    out: "Stated" = []
    for folder in folders:
        for _kind, _path, stated in _folder(folder, f):
            out.extend(stated)
    return out


def launch_facts(f: FileFacts) -> "Stated":
    """The version statements of ``f``'s own images and ``module load`` lines (a launch file)."""
    if f.kind not in LAUNCH_KINDS or not f.text:
        return []
    hit = _LAUNCH.get(f.abspath)
    if hit is None:
        from parallint.readers import versions as rv

        hit = _LAUNCH[f.abspath] = rv.launch_images(f.path, f.text) + rv.module_loads(f.path, f.text)
    return hit


def for_file(f: FileFacts) -> FactMap:
    """The version facts of the jobs ``f`` (a launch file, a script, a config) roots."""
    out = FactMap()
    try:
        own = launch_facts(f)
        repo = repository_facts(f)
    except (OSError, ValueError, RecursionError):
        return out
    mine = {k for k, _ in own}
    for key, v in own:
        out.add(key, v)
    for key, v in _INSTALLED:
        if key not in mine:
            out.add(key, v)
    mine.update(k for k, _ in _INSTALLED)
    for key, v in repo:
        if key not in mine:
            out.add(key, v)
    return out


def attach(job) -> None:
    """Add the version facts of the job's root file to ``job.facts``."""
    for key, vals in for_file(job.root).items():
        for v in vals:
            job.facts.add(key, v)

