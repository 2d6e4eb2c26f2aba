"""LCH019 end to end: a launch line's literal config path that is not in the repository, with the
shapes where the path may still be right at run time (a cd, a heredoc that writes the file, a
submodule, a container path, a variable) staying silent."""

from __future__ import annotations

import json

from conftest import write_tree


def _found(r):
    return [(d["path"], d["line"], d["message"]) for d in json.loads(r.stdout) if d["code"] == "LCH019"]


def test_a_renamed_config_is_reported_with_the_close_name(tmp_path, cli):
    write_tree(tmp_path, {
        "configs/ds_zero2.json": '{"train_batch_size": "auto"}\n',
        "scripts/sft.sh": "#!/bin/bash\ndeepspeed --num_gpus 8 train.py --deepspeed configs/ds_zero3.json --bf16\n",
        "train.py": "import torch\n",
    })
    (tmp_path / ".git").mkdir()
    for target in (".", "scripts/sft.sh"):
        r = cli("check", target, "--no-cache", "--format", "json", cwd=tmp_path)
        ((path, line, msg),) = _found(r)
        assert (path, line) == ("scripts/sft.sh", 2)
        assert "did you mean configs/ds_zero2.json?" in msg


def test_paths_that_may_be_right_at_run_time_are_silent(tmp_path, cli):
    write_tree(tmp_path, {
        ".gitmodules": '[submodule "third_party/recipes"]\n\tpath = third_party/recipes\n\turl = https://x/y\n',
        "a.sh": "#!/bin/bash\ncd training\ndeepspeed train.py --deepspeed configs/ds.json\n",
        "b.sh": "#!/bin/bash\ncat > ds_config.json <<EOF\n{\"train_batch_size\": 8}\nEOF\n"
                "deepspeed train.py --deepspeed ds_config.json\n",
        "c.sh": "#!/bin/bash\ndeepspeed train.py --deepspeed third_party/recipes/ds.json\n",
        "d.sh": "#!/bin/bash\ndeepspeed train.py --deepspeed /workspace/ds.json\n"
                "accelerate launch --config_file ${CFG}.yaml train.py\n",
        "train.py": "import torch\n",
    })
    (tmp_path / ".git").mkdir()
    r = cli("check", ".", "--no-cache", "--format", "json", cwd=tmp_path)
    assert _found(r) == [], r.stdout
