"""HF TrainingArguments given as flags on the launch line (HfArgumentParser scripts) reach BAT003."""

from __future__ import annotations

from parallint.discover.settings import Config
from parallint.engine.runner import check_paths

from conftest import write_tree

# the shape of transformers' examples/pytorch/language-modeling/run_clm.py, reduced
HF_SCRIPT = """\
from dataclasses import dataclass, field

from transformers import HfArgumentParser, Trainer, TrainingArguments


@dataclass
class ModelArguments:
    model_name_or_path: str = field(default="gpt2")


def main():
    parser = HfArgumentParser((ModelArguments, TrainingArguments))
    model_args, training_args = parser.parse_args_into_dataclasses()
    trainer = Trainer(model=None, args=training_args)
    trainer.train()


if __name__ == "__main__":
    main()
"""
DS = """\
{
  "train_micro_batch_size_per_gpu": "auto",
  "gradient_accumulation_steps": 4,
  "bf16": {"enabled": "auto"},
  "zero_optimization": {"stage": 2}
}
"""


def _check(tmp_path, files, path="run.sh", select=("BAT003",)):
    write_tree(tmp_path, files)
    res = check_paths([path], Config(None, tmp_path, {"select": list(select)}), cwd=tmp_path)
    assert not res.errors, res.errors
    return res.diagnostics


def _run(args: str) -> str:
    return "#!/bin/bash\ndeepspeed --num_gpus 8 train.py \\\n    --output_dir out \\\n    --deepspeed ds.json \\\n" + args


def test_bat003_fires_on_accumulation_flag_against_config(tmp_path):
    diags = _check(tmp_path, {"train.py": HF_SCRIPT, "ds.json": DS,
                              "run.sh": _run("    --per_device_train_batch_size 4 \\\n    --gradient_accumulation_steps 2 \\\n    --bf16\n")})
    assert [(d.code, d.span.path, d.span.line) for d in diags] == [("BAT003", "ds.json", 3)]
    assert "2" in diags[0].message and "launch line" in diags[0].message
    assert [(r.path, r.line) for r in diags[0].related] == [("run.sh", 6)]


def test_bat003_silent_when_flags_agree(tmp_path):
    assert _check(tmp_path, {"train.py": HF_SCRIPT, "ds.json": DS,
                             "run.sh": _run("    --gradient_accumulation_steps=4 --bf16 True\n")}) == []


def test_default_accumulation_applies_when_flag_absent(tmp_path):
    diags = _check(tmp_path, {"train.py": HF_SCRIPT, "ds.json": DS, "run.sh": _run("    --bf16\n")})
    assert [d.code for d in diags] == ["BAT003"]
    assert "default" in diags[0].message


def test_no_default_when_words_unknown_or_config_given(tmp_path):
    # $EXTRA may carry the flag; a YAML handed to the parser holds the values
    assert _check(tmp_path, {"train.py": HF_SCRIPT, "ds.json": DS, "run.sh": _run("    --bf16 $EXTRA\n")}) == []
    assert _check(tmp_path, {"train.py": HF_SCRIPT, "ds.json": DS,
                             "run.sh": _run("    --config recipe.yaml\n")}) == []


def test_unknown_flag_value_stays_silent(tmp_path):
    assert _check(tmp_path, {"train.py": HF_SCRIPT, "ds.json": DS,
                             "run.sh": "GA=$1\n" + _run("    --gradient_accumulation_steps $GA\n")}) == []


def test_script_without_hf_parser_is_not_read(tmp_path):
    plain = "import argparse\nimport deepspeed\np = argparse.ArgumentParser()\np.add_argument('--deepspeed')\n"
    assert _check(tmp_path, {"train.py": plain, "ds.json": DS,
                             "run.sh": _run("    --gradient_accumulation_steps 2\n")}) == []


def test_script_that_overrides_field_is_not_defaulted(tmp_path):
    script = HF_SCRIPT.replace("    trainer = Trainer", "    training_args.gradient_accumulation_steps = 4\n    trainer = Trainer")
    assert _check(tmp_path, {"train.py": script, "ds.json": DS,
                             "run.sh": _run("    --gradient_accumulation_steps 2\n")}) == []


def test_precision_flag_against_config(tmp_path):
    ds = DS.replace('"bf16": {"enabled": "auto"}', '"fp16": {"enabled": true}').replace('"gradient_accumulation_steps": 4', '"gradient_accumulation_steps": "auto"')
    diags = _check(tmp_path, {"train.py": HF_SCRIPT, "ds.json": ds, "run.sh": _run("    --bf16\n")})
    assert [d.code for d in diags] == ["BAT003"] and "fp16" in diags[0].message


def test_torchrun_and_accelerate_lines(tmp_path):
    for line in ("torchrun --nproc_per_node 8 train.py --deepspeed ds.json --gradient_accumulation_steps 2\n",
                 "accelerate launch --num_processes 8 train.py --deepspeed ds.json --gradient_accumulation_steps 2\n",
                 "python train.py --deepspeed ds.json --gradient_accumulation_steps 2\n"):
        diags = _check(tmp_path, {"train.py": HF_SCRIPT, "ds.json": DS, "run.sh": line})
        assert [d.code for d in diags] == ["BAT003"], line
