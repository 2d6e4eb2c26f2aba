"""The run's limits (size cap, per-file time) and their configuration values, plus text hygiene
for anything printed (a message must never fail to print)."""

from __future__ import annotations

import functools
import re

#: files larger than this are not analysed (``max-file-size``); the Python and shell readers
#: stop at 2,000,000 bytes too
DEFAULT_MAX_FILE_SIZE = 2_000_000
#: seconds one file may take to read (``file-timeout``)
DEFAULT_FILE_TIMEOUT = 20.0
#: memory a worker process may add while it reads one file (``file-memory``); past it the file
#: is one SYN002 ("over the memory limit") and the run goes on
DEFAULT_FILE_MEMORY = 4 * 1024**3
#: what ``file-memory`` accepts: below this a worker could not even start a reader
FILE_MEMORY_RANGE = (64 * 1024**2, 256 * 1024**3)
#: characters of one finding's message (and of each related note); a longer one is cut, with a
#: mark: a message that quotes a hostile file's line must not grow with it
MAX_MESSAGE_CHARS = 2000
#: standard input (``check -``) is read up to the size cap; more is refused
_UNITS = {"": 1, "b": 1, "k": 1000, "kb": 1000, "kib": 1024, "m": 1000**2, "mb": 1000**2,
          "mib": 1024**2, "g": 1000**3, "gb": 1000**3, "gib": 1024**3}


@functools.cache  # compiled at the first use, not at import (start-up)
def _size() -> re.Pattern[str]:
    return re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]{0,3})\s*$")


MAX_SIZE_SETTING = 1024**3  # 1 GiB: a cap above this is a typo


def parse_size(value: object, bounds: tuple[int, int] = (1024, MAX_SIZE_SETTING)) -> int:
    """Bytes from ``2000000``, ``"2MB"``, ``"512 KiB"``; ValueError on anything else or outside
    ``bounds``."""
    if isinstance(value, bool):
        raise ValueError(f"not a size: {value!r}")
    if isinstance(value, int):
        n = value
    else:
        m = _size().match(str(value))
        if not m or m.group(2).lower() not in _UNITS:
            raise ValueError(f"not a size: {value!r} (use bytes, or a number with KB, MB, KiB or MiB)")
        n = int(float(m.group(1)) * _UNITS[m.group(2).lower()])
    if n < bounds[0] or n > bounds[1]:
        raise ValueError(f"size {value!r} out of range ({_human(bounds[0])} to {_human(bounds[1])})")
    return n


def max_file_size(settings: dict) -> int:
    v = settings.get("max-file-size")
    if v is None:
        return DEFAULT_MAX_FILE_SIZE
    try:
        return parse_size(v)
    except ValueError:
        return DEFAULT_MAX_FILE_SIZE


def _human(n: int) -> str:
    for unit, size in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if n >= size and n % size == 0:
            return f"{n // size} {unit}"
    return f"{n} bytes"


def file_memory(settings: dict) -> int:
    v = settings.get("file-memory")
    if v is None:
        return DEFAULT_FILE_MEMORY
    try:
        return parse_size(v, FILE_MEMORY_RANGE)
    except ValueError:
        return DEFAULT_FILE_MEMORY


def file_timeout(settings: dict) -> float:
    v = settings.get("file-timeout")
    if isinstance(v, (int, float)) and not isinstance(v, bool) and 0 < v <= 3600:
        return float(v)
    return DEFAULT_FILE_TIMEOUT


@functools.cache  # compiled at the first use, not at import (start-up)
def _unprintable() -> re.Pattern[str]:
    return re.compile("[\ud800-\udfff]")


def clean_text(text: str) -> str:
    """``text`` with lone surrogates (from a ``"\\ud800"`` escape in a JSON string) replaced, so
    that it can be encoded for any output, and cut at :data:`MAX_MESSAGE_CHARS`."""
    if len(text) > MAX_MESSAGE_CHARS:
        text = text[:MAX_MESSAGE_CHARS - 40].rstrip() + f" … [{len(text) - MAX_MESSAGE_CHARS + 40} characters cut]"
    if _unprintable().search(text):
        return _unprintable().sub("\ufffd", text)
    return text
