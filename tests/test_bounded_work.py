"""Work, memory and output per finding are bounded (issue 23, items 8 and 10).

A hostile config of thousands of repeated keys, all on one line, used to cost quadratic time and
memory: each CFG005 message quoted the rest of the line (100 KB took 11 s and 1.6 GB). Binary or
non-UTF-8 standard input passed unseen or got the wrong code. A worker had a time bound but no
memory bound."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import run_cli


def _dup_line(n: int) -> str:
    return '{"zero_optimization": {"stage": 1}, ' + ", ".join(f'"train_batch_size": {i}' for i in range(n)) + "}"


def test_thousands_of_duplicate_keys_on_one_line_are_cheap_and_bounded(tmp_path):
    (tmp_path / ".git").mkdir()
    text = _dup_line(13_000)  # 340 KB: reached 11.6 GB before
    (tmp_path / "ds_config.json").write_text(text)
    t = time.monotonic()
    res = run_cli("check", "--no-cache", "--format", "json", "ds_config.json", cwd=tmp_path)
    took = time.monotonic() - t
    assert res.returncode == 1, res.stderr
    assert took < 20
    assert len(res.stdout) < 500_000  # was 415 MB for 4,000 keys
    found = json.loads(res.stdout)
    found = found["diagnostics"] if isinstance(found, dict) else found
    cfg005 = [d for d in found if d["code"] == "CFG005"]
    assert len(cfg005) == 201
    assert max(len(d["message"]) for d in cfg005) < 300
    # each message quotes the two values, not the rest of the line
    assert "0 at line 1, then 1;" in cfg005[0]["message"]
    last = cfg005[-1]
    assert last["severity"] == "info" and "not listed" in last["message"]


def test_a_value_a_message_quotes_is_one_scalar():
    from parallint.rules.cfg.cfg005_duplicate_key import _one_scalar

    assert _one_scalar('16, "fp16": {"enabled": true}') == "16"
    assert _one_scalar('"a, b}" , "x": 1') == '"a, b}"'
    assert _one_scalar('"a\\"b", 2') == '"a\\"b"'
    assert _one_scalar("7}") == "7"
    assert _one_scalar('"' + "x" * 500 + '"') is None  # never a long quote


def test_a_long_message_is_cut(tmp_path):
    from parallint.util.limits import MAX_MESSAGE_CHARS, clean_text

    cut = clean_text("x" * 100_000)
    assert len(cut) <= MAX_MESSAGE_CHARS and cut.endswith("characters cut]")
    assert clean_text("short") == "short"


def test_one_rule_gives_a_file_at_most_200_findings_and_stops(tmp_path):
    from parallint.discover.settings import Config
    from parallint.engine.runner import MAX_FINDINGS_PER_RULE, Runner
    from parallint.model.diagnostics import Severity, Span
    from parallint.model.rule import Rule

    pulled = []

    class Many(Rule):
        code, name, severity, summary, kinds = "ZZZ999", "many", Severity.ERROR, "test", frozenset({"deepspeed"})

        def check_file(self, f, ctx):
            for i in range(10_000):
                pulled.append(i)
                yield self.report(Span(f.path, 1, i + 1), f"finding {i}")

    runner = Runner(Config(None, tmp_path, {}), tmp_path)
    out = runner._run(Many(), "check_file", type("F", (), {"path": "x.json"})(), None, "x.json")
    assert len(out) == MAX_FINDINGS_PER_RULE + 1
    assert len(pulled) == MAX_FINDINGS_PER_RULE + 1  # the generator is not run further
    assert out[-1].severity == Severity.INFO and "not listed" in out[-1].message


def _stdin(tmp_path: Path, data: bytes, name: str = "ds_config.json"):
    exe = Path(sys.executable).with_name("parallint")
    env = {k: v for k, v in os.environ.items() if k != "PARALLINT_DEBUG"}
    return subprocess.run([str(exe), "check", "--no-cache", "--stdin-filename", name, "-"], input=data,
                          capture_output=True, cwd=tmp_path, env=env, timeout=60)


def test_binary_standard_input_is_syn002_not_a_pass(tmp_path):
    (tmp_path / ".git").mkdir()
    res = _stdin(tmp_path, b"\x00\x01\xff\xfe{}")
    out = res.stdout.decode()
    assert res.returncode == 1, out + res.stderr.decode()
    assert "SYN002" in out and "binary" in out


def test_non_utf8_standard_input_names_the_byte_as_a_file_does(tmp_path):
    (tmp_path / ".git").mkdir()
    data = b'{"train_batch_size": 1,\n"a": "\xff\xfe"}'
    (tmp_path / "same.json").write_bytes(data)
    res = _stdin(tmp_path, data)
    out = res.stdout.decode()
    assert "SYN001 invalid UTF-8 at byte 30" in out and ":2:" in out
    as_file = run_cli("check", "--no-cache", "same.json", cwd=tmp_path)
    assert "SYN001 invalid UTF-8 at byte 30" in as_file.stdout


def test_a_very_long_json_integer_is_not_a_syntax_error(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / "ds_config.json").write_text('{"train_batch_size": ' + "1" * 5000 + "}")
    res = run_cli("check", "--no-cache", "ds_config.json", cwd=tmp_path)
    assert res.returncode in (0, 1) and "SYN001" not in res.stdout and not res.stderr.strip()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_DATA binds on Linux")
def test_a_worker_over_its_memory_bound_is_one_reason_and_the_next_item_runs():
    from parallint.engine import workers

    def grow(item):
        if item == "big":
            blocks = [bytearray(64 * 1024**2) for _ in range(64)]  # 4 GiB
            return len(blocks)
        return item

    got = dict((i, (ok, v)) for i, ok, v in workers.run(["big", "small", "big2"], grow, 1, 60,
                                                        memory=256 * 1024**2))
    assert got[0][0] is False and got[0][1].startswith("over the memory limit (256 MiB"), got[0]
    assert got[1] == (True, "small")
    assert got[2] == (True, "big2")


def test_file_memory_setting_is_read_and_bounded():
    from parallint.util.limits import DEFAULT_FILE_MEMORY, file_memory

    assert file_memory({}) == DEFAULT_FILE_MEMORY
    assert file_memory({"file-memory": "512MiB"}) == 512 * 1024**2
    assert file_memory({"file-memory": "1KiB"}) == DEFAULT_FILE_MEMORY  # out of range: the default


@pytest.mark.parametrize("digits", [4000, 4400, 20000])
def test_counts_beyond_pythons_digit_limit_on_a_launch_line(tmp_path, digits):
    """Used to crash LAY007, PG003 and PIP002 when they printed the product (exit 2)."""
    (tmp_path / ".git").mkdir()
    big = "9" * digits
    (tmp_path / "run.sh").write_text(f"torchrun --nnodes={big} --nproc_per_node={big} train.py\n")
    (tmp_path / "train.py").write_text(
        "import torch.distributed as dist\nfrom torch.distributed.device_mesh import init_device_mesh\n"
        "dist.init_process_group('nccl', world_size=8, rank=0)\nmesh = init_device_mesh('cuda', (2, 4))\n")
    res = run_cli("check", "--no-cache", ".", cwd=tmp_path)
    assert res.returncode in (0, 1), res.stdout + res.stderr
    assert "internal error" not in res.stderr and "Traceback" not in res.stderr
    shown = run_cli("show", "run.sh", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    if digits <= 4400:  # (a 20,000-character word is past what the shell reader takes as a launch)
        assert "not a plausible count" in shown.stdout, shown.stdout
