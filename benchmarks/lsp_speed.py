"""Speed of the language server where a user waits (issue 27): start-up, and one edit.

Drives the real server (``python -m parallint server --stdio``) over standard input/output with
JSON-RPC framing, as an editor does, and prints medians with the ratio to a floor measured in the
same run:

* start-up: spawn to the ``initialize`` response; floor: ``python -c pass`` (spawn to exit);
* edit: ``didChange`` sent to the ``publishDiagnostics`` of that document (debounce set to 0 ms,
  so this is the analysis and publishing alone); floor: parsing the edited buffer alone
  (``Runner.read`` of that text in this process, the reader only).

    python benchmarks/lsp_speed.py WORKSPACE FILE [FILE...] [--rounds 7]
    python benchmarks/lsp_speed.py /tmp/meg pretrain_gpt.py tests/.../model_config.yaml

Each FILE is opened once (the first analysis builds the workspace's link index: its time is
printed, not counted), then edited ``--rounds`` times (a comment line added, a new text each time).
The machine's load changes the figures: compare medians of one run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path


def _frame(obj) -> bytes:
    body = json.dumps(obj).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


class Client:
    def __init__(self, cwd: Path) -> None:
        env = dict(os.environ, PARALLINT_LSP_DEBOUNCE_MS="0")
        self.t0 = time.perf_counter()
        self.proc = subprocess.Popen([sys.executable, "-m", "parallint", "server", "--stdio"], cwd=cwd,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     env=env)
        self.messages: list[tuple[float, dict]] = []
        self.cond = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()
        self.next_id = 0

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
                self.messages.append((time.perf_counter(), msg))
                self.cond.notify_all()

    def send(self, obj) -> float:
        assert self.proc.stdin is not None
        t = time.perf_counter()
        self.proc.stdin.write(_frame(obj))
        self.proc.stdin.flush()
        return t

    def request(self, method: str, params) -> int:
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        return self.next_id

    def wait(self, pred, after: int = 0, timeout: float = 600.0) -> tuple[float, dict]:
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                for at, m in self.messages[after:]:
                    if pred(m):
                        return at, m
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    raise SystemExit(f"no reply; got {[m for _, m in self.messages][-5:]}")
                self.cond.wait(left)

    def close(self) -> None:
        try:
            rid = self.request("shutdown", None)
            self.wait(lambda m: m.get("id") == rid, timeout=30)
            self.send({"jsonrpc": "2.0", "method": "exit"})
            self.proc.wait(timeout=30)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()


def _init_params(root: Path) -> dict:
    return {"processId": os.getpid(), "rootUri": root.as_uri(), "capabilities": {},
            "workspaceFolders": [{"uri": root.as_uri(), "name": root.name}]}


def startup(root: Path, rounds: int) -> tuple[float, float]:
    runs, floor = [], []
    for _ in range(rounds):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], capture_output=True)
        floor.append(time.perf_counter() - t)
        c = Client(root)
        rid = c.request("initialize", _init_params(root))
        at, _ = c.wait(lambda m: m.get("id") == rid, timeout=60)
        runs.append(at - c.t0)
        c.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        c.close()
    return statistics.median(runs), statistics.median(floor)


def parse_alone(root: Path, path: Path, text: str, rounds: int) -> float:
    """The floor of an edit: the edited buffer read by its reader, nothing else."""
    from parallint.discover.settings import configs_for
    from parallint.engine.runner import Runner

    ((config, _, _),) = configs_for([str(path)], cwd=root)
    runs = []
    for i in range(rounds + 1):
        runner = Runner(config, root)
        runner.stdin[path] = text + f"# floor {i}\n"
        t = time.perf_counter()
        runner.read(path, explicit=True, launched=path.suffix == ".py")
        runs.append(time.perf_counter() - t)
    return statistics.median(runs[1:])  # the first pays the reader's imports


def edits(root: Path, files: list[Path], rounds: int) -> list[tuple[Path, float, float, float, int]]:
    c = Client(root)
    rid = c.request("initialize", _init_params(root))
    c.wait(lambda m: m.get("id") == rid, timeout=60)
    c.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
    out = []
    for path in files:
        uri = path.as_uri()
        text = path.read_text(encoding="utf-8", errors="replace")

        def published(m) -> bool:
            return m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == uri

        mark = len(c.messages)
        t = c.send({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": uri, "languageId": "plaintext", "version": 1, "text": text}}})
        at, m = c.wait(published, mark)
        first = at - t
        times = []
        for i in range(rounds):
            mark = len(c.messages)
            t = c.send({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
                "textDocument": {"uri": uri, "version": i + 2},
                "contentChanges": [{"text": text + f"# edit {i}\n"}]}})
            at, m = c.wait(published, mark)
            times.append(at - t)
        out.append((path, first, statistics.median(times), parse_alone(root, path, text, rounds),
                    len(m["params"]["diagnostics"])))
    c.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("workspace")
    ap.add_argument("files", nargs="+")
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    root = Path(args.workspace).resolve()
    up, floor = startup(root, args.rounds)
    print(f"start-up to the initialize response: {up * 1000:.0f} ms (median of {args.rounds}); "
          f"python -c pass: {floor * 1000:.0f} ms; ratio {up / floor:.1f}")
    for path, first, edit, alone, n in edits(root, [(root / f).resolve() for f in args.files], args.rounds):
        rel = path.relative_to(root)
        print(f"{rel}: first analysis (open, index built) {first * 1000:.0f} ms; one edit {edit * 1000:.0f} ms "
              f"(median of {args.rounds}, {n} diagnostics); parsing the buffer alone {alone * 1000:.1f} ms; "
              f"ratio {edit / alone:.1f}")


if __name__ == "__main__":
    main()
