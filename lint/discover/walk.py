"""Expanding the command line's paths into files: directories walked, `.gitignore` and the
configured `exclude`/`extend-exclude` honoured, symlink loops and tool folders avoided."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from parallint.util.record import FrozenRecord

TYPE_CHECKING = False  # typing is not imported at run time (start-up, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Callable, Final

DEFAULT_EXCLUDE = (
    ".git", ".hg", ".svn", ".venv", "venv", ".tox", ".nox", "node_modules", "__pycache__",
    ".mypy_cache", ".pytest_cache", ".ruff_cache", ".parallint_cache", "site-packages", ".eggs", "*.egg-info",
)
MAX_FILES = 200_000


class Candidate(FrozenRecord):
    _fields = ("abspath", "display", "explicit")
    abspath: Final[Path]
    display: Final[str]  # relative to the working directory when below it, '/'-separated
    explicit: Final[bool]  # named on the command line (not found by walking a folder)

    def __init__(self, abspath: Path, display: str, explicit: bool) -> None:
        self.abspath = abspath
        self.display = display
        self.explicit = explicit


def display_path(p: Path, cwd: Path) -> str:
    try:
        return p.relative_to(cwd).as_posix()
    except ValueError:
        rel = os.path.relpath(p, cwd)
        return Path(rel).as_posix() if not rel.startswith("..") or len(rel) < len(str(p)) else p.as_posix()


# ------------------------------------------------------------------------------- glob patterns
# Patterns come from untrusted .gitignore files, so they are not translated to regexes (a pattern
# like `a*a*a*...b` backtracks exponentially, `[z-a]` does not compile): a pattern is split into
# path segments and matched by a two-pointer wildcard match per segment (time linear in the
# pattern times the name) and a small table over the segments for `**`.
_STAR, _ANY = "*", "?"


def _segment_tokens(seg: str) -> list | None:
    """A segment glob as tokens: '*', '?', a literal character, or (negate, ranges) for a class.
    None when the pattern can never match (an inverted range such as `[z-a]`)."""
    out: list = []
    i, n = 0, len(seg)
    while i < n:
        c = seg[i]
        if c == "*":
            if not out or out[-1] != _STAR:  # `**` inside a segment is one star
                out.append(_STAR)
        elif c == "?":
            out.append(_ANY)
        elif c == "\\" and i + 1 < n:
            i += 1
            out.append(("lit", seg[i]))
        elif c == "[":
            j = i + 1
            negate = j < n and seg[j] in "!^"
            if negate:
                j += 1
            ranges: list[tuple[str, str]] = []
            first = True
            while j < n and (seg[j] != "]" or first):
                first = False
                a = seg[j]
                if a == "\\" and j + 1 < n:
                    j += 1
                    a = seg[j]
                if j + 2 < n and seg[j + 1] == "-" and seg[j + 2] != "]":
                    b = seg[j + 2]
                    if b == "\\" and j + 3 < n:
                        j += 1
                        b = seg[j + 2]
                    if a > b:
                        return None  # git: an inverted range matches nothing
                    ranges.append((a, b))
                    j += 3
                else:
                    ranges.append((a, a))
                    j += 1
            if j >= n:  # no closing bracket: a literal '['
                out.append(("lit", "["))
            else:
                out.append(("cls", negate, tuple(ranges)))
                i = j
        else:
            out.append(("lit", c))
        i += 1
    return out


def _one(tok, ch: str) -> bool:
    if tok == _ANY:
        return True
    if tok[0] == "lit":
        return tok[1] == ch
    hit = any(a <= ch <= b for a, b in tok[2])
    return hit != tok[1]


def _match_segment(toks: list, name: str) -> bool:
    """Wildcard match of one path segment: O(len(toks) * len(name)), no backtracking blow-up."""
    ti = ni = 0
    star_t, star_n = -1, 0
    nt, nn = len(toks), len(name)
    while ni < nn:
        if ti < nt and toks[ti] != _STAR and _one(toks[ti], name[ni]):
            ti += 1
            ni += 1
        elif ti < nt and toks[ti] == _STAR:
            star_t, star_n = ti, ni
            ti += 1
        elif star_t != -1:
            ti = star_t + 1
            star_n += 1
            ni = star_n
        else:
            return False
    while ti < nt and toks[ti] == _STAR:
        ti += 1
    return ti == nt


_DSTAR = "**"


class _Glob:
    """A gitignore pattern body: ``anchored`` (it had a '/' before its end) and its segments,
    each a token list or ``**`` (any number of folders)."""

    __slots__ = ("anchored", "segs", "trailing")

    def __init__(self, anchored: bool, segs: list) -> None:
        self.anchored = anchored
        # collapse runs of `**` (`**/**/**/x` is `**/x`)
        collapsed: list = []
        for s in segs:
            if s == _DSTAR and collapsed and collapsed[-1] == _DSTAR:
                continue
            collapsed.append(s)
        self.trailing = bool(collapsed) and collapsed[-1] == _DSTAR
        self.segs = collapsed

    def match(self, rel: str) -> bool:
        """Whether the path (or one of the folders it is in) matches."""
        parts = rel.split("/")
        starts = range(1) if self.anchored else range(len(parts))
        for start in starts:
            if self._prefix(parts, start):
                return True
        return False

    def _prefix(self, parts: list[str], start: int) -> bool:
        # reach[j] = the pattern's first i segments can match parts[start:j]; a pattern matches a
        # path when it matches the path or a folder above it (its first k parts, k >= 1)
        segs = self.segs
        n = len(parts)
        cur = {start}
        for i, seg in enumerate(segs):
            nxt: set[int] = set()
            if seg == _DSTAR:
                lo = min(cur) if cur else n + 1
                last = i == len(segs) - 1
                for j in range(lo + (1 if last else 0), n + 1):
                    nxt.add(j)
            else:
                for j in cur:
                    if j < n and _match_segment(seg, parts[j]):
                        nxt.add(j + 1)
            if not nxt:
                return False
            cur = nxt
        return any(j > start for j in cur)


def compile_glob(pattern: str) -> "_Glob | None":
    """A gitignore-style glob (``*``, ``**``, ``?``, ``[...]``); None when it can never match."""
    anchored = "/" in pattern
    segs: list = []
    for part in pattern.lstrip("/").split("/"):
        if part == "**":
            segs.append(_DSTAR)
            continue
        toks = _segment_tokens(part)
        if toks is None:
            return None
        segs.append(toks)
    if segs and segs[0] == _DSTAR:
        anchored = True  # `**/x` already says "at any depth"
    return _Glob(anchored, segs)


class _Pattern(FrozenRecord):
    _fields = ("glob", "negate", "dir_only")
    glob: Final[_Glob]
    negate: Final[bool]
    dir_only: Final[bool]

    def __init__(self, glob: _Glob, negate: bool, dir_only: bool) -> None:
        self.glob = glob
        self.negate = negate
        self.dir_only = dir_only

    @property
    def regex(self) -> _Glob:
        """Kept for callers of the regex era: ``regex.match(path)`` is truthy when it matches."""
        return self.glob


MAX_PATTERN = 1024  # longer .gitignore lines are ignored (no real pattern is that long)


def compile_patterns(lines: list[str]) -> list[_Pattern]:
    pats = []
    for raw in lines:
        line = raw.rstrip("\n").rstrip()
        if not line or line.startswith("#") or len(line) > MAX_PATTERN:
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
        g = compile_glob(line)
        if g is not None:
            pats.append(_Pattern(g, negate, dir_only))
    return pats


def _matches(pats: list[_Pattern], rel: str, is_dir: bool) -> bool | None:
    """True = ignored, False = re-included, None = no pattern says anything."""
    verdict = None
    for p in pats:
        if p.dir_only and not is_dir:
            # a folder-only pattern (`build/`) reaches a file only through one of its parents
            if not _parent_matches(p, rel):
                continue
        elif not p.glob.match(rel):
            continue
        verdict = not p.negate
    return verdict


def _parent_matches(p: _Pattern, rel: str) -> bool:
    parts = rel.split("/")
    return any(p.glob.match("/".join(parts[:k])) for k in range(1, len(parts)))


def _gitignore(dirpath: str) -> tuple[_Pattern, ...]:
    """The patterns of ``dirpath/.gitignore`` (read at each call: an :class:`Excluder` keeps them
    for its run, so that an edited .gitignore counts in the next run of a long-lived process)."""
    path = os.path.join(dirpath, ".gitignore")
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except (OSError, ValueError):
        return ()
    try:  # a regular file only (a FIFO named .gitignore would block), and at most 1 MB of it
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return ()
        data = os.read(fd, 1 << 20)
    except OSError:
        return ()
    finally:
        os.close(fd)
    from parallint.util.deps import note_read

    note_read(path, data)
    return tuple(compile_patterns(data.decode("utf-8", errors="replace").splitlines()))


def _git_root(start: Path) -> Path | None:
    for d in (start, *start.parents):
        if _has_git(d):
            return d
    return None


def _has_git(d: Path) -> bool:
    try:
        os.stat(d / ".git")
        return True
    except (OSError, ValueError):  # missing, or a folder we may not look into
        return False


# ----------------------------------------------------------------------- matching per folder
# A walk asks about every name in every folder. What the names of one folder share (the
# folder's path against each pattern) is worked out once per folder (:class:`_Folder`); each
# name then costs one cheap test per pattern. The verdicts are those of
# :meth:`Excluder.excluded_slow`, which stays the reference (tests compare the two).

def _segment_matcher(toks: list) -> Callable[[str], bool]:
    """A fast test for one segment's token list (plain string tests where the glob is a literal,
    or literals around one or two ``*``); the general matcher otherwise."""
    lits = [t for t in toks if t != _STAR]
    if all(type(t) is tuple and t[0] == "lit" for t in lits):
        stars = [i for i, t in enumerate(toks) if t == _STAR]
        if not stars:
            whole = "".join(t[1] for t in toks)
            return whole.__eq__
        if stars == [0] and len(toks) > 1:
            tail = "".join(t[1] for t in toks[1:])
            return lambda name: name.endswith(tail)
        if stars == [len(toks) - 1] and len(toks) > 1:
            head = "".join(t[1] for t in toks[:-1])
            return lambda name: name.startswith(head)
        if len(toks) > 2 and stars == [0, len(toks) - 1]:
            mid = "".join(t[1] for t in toks[1:-1])
            return lambda name: mid in name
    return lambda name: _match_segment(toks, name)


class _Fast:
    """One pattern prepared for matching per folder: ``kind`` 1 = one unanchored segment, 2 =
    anchored without ``**`` (``k`` segments, one test each), 0 = anything else (the glob)."""

    __slots__ = ("glob", "kind", "k", "tests", "dir_only", "negate")

    def __init__(self, pat: _Pattern) -> None:
        g = pat.glob
        self.glob = g
        self.dir_only = pat.dir_only
        self.negate = pat.negate
        self.tests: list[Callable[[str], bool]] = []
        self.kind, self.k = 0, 0
        if any(seg == _DSTAR for seg in g.segs):
            return
        if not g.anchored and len(g.segs) == 1:
            self.kind, self.k, self.tests = 1, 1, [_segment_matcher(g.segs[0])]
        elif g.anchored and g.segs:
            self.kind, self.k, self.tests = 2, len(g.segs), [_segment_matcher(t) for t in g.segs]

    def hit(self, name: str, ready: bool, path: str) -> bool:
        """Whether the pattern matches ``name`` (at ``path``) in a folder it does not already
        match: ``ready`` is the folder being the pattern's first k-1 segments (kind 2)."""
        if self.kind == 1:
            return self.tests[0](name)
        if self.kind == 2:
            return ready and self.tests[-1](name)
        return bool(self.glob.match(path))


class _Set:
    """One pattern list (the configured excludes, or one .gitignore) seen from one folder: the
    folder's path relative to the patterns' folder, and per pattern whether it matches that path
    or a folder above it, and (anchored patterns) whether the path is its first k-1 segments."""

    __slots__ = ("fast", "rel", "depth", "matched", "prefix", "ready")

    def __init__(self, fast: "list[_Fast]", parts: list[str]) -> None:
        self.fast = fast
        self.rel = "/".join(parts)
        n = self.depth = len(parts)
        self.matched = [bool(parts) and f.glob.match(self.rel) for f in fast]
        # anchored: the path so far is the pattern's first segments
        self.prefix = [f.kind == 2 and n < f.k and all(t(x) for t, x in zip(f.tests, parts)) for f in fast]
        self.ready = [p and n == f.k - 1 for f, p in zip(fast, self.prefix)]

    def child(self, name: str) -> "_Set":
        """The same patterns seen from the folder ``name`` below this one."""
        out = _Set.__new__(_Set)
        out.fast = self.fast
        out.rel = f"{self.rel}/{name}" if self.rel else name
        n = out.depth = self.depth + 1
        matched, prefix, ready = [], [], []
        for f, m, p, r in zip(self.fast, self.matched, self.prefix, self.ready):
            hit = m or f.hit(name, r, out.rel)
            p = p and n <= f.k - 1 and f.tests[n - 1](name) if f.kind == 2 else False
            matched.append(hit)
            prefix.append(p)
            ready.append(p and n == f.k - 1)
        out.matched, out.prefix, out.ready = matched, prefix, ready
        return out

    def verdict(self, name: str, is_dir: bool) -> bool | None:
        """:func:`_matches` for ``name`` in the folder: True ignored, False re-included, None
        when no pattern says anything."""
        verdict = None
        path = f"{self.rel}/{name}" if self.rel else name
        for f, m, ready in zip(self.fast, self.matched, self.ready):
            if f.dir_only and not is_dir:
                hit = m  # a folder-only pattern reaches a file through a folder above it
            else:
                hit = m or f.hit(name, ready, path)
            if hit:
                verdict = not f.negate
        return verdict


class Excluder:
    """Decides whether a path is excluded by config patterns or by the .gitignore files above it.
    One instance serves one run: each .gitignore is read once, and what the names of one folder
    share is worked out once."""

    def __init__(self, patterns: list[str], base: Path, respect_gitignore: bool = True,
                 include_tests: bool = False) -> None:
        self.patterns = compile_patterns(list(DEFAULT_EXCLUDE) + list(patterns))
        self.base = base
        self.respect_gitignore = respect_gitignore
        self.include_tests = include_tests
        self._fast = [_Fast(p) for p in self.patterns]
        self._ignores: dict[str, tuple[tuple[_Pattern, ...], list[_Fast]]] = {}
        self._roots: dict[Path, Path | None] = {}
        self._folders: dict[Path, "tuple[_Set, list[_Set]] | None"] = {}

    def _ignore(self, folder: str) -> tuple[tuple[_Pattern, ...], list[_Fast]]:
        hit = self._ignores.get(folder)
        if hit is None:
            pats = _gitignore(folder)
            hit = self._ignores[folder] = (pats, [_Fast(p) for p in pats])
        return hit

    def _root(self, start: Path) -> Path | None:
        """:func:`_git_root` of ``start``, each folder looked at once per run (a folder with no
        ``.git`` has its parent's root)."""
        if start in self._roots:
            return self._roots[start]
        todo = []
        d = start
        while True:
            if d in self._roots:
                found = self._roots[d]
                break
            if _has_git(d):
                found = self._roots[d] = d
                break
            todo.append(d)
            if d == d.parent:
                found = None
                break
            d = d.parent
        for x in todo:
            self._roots[x] = found
        return found

    def _chain(self, path: Path, is_dir: bool) -> list[Path]:
        """The folders whose .gitignore applies to ``path``, innermost first."""
        root = self._root(path.parent if not is_dir else path)
        if root is None:
            # not in a repository: a .gitignore in the folders walked still applies
            root = self.base if str(path).startswith(str(self.base)) else path.parent
        d = path.parent
        chain = []
        while True:
            chain.append(d)
            if d == root or d == d.parent:
                break
            d = d.parent
        return chain

    def excluded(self, path: Path, is_dir: bool) -> bool:
        shared = self._folder(path.parent)
        if shared is None or path == self.base or (is_dir and self.respect_gitignore and _has_git(path)):
            return self.excluded_slow(path, is_dir)
        cfg, chain = shared
        name = path.name
        if cfg.verdict(name, is_dir):
            return True
        if not self.respect_gitignore:
            return False
        verdict = None
        for s in chain:
            v = s.verdict(name, is_dir)
            if v is not None:
                verdict = v
        return bool(verdict)

    def _folder(self, d: Path) -> "tuple[_Set, list[_Set]] | None":
        """What the verdicts for the names in folder ``d`` share; None where the names of ``d``
        may not share it (then :meth:`excluded_slow` decides each)."""
        if d in self._folders:
            return self._folders[d]
        base, sd = str(self.base), str(d)
        # outside a repository the .gitignore root is decided by a string test on the whole
        # path: a folder whose names may pass it while the folder does not is left to the slow way
        if (not sd.startswith(base) and base.startswith(sd)) or d == d.parent:
            self._folders[d] = None
            return None
        up = self._folders.get(d.parent)  # the folder above, when it was asked first (a walk)
        if up is None and d.parent not in self._folders and sd.startswith(base) and sd != base:
            # asked for a deep folder first (the link index asks for the few files that name a
            # target): its parents are worked out first, so each folder costs one step from its parent
            up = self._folder(d.parent)
        try:
            rel = d.relative_to(self.base).as_posix()
            if up is not None and rel != "." and "/" in rel:
                cfg = up[0].child(d.name)
            else:
                cfg = _Set(self._fast, [] if rel == "." else rel.split("/"))
        except ValueError:
            cfg = _Set(self._fast, [])  # outside the base a name is matched on its own
        chain: list[_Set] = []
        if self.respect_gitignore:
            folders = self._chain(d / "_", False)
            if up is not None and folders[1:] == self._chain(d.parent / "_", False):
                chain = [x.child(d.name) for x in up[1]]
                pats, fast = self._ignore(str(d))
                if pats:
                    chain.append(_Set(fast, []))
            else:
                for folder in reversed(folders):
                    pats, fast = self._ignore(str(folder))
                    if pats:
                        r = d.relative_to(folder).as_posix()
                        chain.append(_Set(fast, [] if r == "." else r.split("/")))
        out = (cfg, chain)
        self._folders[d] = out
        return out

    def excluded_slow(self, path: Path, is_dir: bool) -> bool:
        """The reference verdict: every pattern tried on the whole path."""
        try:
            rel = path.relative_to(self.base).as_posix()
        except ValueError:
            rel = path.name
        if rel != "." and _matches(self.patterns, rel, is_dir):
            return True
        if not self.respect_gitignore:
            return False
        verdict = None
        for folder in reversed(self._chain(path, is_dir)):
            pats, _ = self._ignore(str(folder))
            if pats:
                try:
                    r = path.relative_to(folder).as_posix()
                except ValueError:
                    continue
                v = _matches(list(pats), r, is_dir)
                if v is not None:
                    verdict = v
        return bool(verdict)


#: where test code lives: files found there by walking a folder are not checked by default
TEST_DIRS = frozenset({"tests", "test", "testing"})


def is_test_path(rel: str) -> bool:
    """A path (``/``-separated) in a test folder, or a pytest/unittest file name."""
    parts = rel.split("/")
    if any(p in TEST_DIRS for p in parts[:-1]):
        return True
    name = parts[-1]
    return name == "conftest.py" or (name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py")))


def discover(paths: list[str], excluder: Excluder, cwd: Path, errors: list[str],
             skipped: "list[tuple[Path, str]] | None" = None) -> list[Candidate]:
    """Files below ``paths``; a path that does not exist goes to ``errors`` as a one-line message,
    a folder that cannot be listed to ``skipped`` as (path, reason)."""
    out: list[Candidate] = []
    seen: set[Path] = set()
    for arg in paths:
        p = Path(arg)
        ap = (cwd / p) if not p.is_absolute() else p
        ap = Path(os.path.abspath(ap))
        try:
            st = os.stat(ap)
        except OSError as exc:
            if os.path.islink(ap):  # a dangling or looping link named explicitly: the reader says so
                if ap not in seen:
                    seen.add(ap)
                    out.append(Candidate(ap, display_path(ap, cwd), True))
            elif isinstance(exc, FileNotFoundError) or not os.path.lexists(ap):
                errors.append(f"{arg}: no such file or directory")
            else:
                errors.append(f"{arg}: cannot be read ({exc.strerror or exc})")
            continue
        if stat.S_ISDIR(st.st_mode):
            _walk(ap, excluder, cwd, out, seen, skipped)
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


def _walk(top: Path, excluder: Excluder, cwd: Path, out: list[Candidate], seen: set[Path],
          skipped: "list[tuple[Path, str]] | None" = None) -> None:
    visited_dirs: set[tuple[int, int]] = set()
    # a folder the user named that is itself a test location: its tests are what they asked for
    skip_tests = not excluder.include_tests and not any(
        part in TEST_DIRS for part in display_path(top, cwd).split("/"))

    def unreadable(exc: OSError) -> None:
        if skipped is not None and exc.filename:
            skipped.append((Path(exc.filename), f"folder cannot be read ({exc.strerror or exc}); "
                                                  "the files in it were not checked"))

    from parallint.util.boundary import Boundary
    from parallint.util.deps import note_listing, recording

    inside = Boundary()
    inside.add(top)  # a folder link out of the repository (`data -> /`) is named, never walked

    def stays(folder: Path) -> bool:
        if not os.path.islink(folder) or inside.holds(folder):
            return True
        if skipped is not None:
            skipped.append((folder, "outside the repository (a folder link, not walked)"))
        return False

    note = note_listing if recording() is not None else None
    from parallint.util.fswalk import MAX_DEPTH, walk

    def too_deep(folder: str) -> None:
        if skipped is not None:
            skipped.append((Path(folder), f"its folders are nested more than {MAX_DEPTH} levels deep; the "
                                          "folders below were not walked"))

    for dirpath, dirnames, filenames in walk(top, followlinks=True, onerror=unreadable, too_deep=too_deep):
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
        if note is not None:
            note(dirpath, dirnames + filenames)  # the folder as walked (the run cache's manifest)
        dirnames[:] = sorted(
            x for x in dirnames
            if not (skip_tests and x in TEST_DIRS) and not excluder.excluded(d / x, True) and stays(d / x))
        for fn in sorted(filenames):
            fp = d / fn
            if fp in seen or excluder.excluded(fp, False):
                continue
            if skip_tests and is_test_path(fn):
                continue
            seen.add(fp)
            out.append(Candidate(fp, display_path(fp, cwd), False))
            if len(out) > MAX_FILES:
                return
