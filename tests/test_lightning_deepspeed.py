"""CFG012 end to end, in the shape of Lightning-AI/pytorch-lightning#19891: a DeepSpeed config that
sets gradient_accumulation_steps, handed to the Lightning Trainer's DeepSpeedStrategy, as a JSON
file the script names or as a dict in the script; with the clean twins (the key removed, Fabric's
strategy, a config the script does not show)."""

from __future__ import annotations

import json

from conftest import write_tree

SCRIPT = """import lightning as L
from lightning.pytorch.strategies import DeepSpeedStrategy
from model import Net
{pre}
trainer = L.Trainer(accelerator="gpu", devices=8, accumulate_grad_batches=4,
                    strategy=DeepSpeedStrategy(config={config}))
trainer.fit(Net())
"""
DS_BAD = '{\n  "zero_optimization": {"stage": 2},\n  "gradient_accumulation_steps": "auto",\n  "train_micro_batch_size_per_gpu": 8\n}\n'
DS_OK = '{\n  "zero_optimization": {"stage": 2},\n  "train_micro_batch_size_per_gpu": 8\n}\n'


def _cfg012(cli, root):
    r = cli("check", ".", "--no-cache", "--format", "json", cwd=root)
    return [(d["path"], d["line"]) for d in json.loads(r.stdout) if d["code"] == "CFG012"]


def test_a_json_config_with_the_key_is_reported_where_the_key_is(tmp_path, cli):
    write_tree(tmp_path, {"configs/ds.json": DS_BAD,
                          "train.py": SCRIPT.format(pre="", config='"configs/ds.json"')})
    assert _cfg012(cli, tmp_path) == [("configs/ds.json", 3)]
    write_tree(tmp_path, {"configs/ds.json": DS_OK})
    assert _cfg012(cli, tmp_path) == []


def test_a_dict_in_the_script_is_reported_at_the_argument(tmp_path, cli):
    pre = 'DS = {"zero_optimization": {"stage": 2}, "gradient_accumulation_steps": 4}\n'
    write_tree(tmp_path, {"train.py": SCRIPT.format(pre=pre, config="DS")})
    assert _cfg012(cli, tmp_path) == [("train.py", 7)]
    write_tree(tmp_path, {"train.py": SCRIPT.format(pre=pre.replace(', "gradient_accumulation_steps": 4', ""),
                                                    config="DS")})
    assert _cfg012(cli, tmp_path) == []


def test_fabric_an_unknown_config_and_another_file_are_silent(tmp_path, cli):
    write_tree(tmp_path, {
        "fabric_train.py": "import lightning as L\nfrom lightning.fabric.strategies import DeepSpeedStrategy\n"
                           "fabric = L.Fabric(devices=8, strategy=DeepSpeedStrategy(config='ds.json'))\n"
                           "fabric.launch()\n",
        "ds.json": DS_BAD,
        "train.py": SCRIPT.format(pre="import sys\n", config="sys.argv[1]"),
        "other.json": DS_BAD,
    })
    assert _cfg012(cli, tmp_path) == []
