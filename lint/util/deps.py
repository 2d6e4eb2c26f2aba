"""What a run depends on: the files it read, the folders it walked, the paths it looked for.

While :func:`start_recording` is in force (a run that the run cache may store, see
:class:`parallint.engine.cache.RunCache`), the readers and the linker note what they read and probe
(:func:`note_read`, :func:`note_listing`, :func:`note_probe`), and an audit hook records every
file any code opens for reading and every folder it lists. Worker processes hand their share back
with their results (:meth:`Record.take`). Outside a recorded run every ``note_*`` is a no-op.
"""

from __future__ import annotations

try:  # hashlib.blake2b is _blake2's; importing hashlib also starts OpenSSL (milliseconds per run)
    import _blake2 as hashlib
except ImportError:  # pragma: no cover - another Python implementation
    import hashlib  # type: ignore[no-redef]
import os
from pathlib import Path

TYPE_CHECKING = False  # typing is not imported at run time (start-up, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Any, Iterable


def digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=20).hexdigest()


class Record:
    """What one run (or one worker's share of it) read, listed and probed."""

    __slots__ = ("opened", "listed", "reads", "listings", "probes")

    def __init__(self) -> None:
        self.opened: list[Any] = []  # paths opened for reading (audit hook), raw
        self.listed: list[Any] = []  # folders listed (audit hook), raw
        self.reads: dict[str, tuple[int, str, int | None]] = {}  # path -> (bytes hashed, digest, size), as read
        self.listings: dict[str, str] = {}  # folder -> digest of its names, as walked
        self.probes: set[str] = set()  # paths looked for (maybe missing)

    def take(self) -> "Record":
        out = Record()
        out.opened, out.listed, out.reads, out.listings, out.probes = \
            self.opened, self.listed, self.reads, self.listings, self.probes
        self.__init__()  # type: ignore[misc]
        return out

    def merge(self, other: "Record") -> None:
        self.opened.extend(other.opened)
        self.listed.extend(other.listed)
        for k, v in other.reads.items():
            self.reads.setdefault(k, v)
        for k, d in other.listings.items():
            self.listings.setdefault(k, d)
        self.probes |= other.probes


_RECORD: Record | None = None
_HOOKED = False
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC


def _audit(event: str, args: tuple) -> None:
    rec = _RECORD
    if rec is None:
        return
    try:
        if event == "open":
            path, mode, flags = args
            if isinstance(path, int):
                return
            if isinstance(mode, str):
                if "w" in mode or "a" in mode or "x" in mode or "+" in mode:
                    return
            elif isinstance(flags, int) and flags & _WRITE_FLAGS:
                return
            rec.opened.append(path)
        elif event == "os.scandir" or event == "os.listdir":
            rec.listed.append(args[0] if args else ".")
    except Exception:  # noqa: BLE001 - an audit hook must never fail the operation it watches
        pass


def start_recording() -> Record:
    """Record what this process reads from now on (until :func:`stop_recording`)."""
    global _RECORD, _HOOKED
    import sys

    if not _HOOKED:
        sys.addaudithook(_audit)
        _HOOKED = True
    _RECORD = Record()
    return _RECORD


def stop_recording() -> None:
    global _RECORD
    _RECORD = None


def recording() -> Record | None:
    return _RECORD


def note_read(path: "str | Path", data: bytes, size: int | None = None) -> None:
    """``data`` was read from the start of ``path`` (the run's view of it; ``size``: the file's
    size then, when more than ``data`` matters)."""
    rec = _RECORD
    if rec is not None:
        rec.reads.setdefault(os.path.abspath(path), (len(data), digest(data), size))


def note_listing(folder: "str | Path", names: Iterable[str]) -> None:
    """``folder`` held ``names`` when it was walked."""
    rec = _RECORD
    if rec is not None:
        rec.listings.setdefault(os.path.abspath(folder), _names_digest(names))


def note_probe(path: "str | Path") -> None:
    """``path`` was looked for (whether or not it exists decided something)."""
    rec = _RECORD
    if rec is not None:
        rec.probes.add(os.path.abspath(path))


def _names_digest(names: Iterable[str]) -> str:
    return digest("\0".join(sorted(names)).encode("utf-8", "surrogateescape"))


_SIDE: "list[str] | None" = None


def side_start() -> None:
    """Collect, until :func:`side_take`, the repository files read beside the file being checked
    (:func:`note_side_read`): its cached result is valid only while they are unchanged."""
    global _SIDE
    _SIDE = []


def side_take() -> tuple[str, ...]:
    """The files collected since :func:`side_start` (and stop collecting)."""
    global _SIDE
    out = tuple(dict.fromkeys(_SIDE or ()))
    _SIDE = None
    return out


def side_push() -> "list | None":
    """Collect the side reads of a nested read apart (see :func:`side_pop`); returns the outer
    collection, which :func:`side_pop` extends with them."""
    global _SIDE
    outer = _SIDE
    _SIDE = []
    return outer


def side_pop(outer: "list | None") -> tuple[str, ...]:
    """The side reads since :func:`side_push`; the outer collection (if any) goes on, with them."""
    global _SIDE
    mine = tuple(dict.fromkeys(_SIDE or ()))
    if outer is not None:
        outer.extend(mine)
    _SIDE = outer
    return mine


def note_side_read(path: "str | Path") -> None:
    if _SIDE is not None:
        _SIDE.append(os.path.abspath(path))


#: a file changed less than this long before it was looked at may change again within its
#: mtime's granularity: its stat signature is not trusted (as the content cache's ``RACY_NS``)
RACY_NS = 2_000_000_000  # coarser than any file system's time stamps (FAT: 2 s)


def stat_signature(path: "str | Path") -> "tuple | None":
    """(mtime ns, size, inode, mode) of the file (or folder), or None when it is missing or
    cannot be looked at: what the memos kept across runs (the language server) compare."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino, st.st_mode)
