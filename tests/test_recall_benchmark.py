"""The recall benchmark's runner (benchmarks/recall.py): a case counts as caught only when a finding
of an expected code appears, and a clean twin that still gives that code is counted against it."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _runner():
    spec = importlib.util.spec_from_file_location("recall_bench", ROOT / "benchmarks" / "recall.py")
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(mod)
    return mod


CASES = """
cases:
  - id: caught
    expect: [LCH007]
    files:
      run.sh: |
        #!/bin/bash
        accelerate launch --multi_gpu --num_machines 2 --num_processes 3 --machine_rank $RANK train.py
    clean:
      run.sh: |
        #!/bin/bash
        accelerate launch --multi_gpu --num_machines 2 --num_processes 4 --machine_rank $RANK train.py
  - id: missed
    expect: [BAT001]
    files:
      run.sh: |
        #!/bin/bash
        accelerate launch --multi_gpu --num_machines 2 --num_processes 4 --machine_rank $RANK train.py
  - id: twin-still-fires
    expect: [LCH007]
    files:
      run.sh: |
        #!/bin/bash
        accelerate launch --multi_gpu --num_machines 2 --num_processes 3 --machine_rank $RANK train.py
    clean:
      note.txt: the twin forgot to change the launch line
"""


def test_the_runner_counts_caught_missed_and_twins(tmp_path, capsys):
    cases = tmp_path / "cases.yaml"
    cases.write_text(CASES)
    out = tmp_path / "out.json"
    assert _runner().main([str(cases), "--json", str(out)]) == 0
    got = {r["id"]: r for r in json.loads(out.read_text())}
    assert got["caught"]["caught"] and got["caught"]["twin_false"] == []
    assert not got["missed"]["caught"] and got["missed"]["twin"] is None
    assert got["twin-still-fires"]["caught"] and got["twin-still-fires"]["twin_false"] == ["LCH007"]
    assert "caught 2 of 3; clean twins with a finding of the expected code: 1 of 2" in capsys.readouterr().out


def test_a_case_file_outside_its_folder_is_refused(tmp_path):
    with pytest.raises(ValueError):
        _runner()._write(tmp_path, {"../escape.txt": "x"})


def test_an_unreadable_cases_file_is_exit_2(tmp_path):
    assert _runner().main([str(tmp_path / "absent.yaml")]) == 2
