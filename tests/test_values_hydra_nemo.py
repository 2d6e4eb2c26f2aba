"""A NeMo YAML run through its Hydra entry script takes the launch line's overrides (issue 21):
``python megatron_gpt_pretraining.py trainer.devices=8 model.tensor_model_parallel_size=2`` checks
the config NeMo builds, not the YAML's defaults. End to end through the CLI, each planted case with
its clean twin; a line parallint cannot read leaves the YAML checked on its own, as before."""

from __future__ import annotations

import json

import pytest

from conftest import write_tree

CONFIG = """name: megatron_gpt
trainer:
  devices: 1
  num_nodes: 1
  precision: bf16
model:
  micro_batch_size: 4
  global_batch_size: 32
  tensor_model_parallel_size: {tp}
  pipeline_model_parallel_size: 1
  num_layers: 24
  hidden_size: 2048
  num_attention_heads: 16
"""

SCRIPT = """from nemo.core.config import hydra_runner
from nemo.collections.nlp.parts.megatron_trainer_builder import MegatronTrainerBuilder
from nemo.collections.nlp.models.language_modeling.megatron_gpt_model import MegatronGPTModel


@hydra_runner(config_path="conf", config_name="megatron_gpt_config")
def main(cfg) -> None:
    trainer = MegatronTrainerBuilder(cfg).create_trainer()
    model = MegatronGPTModel(cfg.model, trainer)
    trainer.fit(model)


if __name__ == "__main__":
    main()
"""


def _check(cli, tmp_path, line: str, tp: int = 1) -> list[dict]:
    (tmp_path / ".git").mkdir(parents=True, exist_ok=True)
    write_tree(tmp_path, {"examples/conf/megatron_gpt_config.yaml": CONFIG.format(tp=tp),
                          "examples/megatron_gpt_pretraining.py": SCRIPT,
                          "run.sh": f"#!/bin/bash\n{line}\n"})
    res = cli("check", "--no-cache", "--format", "json", "--select", "LAY", ".", cwd=tmp_path)
    assert res.returncode in (0, 1), res.stdout + res.stderr
    return json.loads(res.stdout or "[]")


LAUNCH = "torchrun --nproc_per_node 8 examples/megatron_gpt_pretraining.py trainer.devices=8 "


def test_an_override_on_the_launch_line_is_what_nemo_runs(cli, tmp_path):
    got = _check(cli, tmp_path, LAUNCH + "model.tensor_model_parallel_size=3")
    codes = sorted(d["code"] for d in got)
    assert codes == ["LAY001", "LAY003"], got
    lay1 = next(d for d in got if d["code"] == "LAY001")
    assert lay1["path"] == "run.sh" and lay1["line"] == 2, lay1
    assert "world size 8 is not divisible by TP 3" in lay1["message"], lay1


def test_its_clean_twin_is_silent(cli, tmp_path):
    assert _check(cli, tmp_path, LAUNCH + "model.tensor_model_parallel_size=2") == []


def test_a_default_the_line_corrects_is_not_reported(cli, tmp_path):
    # the YAML alone says TP 3 on 1 GPU... and heads 16 over TP 3; the line runs TP 2 on 8 GPUs
    assert _check(cli, tmp_path, LAUNCH + "model.tensor_model_parallel_size=2", tp=3) == []
    alone = _check(cli, tmp_path / "alone", "echo nothing launched", tp=3)
    assert sorted(d["code"] for d in alone) == ["LAY001", "LAY003"], alone  # the YAML alone, as before


def test_the_show_command_names_the_launch_word(cli, tmp_path):
    _check(cli, tmp_path, LAUNCH + "model.tensor_model_parallel_size=2")
    res = cli("show", "run.sh", cwd=tmp_path)
    assert "tp: 2  # run.sh:2" in res.stdout and "on the launch line" in res.stdout, res.stdout
    assert "examples/conf/megatron_gpt_config.yaml" in res.stdout.split("# files:")[1].splitlines()[0]


@pytest.mark.parametrize("extra", [
    "model.tensor_model_parallel_size=3 $EXTRA",          # any key may be overridden after it
    "model.tensor_model_parallel_size=${TP}",
    "+model.tensor_model_parallel_size=3",                 # an addition: not the primary's key
    "~model.pipeline_model_parallel_size model.tensor_model_parallel_size=3",
    "--config-name other model.tensor_model_parallel_size=3",
    "model.tensor_model_parallel_size=3 model.optim.name=[a,b]",
    "model.tensor_model_parallel_size=3 model.not_a_key=1",  # not in the file: NeMo's struct refuses it
])
def test_a_line_parallint_cannot_read_leaves_the_yaml_on_its_own(cli, tmp_path, extra):
    got = _check(cli, tmp_path, LAUNCH + extra)
    assert all(d["path"] != "run.sh" for d in got), got


def test_hydra_settings_on_the_line_are_ignored(cli, tmp_path):
    got = _check(cli, tmp_path, LAUNCH + "hydra.run.dir=/tmp/x model.tensor_model_parallel_size=3")
    assert any(d["code"] == "LAY001" and d["path"] == "run.sh" for d in got), got


def test_a_yaml_one_launch_runs_with_its_defaults_keeps_its_own_findings(cli, tmp_path):
    line = LAUNCH + "model.tensor_model_parallel_size=2\npython examples/megatron_gpt_pretraining.py"
    got = _check(cli, tmp_path, line, tp=3)
    assert sorted(d["code"] for d in got if d["path"].endswith(".yaml")) == ["LAY001", "LAY003"], got


def test_a_one_file_check_of_the_yaml_finds_its_launch(cli, tmp_path):
    """Pre-commit on the YAML alone: the launch that overrides its defaults is found through the
    Hydra entry script (the reverse index reads config_name as a link), as in a whole-tree run."""
    _check(cli, tmp_path, LAUNCH + "model.tensor_model_parallel_size=2", tp=3)
    for extra in ((), ("--no-cache",)):
        res = cli("check", *extra, "--format", "json", "examples/conf/megatron_gpt_config.yaml", cwd=tmp_path)
        assert res.returncode == 0 and json.loads(res.stdout) == [], res.stdout + res.stderr
    res = cli("check", "--no-cache", "--format", "json", "run.sh", cwd=tmp_path)
    assert json.loads(res.stdout) == [], res.stdout
    _check(cli, tmp_path / "bad", LAUNCH + "model.tensor_model_parallel_size=3")
    res = cli("check", "--no-cache", "--format", "json", "run.sh", cwd=tmp_path / "bad")
    assert sorted(d["code"] for d in json.loads(res.stdout)) == ["LAY001", "LAY003"], res.stdout
