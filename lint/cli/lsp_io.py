"""The language server's transport: JSON-RPC framing over standard input/output.

pygls reads ``Content-Length`` framed messages itself, but trusts its peer: a header of
``Content-Length: 99999999999`` makes it allocate that much, and a header block without the
length makes it read the next messages as header lines, so it never answers again. This module
reads the frames instead and gives pygls only well-formed messages:

* a message body over :data:`MAX_BODY` bytes, a header block without a valid ``Content-Length``,
  a header line over :data:`MAX_HEADER_LINE` bytes, or a body that is not JSON gets an error reply
  (``id: null``, code -32600 or -32700) and the reader moves on to the next ``Content-Length``
  header (resynchronising), so later messages are answered;
* a request that arrives after ``shutdown`` gets an ``InvalidRequest`` error reply (the
  specification's rule; pygls drops it silently);
* ``exit`` ends the server with status 0 after ``shutdown`` and 1 without it (pygls raises
  ``SystemExit`` inside its loop, which its own start catches, so the status was always 0).

Memory is bounded by :data:`MAX_BODY` plus the read buffer, whatever the peer sends.
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import BinaryIO

MAX_BODY = 64 * 1024 * 1024  # bytes in one message (a whole document, with room to spare)
MAX_HEADER_LINE = 8 * 1024
MAX_HEADERS = 32
_CHUNK = 64 * 1024
_LENGTH = re.compile(rb"(?i)content-length\s*:")
_LENGTH_VALUE = re.compile(rb"\s*(\d{1,20})\s*")

INVALID_REQUEST = -32600
PARSE_ERROR = -32700


class Framer:
    """Reads one framed message at a time from a binary stream (blocking)."""

    def __init__(self, stream: BinaryIO) -> None:
        self.stream = stream
        self.buf = bytearray()
        self.eof = False

    def _fill(self) -> bool:
        if self.eof:
            return False
        read1 = getattr(self.stream, "read1", None)
        chunk = read1(_CHUNK) if read1 is not None else self.stream.read(_CHUNK)
        if not chunk:
            self.eof = True
            return False
        self.buf += chunk
        return True

    def _line(self) -> bytes | None:
        """The next line without its break; None at the end; b"\\0" (a marker) when it is over
        the limit (the bytes read so far are dropped)."""
        start = 0
        while True:
            i = self.buf.find(b"\n", start)
            if i >= 0:
                line = bytes(self.buf[:i])
                del self.buf[:i + 1]
                return line[:-1] if line.endswith(b"\r") else line
            if len(self.buf) > MAX_HEADER_LINE:
                del self.buf[:]
                return b"\0"
            start = len(self.buf)
            if not self._fill():
                return None

    def _resync(self) -> bool:
        """Drop bytes up to the next ``Content-Length`` header; False at the end of input."""
        while True:
            m = _LENGTH.search(self.buf)
            if m:
                del self.buf[:m.start()]
                return True
            keep = len(b"content-length:") + 8
            if len(self.buf) > keep:
                del self.buf[:len(self.buf) - keep]
            if not self._fill():
                return False

    def next(self) -> tuple[str, object]:
        """("message", body bytes), ("error", (code, text)) or ("eof", None)."""
        while True:
            length: int | None = None
            bad: str | None = None
            count = 0
            while True:
                line = self._line()
                if line is None:
                    return "eof", None
                if line == b"\0":
                    bad = f"a header line is over {MAX_HEADER_LINE} bytes"
                    break
                if not line.strip():
                    if count == 0:
                        continue  # blank lines between messages
                    break
                count += 1
                if count > MAX_HEADERS:
                    bad = f"more than {MAX_HEADERS} header lines"
                    break
                name, colon, value = line.partition(b":")
                if not colon:
                    bad = "a header line without ':'"
                    break
                if name.strip().lower() == b"content-length":
                    m = _LENGTH_VALUE.fullmatch(value)
                    if m is None:
                        bad = "Content-Length is not a number"
                        break
                    length = int(m.group(1))
            if bad is None and length is None:
                bad = "a header block without Content-Length"
            if bad is None and length is not None and length > MAX_BODY:
                bad = f"a message of {length} bytes is over the {MAX_BODY} byte limit"
            if bad is not None:
                if not self._resync():
                    return "eof", None
                return "error", (INVALID_REQUEST, f"parallint: {bad}; the message was skipped")
            assert length is not None
            while len(self.buf) < length:
                if not self._fill():
                    return "eof", None
            body = bytes(self.buf[:length])
            del self.buf[:length]
            return "message", body


def _reply_error(protocol, msg_id, code: int, text: str) -> None:
    from lsprotocol.types import ResponseError, ResponseErrorMessage

    protocol._send_data(ResponseErrorMessage(id=msg_id, error=ResponseError(code=code, message=text)))


async def _loop(server, framer: Framer) -> int:
    from pygls.exceptions import JsonRpcException

    protocol = server.protocol
    loop = asyncio.get_running_loop()
    while True:
        kind, payload = await loop.run_in_executor(server.thread_pool, framer.next)
        if kind == "eof":
            return 0 if protocol._shutdown else 1
        if kind == "error":
            assert isinstance(payload, tuple)
            _reply_error(protocol, None, int(payload[0]), str(payload[1]))
            continue
        assert isinstance(payload, bytes)
        try:
            raw = json.loads(payload)
        except ValueError as exc:
            _reply_error(protocol, None, PARSE_ERROR, f"parallint: the message is not JSON ({exc})")
            continue
        method = raw.get("method") if isinstance(raw, dict) else None
        msg_id = raw.get("id") if isinstance(raw, dict) else None
        if method == "exit":
            return 0 if protocol._shutdown else 1
        if protocol._shutdown and isinstance(method, str) and msg_id is not None:
            _reply_error(protocol, msg_id, INVALID_REQUEST,
                         f"parallint: {method} after shutdown; only exit is accepted")
            continue
        try:
            message = json.loads(payload, object_hook=protocol.structure_message)
            protocol.handle_message(message)
        except Exception as exc:  # one bad message never stops the server
            server.report_server_error(exc, JsonRpcException)
            if isinstance(msg_id, (int, str)) and method:
                _reply_error(protocol, msg_id, INVALID_REQUEST, f"parallint: {type(exc).__name__}: {exc}")


def serve(server, stdin: BinaryIO, stdout: BinaryIO) -> int:
    """Serve on ``stdin``/``stdout`` until ``exit`` or the end of input; the exit status."""
    from threading import Event

    from pygls.io_ import StdoutWriter

    server._stop_event = Event()
    server.protocol.set_writer(StdoutWriter(stdout))
    try:
        return asyncio.run(_loop(server, Framer(stdin)))
    except BrokenPipeError:
        return 1
    except KeyboardInterrupt:
        return 130
    finally:
        server.shutdown()
