"""The long campaign's mutation fuzzer (benchmarks/fuzz_mutate.py): inputs are reproducible by
index, and its watchdog turns a hang or a dying process into a recorded finding and goes on."""

from __future__ import annotations

import importlib.util
import sys

import pytest

from conftest import ROOT

pytest.importorskip("hypothesis")  # the targets live in tests/fuzz, next to the Hypothesis tests


@pytest.fixture(scope="module")
def fm():
    spec = importlib.util.spec_from_file_location("fuzz_mutate", ROOT / "benchmarks" / "fuzz_mutate.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["fuzz_mutate"] = mod
    spec.loader.exec_module(mod)
    return mod


def test_inputs_are_a_function_of_seed_target_and_index(fm):
    for target in ("python", "shell", "command lines", "estimate/plan", "[tool.parallint]"):
        assert fm.make_input(target, 17, 5)[1] == fm.make_input(target, 17, 5)[1]
    shown = {fm.make_input("yaml_configs", i, 5)[1] for i in range(30)}
    assert len(shown) > 20  # and they differ from one index to the next


def test_watchdog_records_a_hang_and_a_dead_child_and_goes_on(fm, tmp_path):
    args = fm.argparse.Namespace(only=["_selftest"], examples=10, seed=1, deadline_ms=1000, hang_s=2,
                                 nice=0, jobs=1)
    summary = fm.campaign(args)["_selftest"]
    assert [h[0] for h in summary["hangs"]] == [3]
    assert [c[0] for c in summary["crashes"]] == [6]
    assert "exited" in summary["crashes"][0][1]
    assert summary["inputs"] == 10  # the inputs after each failure still ran


def test_a_short_campaign_over_real_targets_is_clean(fm):
    args = fm.argparse.Namespace(only=["command lines", "megatron args"], examples=60, seed=3, deadline_ms=1000,
                                 hang_s=60, nice=0, jobs=2)
    summary = fm.campaign(args)
    for target, s in summary.items():
        assert s["inputs"] == 60, target
        assert not s["crashes"] and not s["hangs"], (target, s)
