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


def test_a_config_written_through_the_variable_that_holds_its_path_is_silent(tmp_path, cli):
    """Found on held-out set J's first run (THUDM/CodeGeeX's pretrain and finetune scripts:
    ``DS_CONFIG=ds_config.json``, ``cat <<EOT > $DS_CONFIG``, then ``--deepspeed_config=$DS_CONFIG``).
    The twin that never writes through the variable is still reported."""
    body = ('DS_CONFIG=ds_config.json\n{write}'
            'deepspeed --num_gpus 8 pretrain.py --deepspeed --deepspeed_config=$DS_CONFIG\n')
    write_tree(tmp_path, {
        "heredoc.sh": "#!/bin/bash\n" + body.format(write='cat <<EOT > $DS_CONFIG\n{"train_batch_size": 8}\nEOT\n'),
        "tee.sh": "#!/bin/bash\n" + body.format(write='echo \'{"train_batch_size": 8}\' | tee "${DS_CONFIG}"\n'),
        "copy.sh": "#!/bin/bash\n" + body.format(write="cp configs/base.json $DS_CONFIG\n"),
        "bad.sh": "#!/bin/bash\n" + body.format(write="echo using $DS_CONFIG > log.txt\n"),
        "configs/base.json": '{"train_batch_size": 8}\n',
        "pretrain.py": "import torch\n",
    })
    r = cli("check", ".", "--no-cache", "--format", "json", cwd=tmp_path)
    assert [(p, line) for p, line, _ in _found(r)] == [("bad.sh", 2)]  # where the path is written


def test_a_config_in_the_projects_folder_above_the_script_and_a_generated_name_are_silent(tmp_path, cli):
    """Found triaging microsoft/DeepSpeedExamples (compression/bert/bash_script/*.sh, run from
    compression/bert/): ``--deepspeed_config ./config/XTC/ds.json`` exists under the project folder
    above the script (8 false findings), and ``config_json="config/ds_config_${NAME}.json"``,
    written by ``sed ... > ${config_json}`` and passed through ``CONFIG=${config_json}`` (7 more).
    A path missing from every folder up to the root is still reported."""
    write_tree(tmp_path, {
        "compression/bert/config/XTC/ds_xtc.json": '{"train_batch_size": 8}\n',
        "compression/bert/config/ds_config_TEMPLATE.json": '{"train_batch_size": 8}\n',
        "compression/bert/bash_script/XTC/quant.sh":
            "#!/bin/bash\npython -m torch.distributed.launch --nproc_per_node=1 run_glue.py "
            "--deepspeed_config ./config/XTC/ds_xtc.json\n",
        "compression/bert/bash_script/prune.sh":
            '#!/bin/bash\nNAME=pruning_head\ntemplate_json="config/ds_config_TEMPLATE.json"\n'
            'config_json="config/ds_config_${NAME}.json"\n'
            'sed "s/LR/1e-4/" ${template_json} > ${config_json}\nCONFIG=${config_json}\n'
            "python -m torch.distributed.launch --nproc_per_node=1 run_glue.py --deepspeed_config ${CONFIG}\n",
        "compression/bert/bash_script/bad.sh":
            "#!/bin/bash\npython -m torch.distributed.launch --nproc_per_node=1 run_glue.py "
            "--deepspeed_config ./config/XTC/ds_missing.json\n",
        "run_glue.py": "import torch\n",
    })
    (tmp_path / ".git").mkdir()
    r = cli("check", ".", "--no-cache", "--format", "json", cwd=tmp_path)
    assert [(p, line) for p, line, _ in _found(r)] == [("compression/bert/bash_script/bad.sh", 2)]


def test_a_tree_without_a_repository_marker_is_read_from_where_it_is_checked(tmp_path, cli):
    # Qwen-VL copied without .git: finetune/finetune_ds.sh names finetune/ds_config_zero3.json, a
    # path from the tree's top, where parallint runs; from the launch file's folder it is missing
    write_tree(tmp_path, {
        "finetune/ds_config_zero3.json": '{"train_batch_size": "auto"}\n',
        "finetune/finetune_ds.sh": "#!/bin/bash\ntorchrun --nproc_per_node 8 finetune.py "
                                   "--deepspeed finetune/ds_config_zero3.json\n",
        "finetune.py": "import torch\n",
    })
    assert _found(cli("check", ".", "--no-cache", "--format", "json", cwd=tmp_path)) == []
    assert _found(cli("check", "finetune/finetune_ds.sh", "--no-cache", "--format", "json", cwd=tmp_path)) == []
    # a name that is nowhere is still reported
    (tmp_path / "finetune/ds_config_zero3.json").unlink()
    assert len(_found(cli("check", ".", "--no-cache", "--format", "json", cwd=tmp_path))) == 1
