"""Values that flow: a model named on the launch line (a Hugging Face hub id in parallint's table,
or a local folder with its config.json) gives the job its shape, so the most common OOM, full
fine-tuning with plain DDP, is predicted (MEM001) and its sharded, PEFT and small twins stay
silent. End to end through the CLI, as a user runs it."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import ROOT, write_tree

SFT = """\
from dataclasses import dataclass, field

import torch
from transformers import AutoModelForCausalLM, HfArgumentParser, Trainer, TrainingArguments


@dataclass
class ModelArguments:
    model_name_or_path: str = field(default="gpt2")


def main():
    parser = HfArgumentParser((ModelArguments, TrainingArguments))
    model_args, training_args = parser.parse_args_into_dataclasses()
    model = AutoModelForCausalLM.from_pretrained(model_args.model_name_or_path{load})
    Trainer(model=model, args=training_args).train()


if __name__ == "__main__":
    main()
"""
LORA = SFT.replace("    Trainer(model=model", """\
    from peft import LoraConfig, get_peft_model

    model = get_peft_model(model, LoraConfig(r=8, target_modules=["q_proj", "v_proj"]))
    Trainer(model=model""")
Z3 = json.dumps({"train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto",
                 "zero_optimization": {"stage": 3}, "bf16": {"enabled": "auto"}})


def _run(model: str, extra: str = "", launch: str = "torchrun --nproc_per_node 8") -> str:
    return (f"#!/bin/bash\n{launch} sft.py --model_name_or_path {model} --bf16 \\\n"
            f"    --per_device_train_batch_size 1 --output_dir out {extra}\n")


def _findings(cli, tmp_path, files: dict, select: str = "MEM"):
    write_tree(tmp_path, {"pyproject.toml": "[project]\nname = 'x'\n", **files})
    p = cli("check", "--no-cache", "--select", select, "--format", "json", ".", cwd=tmp_path)
    assert "Traceback" not in p.stderr, p.stderr
    return json.loads(p.stdout)


def test_70b_full_fine_tune_with_plain_ddp_is_mem001(tmp_path, cli):
    got = _findings(cli, tmp_path, {"sft.py": SFT.format(load=""), "run.sh": _run("meta-llama/Llama-2-70b-hf")})
    assert [d["code"] for d in got] == ["MEM001"], got
    assert got[0]["path"] == "run.sh"
    assert "69.0B-parameter model" in got[0]["message"]
    # fp32 weights with autocast (no torch_dtype): 16 bytes a parameter, about 1 TiB
    assert "1027.8 GiB" in got[0]["message"], got[0]["message"]


def test_70b_zero3_twin_over_32_gpus_is_silent(tmp_path, cli):
    run = ("#!/bin/bash\n#SBATCH --nodes=4\n#SBATCH --gres=gpu:a100:8\n"
           + _run("meta-llama/Llama-2-70b-hf", "--deepspeed ds_z3.json",
                  "srun torchrun --nnodes 4 --nproc_per_node 8"))
    files = {"sft.py": SFT.format(load=""), "train.sbatch": run, "ds_z3.json": Z3}
    assert _findings(cli, tmp_path, files) == []


def test_deepspeed_config_that_is_not_read_keeps_it_silent(tmp_path, cli):
    files = {"sft.py": SFT.format(load=""), "run.sh": _run("meta-llama/Llama-2-70b-hf", "--deepspeed missing.json")}
    assert _findings(cli, tmp_path, files) == []


def test_fsdp_full_shard_on_the_launch_line_is_not_pure_data_parallelism(tmp_path, cli):
    files = {"sft.py": SFT.format(load=""),
             "run.sh": _run("meta-llama/Llama-2-13b-hf", "--fsdp 'full_shard auto_wrap'")}
    assert _findings(cli, tmp_path, files) == []


def test_lora_twin_is_silent(tmp_path, cli):
    files = {"sft.py": LORA.format(load=""), "run.sh": _run("meta-llama/Llama-2-7b-hf")}
    assert _findings(cli, tmp_path, files) == []


def test_lora_flags_on_the_launch_line_keep_it_silent(tmp_path, cli):
    files = {"sft.py": SFT.format(load=""), "run.sh": _run("meta-llama/Llama-2-70b-hf", "--use_peft --lora_r 16")}
    assert _findings(cli, tmp_path, files) == []


def test_7b_on_one_gpu_counts_the_dtype_it_loads(tmp_path, cli):
    one = "torchrun --nproc_per_node 1"
    run = "#!/bin/bash\n#SBATCH --gres=gpu:a100:1\n" + _run("meta-llama/Llama-2-7b-hf", "", one).split("\n", 1)[1]
    # fp32 weights: 16 B/param, 100 GiB on an 80 GB card
    got = _findings(cli, tmp_path / "fp32", {"sft.py": SFT.format(load=""), "run.sbatch": run})
    assert [d["code"] for d in got] == ["MEM001"], got
    assert "A100-80GB" in got[0]["message"], got[0]["message"]
    # loaded in bf16: pure 16-bit Adam, 8 B/param, 50 GiB: it fits
    got = _findings(cli, tmp_path / "bf16", {"sft.py": SFT.format(load=", torch_dtype=torch.bfloat16"),
                                             "run.sbatch": run})
    assert got == [], got


def test_local_model_folder_config_json_is_the_jobs_model(tmp_path, cli):
    cfg = json.dumps({"model_type": "llama", "num_hidden_layers": 80, "hidden_size": 8192,
                      "intermediate_size": 28672, "num_attention_heads": 64, "num_key_value_heads": 8,
                      "vocab_size": 32000, "hidden_act": "silu", "tie_word_embeddings": False})
    files = {"sft.py": SFT.format(load=""), "run.sh": _run("./ckpt"), "ckpt/config.json": cfg}
    got = _findings(cli, tmp_path, files)
    assert [d["code"] for d in got] == ["MEM001"], got
    assert got[0]["path"] == "run.sh" and "69.0B" in got[0]["message"]
    small = cfg.replace('"num_hidden_layers": 80', '"num_hidden_layers": 2')
    files["ckpt/config.json"] = small
    assert _findings(cli, tmp_path / "small", files) == []


def test_unknown_hub_id_and_incomplete_launch_lines_stay_silent(tmp_path, cli):
    files = {"sft.py": SFT.format(load=""), "run.sh": _run("someone/private-70b")}
    assert _findings(cli, tmp_path / "a", files) == []
    files = {"sft.py": SFT.format(load=""), "run.sh": _run("meta-llama/Llama-2-70b-hf", '"$@"')}
    assert _findings(cli, tmp_path / "b", files) == []
    # the script places the model itself (device_map): not plain data parallelism
    placed = SFT.format(load=', device_map="auto"')
    files = {"sft.py": placed, "run.sh": _run("meta-llama/Llama-2-70b-hf")}
    assert _findings(cli, tmp_path / "c", files) == []


def test_hub_table_is_what_its_generator_writes():
    p = subprocess.run([sys.executable, str(ROOT / "scripts" / "hub_models.py"), "--check"],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr


def test_hub_table_shapes_give_the_published_parameter_counts():
    from parallint.estimator.params import count_params
    from parallint.estimator.spec import hub_shape

    published = {"meta-llama/Llama-2-7b-hf": 6.74e9, "meta-llama/Llama-2-70b-hf": 68.98e9,
                 "meta-llama/Llama-3.1-8B": 8.03e9, "Qwen/Qwen2.5-7B": 7.62e9, "mistralai/Mixtral-8x7B-v0.1": 46.7e9,
                 "meta-llama/Llama-3.2-1B": 1.24e9, "gpt2": 124e6, "tiiuae/falcon-7b": 6.92e9}
    for hub, n in published.items():
        got = hub_shape(hub)
        assert got is not None, hub
        assert abs(count_params(got[1]) - n) / n < 0.01, (hub, count_params(got[1]))
    assert hub_shape("META-LLAMA/llama-2-7b-HF") is not None
    assert hub_shape("./meta-llama/Llama-2-7b-hf") is None


TRAIN_MEM = """\
from fastchat.train.monkey import patch

patch()

from fastchat.train.train import train

if __name__ == "__main__":
    train()
"""
TRAIN_MODULE = """\
from dataclasses import dataclass, field

import transformers
from transformers import Trainer


@dataclass
class ModelArguments:
    model_name_or_path: str = field(default="facebook/opt-125m")


def train():
    parser = transformers.HfArgumentParser((ModelArguments, transformers.TrainingArguments))
    model_args, training_args = parser.parse_args_into_dataclasses()
    model = transformers.AutoModelForCausalLM.from_pretrained(model_args.model_name_or_path)
    Trainer(model=model, args=training_args).train()
"""


def _fastchat(extra: str) -> dict:
    return {"fastchat/__init__.py": "", "fastchat/train/__init__.py": "",
            "fastchat/train/monkey.py": "def patch():\n    pass\n",
            "fastchat/train/train_mem.py": TRAIN_MEM, "fastchat/train/train.py": TRAIN_MODULE,
            "run.sh": "#!/bin/bash\ntorchrun --nproc_per_node=8 fastchat/train/train_mem.py \\\n"
                      f"    --model_name_or_path meta-llama/Llama-2-70b-hf --bf16 True {extra}\\\n"
                      "    --per_device_train_batch_size 1 --output_dir out\n"}


def test_the_parser_of_an_imported_train_function_binds_the_launch_line(tmp_path, cli):
    """FastChat's train_mem.py: `from fastchat.train.train import train`, then `train()`."""
    got = _findings(cli, tmp_path, _fastchat(""))
    assert [(d["code"], d["path"]) for d in got] == [("MEM001", "run.sh")], got


def test_its_fsdp_twin_is_silent(tmp_path, cli):
    assert _findings(cli, tmp_path, _fastchat('--fsdp "full_shard auto_wrap" ')) == []


LITERAL = """\
from transformers import AutoModelForCausalLM, AutoTokenizer, HfArgumentParser, Trainer, TrainingArguments


def main():
    (training_args,) = HfArgumentParser(TrainingArguments).parse_args_into_dataclasses()
    tokenizer = AutoTokenizer.from_pretrained({tok})
    model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-70b-hf")
{peft}    Trainer(model=model, args=training_args, tokenizer=tokenizer).train()


if __name__ == "__main__":
    main()
"""


@pytest.mark.parametrize("tok,peft,extra,expected", [
    ('"meta-llama/Llama-2-70b-hf"', "", "", ["MEM001"]),
    ('"meta-llama/Llama-2-70b-hf"', "", "--fsdp full_shard", []),  # sharded: fits
    ('"meta-llama/Llama-2-70b-hf"', "    from peft import LoraConfig, get_peft_model\n"
     "    model = get_peft_model(model, LoraConfig(r=8))\n", "", []),  # LoRA: not sized, silent
    ("training_args.output_dir", "", "", []),  # another from_pretrained not literal: not provable
])
def test_a_literal_hub_id_in_the_script_gives_the_shape(tmp_path, cli, tok, peft, extra, expected):
    got = _findings(cli, tmp_path, {"sft.py": LITERAL.format(tok=tok, peft=peft),
                                    "run.sh": "#!/bin/bash\ntorchrun --nproc_per_node 8 sft.py --bf16 "
                                              f"--per_device_train_batch_size 1 --output_dir out {extra}\n"})
    assert [d["code"] for d in got] == expected, got
    if expected:
        assert any(r["path"] == "sft.py" and r["line"] == 7 for r in got[0].get("related", [])), got[0]


# ------------------------------------------------------------ the script names its model itself
LOOP = """\
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from transformers import AutoModelForCausalLM, AutoTokenizer

dist.init_process_group("nccl")
torch.cuda.set_device(dist.get_rank() % 8)
tok = AutoTokenizer.from_pretrained("meta-llama/Llama-2-70b-hf")
model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-70b-hf").cuda()
model = DDP(model)
opt = torch.optim.AdamW(model.parameters(), lr=1e-5)
for batch in []:
    model(**batch).loss.backward()
    opt.step()
"""
LLAMA_CONFIG = """\
import torch
from torch.nn.parallel import DistributedDataParallel as DDP
from transformers import LlamaConfig, LlamaForCausalLM

config = LlamaConfig(hidden_size=8192, intermediate_size=28672, num_hidden_layers=80,
                     num_attention_heads=64, num_key_value_heads=8)
model = DDP(LlamaForCausalLM(config).cuda())
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
"""
TORCHRUN8 = "#!/bin/bash\ntorchrun --nproc_per_node 8 train.py\n"


def test_literal_from_pretrained_in_a_training_loop_is_mem001(tmp_path, cli):
    got = _findings(cli, tmp_path, {"train.py": LOOP, "run.sh": TORCHRUN8})
    assert [d["code"] for d in got] == ["MEM001"], got
    assert got[0]["path"] == "train.py" and got[0]["line"] == 9 and "69.0B-parameter model" in got[0]["message"]
    p = cli("show", ".", cwd=tmp_path)
    assert 'from_pretrained("meta-llama/Llama-2-70b-hf") in train.py' in p.stdout


def test_literal_llama_config_is_mem001(tmp_path, cli):
    got = _findings(cli, tmp_path, {"train.py": LLAMA_CONFIG, "run.sh": TORCHRUN8})
    assert [d["code"] for d in got] == ["MEM001"], got
    assert got[0]["line"] == 5


def test_literal_model_twins_that_do_not_provably_train_it_all_are_silent(tmp_path, cli):
    twins = {
        "small": LOOP.replace("meta-llama/Llama-2-70b-hf", "gpt2"),
        "not in the table": LOOP.replace("meta-llama/Llama-2-70b-hf", "acme/secret-70b"),
        "8-bit Adam": LOOP.replace("torch.optim.AdamW(", "bnb.optim.AdamW8bit("),
        "parameter groups": LOOP.replace("AdamW(model.parameters()", "AdamW([{'params': model.parameters()}]"),
        "LoRA": LOOP.replace("model = DDP(model)", "from peft import get_peft_model\nmodel = DDP(get_peft_model(model, cfg))"),
        "device map": LOOP.replace('"meta-llama/Llama-2-70b-hf").cuda()', '"meta-llama/Llama-2-70b-hf", device_map="auto")'),
        "FSDP": LOOP.replace("model = DDP(model)", "model = FullyShardedDataParallel(model)"),
        "no optimizer": LOOP.replace("opt = torch.optim.AdamW(model.parameters(), lr=1e-5)\n", ""),
        "two models": LOOP.replace('AutoTokenizer.from_pretrained("meta-llama/Llama-2-70b-hf")',
                                   'AutoTokenizer.from_pretrained("gpt2")'),
        "config with biases": LLAMA_CONFIG.replace("num_key_value_heads=8", "num_key_value_heads=8, attention_bias=True"),
        "small config": LLAMA_CONFIG.replace("num_hidden_layers=80", "num_hidden_layers=2").replace(
            "hidden_size=8192", "hidden_size=512").replace("intermediate_size=28672", "intermediate_size=1024"),
    }
    for name, script in twins.items():
        assert _findings(cli, tmp_path, {"train.py": script, "run.sh": TORCHRUN8}) == [], name
