"""Version facts: which versions of torch, CUDA, NCCL, transformers ... can reach a job.

A version fact (``version.torch``, ``version.cuda`` ... in :mod:`parallint.model.vocab`) is a
:class:`parallint.model.facts.Value` whose value is a specifier text: ``"==1.13.1"``,
``">=2.1,<2.4"``, ``""`` (named without a version: any). Each value is one statement, with its
span and origin (``origin.via``: ``requirements``, ``pyproject``, ``setup``, ``conda``, ``lock``,
``dockerfile``, ``image``, ``module`` or ``installed``; the readers in
:mod:`parallint.readers.versions` and the linker's :mod:`parallint.link.versions` state them, and
``parallint preflight`` can state what is installed with ``origin.via == "installed"``).

Several statements of one package are **alternatives**: the job runs one of them, parallint does
not know which. So a rule may conclude something only when it holds for every version of every
statement (:func:`every`); an unknown statement (a URL, ``${TORCH_VERSION}``) means nothing can be
concluded. Versions are compared by their release numbers only: ``2.1.0a0+32f93b1`` (an NGC build)
counts as ``2.1.0``, a local ``+cu118`` is not part of the number.

The tables of what images and PyTorch releases bundle are ``parallint/data/versions.yaml``
(:func:`table`).
"""

from __future__ import annotations

import functools
import re

TYPE_CHECKING = False  # typing is not imported at run time (start-up, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Any, Iterable

    from parallint.model.facts import Value

    Release = tuple[int, int, int, int]
    #: an interval of releases: (low, low included, high, high included); None is unbounded
    Interval = tuple["Release | None", bool, "Release | None", bool]

#: the packages parallint states versions of: vocabulary key -> the distribution names that mean it
PACKAGES: dict[str, tuple[str, ...]] = {
    "version.torch": ("torch", "pytorch"),
    "version.cuda": (),  # the CUDA runtime torch runs with (stated from images, wheels, tables)
    "version.cuda_toolkit": (),  # the CUDA toolkit on PATH (module load, devel images): compiled extensions
    "version.nccl": ("nvidia-nccl-cu11", "nvidia-nccl-cu12", "nccl"),
    "version.transformers": ("transformers",),
    "version.deepspeed": ("deepspeed",),
    "version.accelerate": ("accelerate",),
    "version.flash_attn": ("flash-attn", "flash_attn"),
}

#: distribution name (normalised) -> vocabulary key
BY_DISTRIBUTION: dict[str, str] = {d: k for k, ds in PACKAGES.items() for d in ds}


def normalise(name: str) -> str:
    """A distribution name as PEP 503 compares it (``Flash_Attn`` -> ``flash-attn``)."""
    return re.sub(r"[-_.]+", "-", name.strip()).lower()


def key_of(distribution: str) -> str | None:
    """The version fact a distribution's version is (``torch`` -> ``version.torch``), or None."""
    n = normalise(distribution)
    return BY_DISTRIBUTION.get(n) or BY_DISTRIBUTION.get(n.replace("-", "_"))


@functools.cache
def _release_re() -> re.Pattern[str]:
    return re.compile(r"^v?(\d+(?:\.\d+)*)")


def release(text: str) -> "Release | None":
    """The release numbers of a version text, padded to four (``2.1.0a0+x`` -> (2, 1, 0, 0))."""
    m = _release_re().match(text.strip())
    if m is None:
        return None
    parts = [int(p) for p in m.group(1).split(".")[:4]]
    if len(parts) > 4 or any(p > 10**6 for p in parts):
        return None
    while len(parts) < 4:
        parts.append(0)
    return (parts[0], parts[1], parts[2], parts[3])


def _bump(text: str, depth: int) -> "Release | None":
    """The release after every ``text`` ``depth`` numbers long: ``_bump("2.1", 2)`` = 2.2."""
    r = release(text)
    if r is None or depth < 1:
        return None
    parts = list(r[:depth])
    parts[-1] += 1
    while len(parts) < 4:
        parts.append(0)
    return (parts[0], parts[1], parts[2], parts[3])


def _depth(text: str) -> int:
    m = _release_re().match(text.strip())
    return len(m.group(1).split(".")) if m else 0


ANY: "Interval" = (None, True, None, True)


@functools.cache
def _clause_re() -> re.Pattern[str]:
    # PEP 440 operators, poetry's ^ and ~, conda's single =
    return re.compile(r"^\s*(===|==|~=|!=|<=|>=|<|>|\^|~|=)?\s*(v?[0-9][0-9A-Za-z.+*!_-]*)\s*$")


def interval(spec: str) -> "Interval | None":
    """The releases a specifier text allows, or None when it cannot be read. ``""`` and ``*`` are
    any version; clauses separated by ``,`` (or conda's spaces) all hold; ``!=`` is ignored (it
    only makes the set smaller, so a conclusion about the whole set still holds)."""
    text = spec.strip()
    if text in ("", "*"):
        return ANY
    if "|" in text:
        return None  # alternatives (conda, poetry): not followed
    lo: "Release | None" = None
    lo_in = True
    hi: "Release | None" = None
    hi_in = True

    def raise_lo(r: "Release | None", inc: bool) -> None:
        nonlocal lo, lo_in
        if r is not None and (lo is None or r > lo or (r == lo and not inc)):
            lo, lo_in = r, inc

    def lower_hi(r: "Release | None", inc: bool) -> None:
        nonlocal hi, hi_in
        if r is not None and (hi is None or r < hi or (r == hi and not inc)):
            hi, hi_in = r, inc

    clauses = [c for c in re.split(r"[,\s]+(?=[<>=!~^0-9])", text) if c.strip()]
    for clause in clauses:
        m = _clause_re().match(clause)
        if m is None:
            return None
        op, ver = m.group(1) or "==", m.group(2)
        star = ver.endswith(".*") or ver.endswith("*")
        base = ver.rstrip("*").rstrip(".")
        r = release(base)
        if r is None:
            return None
        d = _depth(base)
        if op in ("==", "===", "=") and (star or op == "="):
            # a wildcard, or conda's `=1.13` (every 1.13.x)
            raise_lo(r, True)
            lower_hi(_bump(base, d), False)
        elif op in ("==", "==="):
            raise_lo(r, True)
            lower_hi(r, True)
        elif op == "!=":
            continue
        elif op == ">=":
            raise_lo(r, True)
        elif op == ">":
            raise_lo(r, False)
        elif op == "<=":
            lower_hi(r, True)
        elif op == "<":
            lower_hi(r, False)
        elif op == "~=":
            if d < 2:
                return None
            raise_lo(r, True)
            lower_hi(_bump(base, d - 1), False)
        elif op == "^":  # poetry: the left-most non-zero number is fixed
            raise_lo(r, True)
            nums = list(r[:max(d, 1)])
            first = next((i for i, n in enumerate(nums) if n != 0), len(nums) - 1)
            lower_hi(_bump(base, first + 1), False)
        elif op == "~":  # poetry: ~1.2.3 is >=1.2.3,<1.3; ~1 is >=1,<2
            raise_lo(r, True)
            lower_hi(_bump(base, 2 if d >= 2 else 1), False)
    if lo is not None and hi is not None and (lo > hi or (lo == hi and not (lo_in and hi_in))):
        return None  # empty: something parallint did not read right
    return (lo, lo_in, hi, hi_in)


def values_known(values: "Iterable[Value]") -> "list[Interval] | None":
    """The intervals of ``values`` (each one statement), or None when one of them cannot be read
    (unknown, a URL, a placeholder) or there are none."""
    out: "list[Interval]" = []
    for v in values:
        if not v.known or not isinstance(v.value, str):
            return None
        iv = interval(v.value)
        if iv is None:
            return None
        out.append(iv)
    return out or None


def at_least(values: "Iterable[Value]", floor: str) -> bool:
    """Every version of every statement is at least ``floor`` (release numbers)."""
    f = release(floor)
    ivs = values_known(values)
    if f is None or ivs is None:
        return False
    return all(lo is not None and (lo >= f) for lo, _li, _hi, _hi_in in ivs)


def below(values: "Iterable[Value]", ceiling: str) -> bool:
    """Every version of every statement is below ``ceiling`` (release numbers)."""
    c = release(ceiling)
    ivs = values_known(values)
    if c is None or ivs is None:
        return False
    return all(hi is not None and (hi < c or (hi == c and not hi_in)) for _lo, _li, hi, hi_in in ivs)


def within(values: "Iterable[Value]", low: str, high: str) -> bool:
    """Every version of every statement is in ``[low, high)``."""
    return at_least(values, low) and below(values, high)


def exact(values: "Iterable[Value]") -> "list[Release] | None":
    """The releases of ``values`` when each statement is one release (``==2.19.3``), else None."""
    ivs = values_known(values)
    if ivs is None:
        return None
    out: "list[Release]" = []
    for lo, lo_in, hi, hi_in in ivs:
        if lo is None or lo != hi or not (lo_in and hi_in):
            return None
        out.append(lo)
    return out


def minors(values: "Iterable[Value]", known: "Iterable[str]") -> "list[str] | None":
    """The minor versions among ``known`` (``"2.1"``, contiguous) that some statement of ``values``
    reaches, or None when a statement reaches outside them or cannot be read."""
    ivs = values_known(values)
    rows = sorted((r, k) for k in known if (r := release(k)) is not None)
    if ivs is None or not rows:
        return None
    first, last = rows[0][0], rows[-1][0]
    end = (last[0], last[1] + 1, 0, 0)
    out: list[str] = []
    for lo, _lo_in, hi, hi_in in ivs:
        if lo is None or hi is None or lo < first or hi > end or (hi == end and hi_in):
            return None
        for r, k in rows:
            nxt = (r[0], r[1] + 1, 0, 0)
            if lo < nxt and (r < hi or (r == hi and hi_in)) and k not in out:
                out.append(k)
    return out


def show(values: "Iterable[Value]") -> str:
    """The statements in words, for messages: ``torch==1.13.1 (requirements.txt:3)``."""
    parts = []
    for v in values:
        where = f" ({v.span.path}:{v.span.line})" if v.span is not None else ""
        parts.append((v.source or str(v.value)) + where)
    return ", ".join(dict.fromkeys(parts))


# -- the bundled tables (parallint/data/versions.yaml) ------------------------------------------
@functools.cache
def table() -> "dict[str, Any]":
    """``parallint/data/versions.yaml``: the NGC PyTorch containers, the PyTorch releases and the
    GPU architectures."""
    import yaml

    from parallint.data import read_text

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    data = yaml.load(read_text("parallint.data", "versions.yaml"), Loader=loader)
    return data if isinstance(data, dict) else {}


def _row(section: str, key: str) -> "dict[str, Any]":
    row = table().get(section, {}).get(key)
    if not isinstance(row, dict):
        return {}
    unsure = set(row.get("uncertain") or ())
    return {k: v for k, v in row.items() if k not in unsure and k != "uncertain"}


def ngc_pytorch(tag: str) -> "dict[str, str]":
    """What ``nvcr.io/nvidia/pytorch:<tag>`` bundles (``23.10-py3``): torch, cuda, nccl (the
    fields the table is sure of), or ``{}``."""
    m = re.match(r"^(\d\d\.\d\d)(?:-py3)?(?:-igpu|-sdk)?$", tag.strip())
    return {k: str(v) for k, v in _row("ngc_pytorch", m.group(1)).items()} if m else {}


def pytorch_release(version: str) -> "dict[str, Any]":
    """What the PyTorch release of ``version``'s minor publishes (cuda_builds, pypi_cuda, nccl)."""
    r = release(version)
    return _row("pytorch", f"{r[0]}.{r[1]}") if r is not None else {}


def pytorch_minors() -> list[str]:
    return list(table().get("pytorch", {}))


def gpu_arch(name: str) -> "dict[str, str]":
    """The compute capability and first CUDA of a GPU name (a catalogue name or an alias), or
    ``{}``."""
    rows = table().get("gpus", {})
    if name in rows:
        return {"name": name, **{k: str(v) for k, v in rows[name].items() if k != "aliases"}}
    key = re.sub(r"[\s_.\-/:]+", "", name.lower())
    for gname, row in rows.items():
        for alias in row.get("aliases") or ():
            if re.sub(r"[\s_.\-/:]+", "", str(alias).lower()) == key:
                return {"name": gname, **{k: str(v) for k, v in row.items() if k != "aliases"}}
    return {}
