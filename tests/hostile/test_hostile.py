"""Hostile inputs, end to end: each next to a script with a planted mistake (DDP001), then all of
them in one folder. The run must finish well inside its time budget, report the planted finding,
report each file it could not analyse as one SYN002 finding naming the reason, exit with the
status of the failure contract (docs/failure-contract.md) and never print a traceback."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import inputs  # noqa: E402
from conftest import run_cli  # noqa: E402

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="FIFOs, sockets and symlinks")


def _check(folder: Path, *args: str, budget: float, stdin: str | None = None):
    t = time.monotonic()
    p = run_cli("check", "--format", "json", *args, cwd=folder, stdin=stdin)
    took = time.monotonic() - t
    assert "Traceback" not in p.stderr and "Traceback" not in p.stdout, p.stderr[-3000:]
    assert took < budget, f"took {took:.1f} s (budget {budget} s)"
    return p, (json.loads(p.stdout) if p.stdout.strip().startswith("[") else None)


def _planted(items) -> list:
    return [d for d in items if d["code"] == "DDP001" and d["path"] == "train.py"
            and d["line"] == inputs.PLANTED_LINE]


@pytest.fixture
def hostile_dir(tmp_path):
    folder = tmp_path / "repo"
    yield folder
    inputs.unlock(folder)


def test_all_hostile_inputs_in_one_folder(hostile_dir):
    expect = inputs.build(hostile_dir)
    p, items = _check(hostile_dir, ".", budget=30)
    assert p.returncode == 1, p.stderr
    assert _planted(items), items
    syn002: dict[str, list] = {}
    for d in items:
        if d["code"] == "SYN002":
            syn002.setdefault(d["path"], []).append(d["message"])
    for name, reason in expect.items():
        assert len(syn002.get(name, [])) == 1, (name, syn002.get(name))
        assert reason in syn002[name][0], (name, syn002[name])
    assert set(syn002) <= set(expect) | {"locked"}, set(syn002) - set(expect)
    # a syntax error stays SYN001; limits of parallint are never reported as one
    syn001 = {d["path"] for d in items if d["code"] == "SYN001"}
    assert syn001 == {"bad_utf8.py"}, syn001


SMALL = sorted(inputs.texts())


@pytest.mark.parametrize("name", SMALL)
def test_each_hostile_file_next_to_a_planted_mistake(tmp_path, name):
    data, reason = inputs.texts()[name]
    (tmp_path / "train.py").write_text(inputs.PLANTED)
    (tmp_path / name).write_bytes(data)
    p, items = _check(tmp_path, ".", budget=15)
    assert p.returncode == 1, p.stderr
    assert _planted(items)
    mine = [d for d in items if d["path"] == name and d["code"] in ("SYN001", "SYN002")]
    if reason:
        assert [d["code"] for d in mine] == ["SYN002"] and reason in mine[0]["message"], mine
    else:
        assert not [d for d in mine if d["code"] == "SYN002"], mine


@pytest.mark.parametrize("kind", ["fifo", "socket", "device", "loop", "dangling", "tilde"])
def test_special_files_are_never_opened(tmp_path, kind):
    import socket

    (tmp_path / "train.py").write_text(inputs.PLANTED)
    if kind == "fifo":
        os.mkfifo(tmp_path / "queue.py")
    elif kind == "socket":
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(str(tmp_path / "queue.py"))
        s.close()
    elif kind == "device":
        os.symlink("/dev/zero", tmp_path / "queue.py")
    elif kind == "loop":
        (tmp_path / "sub").mkdir()
        os.symlink("..", tmp_path / "sub" / "up")
        os.symlink("queue.py", tmp_path / "queue.py")
    elif kind == "dangling":
        os.symlink("nowhere/queue.py", tmp_path / "queue.py")
    else:
        os.symlink("~nosuchuser_parallint/queue.py", tmp_path / "queue.py")
    p, items = _check(tmp_path, ".", budget=15)
    assert p.returncode == 1 and _planted(items)
    mine = [d for d in items if d["path"] == "queue.py"]
    assert [d["code"] for d in mine] == ["SYN002"], mine
    # named explicitly: the same finding, never a hang
    p, items = _check(tmp_path, "queue.py", "train.py", budget=15)
    assert p.returncode == 1 and [d["code"] for d in items if d["path"] == "queue.py"] == ["SYN002"]


def test_fifo_under_a_name_parallint_does_not_read_is_ignored(tmp_path):
    (tmp_path / "train.py").write_text(inputs.PLANTED)
    os.mkfifo(tmp_path / "queue")
    p, items = _check(tmp_path, ".", budget=15)
    assert p.returncode == 1 and _planted(items) and len(items) == 1


def test_bad_gitignore_patterns_do_not_stop_the_run(tmp_path):
    (tmp_path / "train.py").write_text(inputs.PLANTED)
    (tmp_path / ".gitignore").write_text("[z-a]\n" + "**/" * 200 + "x\n" + "a*" * 200 + "b\n[\n\\\n")
    (tmp_path / ("a" * 200 + ".py")).write_text("x = 1\n")
    p, items = _check(tmp_path, ".", budget=15)
    assert p.returncode == 1 and _planted(items)


def test_huge_file_is_not_analysed(tmp_path):
    (tmp_path / "train.py").write_text(inputs.PLANTED)
    with open(tmp_path / "huge.py", "wb") as fh:
        fh.write(inputs.HEADER.encode() + b"x = 1\n" * (50 * 1024 * 1024 // 6))
    p, items = _check(tmp_path, ".", budget=15)
    assert p.returncode == 1 and _planted(items)
    (d,) = [d for d in items if d["path"] == "huge.py"]
    assert d["code"] == "SYN002" and "too large" in d["message"] and "max-file-size" in d["message"]
    # the cap is configurable: on the command line and in [tool.parallint]
    (tmp_path / "padded.py").write_text(inputs.PLANTED + "# padding\n" * 400)
    p, items = _check(tmp_path, "--max-file-size", "2KiB", "padded.py", budget=15)
    assert p.returncode == 1 and [d["code"] for d in items] == ["SYN002"]
    (tmp_path / "parallint.toml").write_text('max-file-size = "2KiB"\n')
    p, items = _check(tmp_path, "padded.py", "train.py", budget=15)
    assert sorted(d["code"] for d in items) == ["DDP001", "SYN002"]
    p = run_cli("check", "--max-file-size", "lots", "train.py", cwd=tmp_path)
    assert p.returncode == 2 and "--max-file-size" in p.stderr and len(p.stderr.strip().splitlines()) == 1


def test_huge_stdin_is_capped(tmp_path):
    text = inputs.PLANTED + "x = 1\n" * 1_000_000
    p, items = _check(tmp_path, "-", "--stdin-filename", "train.py", budget=15, stdin=text)
    assert p.returncode == 1
    assert [d["code"] for d in items] == ["SYN002"] and "too large" in items[0]["message"]


@pytest.mark.parametrize("content", [
    b"[tool.parallint]\nselect = ['DDP']\n# caf\xe9\n",
    b"[tool.parallint]\nselect = ['DDP']\nx = " + b"[" * 10_000 + b"]" * 10_000 + b"\n",
    b"[tool.parallint]\n" + b".".join([b"a"] * 50_000) + b" = 1\n",
])
def test_bad_pyproject_is_one_line_exit_2(tmp_path, content):
    (tmp_path / "train.py").write_text(inputs.PLANTED)
    (tmp_path / "pyproject.toml").write_bytes(content)
    t = time.monotonic()
    p = run_cli("check", ".", cwd=tmp_path)
    assert time.monotonic() - t < 15
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1 and "pyproject.toml" in p.stderr, p.stderr


def test_lone_surrogates_print_in_every_format(tmp_path):
    (tmp_path / "ds_config.json").write_text(
        '{"train_batch_size": 8, "train_micro_batch_size_per_gpu": "\\ud800", "zero_optimization": {"stage": "\\udfff"}}\n')
    os.symlink(tmp_path / "ds_config.json", os.path.join(os.fsencode(tmp_path), b"caf\xe9.json"))
    for fmt in ("text", "json", "sarif", "github"):
        for enc in ("utf-8", "ascii"):
            p = run_cli("check", "--format", fmt, ".", cwd=tmp_path, env={"PYTHONIOENCODING": enc})
            assert p.returncode == 1, (fmt, enc, p.stderr)
            assert "Traceback" not in p.stderr and "Error" not in p.stderr, (fmt, enc, p.stderr)


def test_unreadable_folder_is_reported_not_fatal(tmp_path, monkeypatch):
    """Root reads any folder, so the refusal is simulated where os.walk lists folders."""
    from parallint.discover.settings import Config
    from parallint.engine.runner import check_paths

    (tmp_path / "train.py").write_text(inputs.PLANTED)
    (tmp_path / "locked").mkdir()
    (tmp_path / "locked" / "x.py").write_text(inputs.PLANTED)
    real = os.scandir

    def scandir(path="."):
        if os.fspath(path).endswith("locked"):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)
    res = check_paths(["."], Config(None, tmp_path, {}), cwd=tmp_path)
    assert not res.errors
    got = {(d.path, d.code) for d in res.diagnostics}
    assert ("train.py", "DDP001") in got and ("locked", "SYN002") in got
    assert ("locked/x.py", "DDP001") not in got


def test_python_dash_m_does_not_import_from_the_working_directory(tmp_path):
    import subprocess

    (tmp_path / "train.py").write_text(inputs.PLANTED)
    (tmp_path / "typer.py").write_text("raise SystemExit('imported the local typer.py')\n")
    (tmp_path / "yaml.py").write_text("raise SystemExit('imported the local yaml.py')\n")
    dist = tmp_path / "evil-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: evil\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[parallint.rules]\nevil = evil_rules\n")
    (tmp_path / "evil_rules.py").write_text("raise SystemExit('loaded a plugin from the working directory')\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PARALLINT_DEBUG")}
    p = subprocess.run([sys.executable, "-m", "parallint", "check", "--format", "json", "."],
                       cwd=tmp_path, capture_output=True, text=True, env=env, timeout=120)
    assert "imported the local" not in p.stderr + p.stdout and "loaded a plugin" not in p.stderr, p.stderr
    assert p.returncode == 1 and _planted(json.loads(p.stdout))


def test_internal_error_exits_2_never_1(tmp_path):
    """An exception that escapes everything is one line and exit 2 (a crash is not a finding)."""
    import subprocess

    (tmp_path / "train.py").write_text(inputs.PLANTED)
    code = ("import sys; sys.argv = ['parallint', 'check', '.']\n"
            "import parallint.report.formats as r\n"
            "def boom(*a, **k): raise RuntimeError('boom')\n"
            "r.render = boom\n"
            "import parallint.cli.main as c\n"
            "c.main()\n")
    env = {k: v for k, v in os.environ.items() if k != "PARALLINT_DEBUG"}
    p = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                       env=env, timeout=120)
    assert p.returncode == 2 and "Traceback" not in p.stderr and "boom" in p.stderr
