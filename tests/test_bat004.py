"""BAT004: Megatron's batch-size ramp against micro batch × DP, replayed like Megatron does."""

from __future__ import annotations

import random
import textwrap
from pathlib import Path

import pytest

from parallint.discover.settings import Config
from parallint.rules.bat._common import rampup_batch_sizes
from parallint.engine.runner import check_paths

from conftest import write_tree


def brute_force(start, incr, samples, gbs):
    """Megatron-DeepSpeed's RampupBatchsizeNumMicroBatches.update, step by step."""
    per = samples / ((gbs - start) // incr)
    consumed, seen = 0, []
    while consumed <= samples:
        bs = start + int(consumed / per) * incr
        if not seen or seen[-1] != bs:
            seen.append(bs)
        consumed += bs
    return [b for b in seen if b < gbs]


@pytest.mark.parametrize("seed", range(40))
def test_replay_matches_step_by_step(seed):
    rng = random.Random(seed)
    start = rng.choice([8, 16, 24, 32, 64])
    incr = rng.choice([8, 16, 32])
    gbs = start + incr * rng.randint(1, 60)
    samples = rng.choice([50, 1000, 30000, 250000])
    assert rampup_batch_sizes(start, incr, samples, gbs) == brute_force(start, incr, samples, gbs)


def test_malformed_ramps_are_not_replayed():
    assert rampup_batch_sizes(16, 16, 1000, 16) is None  # no increment
    assert rampup_batch_sizes(16, 24, 1000, 64) == [16, 40]
    assert rampup_batch_sizes(16, 24, 1000, 50) is None  # 34 is not a multiple of 24
    assert rampup_batch_sizes(16, 16, 0, 64) is None  # Megatron divides by zero
    assert rampup_batch_sizes(0, 16, 1000, 64) is None
    assert rampup_batch_sizes(16, 16, 10**12, 16 + 16 * 10**6) is None  # too long to replay


def run(tmp_path: Path, line: str):
    write_tree(tmp_path, {"run.sh": textwrap.dedent(line).lstrip()})
    res = check_paths(["."], Config(None, tmp_path, {}), cwd=tmp_path)
    return [(d.span.line, d.message) for d in res.diagnostics if d.code == "BAT004"]


def test_unknown_world_checks_the_micro_batch_only(tmp_path):
    found = run(tmp_path, """
        srun python pretrain_gpt.py --tensor-model-parallel-size 2 --micro-batch-size 4 \\
            --global-batch-size 508 --rampup-batch-size 16 6 1000
    """)
    assert len(found) == 1 and "22" in found[0][1] and "micro batch 4" in found[0][1]


def test_unknown_ramp_values_are_silent(tmp_path):
    assert run(tmp_path, """
        torchrun --nproc_per_node 8 pretrain_gpt.py --micro-batch-size 4 --tensor-model-parallel-size 1 \\
            --global-batch-size 512 --rampup-batch-size $START 6 1000
    """) == []


def test_not_megatron_is_silent(tmp_path):
    assert run(tmp_path, """
        torchrun --nproc_per_node 8 train.py --micro_batch_size 4 --global_batch_size 512 --rampup-batch-size 6 6 10
    """) == []
