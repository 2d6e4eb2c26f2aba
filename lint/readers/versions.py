"""Version facts from the files that decide what a job runs with, read as text (never imported,
never run, no network): requirements files, ``pyproject.toml`` (PEP 621 and poetry),
``setup.cfg``, ``setup.py`` (through ``ast``), conda ``environment.yml``, ``uv.lock`` and
``poetry.lock``, Dockerfiles (``FROM`` through the bundled image table, ``pip install`` in ``RUN``),
container images named on a launch (``--container-image``, ``image:``, SkyPilot ``image_id``) and
``module load cuda/X`` lines.

Each function returns ``[(fact key, Value)]``: a specifier text (``"==1.13.1"``, ``""`` for a
package named without a version) with the span of the line that states it and an origin whose
``via`` names the kind of source (:mod:`parallint.model.versions`). A statement parallint cannot
read (a URL, ``${VERSION}``) is an unknown value: a rule then concludes nothing about that package.
"""

from __future__ import annotations

import functools
import re

from parallint.model.diagnostics import Span
from parallint.model.facts import Value
from parallint.model.origin import How, Origin
from parallint.model import versions as _v

TYPE_CHECKING = False  # typing is not imported at run time (start-up, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Iterable

    Stated = list[tuple[str, Value]]

#: the keys this reader states (tests/test_vocab.py reads the literals)
KEYS = ("version.torch", "version.cuda", "version.cuda_toolkit", "version.nccl", "version.transformers",
        "version.deepspeed", "version.accelerate", "version.flash_attn")


def _value(spec: str, path: str, line: int, via: str, source: str, how: How = How.LITERAL,
           column: int = 1) -> Value:
    return Value(spec, Span(path, line, column), True, "", source, Origin(how, via))


@functools.cache
def _req_re() -> re.Pattern[str]:
    # PEP 508: name, extras, then a specifier (possibly in parentheses), a URL or nothing
    return re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[[^\]]*\])?\s*(.*)$")


@functools.cache
def _cuda_local_re() -> re.Pattern[str]:
    return re.compile(r"\+cu(\d{2,3})\b")


def _cuda_of(tag: str) -> str:
    """``118`` -> ``11.8``, ``121`` -> ``12.1``, ``92`` -> ``9.2``."""
    return f"{tag[:-1]}.{tag[-1]}"


def requirement(text: str, path: str, line: int, via: str, column: int = 1) -> "Stated":
    """The version facts of one PEP 508 requirement (``torch==2.1.0+cu118 ; python_version>'3'``)."""
    m = _req_re().match(text)
    if m is None:
        return []
    name, rest = m.group(1), m.group(3)
    key = _v.key_of(name)
    if key is None:
        return []
    spec = rest.split(";", 1)[0].strip()
    if spec.startswith("(") and spec.endswith(")"):
        spec = spec[1:-1].strip()
    source = f"{name}{spec}" if spec else name  # the marker left out (messages split at "; ")
    out: "Stated" = []
    if spec.startswith("@") or "://" in spec or "$" in spec or "{" in spec:
        return [(key, Value.unknown(f"{name} is installed from {spec[:60]!r}", Span(path, line, column), source,
                                    Origin(How.LITERAL, via)))]
    if _v.interval(_strip_local(spec)) is None:
        return [(key, Value.unknown(f"cannot read the version {spec[:60]!r}", Span(path, line, column), source,
                                    Origin(How.LITERAL, via)))]
    out.append((key, _value(_strip_local(spec), path, line, via, source, column=column)))
    cu = _cuda_local_re().search(spec)
    if key == "version.torch" and cu is not None:
        out.append(("version.cuda", _value("==" + _cuda_of(cu.group(1)), path, line, via,
                                           f"{source} (a +cu{cu.group(1)} wheel)",
                                           How.INFERRED, column)))
    return out


def installed(name: str, version: str, path: str, line: int, column: int = 1) -> "Stated":
    """The version facts of a distribution installed on the node (``parallint preflight``: the
    version in a ``*.dist-info`` folder's name), origin ``host`` via ``installed``: one release
    (its local part left out); a ``+cuXXX`` torch also states the CUDA it was built for."""
    key = _v.key_of(name)
    spec = "==" + _strip_local(version.strip())
    if key is None or _v.interval(spec) is None:
        return []
    end = column + len(name) + 1 + len(version)
    span = Span(path, line, column, line, end)
    origin = Origin(How.HOST, "installed")
    out: "Stated" = [(key, Value(spec, span, True, "", f"{name} {version} installed", origin))]
    cu = _cuda_local_re().search(version)
    if key == "version.torch" and cu is not None:
        out.append(("version.cuda", Value("==" + _cuda_of(cu.group(1)), span, True, "",
                                          f"{name} {version} installed (a +cu{cu.group(1)} build)", origin)))
    return out


def _strip_local(spec: str) -> str:
    return re.sub(r"\+[0-9A-Za-z.]+", "", spec)


@functools.cache
def _index_cuda_re() -> re.Pattern[str]:
    return re.compile(r"download\.pytorch\.org/whl/(?:nightly/)?cu(\d{2,3})\b")


def requirements_txt(path: str, text: str, via: str = "requirements") -> "tuple[Stated, list[str]]":
    """The facts of a requirements file, and the files it includes (``-r other.txt``, ``-c``)."""
    out: "Stated" = []
    includes: list[str] = []
    index_cuda: tuple[str, int] | None = None
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        start = i
        raw = lines[i]
        while raw.endswith("\\") and i + 1 < len(lines):
            i += 1
            raw = raw[:-1] + " " + lines[i]
        i += 1
        body = re.split(r"(?:^|\s)#", raw, maxsplit=1)[0].strip()
        if not body:
            continue
        if body.startswith("-"):
            opt, _, arg = body.partition(" ")
            if "=" in opt:
                opt, _, arg = opt.partition("=")
            arg = arg.strip()
            if opt in ("-r", "--requirement", "-c", "--constraint") and arg:
                includes.append(arg)
            elif opt in ("-i", "--index-url", "--extra-index-url", "-f", "--find-links"):
                cu = _index_cuda_re().search(arg)
                if cu is not None:
                    index_cuda = (_cuda_of(cu.group(1)), start + 1)
            continue
        out.extend(requirement(body, path, start + 1, via))
    if index_cuda is not None and any(k == "version.torch" for k, _ in out) and \
            not any(k == "version.cuda" for k, _ in out):
        cuda, line = index_cuda
        out.append(("version.cuda", _value("==" + cuda, path, line, via,
                                           f"torch from the PyTorch cu{cuda.replace('.', '')} index",
                                           How.INFERRED)))
    return out, includes


def _line_of(text: str, needle: str, start: int = 0) -> int:
    """The 1-based line of the first ``needle`` at or after offset ``start`` (1 when absent)."""
    at = text.find(needle, start)
    return text.count("\n", 0, at) + 1 if at >= 0 else 1


def _toml(text: str) -> "dict | None":
    try:
        import tomllib  # type: ignore[import-not-found,unused-ignore]
    except ImportError:  # pragma: no cover - Python 3.10
        import tomli as tomllib  # type: ignore[no-redef,import-not-found,unused-ignore]
    try:
        data = tomllib.loads(text)
    except Exception:  # noqa: BLE001 - a broken file states nothing
        return None
    return data if isinstance(data, dict) else None


def pyproject(path: str, text: str) -> "Stated":
    """``[project].dependencies`` and poetry's ``[tool.poetry.dependencies]`` (optional
    dependencies, extras and groups are not what every job installs: not read)."""
    data = _toml(text)
    if data is None:
        return []
    out: "Stated" = []
    project = data.get("project")
    deps = project.get("dependencies") if isinstance(project, dict) else None
    if isinstance(deps, list):
        at = text.find("dependencies")
        for d in deps:
            if isinstance(d, str):
                out.extend(requirement(d, path, _line_of(text, d, max(at, 0)), "pyproject"))
    tool = data.get("tool")
    poetry = tool.get("poetry") if isinstance(tool, dict) else None
    pdeps = poetry.get("dependencies") if isinstance(poetry, dict) else None
    if isinstance(pdeps, dict):
        at = max(text.find("[tool.poetry.dependencies]"), 0)
        for name, spec in pdeps.items():
            key = _v.key_of(str(name))
            if key is None:
                continue
            line = _line_of(text, str(name), at)
            if isinstance(spec, dict):
                spec = spec.get("version") if "version" in spec else None
            source = f"{name} = {spec!r}"
            if isinstance(spec, str) and _v.interval(spec) is not None:
                out.append((key, _value(spec, path, line, "pyproject", source)))
            else:
                out.append((key, Value.unknown(f"cannot read the version of {name}", Span(path, line, 1), source,
                                               Origin(How.LITERAL, "pyproject"))))
    return out


def setup_cfg(path: str, text: str) -> "Stated":
    """``[options] install_requires`` of a ``setup.cfg``."""
    import configparser

    cp = configparser.ConfigParser(interpolation=None)
    try:
        cp.read_string(text)
        reqs = cp.get("options", "install_requires", fallback="")
    except (configparser.Error, ValueError):
        return []
    at = max(text.find("install_requires"), 0)
    out: "Stated" = []
    for r in reqs.splitlines():
        r = r.split("#", 1)[0].strip()
        if r:
            out.extend(requirement(r, path, _line_of(text, r, at), "setup"))
    return out


def setup_py(path: str, text: str) -> "Stated":
    """``install_requires`` of a ``setup.py``, read with ``ast`` (never run): a literal list in the
    ``setup(...)`` call, or a module-level name bound once to a literal list."""
    import ast

    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    lists: dict[str, ast.expr] = {}
    counts: dict[str, int] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            n = node.targets[0].id
            counts[n] = counts.get(n, 0) + 1
            lists[n] = node.value
    out: "Stated" = []
    for call in ast.walk(tree):
        if not (isinstance(call, ast.Call) and getattr(call.func, "id", getattr(call.func, "attr", None)) == "setup"):
            continue
        for kw in call.keywords:
            if kw.arg != "install_requires":
                continue
            val = kw.value
            if isinstance(val, ast.Name) and counts.get(val.id) == 1:
                val = lists[val.id]
            if not isinstance(val, (ast.List, ast.Tuple)):
                continue
            for elt in val.elts:
                if isinstance(elt, ast.Constant) and isinstance(elt.value, str):
                    out.extend(requirement(elt.value, path, elt.lineno, "setup", elt.col_offset + 2))
    return out


@functools.cache
def _conda_re() -> re.Pattern[str]:
    return re.compile(r"^\s*(?:[A-Za-z0-9_.-]+::)?([A-Za-z0-9][A-Za-z0-9._-]*)\s*(.*)$")


#: conda package names that state the CUDA torch runs with
_CONDA_CUDA = ("pytorch-cuda", "cudatoolkit", "cuda-version")


def environment_yml(path: str, text: str) -> "Stated":
    """A conda environment file's ``dependencies`` (conda specs: ``pytorch=1.13.1``,
    ``pytorch-cuda=11.8``) and its ``pip:`` list (requirements)."""
    import yaml

    try:
        data = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError:
        return []
    deps = data.get("dependencies") if isinstance(data, dict) else None
    if not isinstance(deps, list):
        return []
    out: "Stated" = []
    at = max(text.find("dependencies"), 0)
    for d in deps:
        if isinstance(d, dict) and isinstance(d.get("pip"), list):
            pat = max(text.find("pip:", at), at)
            for r in d["pip"]:
                if isinstance(r, str):
                    out.extend(requirement(r, path, _line_of(text, r, pat), "conda"))
            continue
        if not isinstance(d, str):
            continue
        m = _conda_re().match(d)
        if m is None:
            continue
        name, spec = m.group(1).lower(), m.group(2).strip()
        spec_text = _conda_spec(spec)
        line = _line_of(text, d, at)
        source = d.strip()
        key = "version.cuda" if name in _CONDA_CUDA else _v.key_of(name)
        if key is None:
            continue
        if _v.interval(spec_text) is None:
            out.append((key, Value.unknown(f"cannot read the conda spec {d!r}", Span(path, line, 1), source,
                                           Origin(How.LITERAL, "conda"))))
        else:
            out.append((key, _value(spec_text, path, line, "conda", source)))
    return out


def _conda_spec(spec: str) -> str:
    """A conda match spec's version part as a specifier: ``=1.13.1=py3.9_0`` -> ``=1.13.1`` (every
    1.13.1.x), ``==1.13.1`` stays, ``1.13.*`` -> ``==1.13.*``, ``1.13`` -> ``==1.13``."""
    if spec.startswith("==") or spec.startswith("="):
        op = "==" if spec.startswith("==") else "="
        return op + spec[len(op):].split("=", 1)[0].strip()
    first = spec.split()[0] if spec.split() else ""
    if first[:1].isdigit():
        return "==" + first
    return spec


@functools.cache
def _lock_re() -> re.Pattern[str]:
    # no ``^``: a pattern that starts with a literal is searched for by that literal (a lock is MBs);
    # lock_file keeps the matches at a line start
    return re.compile(r'\[\[package\]\]\s*\nname\s*=\s*"([^"]+)"\s*\nversion\s*=\s*"([^"]+)"')


def lock_file(path: str, text: str) -> "Stated":
    """The locked versions of ``uv.lock`` and ``poetry.lock`` (``[[package]] name, version``): each
    an exact version. A lock with two entries of a package (platform forks) states both."""
    out: "Stated" = []
    rx = _lock_re()
    at = 0
    counted, lines = 0, 0  # the line count up to ``counted`` (counted on from the last package)
    while True:
        m = rx.search(text, at)
        if m is None:
            break
        if m.start() and text[m.start() - 1] != "\n":
            at = m.start() + 1  # not at a line start: not a package table
            continue
        at = m.end()
        key = _v.key_of(m.group(1))
        if key is None:
            continue
        lines += text.count("\n", counted, m.start())
        counted = m.start()
        line = lines + 2
        ver = m.group(2)
        if _v.release(ver) is None:
            continue
        out.append((key, _value("==" + _strip_local(ver), path, line, "lock", f"{m.group(1)} {ver}")))
        cu = _cuda_local_re().search(ver)
        if key == "version.torch" and cu is not None:
            out.append(("version.cuda", _value("==" + _cuda_of(cu.group(1)), path, line, "lock",
                                               f"{m.group(1)} {ver}", How.INFERRED)))
    return out


# -- images --------------------------------------------------------------------------------------
@functools.cache
def _pytorch_tag_re() -> re.Pattern[str]:
    # pytorch/pytorch:2.1.0-cuda12.1-cudnn8-devel, 1.13.1-cuda11.6-cudnn8-runtime
    return re.compile(r"^(\d+\.\d+(?:\.\d+)?)-cuda(\d+\.\d+)-cudnn\d+-(runtime|devel)$")


@functools.cache
def _cuda_tag_re() -> re.Pattern[str]:
    # nvidia/cuda:12.1.0-cudnn8-devel-ubuntu22.04
    return re.compile(r"^(\d+\.\d+)(?:\.\d+)?-(?:cudnn\d*-)?(base|runtime|devel)\b")


def image(ref: str, path: str, line: int, via: str, column: int = 1) -> "Stated":
    """The versions a container image bundles, from its name and tag: NGC PyTorch (through the
    table in ``parallint/data/versions.yaml``), ``pytorch/pytorch`` and ``nvidia/cuda`` tags."""
    ref = ref.strip().strip("'\"")
    if not ref or "$" in ref or "{" in ref or "@sha256" in ref:
        return []
    name, _, tag = ref.rpartition(":")
    if not name or "/" in tag:
        return []
    name = name.lower().replace("#", "/")  # enroot: nvcr.io#nvidia/pytorch
    if name.startswith("docker://"):
        name = name[len("docker://"):]
    out: "Stated" = []
    src = ref
    if name in ("nvcr.io/nvidia/pytorch", "nvidia/pytorch"):
        row = _v.ngc_pytorch(tag)
        for field, key in (("torch", "version.torch"), ("cuda", "version.cuda"), ("nccl", "version.nccl")):
            if field in row:
                out.append((key, _value("==" + row[field], path, line, via,
                                        f"{src}: {field} {row[field]} (NGC PyTorch release notes)", How.INFERRED, column)))
        if "cuda" in row:
            out.append(("version.cuda_toolkit", _value("==" + row["cuda"], path, line, via,
                                                       f"{src}: CUDA {row['cuda']} (NGC PyTorch release notes)",
                                                       How.INFERRED, column)))
    elif name in ("pytorch/pytorch", "docker.io/pytorch/pytorch"):
        m = _pytorch_tag_re().match(tag)
        if m is not None:
            out.append(("version.torch", _value("==" + m.group(1), path, line, via, f"{src}: torch {m.group(1)}",
                                                How.INFERRED, column)))
            out.append(("version.cuda", _value("==" + m.group(2), path, line, via, f"{src}: CUDA {m.group(2)}",
                                               How.INFERRED, column)))
            if m.group(3) == "devel":
                out.append(("version.cuda_toolkit", _value("==" + m.group(2), path, line, via,
                                                           f"{src}: CUDA {m.group(2)}", How.INFERRED, column)))
    elif name in ("nvidia/cuda", "docker.io/nvidia/cuda", "nvcr.io/nvidia/cuda"):
        m = _cuda_tag_re().match(tag)
        if m is not None and m.group(2) == "devel":
            out.append(("version.cuda_toolkit", _value("==" + m.group(1), path, line, via,
                                                       f"{src}: CUDA {m.group(1)}", How.INFERRED, column)))
    return out


@functools.cache
def _pip_install_re() -> re.Pattern[str]:
    return re.compile(r"\bpip3?\s+install\b([^;&|]*)")


def dockerfile(path: str, text: str) -> "Stated":
    """A Dockerfile's final base image (``FROM``, through earlier stages and ``ARG`` defaults) and
    the packages its ``RUN pip install`` lines pin."""
    lines = text.splitlines()
    logical: list[tuple[int, str]] = []
    i = 0
    while i < len(lines):
        start, raw = i, lines[i]
        while raw.rstrip().endswith("\\") and i + 1 < len(lines):
            i += 1
            raw = raw.rstrip()[:-1] + " " + lines[i]
        i += 1
        if raw.strip() and not raw.lstrip().startswith("#"):
            logical.append((start + 1, raw.strip()))
    args: dict[str, str] = {}
    stages: dict[str, "tuple[str, Stated]"] = {}  # stage name -> its base image and its RUN pins
    final: tuple[str, int] | None = None
    runs: "Stated" = []  # the RUN pins of the current stage (and of the stages it is built on)
    name = ""
    for line, raw in logical:
        word, _, rest = raw.partition(" ")
        word = word.upper()
        if word == "ARG":
            ak, eq, av = rest.strip().partition("=")
            if eq and ak.strip() not in args:
                args[ak.strip()] = av.strip().strip("'\"")
        elif word == "FROM":
            if name:
                stages[name] = (final[0] if final else "", runs)
            toks = [t for t in rest.split() if not t.startswith("--")]
            if not toks:
                continue
            ref = re.sub(r"\$\{?(\w+)\}?", lambda m: args.get(m.group(1), m.group(0)), toks[0])
            name = toks[2] if len(toks) >= 3 and toks[1].lower() == "as" else ""
            if ref in stages:
                ref, inherited = stages[ref]
                runs = list(inherited)
            else:
                runs = []
            final = (ref, line)
        elif word == "RUN":
            for m in _pip_install_re().finditer(rest):
                for tok in m.group(1).split():
                    tok = tok.strip("'\"")
                    if tok.startswith("-") or not re.search(r"[=<>~]", tok):
                        continue
                    runs.extend(requirement(tok, path, line, "dockerfile"))
    stated = list(runs)
    if final is not None:
        ref, line = final
        pinned = {k for k, _ in stated}
        for key, v in image(ref, path, line, "dockerfile"):
            if key not in pinned:  # a RUN pip install replaces what the image bundles
                stated.append((key, v))
    return stated


@functools.cache
def _module_re() -> re.Pattern[str]:
    return re.compile(r"^\s*(?:module|ml)\s+(?:load|add)\s+(.+)$", re.M)


def module_loads(path: str, text: str) -> "Stated":
    """``module load cuda/12.1`` (and ``cudatoolkit/``, ``cuda/12.1.1``): the CUDA toolkit on
    ``PATH``, which compiles extensions (DeepSpeed ops, flash-attn) — not the CUDA torch's own
    wheels run with."""
    out: "Stated" = []
    for m in _module_re().finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        for word in m.group(1).split():
            mm = re.match(r"^(?:cuda|cudatoolkit|cuda-toolkit|nvhpc-cuda)/(\d+\.\d+)(?:\.\d+)*$", word.strip("'\""), re.I)
            if mm is not None:
                out.append(("version.cuda_toolkit", _value("==" + mm.group(1), path, line, "module",
                                                           f"module load {word}")))
    return out


@functools.cache
def _launch_image_re() -> re.Pattern[str]:
    return re.compile(r"(--container-image[= ]\s*|^\s*-?\s*image:\s*|^\s*image_id:\s*(?:docker:)?)(\S+)", re.M)


def names_image(text: str) -> bool:
    """Whether a launch file names a container image for its command (any image, known or not)."""
    return _launch_image_re().search(text) is not None or "--container-name" in text


def launch_images(path: str, text: str) -> "Stated":
    """Images a launch file names for its job: ``srun``/``#SBATCH --container-image`` (pyxis,
    enroot), Kubernetes ``image:``, SkyPilot ``image_id: docker:...``."""
    out: "Stated" = []
    for m in _launch_image_re().finditer(text):
        ref = m.group(2)
        if m.group(1).strip().startswith("image_id") and not m.group(1).rstrip().endswith("docker:") and \
                "docker:" not in m.group(1):
            continue  # a cloud machine image, not a container
        line = text.count("\n", 0, m.start(2)) + 1
        col = m.start(2) - (text.rfind("\n", 0, m.start(2)) + 1) + 1
        out.extend(image(ref, path, line, "image", col))
    return out


def read_all(items: "Iterable[tuple[str, str, str]]") -> "Stated":
    """Facts of ``(kind, display path, text)`` items, kinds as :func:`kind_of` names them."""
    out: "Stated" = []
    for kind, path, text in items:
        out.extend(read(kind, path, text)[0])
    return out


def read(kind: str, path: str, text: str) -> "tuple[Stated, list[str]]":
    """The facts of one version file of ``kind``, and the files it includes."""
    if kind == "requirements":
        return requirements_txt(path, text)
    fn = {"pyproject": pyproject, "setup_cfg": setup_cfg, "setup_py": setup_py, "conda": environment_yml,
          "lock": lock_file, "dockerfile": dockerfile}.get(kind)
    return (fn(path, text) if fn is not None else []), []


def kind_of(name: str) -> str | None:
    """Which version file a file name is (``requirements-gpu.txt`` -> requirements), or None."""
    low = name.lower()
    if low.startswith("requirements") and low.endswith((".txt", ".in")):
        return "requirements"
    if low == "pyproject.toml":
        return "pyproject"
    if low == "setup.cfg":
        return "setup_cfg"
    if low == "setup.py":
        return "setup_py"
    if low in ("environment.yml", "environment.yaml", "conda.yml", "conda.yaml") or \
            (low.startswith("environment") and low.endswith((".yml", ".yaml"))):
        return "conda"
    if low in ("uv.lock", "poetry.lock"):
        return "lock"
    if low == "dockerfile" or low.startswith("dockerfile.") or low.endswith(".dockerfile"):
        return "dockerfile"
    return None
