"""`parallint server` over raw standard input/output, as a hostile or broken client drives it
(security issue, item 11): an absurd ``Content-Length``, a header block without one, a body that
is not JSON, requests after ``shutdown``, and the exit status of ``exit`` with and without
``shutdown``. Each is answered (an error reply) and the server goes on answering."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

import pytest



def _frame(obj) -> bytes:
    body = json.dumps(obj).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def _init(i=1):
    return _frame({"jsonrpc": "2.0", "id": i, "method": "initialize",
                   "params": {"processId": None, "rootUri": None, "capabilities": {}}})


class Server:
    def __init__(self, tmp_path) -> None:
        env = dict(os.environ, PARALLINT_NO_CACHE="1")
        self.proc = subprocess.Popen([sys.executable, "-m", "parallint", "server"], cwd=tmp_path,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env=env)
        self.messages: list[dict] = []
        self.cond = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        out = self.proc.stdout
        assert out is not None
        while True:
            length = None
            while True:
                line = out.readline()
                if not line:
                    return
                if not line.strip():
                    break
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            assert length is not None
            msg = json.loads(out.read(length))
            with self.cond:
                self.messages.append(msg)
                self.cond.notify_all()

    def send(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def reply(self, pred, timeout: float = 20.0) -> dict:
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                for m in self.messages:
                    if pred(m):
                        return m
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    raise AssertionError(f"no such reply; got {self.messages}")
                self.cond.wait(left)

    def answer(self, msg_id) -> dict:
        return self.reply(lambda m: m.get("id") == msg_id and ("result" in m or "error" in m))

    def error_without_id(self, n: int = 1) -> list[dict]:
        self.reply(lambda m: sum(1 for x in self.messages if x.get("id") is None and "error" in x) >= n)
        return [x for x in self.messages if x.get("id") is None and "error" in x]

    def close(self) -> int:
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            return self.proc.wait(timeout=30)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()


@pytest.fixture
def server(tmp_path):
    s = Server(tmp_path)
    yield s
    if s.proc.poll() is None:
        s.proc.kill()


def test_huge_content_length_is_refused_and_the_next_message_answered(server):
    server.send(b"Content-Length: 99999999999\r\n\r\n{}")
    server.send(_init())
    (err,) = server.error_without_id()
    assert err["error"]["code"] == -32600 and "99999999999 bytes" in err["error"]["message"]
    assert "capabilities" in server.answer(1)["result"]
    assert server.proc.poll() is None


def test_header_block_without_content_length_does_not_stop_the_server(server):
    body = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "shutdown"}).encode()
    server.send(b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n" + body)
    server.send(_init(2))
    (err,) = server.error_without_id()
    assert "without Content-Length" in err["error"]["message"]
    assert "capabilities" in server.answer(2)["result"]
    # the skipped message was never handled: no reply for id 7
    assert not any(m.get("id") == 7 for m in server.messages)


def test_a_body_that_is_not_json_gets_a_parse_error(server):
    server.send(b"Content-Length: 9\r\n\r\n{not json")
    server.send(_init(3))
    (err,) = server.error_without_id()
    assert err["error"]["code"] == -32700
    assert "capabilities" in server.answer(3)["result"]


def test_an_endless_header_line_is_bounded(server):
    server.send(b"X-Junk: " + b"a" * 200_000 + b"\r\n\r\n")
    server.send(_init(4))
    server.error_without_id()
    assert "capabilities" in server.answer(4)["result"]


def test_requests_after_shutdown_get_an_error_and_exit_is_0(server):
    server.send(_init(1))
    server.answer(1)
    server.send(_frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
    server.send(_frame({"jsonrpc": "2.0", "id": 2, "method": "shutdown"}))
    assert server.answer(2).get("result") is None
    server.send(_frame({"jsonrpc": "2.0", "id": 3, "method": "textDocument/codeAction", "params": {
        "textDocument": {"uri": "file:///x.py"}, "range": {"start": {"line": 0, "character": 0},
                                                           "end": {"line": 0, "character": 0}},
        "context": {"diagnostics": []}}}))
    err = server.answer(3)
    assert err["error"]["code"] == -32600 and "after shutdown" in err["error"]["message"]
    server.send(_frame({"jsonrpc": "2.0", "method": "exit"}))
    assert server.close() == 0


def test_exit_without_shutdown_is_status_1(server):
    server.send(_init(1))
    server.answer(1)
    server.send(_frame({"jsonrpc": "2.0", "method": "exit"}))
    assert server.close() == 1


def test_end_of_input_without_shutdown_is_status_1(server):
    server.send(_init(1))
    server.answer(1)
    assert server.close() == 1


_MODULES = """import atexit, sys
atexit.register(lambda: sys.stderr.write("MODULES " + " ".join(sorted(sys.modules)) + "\\n"))
sys.argv = ["parallint", "server", "--stdio"]
from parallint.cli.main import main
main()
"""


def test_the_server_answers_initialize_without_pygls_or_typer(tmp_path):
    """Start-up is what an editor waits for: the server speaks JSON-RPC itself and the command is
    parsed without typer, so neither pygls, lsprotocol nor typer is imported, nor the engine,
    before a document is opened."""
    msgs = _init(1) + _frame({"jsonrpc": "2.0", "id": 2, "method": "shutdown"}) + _frame({"jsonrpc": "2.0", "method": "exit"})
    res = subprocess.run([sys.executable, "-c", _MODULES], input=msgs, cwd=tmp_path, capture_output=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert b'"capabilities"' in res.stdout and b'"id":2,"result":null' in res.stdout
    (line,) = [x for x in res.stderr.decode().splitlines() if x.startswith("MODULES ")]
    mods = set(line.split()[1:])
    assert not {m for m in mods if m.split(".")[0] in ("pygls", "lsprotocol", "typer", "click", "cattrs")}
    assert "parallint.engine.runner" not in mods and "parallint.cli.app" not in mods


def test_an_unknown_request_is_method_not_found_and_the_server_goes_on(server):
    server.send(_init(1))
    server.answer(1)
    server.send(_frame({"jsonrpc": "2.0", "id": 2, "method": "workspace/symbol", "params": {"query": "x"}}))
    assert server.answer(2)["error"]["code"] == -32601
    server.send(_frame({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": 2}}))
    server.send(_frame({"jsonrpc": "2.0", "id": 3, "method": "shutdown"}))
    assert server.answer(3).get("result") is None
