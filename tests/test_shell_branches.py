"""One launch written in both branches of an if is one job (issue 22: a run_pretraining.sh that runs
the same command with and without ``| tee $LOGFILE`` was reported twice). Only one branch runs, so
a launch that repeats an earlier branch's word for word is kept once; different commands in the
branches, and the same command run twice in a row, stay separate."""

from __future__ import annotations

import pytest

from conftest import write_tree

TRAIN = "import torch.distributed as dist\n\ndist.init_process_group('nccl')\n"
LAUNCH = "python -m torch.distributed.launch --nproc_per_node=8 train.py --lr 1"

CASES = {
    # the same line in both branches of an if on a variable
    "literal": f"if [ \"$resume\" == \"true\" ]; then\n  {LAUNCH}\nelse\n  {LAUNCH}\nfi\n",
    # $CMD run in both branches, once piped through tee (the BERT pre-training script's shape)
    "cmd": (f"num_gpus=8\nCMD=\"{LAUNCH}\"\nif [ -z \"$LOGFILE\" ] ; then\n   $CMD\nelse\n   (\n     $CMD\n"
            "   ) |& tee $LOGFILE\nfi\n"),
    "elif": f"if [ \"$A\" = 1 ]; then\n  {LAUNCH}\nelif [ \"$A\" = 2 ]; then\n  {LAUNCH}\nelse\n  {LAUNCH}\nfi\n",
}
TWINS = {
    # different commands: two jobs
    "different": f"if [ \"$big\" = 1 ]; then\n  {LAUNCH}\nelse\n  {LAUNCH.replace('=8', '=4')}\nfi\n",
    # the same command run twice in a row: both run
    "sequence": f"{LAUNCH}\n{LAUNCH}\n",
}


def _run(cli, tmp_path, body: str):
    (tmp_path / ".git").mkdir()
    write_tree(tmp_path, {"train.py": TRAIN, "run_pretraining.sh": "#!/bin/bash\n" + body})
    res = cli("check", "--no-cache", "--select", "LCH004", "run_pretraining.sh", cwd=tmp_path)
    return [ln for ln in res.stdout.splitlines() if "LCH004" in ln]


@pytest.mark.parametrize("name", sorted(CASES))
def test_same_launch_in_every_branch_is_reported_once(cli, tmp_path, name):
    found = _run(cli, tmp_path, CASES[name])
    assert len(found) == 1, found


@pytest.mark.parametrize("name", sorted(TWINS))
def test_different_or_repeated_launches_stay_two(cli, tmp_path, name):
    found = _run(cli, tmp_path, TWINS[name])
    assert len(found) == 2, found
