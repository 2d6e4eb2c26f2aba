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
import json
import os
from pathlib import Path
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
    from parallint.safeio import read_regular

    data = read_regular(path, None)
    return None if data is None else digest(data)


class FileCache:
    """Signed per-file entries under ``folder`` for one run (rules and settings fixed)."""

    def __init__(self, folder: Path, rules: Iterable[Any], settings: dict[str, Any]) -> None:
        self.folder = folder / FILES_DIR
        self.key = user_key()
        sel = sorted(f"{r.__module__}.{r.__qualname__}:{r.code}" for r in rules)
        try:
            conf = json.dumps(settings, sort_keys=True, default=repr)
        except (TypeError, ValueError):
            conf = repr(sorted(settings.items(), key=repr))
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
        try:
            raw = self._path(key).read_bytes()
        except OSError:
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
        import tempfile

        try:
            payload = pickle.dumps((ENTRY_FORMAT, key, stamps, result), protocol=pickle.HIGHEST_PROTOCOL)
        except Exception:  # noqa: BLE001 - something unpicklable: not cached
            return
        mac = hashlib.blake2b(payload, key=self.key, digest_size=_MAC).digest()
        path = self._path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            _ignore_file(self.folder.parent)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".e.", suffix=".tmp")
            with os.fdopen(fd, "wb") as fh:
                fh.write(mac + payload)
            os.replace(tmp, path)
            self.written += 1
        except OSError:
            self.key = None  # a read-only checkout: stop trying for this run


def _ignore_file(folder: Path) -> None:
    ignore = folder / ".gitignore"
    if not ignore.exists():
        try:
            ignore.write_text("# created by parallint\n*\n", "utf-8")
        except OSError:
            pass


def clean(folder: Path) -> bool:
    """Remove a cache folder (per-file entries and the link index). True when something was
    removed. Only a folder that parallint made (it holds parallint's .gitignore or its files) is
    removed."""
    import shutil

    if not folder.is_dir():
        return False
    marker = folder / ".gitignore"
    try:
        ours = marker.read_text("utf-8").startswith("# created by parallint") or \
            (folder / FILES_DIR).is_dir() or (folder / "links.json").is_file()
    except OSError:
        ours = (folder / FILES_DIR).is_dir() or (folder / "links.json").is_file()
    if not ours:
        return False
    shutil.rmtree(folder, ignore_errors=True)
    return not folder.exists()
