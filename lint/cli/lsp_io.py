"""The language server's transport: JSON-RPC over standard input/output, without pygls.

The server answers ``initialize`` after importing only this module, :mod:`parallint.cli.server`
and the standard library's ``asyncio`` and ``json`` (pygls and lsprotocol cost about 0.8 s to
import; they are no longer used). It trusts nothing its peer sends:

* a message body over :data:`MAX_BODY` bytes, a header block without a valid ``Content-Length``,
  a header line over :data:`MAX_HEADER_LINE` bytes, or a body that is not JSON gets an error reply
  (``id: null``, code -32600 or -32700) and the reader moves on to the next ``Content-Length``
  header (resynchronising), so later messages are answered;
* a request that arrives after ``shutdown`` gets an ``InvalidRequest`` error reply (the
  specification's rule);
* ``exit`` ends the server with status 0 after ``shutdown`` and 1 without it; so does the end of
  the input;
* a request the server does not know gets ``MethodNotFound`` (-32601); a handler that fails gets
  an ``InternalError`` reply (-32603, requests) or a log message (notifications), and the server
  goes on.

Memory is bounded by :data:`MAX_BODY` plus the read buffer, whatever the peer sends. Frames are
read on a daemon thread from the raw descriptor (a blocked read never keeps the process alive after ``exit``, and holds no buffer lock that would abort the interpreter as it finalises stdin); handlers
run on the asyncio loop, analyses in its executor.
"""

from __future__ import annotations

import asyncio
import json
import re

TYPE_CHECKING = False  # typing is not imported at run time (start-up)
if TYPE_CHECKING:  # pragma: no cover
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


METHOD_NOT_FOUND = -32601
INTERNAL_ERROR = -32603


class Connection:
    """Writes framed messages to a binary stream (one writer at a time)."""

    def __init__(self, stream: BinaryIO) -> None:
        import threading

        self.stream = stream
        self.lock = threading.Lock()

    def send(self, obj: dict) -> None:
        body = json.dumps(obj, separators=(",", ":")).encode("ascii")
        with self.lock:
            self.stream.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
            self.stream.flush()

    def notify(self, method: str, params) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def reply(self, msg_id, result) -> None:
        self.send({"jsonrpc": "2.0", "id": msg_id, "result": result})

    def error(self, msg_id, code: int, text: str) -> None:
        self.send({"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": text}})


def _reader(framer: Framer, loop, queue) -> None:
    while True:
        item = framer.next()
        loop.call_soon_threadsafe(queue.put_nowait, item)
        if item[0] == "eof":
            return


async def _answer(conn: Connection, server, msg_id, method: str, result) -> None:
    try:
        conn.reply(msg_id, await result)
    except Exception as exc:  # one failing handler never stops the server
        conn.error(msg_id, INTERNAL_ERROR, f"parallint: {method}: {type(exc).__name__}: {exc}")


async def _quietly(server, method: str, result) -> None:
    try:
        await result
    except Exception as exc:
        server.log_error(f"parallint: {method}: {type(exc).__name__}: {exc}")


async def _loop(server, framer: Framer, conn: Connection) -> int:
    """Read and dispatch until ``exit`` or the end of input. ``server`` has ``requests`` and
    ``notifications`` (method -> handler of the params; a handler may return a coroutine),
    ``shut`` (shutdown was asked) and ``log_error``."""
    import threading

    loop = asyncio.get_running_loop()
    queue: asyncio.Queue = asyncio.Queue()
    threading.Thread(target=_reader, args=(framer, loop, queue), daemon=True, name="lsp-reader").start()
    tasks: set = set()
    while True:
        kind, payload = await queue.get()
        if kind == "eof":
            return 0 if server.shut else 1
        if kind == "error":
            assert isinstance(payload, tuple)
            conn.error(None, int(payload[0]), str(payload[1]))
            continue
        assert isinstance(payload, bytes)
        try:
            raw = json.loads(payload)
        except (ValueError, RecursionError) as exc:
            conn.error(None, PARSE_ERROR, f"parallint: the message is not JSON ({exc})")
            continue
        if not isinstance(raw, dict):
            conn.error(None, INVALID_REQUEST, "parallint: a message must be a JSON object")
            continue
        method = raw.get("method")
        msg_id = raw.get("id")
        is_request = "id" in raw
        if not isinstance(method, str):
            if not is_request or not ("result" in raw or "error" in raw):
                conn.error(None, INVALID_REQUEST, "parallint: a message without a method")
            continue  # a response to a request of ours (none is made): ignored
        if method == "exit":
            return 0 if server.shut else 1
        if is_request and not isinstance(msg_id, (int, str)):
            conn.error(None, INVALID_REQUEST, "parallint: a request id must be a number or a string")
            continue
        if server.shut and is_request:
            conn.error(msg_id, INVALID_REQUEST, f"parallint: {method} after shutdown; only exit is accepted")
            continue
        params = raw.get("params")
        handler = (server.requests if is_request else server.notifications).get(method)
        if handler is None:
            if is_request:
                conn.error(msg_id, METHOD_NOT_FOUND, f"parallint: {method} is not supported")
            continue  # an unknown notification ($/cancelRequest, $/setTrace, ...) is ignored
        try:
            result = handler(params if isinstance(params, dict) else {})
        except Exception as exc:  # one bad message never stops the server
            if is_request:
                conn.error(msg_id, INTERNAL_ERROR, f"parallint: {method}: {type(exc).__name__}: {exc}")
            else:
                server.log_error(f"parallint: {method}: {type(exc).__name__}: {exc}")
            continue
        if asyncio.iscoroutine(result):
            task = asyncio.ensure_future(_answer(conn, server, msg_id, method, result) if is_request
                                         else _quietly(server, method, result))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
        elif is_request:
            conn.reply(msg_id, result)


def serve(make, stdin: BinaryIO, stdout: BinaryIO) -> int:
    """Serve on ``stdin``/``stdout`` until ``exit`` or the end of input; the exit status.
    ``make(connection)`` gives the server (see :func:`_loop`)."""
    conn = Connection(stdout)
    try:
        return asyncio.run(_loop(make(conn), Framer(stdin), conn))
    except BrokenPipeError:
        return 1
    except KeyboardInterrupt:
        return 130
