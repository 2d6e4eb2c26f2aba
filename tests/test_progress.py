"""The progress line (issue 26): on a terminal's standard error while files are read, erased at
the end; nothing when standard error is piped or with --quiet (which also drops the summary)."""

from __future__ import annotations

import io
import os
import pty
import select
import subprocess
import sys

from conftest import run_cli, write_tree


def _tree(tmp_path, n: int = 1500):
    files = {".git/x": ""}
    for i in range(n):
        files[f"pkg/m{i}.py"] = (f"import torch\nimport torch.distributed as dist\nx{i} = torch.zeros({i})\n"
                                 f"dist.all_reduce(x{i})\n")
    write_tree(tmp_path, files)
    return tmp_path


def _run_on_a_terminal(cwd, *args) -> tuple[int, str, str]:
    """Run parallint with standard error on a pseudo-terminal; (status, stdout, what the terminal got)."""
    master, slave = pty.openpty()
    exe = os.path.join(os.path.dirname(sys.executable), "parallint")
    proc = subprocess.Popen([exe, *args], cwd=cwd, stdout=subprocess.PIPE, stderr=slave, stdin=subprocess.DEVNULL,
                            env={**os.environ, "PARALLINT_WORKERS": "1"})
    os.close(slave)
    seen = b""
    while True:
        r, _, _ = select.select([master], [], [], 0.2)
        if r:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
        elif proc.poll() is not None:
            break
    out = proc.stdout.read().decode()
    proc.wait()
    os.close(master)
    return proc.returncode, out, seen.decode(errors="replace")


def test_a_terminal_gets_a_progress_line_that_is_erased(tmp_path):
    _tree(tmp_path)
    code, out, term = _run_on_a_terminal(tmp_path, "check", "--no-cache", ".")
    assert code == 0, (out, term)
    assert "files read" in term and "/1500 files read" in term, term[-500:]
    assert term.endswith("\r\x1b[K"), repr(term[-80:])  # erased: the report starts on a clean line
    assert "files read" not in out and out.startswith("All checks passed")


def test_nothing_on_a_pipe_or_with_quiet(tmp_path):
    _tree(tmp_path, 300)
    piped = run_cli("check", "--no-cache", ".", cwd=tmp_path)
    assert "files read" not in piped.stderr and piped.stdout.startswith("All checks passed")
    code, out, term = _run_on_a_terminal(tmp_path, "check", "--no-cache", "--quiet", ".")
    assert code == 0 and "files read" not in term and out == ""  # --quiet: no summary either


def test_progress_waits_and_is_rate_limited():
    from parallint.cli.check import Progress

    now = [0.0]
    stream = io.StringIO()
    p = Progress(stream)
    p.clock, p.start, p.last = (lambda: now[0]), 0.0, 0.0
    p(1, 10)
    assert stream.getvalue() == ""  # a quick run prints nothing
    now[0] = 0.6
    p(2, 10)
    now[0] = 0.65
    p(3, 10)  # within a tenth of a second of the last line
    assert stream.getvalue() == "\rparallint: 2/10 files read, 0.6 s\x1b[K"
    p.clear()
    assert stream.getvalue().endswith("\r\x1b[K")
