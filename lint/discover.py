"""Expanding the command line's paths into files: directories walked, `.gitignore` and the
configured `exclude`/`extend-exclude` honoured, symlink loops and tool folders avoided."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

DEFAULT_EXCLUDE = (
    ".git", ".hg", ".svn", ".venv", "venv", ".tox", ".nox", "node_modules", "__pycache__",
    ".mypy_cache", ".pytest_cache", ".ruff_cache", ".parallint_cache", "site-packages", ".eggs", "*.egg-info",
)
MAX_FILES = 200_000


@dataclass(frozen=True)
class Candidate:
    abspath: Path
    display: str  # relative to the working directory when below it, '/'-separated
    explicit: bool  # named on the command line (not found by walking a folder)


def display_path(p: Path, cwd: Path) -> str:
    try:
        return p.relative_to(cwd).as_posix()
    except ValueError:
        rel = os.path.relpath(p, cwd)
        return Path(rel).as_posix() if not rel.startswith("..") or len(rel) < len(str(p)) else p.as_posix()


def _glob_to_regex(pattern: str) -> str:
    """Translate a gitignore-style glob (``*``, ``**``, ``?``, ``[...]``) into a regex body."""
    out, i, n = [], 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "*":
            if pattern[i : i + 2] == "**":
                if pattern[i : i + 3] == "**/":
                    out.append("(?:.*/)?")
                    i += 3
                    continue
                out.append(".*")
                i += 2
                continue
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            j = pattern.find("]", i + 1)
            if j == -1:
                out.append(re.escape(c))
            else:
                body = pattern[i + 1 : j].replace("\\", "\\\\")
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append(f"[{body}]")
                i = j
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


@dataclass(frozen=True)
class _Pattern:
    regex: re.Pattern
    negate: bool
    dir_only: bool


def compile_patterns(lines: list[str]) -> list[_Pattern]:
    pats = []
    for raw in lines:
        line = raw.rstrip("\n").rstrip()
        if not line or line.startswith("#"):
            continue
        negate = line.startswith("!")
        if negate:
            line = line[1:]
        if line.startswith("\\"):
            line = line[1:]
        dir_only = line.endswith("/")
        line = line.rstrip("/")
        if not line:
            continue
        anchored = "/" in line
        line = line.lstrip("/")
        body = _glob_to_regex(line)
        rx = ("^" if anchored else "^(?:.*/)?") + body + "(?:/.*)?$"
        pats.append(_Pattern(re.compile(rx), negate, dir_only))
    return pats


def _matches(pats: list[_Pattern], rel: str, is_dir: bool) -> bool | None:
    """True = ignored, False = re-included, None = no pattern says anything."""
    verdict = None
    for p in pats:
        if p.dir_only and not is_dir:
            # a folder-only pattern (`build/`) reaches a file only through one of its parents
            if not _parent_matches(p, rel):
                continue
        elif not p.regex.match(rel):
            continue
        verdict = not p.negate
    return verdict


def _parent_matches(p: _Pattern, rel: str) -> bool:
    parts = rel.split("/")
    return any(p.regex.match("/".join(parts[:k])) for k in range(1, len(parts)))


@lru_cache(maxsize=4096)
def _gitignore(dirpath: str) -> tuple[_Pattern, ...]:
    try:
        with open(os.path.join(dirpath, ".gitignore"), encoding="utf-8", errors="replace") as fh:
            return tuple(compile_patterns(fh.readlines()))
    except OSError:
        return ()


@lru_cache(maxsize=4096)
def _git_root(start: Path) -> Path | None:
    for d in (start, *start.parents):
        if (d / ".git").exists():
            return d
    return None


class Excluder:
    """Decides whether a path is excluded by config patterns or by the .gitignore files above it."""

    def __init__(self, patterns: list[str], base: Path, respect_gitignore: bool = True) -> None:
        self.patterns = compile_patterns(list(DEFAULT_EXCLUDE) + list(patterns))
        self.base = base
        self.respect_gitignore = respect_gitignore

    def excluded(self, path: Path, is_dir: bool) -> bool:
        try:
            rel = path.relative_to(self.base).as_posix()
        except ValueError:
            rel = path.name
        if rel != "." and _matches(self.patterns, rel, is_dir):
            return True
        if not self.respect_gitignore:
            return False
        root = _git_root(path.parent if not is_dir else path)
        if root is None:
            # not in a repository: a .gitignore in the folders walked still applies
            root = self.base if str(path).startswith(str(self.base)) else path.parent
        verdict = None
        d = path.parent
        chain = []
        while True:
            chain.append(d)
            if d == root or d == d.parent:
                break
            d = d.parent
        for folder in reversed(chain):
            pats = _gitignore(str(folder))
            if pats:
                try:
                    r = path.relative_to(folder).as_posix()
                except ValueError:
                    continue
                v = _matches(list(pats), r, is_dir)
                if v is not None:
                    verdict = v
        return bool(verdict)


def discover(paths: list[str], excluder: Excluder, cwd: Path, errors: list[str]) -> list[Candidate]:
    """Files below ``paths``; a path that does not exist goes to ``errors`` as a one-line message."""
    out: list[Candidate] = []
    seen: set[Path] = set()
    for arg in paths:
        p = Path(arg)
        ap = (cwd / p) if not p.is_absolute() else p
        ap = Path(os.path.abspath(ap))
        if not ap.exists() and not ap.is_symlink():
            errors.append(f"{arg}: no such file or directory")
            continue
        if ap.is_dir():
            _walk(ap, excluder, cwd, out, seen)
        else:
            if ap not in seen and _is_explicit_ok(ap, excluder):
                seen.add(ap)
                out.append(Candidate(ap, display_path(ap, cwd), True))
    return out


def _is_explicit_ok(ap: Path, excluder: Excluder) -> bool:
    """A file named on the command line is checked unless the *configured* excludes name it
    (.gitignore does not hide a file the user names explicitly)."""
    try:
        rel = ap.relative_to(excluder.base).as_posix()
    except ValueError:
        rel = ap.name
    return not _matches(excluder.patterns, rel, False)


def _walk(top: Path, excluder: Excluder, cwd: Path, out: list[Candidate], seen: set[Path]) -> None:
    visited_dirs: set[tuple[int, int]] = set()
    for dirpath, dirnames, filenames in os.walk(top, followlinks=True):
        try:
            st = os.stat(dirpath)
            key = (st.st_dev, st.st_ino)
        except OSError:
            dirnames[:] = []
            continue
        if key in visited_dirs:  # symlink loop
            dirnames[:] = []
            continue
        visited_dirs.add(key)
        d = Path(dirpath)
        dirnames[:] = sorted(x for x in dirnames if not excluder.excluded(d / x, True))
        for fn in sorted(filenames):
            fp = d / fn
            if fp in seen or excluder.excluded(fp, False):
                continue
            seen.add(fp)
            out.append(Candidate(fp, display_path(fp, cwd), False))
            if len(out) > MAX_FILES:
                return
