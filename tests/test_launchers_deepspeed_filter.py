"""LCH018 end to end, in the shapes DeepSpeed users write: short options (-H, -i, -e), a hostfile
beside the launch script or at the repository root, values from shell variables, and the
resolution DeepSpeed's launcher refuses (--num_gpus with --include, a slot past the host's
slots, a host the hostfile does not list, a hostfile line that is not `NAME slots=N`)."""

from __future__ import annotations

import json

from conftest import write_tree


def _codes(r):
    return [(d["path"], d["line"], d["code"]) for d in json.loads(r.stdout) if d["code"] == "LCH018"]


def test_short_options_and_a_hostfile_at_the_root(tmp_path, cli):
    write_tree(tmp_path, {
        "hostfile": "worker-1 slots=8\nworker-2 slots=8\n",
        "scripts/run.sh": "#!/bin/bash\nGPUS=0,1\n"
                          "deepspeed -H hostfile -i worker-1:0,8 train.py\n"       # slot 8 of 8
                          "deepspeed -H hostfile -e worker-3 train.py\n"           # not in the hostfile
                          "deepspeed --include localhost:$GPUS train.py\n"         # fine
                          "deepspeed --num_gpus=2 --include=\"localhost:$GPUS\" train.py\n"  # refused pair
                          "deepspeed -H hostfile --num_nodes 2 --num_gpus 8 train.py\n",     # fine
    })
    (tmp_path / ".git").mkdir()
    r = cli("check", ".", "--no-cache", "--format", "json", cwd=tmp_path)
    assert _codes(r) == [("scripts/run.sh", 3, "LCH018"), ("scripts/run.sh", 4, "LCH018"),
                         ("scripts/run.sh", 6, "LCH018")], r.stdout
    one = cli("check", "scripts/run.sh", "--no-cache", "--format", "json", cwd=tmp_path)
    assert _codes(one) == _codes(r)


def test_unknown_values_and_no_hostfile_stay_silent(tmp_path, cli):
    write_tree(tmp_path, {
        "run.sh": "#!/bin/bash\n"
                  "deepspeed --include $NODES train.py\n"            # from the environment
                  "deepspeed --include worker-1:0,1 train.py\n"      # no --hostfile: /job/hostfile may exist
                  "deepspeed --hostfile missing_hostfile --include worker-9 train.py\n",  # not in the repository
    })
    (tmp_path / ".git").mkdir()
    r = cli("check", ".", "--no-cache", "--format", "json", cwd=tmp_path)
    assert _codes(r) == [], r.stdout


def test_a_hostfile_deepspeed_cannot_read(tmp_path, cli):
    write_tree(tmp_path, {"hostfile": "# nodes\nworker-1 slots = 8\nworker-2 slots=8\n",
                          "run.sh": "#!/bin/bash\ndeepspeed --hostfile hostfile --include worker-1 train.py\n"})
    (tmp_path / ".git").mkdir()
    r = cli("check", "run.sh", "--no-cache", cwd=tmp_path)
    assert r.returncode == 1
    assert "line 2 ('worker-1 slots = 8') is not `NAME slots=N`" in r.stdout
    assert "names host" not in r.stdout  # a hostfile that is not clean: its hosts are not compared
