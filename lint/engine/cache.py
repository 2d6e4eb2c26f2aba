"""The content cache: per-file results of a check, so that a warm run reads only what changed.

What is cached is the expensive part of a run: a Python file that is checked on its own (no
launch or config links it; see ``Runner._read_pending``) is parsed, its file rules run, and the
rules of the job it makes on its own run. The entry holds its facts, links and parse findings
(the FileFacts without the syntax tree) and those findings. It is keyed by

* the file's bytes, its path (as shown and on disk),
* parallint's version and a fingerprint of its installed code (an edited rule invalidates it),
* the rules in force and the run's settings,

and it records the content hash of every other file of the file's standalone job (the configs it
names): a changed config is a miss. Launch files, configs and the scripts they link are read
every run (cheap, or needed whole for the job rules).

Entries live under the repository's cache folder (``.parallint_cache/files/``, or
``$PARALLINT_CACHE_DIR``), the same place as the reverse link index. They are pickles, so each is
signed with a key private to the user (``~/.cache/parallint/key``, or ``$XDG_CACHE_HOME``): an
entry someone else wrote (a cache folder committed to a repository) fails the check and is
ignored, never unpickled. A corrupt, truncated or foreign entry is a miss, never an error; a
cache that cannot be written (a read-only checkout) only makes the run slower.
"""

from __future__ import annotations

try:  # hashlib.blake2b is _blake2's; importing hashlib also starts OpenSSL (milliseconds per run)
    import _blake2 as hashlib
except ImportError:  # pragma: no cover - another Python implementation
    import hashlib  # type: ignore[no-redef]
import os
from pathlib import Path

from parallint.util.deps import RACY_NS, Record, _names_digest  # noqa: F401 - RACY_NS: read as cache.RACY_NS
from parallint.util.safeio import replace_bytes

TYPE_CHECKING = False  # typing is not imported at run time (start-up, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Any, Iterable

ENTRY_FORMAT = 1
FILES_DIR = "files"
_MAC = 32  # bytes of the blake2b MAC in front of each entry


def user_key() -> bytes | None:
    """The user's private signing key (created on first use, mode 0600); None when it cannot be
    read or made (then nothing is cached)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    path = Path(base) / "parallint" / "key"
    try:
        data = path.read_bytes()
        if len(data) >= 32:
            return data[:64]
    except OSError:
        pass
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        key = os.urandom(32)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(key)
        return key
    except FileExistsError:  # another run made it just now
        try:
            data = path.read_bytes()
            return data[:64] if len(data) >= 32 else None
        except OSError:
            return None
    except OSError:
        return None


def code_fingerprint() -> str:
    """parallint's version, plus the sizes and modification times of its modules (so that an
    editable install whose code changed does not reuse old results)."""
    from parallint import __version__

    h = hashlib.blake2b(__version__.encode(), digest_size=16)
    import parallint
    import parallint.rules

    for pkg in (parallint, parallint.rules):
        for folder in getattr(pkg, "__path__", ()):
            for dirpath, dirnames, filenames in os.walk(folder):
                dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
                for fn in sorted(filenames):
                    if fn.endswith((".py", ".json", ".yaml")):
                        try:
                            st = os.stat(os.path.join(dirpath, fn))
                        except OSError:
                            continue
                        h.update(f"{dirpath}/{fn}:{st.st_size}:{st.st_mtime_ns}\n".encode("utf-8", "surrogateescape"))
    return h.hexdigest()


def digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=20).hexdigest()


def file_digest(path: Path) -> str | None:
    """The content hash of a regular file on disk (None when it cannot be read)."""
    from parallint.util.safeio import read_regular

    data = read_regular(path, None)
    return None if data is None else digest(data)


def canonical(x: Any, depth: int = 0) -> str:
    """One text for equal settings, whatever the order of their keys or set members: the settings'
    part of a cache key (without importing json). Other objects count by their ``repr``."""
    if depth > 50:
        return "..."
    if x is None or isinstance(x, (bool, int, float, str)):
        return repr(x)
    if isinstance(x, dict):
        items = sorted((canonical(k, depth + 1), canonical(v, depth + 1)) for k, v in x.items())
        return "{" + ", ".join(f"{k}: {v}" for k, v in items) + "}"
    if isinstance(x, (list, tuple)):
        return "[" + ", ".join(canonical(v, depth + 1) for v in x) + "]"
    if isinstance(x, (set, frozenset)):
        return "{" + ", ".join(sorted(canonical(v, depth + 1) for v in x)) + "}"
    return f"<{type(x).__qualname__} {x!r}>"


class FileCache:
    """Signed per-file entries under ``folder`` for one run (rules and settings fixed)."""

    def __init__(self, folder: Path, rules: Iterable[Any], settings: dict[str, Any]) -> None:
        self.folder = folder / FILES_DIR
        self.key = user_key() if folder_ok(folder) else None
        sel = sorted(f"{r.__module__}.{r.__qualname__}:{r.code}" for r in rules)
        conf = canonical(settings)
        self.run_tag = digest(f"{ENTRY_FORMAT}\n{code_fingerprint()}\n{sel}\n{conf}".encode("utf-8", "surrogateescape"))
        self.hits = 0
        self.misses = 0
        self.written = 0

    @property
    def usable(self) -> bool:
        return self.key is not None

    def entry_key(self, abspath: Path, display: str, text: str) -> str:
        h = hashlib.blake2b(digest_size=20)
        for part in (self.run_tag, str(abspath), display):
            h.update(part.encode("utf-8", "surrogateescape"))
            h.update(b"\0")
        h.update(text.encode("utf-8", "surrogateescape"))
        return h.hexdigest()

    def _path(self, key: str) -> Path:
        return self.folder / key[:2] / key

    def get(self, key: str) -> Any:
        """The value stored under ``key``, or None (absent, corrupt, foreign, stale members)."""
        if self.key is None:
            return None
        from parallint.util.safeio import read_regular

        path = self._path(key)
        raw = read_regular(path, nofollow=True) if entry_ok(self.folder.parent, path.parent) else None
        if raw is None:
            self.misses += 1
            return None
        import hmac
        import pickle

        mac, payload = raw[:_MAC], raw[_MAC:]
        good = hashlib.blake2b(payload, key=self.key, digest_size=_MAC).digest()
        if len(mac) != _MAC or not hmac.compare_digest(mac, good):
            self.misses += 1
            return None
        try:
            value = pickle.loads(payload)
            fmt, stored_key, members, result = value
        except Exception:  # noqa: BLE001 - a damaged entry is a miss
            self.misses += 1
            return None
        if fmt != ENTRY_FORMAT or stored_key != key or not isinstance(members, dict):
            self.misses += 1
            return None
        for member, want in members.items():
            if file_digest(Path(member)) != want:
                self.misses += 1
                return None
        self.hits += 1
        return result

    def put(self, key: str, result: Any, members: Iterable[Path] = ()) -> None:
        if self.key is None:
            return
        stamps: dict[str, str | None] = {}
        for m in members:
            stamps[str(m)] = file_digest(m)
        import pickle

        try:
            payload = pickle.dumps((ENTRY_FORMAT, key, stamps, result), protocol=pickle.HIGHEST_PROTOCOL)
        except Exception:  # noqa: BLE001 - something unpicklable: not cached
            return
        mac = hashlib.blake2b(payload, key=self.key, digest_size=_MAC).digest()
        path = self._path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            if not entry_ok(self.folder.parent, path.parent):
                self.key = None  # a link inside the cache folder: write nothing this run
                return
            _ignore_file(self.folder.parent)
            replace_bytes(path, mac + payload, ".e.")
            self.written += 1
        except OSError:
            self.key = None  # a read-only checkout: stop trying for this run


def _ignore_file(folder: Path) -> None:
    """parallint's ``.gitignore`` in the cache folder: created only where nothing is, never through
    a link (a committed dangling ``.gitignore`` link must not create the file it names)."""
    from parallint.util.safeio import create_new

    if not os.path.lexists(folder / ".gitignore"):
        create_new(folder / ".gitignore", b"# created by parallint\n*\n")


def folder_ok(folder: Path) -> bool:
    """The cache folder may be read and written: it is not a symbolic link (a committed
    ``.parallint_cache -> /elsewhere`` would make the cache write into its target). The folder
    ``$PARALLINT_CACHE_DIR`` names may be a link (the user named it); the per-repository folder
    parallint makes inside it may not."""
    return not os.path.islink(folder)


def entry_ok(folder: Path, path: Path) -> bool:
    """``path`` (an entry, or a folder of entries) lies inside the cache folder with no link on
    the way, so reading or writing it stays there."""
    from parallint.util.safeio import no_links_below

    return folder_ok(folder) and no_links_below(folder, path)


def clean(folder: Path) -> bool:
    """Remove a cache folder (per-file entries and the link index). True when something was
    removed. Only a folder that parallint made (it holds parallint's .gitignore or its files) is
    removed."""
    import shutil

    if not folder.is_dir() or not folder_ok(folder):
        return False  # a link is never followed to remove what it points to
    marker = folder / ".gitignore"
    try:
        ours = marker.read_text("utf-8").startswith("# created by parallint") or \
            (folder / FILES_DIR).is_dir() or (folder / "links.json").is_file() or (folder / "index.bin").is_file()
    except OSError:
        ours = (folder / FILES_DIR).is_dir() or (folder / "links.json").is_file() or (folder / "index.bin").is_file()
    if not ours:
        return False
    shutil.rmtree(folder, ignore_errors=True)
    return not folder.exists()


# ------------------------------------------------------------------------------- the run cache
# A warm run of the same command over an unchanged tree reuses the whole run's findings. What a
# run depended on is recorded while it runs: the files it read (with the digest of the bytes read),
# the folders it walked (with their listing as walked), the paths it probed and found missing, the
# repository markers above them; a cold run is stored with that manifest, and the next run with
# the same key checks the manifest instead of running. A file is trusted by its stat signature
# (size, mtime_ns, inode), as Ruff does, except when it was modified within RACY_NS of the run
# that recorded it (a coarse clock could hide a later edit): then, and whenever its stat changed,
# its content digest decides.

RUNS_DIR = "runs"
RUN_FORMAT = 1
#: files above the folders a run looks at, whose existence decides a repository root, a
#: configuration or a .gitignore chain
MARKERS = (".git", ".gitignore", "pyproject.toml", "setup.py", "parallint.toml", ".parallint.toml")
#: bytes hashed of a file recorded without a digest taken as it was read
STORE_HASH_BYTES = 8 << 20
_SKIP_DEVICES = ("/dev/", "/proc/", "/sys/")


def _listing(folder: str) -> str | None:
    try:
        return _names_digest(os.listdir(folder))
    except OSError:
        return None


def _sig(path: str) -> tuple[int, int, int, int] | None:
    """(mode: file type and permissions, size, mtime_ns, inode), or None when nothing is there."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return st.st_mode, st.st_size, st.st_mtime_ns, st.st_ino


def _kind(mode: int) -> int:
    return mode & 0o170000  # stat.S_IFMT


def _head_digest(path: str, n: int) -> str | None:
    from parallint.util.safeio import read_regular

    data = read_regular(path, n)
    return None if data is None else digest(data[:n])


def _fspath(p: Any) -> str | None:
    try:
        s = os.fsdecode(os.fspath(p))
    except (TypeError, ValueError):
        return None
    return os.path.abspath(s) if s else None


class RunCache:
    """The findings of whole runs, keyed by everything that decides them besides the files
    (parallint's code, the rules, the settings, the command's paths and options), each with the
    manifest of the files and folders the run depended on."""

    def __init__(self, folder: Path, rules: Iterable[Any], settings: dict[str, Any],
                 extra: dict[str, Any]) -> None:
        import sys

        self.folder = folder
        self.dir = folder / RUNS_DIR
        self.key = user_key() if folder_ok(folder) else None
        sel = sorted(f"{r.__module__}.{r.__qualname__}:{r.code}" for r in rules)
        plugins = []
        for r in rules:  # a plugin rule's own code (builtin rules are in the fingerprint)
            if not r.__module__.startswith("parallint."):
                mod = sys.modules.get(r.__module__)
                f = getattr(mod, "__file__", None)
                plugins.append(f"{f}:{_sig(f) if f else None}")
        conf, more = canonical(settings), canonical(extra)
        env = f"{sys.version}\n{sys.executable}\n{os.path.expanduser('~')}"
        self.run_key = digest("\n".join([str(RUN_FORMAT), code_fingerprint(), str(sel), str(sorted(plugins)),
                                         conf, more, env]).encode("utf-8", "surrogateescape"))
        self.skip = self._skip_prefixes()
        self.outcome = "off" if self.key is None else "miss"

    @property
    def usable(self) -> bool:
        return self.key is not None

    def _path(self) -> Path:
        return self.dir / self.run_key

    def _skip_prefixes(self) -> tuple[str, ...]:
        import sys

        out = {str(self.folder), os.path.dirname(user_path())}
        for p in (sys.prefix, sys.base_prefix, sys.exec_prefix):
            out.add(p)
        try:
            import parallint
            import parallint.rules

            for pkg in (parallint, parallint.rules):
                out.update(getattr(pkg, "__path__", ()))
        except ImportError:  # pragma: no cover
            pass
        out.update(p for p in sys.path if "site-packages" in p or "dist-packages" in p)
        return tuple(os.path.join(os.path.abspath(p), "") for p in out if p)

    def prepare(self) -> None:
        """Make the cache folder before a run walks the tree (a folder made during the run would
        change its parent's listing, and the next run would not reuse this one)."""
        if self.key is None:
            return
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            if entry_ok(self.folder, self.dir):
                _ignore_file(self.folder)
        except OSError:
            pass

    # -- reading ----------------------------------------------------------------------------
    def load(self) -> Any:
        """The stored result when every file and folder in its manifest is as recorded, else
        None."""
        import pickle

        if self.key is None:
            return None
        from parallint.util.safeio import read_regular

        raw = read_regular(self._path(), nofollow=True) if entry_ok(self.folder, self.dir) else None
        if raw is None:
            return None
        try:  # hmac.compare_digest itself (importing hmac starts OpenSSL)
            from _operator import _compare_digest as same
        except ImportError:  # pragma: no cover - another Python implementation
            from hmac import compare_digest as same  # type: ignore[no-redef]
        mac, payload = raw[:_MAC], raw[_MAC:]
        good = hashlib.blake2b(payload, key=self.key, digest_size=_MAC).digest()
        if len(mac) != _MAC or not same(mac, good):
            return None
        try:
            fmt, run_key, files, listings, result = pickle.loads(payload)
        except Exception:  # noqa: BLE001 - a damaged entry is a miss
            return None
        if fmt != RUN_FORMAT or run_key != self.run_key or not isinstance(files, dict) or \
                not isinstance(listings, dict):
            return None
        touched = False
        for path, want in listings.items():
            if want is None or _listing(path) != want:
                self.outcome = "changed"
                return None
        for path, entry in files.items():
            state = _check_entry(path, entry)
            if state is False:
                self.outcome = "changed"
                return None
            if state is not True:
                files[path] = state  # same content, new stat (a touch, a checkout)
                touched = True
        if touched:
            self._write((fmt, run_key, files, listings, result))
        self.outcome = "hit"
        return result

    # -- writing ----------------------------------------------------------------------------
    def store(self, result: Any, rec: Record, read: Iterable[Any], t0: int) -> bool:
        """Store ``result`` with the manifest of ``rec`` (and of the files ``read``); ``t0`` is
        when the run began (time.time_ns()). False when it is not stored (something changed while
        the run read it, or the cache cannot be written)."""
        if self.key is None:
            return False
        racy = t0 - RACY_NS
        files: dict[str, tuple] = {}
        paths: dict[str, bool] = {}  # path -> read (content matters) or only looked for
        for ap in read:
            paths[str(ap)] = True
        for key in rec.reads:
            paths[key] = True
        skip = self.skip
        for raw in rec.opened:
            s = _fspath(raw)
            if s is None or s.endswith(".pyc") or s.startswith(_SKIP_DEVICES) or s.startswith(skip):
                continue
            paths[s] = True
        for p in rec.probes:
            paths.setdefault(p, False)
        folders: set[str] = set(rec.listings)
        for raw in rec.listed:
            s = _fspath(raw)
            if s is not None and not s.startswith(skip) and not s.startswith(_SKIP_DEVICES):
                folders.add(s)
        # A folder's listing is a dependency only where the run listed it (walked it, or a reader
        # or the linker listed it): a file read beside others, or a path only looked for (named on
        # a launch line: /tmp/checkpoints), counts by its own signature or existence, never by its
        # folder's listing. Their folders still count for the markers above them.
        bases = set(folders)
        bases.update(os.path.dirname(p) for p, content in paths.items() if content)
        above: set[str] = set()
        for d in bases:
            parent = os.path.dirname(d)
            while parent and parent not in above and parent not in bases:
                above.add(parent)
                nxt = os.path.dirname(parent)
                if nxt == parent:
                    break
                parent = nxt
        for d in above | bases:
            for m in MARKERS:
                paths.setdefault(os.path.join(d, m), False)
        for p, content in paths.items():
            sig = _sig(p)
            if sig is None or not content or _kind(sig[0]) != _REG:
                files[p] = (sig, None, None, False)
                continue
            n, dig, size = rec.reads.get(p, (None, None, None))
            if size is not None and size != sig[1]:
                return False  # changed since it was read
            if sig[2] >= racy:
                if dig is None:
                    return False  # changed just before or during the run, and not read by the runner
            elif dig is None:
                n = max(STORE_HASH_BYTES, sig[1])
                dig = _head_digest(p, n)
                if dig is None:
                    return False
            files[p] = (sig, n, dig, sig[2] >= racy)
        listings: dict[str, str | None] = {}
        for d in folders:
            if d in rec.listings:
                listings[d] = rec.listings[d]
                continue
            sig = _sig(d)
            if sig is None or _kind(sig[0]) != _DIR:
                files.setdefault(d, (sig, None, None, False))
                continue
            if sig[2] >= racy:
                return False  # a folder that changed just now, listed only now: not trusted
            listings[d] = _listing(d)
        return self._write((RUN_FORMAT, self.run_key, files, listings, result))

    def _write(self, value: Any) -> bool:
        import pickle

        if self.key is None:
            return False
        try:
            payload = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception:  # noqa: BLE001 - something unpicklable: not cached
            return False
        mac = hashlib.blake2b(payload, key=self.key, digest_size=_MAC).digest()
        path = self._path()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            if not entry_ok(self.folder, path.parent):
                return False
            _ignore_file(self.folder)
            replace_bytes(path, mac + payload, ".r.")
        except OSError:
            return False
        return True


_REG = 0o100000
_DIR = 0o040000


def _check_entry(path: str, entry: tuple) -> "bool | tuple":
    """True when ``path`` is as recorded; False when it changed; a fresh entry when only its
    stat changed (same content)."""
    sig, n, dig, racy = entry
    now = _sig(path)
    if sig is None or now is None:
        return sig == now
    if n is None:  # only its kind matters (a folder, a marker, a file looked for)
        return _kind(now[0]) == _kind(sig[0])
    if now == sig and not racy:
        return True
    if now[0] != sig[0] or now[1] != sig[1]:  # (a file made unreadable is another finding)
        return False
    if _head_digest(path, n) != dig:
        return False
    import time

    still = now[2] >= time.time_ns() - RACY_NS
    if now == sig and still:
        return True
    return (now, n, dig, still)  # same content; trusted by its stat from now on once it is old enough


def user_path() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "parallint", "key")
