"""Workers die with the run that forked them (issue 23, item 7).

A run killed from outside (SIGKILL, an OOM kill, SIGTERM from CI) used to leave its workers
behind, holding the run's stdout and stderr, so ``$(parallint ...)`` and CI log pipes never ended.
Each case starts a real run of :func:`parallint.engine.workers.run` in a child process, with every
worker busy on a long item, kills that process, and asserts that its output pipe ends and that
every worker is gone within a few seconds."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="workers need fork")

RUN = textwrap.dedent("""\
    import os, sys, time
    from parallint.engine import workers

    where = sys.argv[1]

    def slow(item):
        with open(os.path.join(where, str(os.getpid())), "w") as f:
            f.write(str(item))
        time.sleep(120)
        return item

    print("started", flush=True)
    for _ in workers.run(range(3), slow, 3, 300):
        pass
""")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    stat = Path(f"/proc/{pid}/stat")
    if stat.exists():  # a zombie waiting for a reaper counts as gone
        try:
            return stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"
        except (OSError, IndexError):
            return False
    return True


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_workers_die_with_a_killed_parent(tmp_path, sig):
    proc = subprocess.Popen([sys.executable, "-c", RUN, str(tmp_path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == b"started"
        t = time.monotonic()
        while len(list(tmp_path.iterdir())) < 3:
            assert time.monotonic() - t < 20, "the workers never started"
            time.sleep(0.05)
        pids = [int(p.name) for p in tmp_path.iterdir()]
        assert all(_alive(p) for p in pids)
        proc.send_signal(sig)
        proc.wait(10)
        # the run's output pipes end: no worker holds them
        for stream in (proc.stdout, proc.stderr):
            ready, _, _ = select.select([stream], [], [], 5)
            assert ready, "a pipe of the killed run is still held open"
            stream.read()
        t = time.monotonic()
        while any(_alive(p) for p in pids):
            assert time.monotonic() - t < 5, f"workers outlived their parent: {[p for p in pids if _alive(p)]}"
            time.sleep(0.05)
    finally:
        if proc.poll() is None:
            proc.kill()
        for p in tmp_path.iterdir():
            try:
                os.kill(int(p.name), signal.SIGKILL)
            except (ProcessLookupError, ValueError):
                pass
