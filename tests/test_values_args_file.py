"""Values that flow: the one-argument ``sft.py args.yaml`` (``args.json``) form. When the script
parses ``sys.argv[1]`` with ``HfArgumentParser.parse_yaml_file``/``parse_json_file``, the file is
the job's whole TrainingArguments: the dataclass defaults fill what it leaves out (BAT003 compares
them) and the model it names gives the shape (MEM001), on hfargs' conditions."""

from __future__ import annotations

import json

from conftest import write_tree

SFT = """\
import os
import sys
from dataclasses import dataclass, field

from transformers import AutoModelForCausalLM, HfArgumentParser, Trainer, TrainingArguments


@dataclass
class ModelArguments:
    model_name_or_path: str = field(default="gpt2")


def main():
    parser = HfArgumentParser((ModelArguments, TrainingArguments))
    if len(sys.argv) == 2 and sys.argv[1].endswith(".{kind}"):
        model_args, training_args = parser.parse_{kind}_file(os.path.abspath(sys.argv[1]))
    else:
        model_args, training_args = parser.parse_args_into_dataclasses()
    model = AutoModelForCausalLM.from_pretrained(model_args.model_name_or_path)
    Trainer(model=model, args=training_args).train()


if __name__ == "__main__":
    main()
"""
ARGS = "model_name_or_path: {model}\nbf16: true\nper_device_train_batch_size: 1\noutput_dir: out\n"
RUN = "#!/bin/bash\ntorchrun --nproc_per_node 8 sft.py {arg}\n"


def _findings(cli, tmp_path, files, select="MEM"):
    write_tree(tmp_path, {"pyproject.toml": "[project]\nname = 'x'\n", **files})
    p = cli("check", "--no-cache", "--select", select, "--format", "json", ".", cwd=tmp_path)
    assert "Traceback" not in p.stderr, p.stderr
    return json.loads(p.stdout)


def test_70b_in_the_yaml_file_is_mem001_with_the_file_as_origin(tmp_path, cli):
    files = {"sft.py": SFT.format(kind="yaml"), "args.yaml": ARGS.format(model="meta-llama/Llama-2-70b-hf"),
             "run.sh": RUN.format(arg="args.yaml")}
    got = _findings(cli, tmp_path, files)
    assert [d["code"] for d in got] == ["MEM001"], got
    assert "69.0B-parameter model" in got[0]["message"]
    assert any(r["path"] == "args.yaml" for r in got[0]["related"]), got[0]
    p = cli("show", ".", cwd=tmp_path)
    assert "model_name_or_path meta-llama/Llama-2-70b-hf in args.yaml" in p.stdout, p.stdout


def test_70b_in_a_json_file(tmp_path, cli):
    args = json.dumps({"model_name_or_path": "meta-llama/Llama-2-70b-hf", "bf16": True,
                       "per_device_train_batch_size": 1, "output_dir": "out"}, indent=1)
    files = {"sft.py": SFT.format(kind="json"), "args.json": args, "run.sh": RUN.format(arg="args.json")}
    assert [d["code"] for d in _findings(cli, tmp_path, files)] == ["MEM001"]


def test_small_model_lora_and_unparsed_files_are_silent(tmp_path, cli):
    base = {"sft.py": SFT.format(kind="yaml"), "run.sh": RUN.format(arg="args.yaml")}
    assert _findings(cli, tmp_path, {**base, "args.yaml": ARGS.format(model="gpt2")}) == []
    lora = ARGS.format(model="meta-llama/Llama-2-70b-hf") + "use_peft: true\nlora_r: 16\n"
    assert _findings(cli, tmp_path, {**base, "args.yaml": lora}) == []
    # the script parses only JSON files: a YAML word goes to parse_args_into_dataclasses
    files = {**base, "sft.py": SFT.format(kind="json"), "args.yaml": ARGS.format(model="meta-llama/Llama-2-70b-hf")}
    assert _findings(cli, tmp_path, files) == []
    # a second word: not the one-argument form
    files = {**base, "args.yaml": ARGS.format(model="meta-llama/Llama-2-70b-hf"),
             "run.sh": RUN.format(arg="args.yaml --seed 1")}
    assert _findings(cli, tmp_path, files) == []


def test_dataclass_default_of_a_key_the_file_leaves_out_reaches_bat003(tmp_path, cli):
    ds = json.dumps({"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 1})
    files = {"sft.py": SFT.format(kind="yaml"), "ds.json": ds, "run.sh": RUN.format(arg="args.yaml"),
             "args.yaml": "model_name_or_path: gpt2\nbf16: true\ndeepspeed: ds.json\noutput_dir: out\n"}
    got = _findings(cli, tmp_path, files, "BAT003")
    assert len(got) == 1 and "per-device batch size 8" in got[0]["message"], got
    files["args.yaml"] += "per_device_train_batch_size: 4\n"
    assert _findings(cli, tmp_path, files, "BAT003") == []


# ------------------------------------------------ sft.py args.yaml --key=value (YAML plus flags)
H4 = SFT.replace(
    "    parser = HfArgumentParser((ModelArguments, TrainingArguments))\n",
    "    parser = YamlArgumentParser((ModelArguments, TrainingArguments))\n").replace(
    "    else:\n        model_args, training_args = parser.parse_args_into_dataclasses()",
    "    elif len(sys.argv) > 2 and sys.argv[1].endswith(\".yaml\"):\n"
    "        model_args, training_args = parser.parse_yaml_and_args(os.path.abspath(sys.argv[1]), sys.argv[2:])\n"
    "    else:\n        model_args, training_args = parser.parse_args_into_dataclasses()").replace(
    "\n\ndef main():", """

class YamlArgumentParser(HfArgumentParser):
    def parse_yaml_and_args(self, yaml_arg, other_args):
        loaded = self.parse_yaml_file(os.path.abspath(yaml_arg))
        pairs = dict(arg.split("=") for arg in other_args)
        return [type(obj)(**{{**vars(obj), **{{k.strip("-"): v for k, v in pairs.items() if k.strip("-") in vars(obj)}}}})
                for obj in loaded]


def main():""")


def test_yaml_plus_key_value_flags_replace_the_files_keys(tmp_path, cli):
    """alignment-handbook's ``parse_yaml_and_args(sys.argv[1], sys.argv[2:])``: the launch line's
    ``--per_device_train_batch_size=4`` wins over the file's 8, so BAT003 compares 4 with the
    DeepSpeed config's 4 and stays silent; the file's 8 alone is a mismatch."""
    ds = json.dumps({"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 1})
    base = {"sft.py": H4.format(kind="yaml"), "ds.json": ds,
            "args.yaml": "model_name_or_path: gpt2\nbf16: true\ndeepspeed: ds.json\n"
                         "per_device_train_batch_size: 8\noutput_dir: out\n"}
    got = _findings(cli, tmp_path / "file", {**base, "run.sh": RUN.format(arg="args.yaml --learning_rate=1e-5")},
                    "BAT003")
    assert len(got) == 1 and "per-device batch size 8" in got[0]["message"], got
    run = RUN.format(arg="args.yaml --per_device_train_batch_size=4 --learning_rate=1e-5")
    assert _findings(cli, tmp_path / "over", {**base, "run.sh": run}, "BAT003") == []
    # and the other way: the line's 2 against the config's 4
    run = RUN.format(arg="args.yaml --per_device_train_batch_size=2")
    got = _findings(cli, tmp_path / "bad", {**base, "args.yaml": base["args.yaml"].replace(": 8", ": 4"),
                                            "run.sh": run}, "BAT003")
    assert len(got) == 1 and "per-device batch size 2" in got[0]["message"], got
    p = cli("show", ".", cwd=tmp_path / "bad")
    assert "--per_device_train_batch_size on the launch line" in p.stdout and "8" not in p.stdout.split("micro_batch")[1].split("\n")[0], p.stdout


def test_yaml_plus_flags_the_script_does_not_read_or_cannot_replace_exactly(tmp_path, cli):
    files = {"sft.py": H4.format(kind="yaml"), "args.yaml": ARGS.format(model="meta-llama/Llama-2-70b-hf")}
    # the 70B in the file with a learning rate on the line: still the file's model
    got = _findings(cli, tmp_path / "a", {**files, "run.sh": RUN.format(arg="args.yaml --learning_rate=1e-5")})
    assert [d["code"] for d in got] == ["MEM001"], got
    for i, extra in enumerate(["--learning_rate 1e-5",  # `--key value` fails in parse_yaml_and_args
                               "--model_name_or_path=gpt2", "--deepspeed=ds_z3.json", "--bf16=false",
                               "--use_peft=true", "$EXTRA"]):
        got = _findings(cli, tmp_path / f"b{i}", {**files, "run.sh": RUN.format(arg=f"args.yaml {extra}")})
        assert got == [], (extra, got)
    # a script that only parses the one-argument form
    got = _findings(cli, tmp_path / "c", {**files, "sft.py": SFT.format(kind="yaml"),
                                          "run.sh": RUN.format(arg="args.yaml --learning_rate=1e-5")})
    assert got == [], got
