"""Reading a file named by a path without ever blocking: regular files only (a FIFO, socket or
device is never read from; it is opened without blocking and checked with ``fstat``)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)


def read_regular(path: "str | Path", cap: int | None = None, nofollow: bool = False) -> bytes | None:
    """The bytes of the regular file at ``path`` (None when it is not one, cannot be read, or is
    larger than ``cap``; with ``nofollow``, also when ``path`` itself is a symbolic link)."""
    try:
        fd = os.open(path, _FLAGS | (getattr(os, "O_NOFOLLOW", 0) if nofollow else 0))
    except (OSError, ValueError):
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or (cap is not None and st.st_size > cap):
            return None
        chunks = []
        while True:
            b = os.read(fd, 1 << 20)
            if not b:
                break
            chunks.append(b)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def read_text_regular(path: "str | Path", cap: int | None = None) -> str:
    """The text of a regular file (undecodable bytes replaced), or "" as for an unreadable one."""
    data = read_regular(path, cap)
    return "" if data is None else data.decode("utf-8", errors="replace")


def atomic_write(path, text: "str | bytes") -> None:
    """Replace ``path`` with ``text`` through a temporary file in its folder (its mode kept; a new
    file gets the mode the user's umask gives, as ``open(path, "w")`` would, not mkstemp's 0600)."""
    import os
    import tempfile

    mode = None
    try:
        mode = os.stat(path).st_mode & 0o7777
    except OSError:
        mask = os.umask(0o022)
        os.umask(mask)
        mode = 0o666 & ~mask
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)), prefix=".parallint-", suffix=".tmp")
    try:
        if isinstance(text, bytes):  # written as given (a file in its own encoding)
            with os.fdopen(fd, "wb") as fb:
                fb.write(text)
        else:
            with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
                fh.write(text)
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def replace_bytes(path: "str | Path", data: bytes, prefix: str) -> None:
    """Write ``data`` to a fresh temporary file in ``path``'s folder, then move it over ``path``.
    On any error (a full disk, an interrupt) the temporary file is removed and the error raised."""
    import tempfile

    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)), prefix=prefix, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def no_links_below(folder: "str | Path", path: "str | Path") -> bool:
    """No folder or file from ``folder`` (exclusive) down to ``path`` (inclusive) is a symbolic
    link, and ``path`` is under ``folder``: a write there stays inside ``folder``."""
    folder, path = os.path.abspath(folder), os.path.abspath(path)
    rel = os.path.relpath(path, folder)
    if rel == os.curdir:
        return True
    if rel == os.pardir or rel.startswith(os.pardir + os.sep) or os.path.isabs(rel):
        return False
    cur = folder
    for part in rel.split(os.sep):
        cur = os.path.join(cur, part)
        if os.path.islink(cur):
            return False
    return True


def create_new(path: "str | Path", data: bytes, mode: int = 0o644) -> bool:
    """Create ``path`` with ``data`` only when nothing is there (not even a dangling link: it is
    never followed). True when written."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags, mode)
    except OSError:
        return False
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
    return True
