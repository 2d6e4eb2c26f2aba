"""Values that flow into the estimator's LoRA terms: a script that trains LoRA adapters over a
frozen base (a literal ``LoraConfig``, its fields given on the launch line, TRL's
``get_peft_config`` with ``--use_peft --lora_r``) and maybe quantizes the base
(``BitsAndBytesConfig(load_in_4bit=True)``, ``--load_in_4bit``) is sized as such: the full
fine-tune of a 70B or 13B model with plain DDP gets MEM001, its LoRA/QLoRA twin that fits is
silent, a 70B LoRA whose 16-bit frozen base alone overflows the GPU keeps MEM001 (saying it
counts a frozen base), and a LoRA whose size is not provable stays silent. End to end through
the CLI, as a user runs it."""

from __future__ import annotations

import json

import pytest

from conftest import write_tree

HEAD = """\
from dataclasses import dataclass, field

import torch
from peft import LoraConfig, get_peft_model
from transformers import AutoModelForCausalLM, BitsAndBytesConfig, HfArgumentParser, Trainer, TrainingArguments


@dataclass
class ModelArguments:
    model_name_or_path: str = field(default="gpt2")
    use_lora: bool = field(default=False)
    lora_r: int = field(default=8)
    lora_target_modules: list[str] = field(default_factory=lambda: ["q_proj", "v_proj"])
    load_in_4bit: bool = field(default=False)


def main():
    parser = HfArgumentParser((ModelArguments, TrainingArguments))
    model_args, training_args = parser.parse_args_into_dataclasses()
"""
FULL = HEAD.replace("from peft import LoraConfig, get_peft_model\n", "").replace("BitsAndBytesConfig, ", "") \
    .split("    use_lora")[0] + HEAD.split("load_in_4bit: bool = field(default=False)\n")[1] + """\
    model = AutoModelForCausalLM.from_pretrained(model_args.model_name_or_path, torch_dtype=torch.bfloat16)
    Trainer(model=model, args=training_args).train()


if __name__ == "__main__":
    main()
"""
#: a literal LoraConfig: rank 16 on the four attention projections
LITERAL = HEAD + """\
    model = AutoModelForCausalLM.from_pretrained(model_args.model_name_or_path, torch_dtype=torch.bfloat16{quant})
    config = LoraConfig(r=16, lora_alpha=32, target_modules=["q_proj", "k_proj", "v_proj", "o_proj"],
                        lora_dropout=0.05, task_type="CAUSAL_LM")
    model = get_peft_model(model, config)
    Trainer(model=model, args=training_args).train()


if __name__ == "__main__":
    main()
"""
QUANT = ', quantization_config=BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4", ' \
        'bnb_4bit_compute_dtype=torch.bfloat16)'
#: the LoraConfig reads the script's own arguments: their values come from the launch line
BOUND = HEAD + """\
    bnb = BitsAndBytesConfig(load_in_4bit=model_args.load_in_4bit, bnb_4bit_compute_dtype=torch.bfloat16)
    model = AutoModelForCausalLM.from_pretrained(model_args.model_name_or_path, quantization_config=bnb,
                                                 torch_dtype=torch.bfloat16)
    if model_args.use_lora:
        lora = LoraConfig(r=model_args.lora_r, target_modules=model_args.lora_target_modules)
        model = get_peft_model(model, lora)
    Trainer(model=model, args=training_args).train()


if __name__ == "__main__":
    main()
"""
BOUND_16BIT = BOUND.replace("quantization_config=bnb,\n                                                 ", "") \
    .replace("    bnb = BitsAndBytesConfig(load_in_4bit=model_args.load_in_4bit, bnb_4bit_compute_dtype=torch.bfloat16)\n",
             "")
#: TRL's sft.py shape: get_peft_config / get_quantization_config over ModelConfig
TRL = """\
import torch
from transformers import AutoModelForCausalLM
from trl import ModelConfig, ScriptArguments, SFTConfig, SFTTrainer, TrlParser, get_kbit_device_map
from trl import get_peft_config, get_quantization_config


def main():
    parser = TrlParser((ScriptArguments, SFTConfig, ModelConfig))
    script_args, training_args, model_args = parser.parse_args_and_config()
    quantization_config = get_quantization_config(model_args)
    model_kwargs = dict(torch_dtype=torch.bfloat16, quantization_config=quantization_config,
                        device_map=get_kbit_device_map() if quantization_config is not None else None)
    model = AutoModelForCausalLM.from_pretrained(model_args.model_name_or_path, **model_kwargs)
    SFTTrainer(model=model, args=training_args, peft_config=get_peft_config(model_args)).train()


if __name__ == "__main__":
    main()
"""


def _run(model: str, extra: str = "") -> str:
    return (f"#!/bin/bash\ntorchrun --nproc_per_node 8 sft.py --model_name_or_path {model} --bf16 \\\n"
            f"    --per_device_train_batch_size 1 --output_dir out {extra}\n")


def _findings(cli, tmp_path, files: dict):
    # 8 x A100-80GB, the GPUs of the public reports
    write_tree(tmp_path, {"pyproject.toml": "[project]\nname = 'x'\n[tool.parallint]\ngpu = 'A100-80GB'\n", **files})
    p = cli("check", "--no-cache", "--select", "MEM", "--format", "json", ".", cwd=tmp_path)
    assert "Traceback" not in p.stderr, p.stderr
    return json.loads(p.stdout)


def _show(cli, tmp_path) -> str:
    p = cli("show", ".", cwd=tmp_path)
    assert "Traceback" not in p.stderr, p.stderr
    return p.stdout


@pytest.mark.parametrize("model", ["meta-llama/Llama-2-70b-hf", "meta-llama/Llama-2-13b-hf"])
def test_full_fine_tune_is_mem001_and_its_lora_twin_that_fits_is_silent(tmp_path, cli, model):
    got = _findings(cli, tmp_path / "full", {"sft.py": FULL, "run.sh": _run(model)})
    assert [d["code"] for d in got] == ["MEM001"], got
    # the same launch line, a literal LoraConfig (QLoRA for the 70B, whose 16-bit base is 128 GiB)
    quant = QUANT if "70b" in model else ""
    got = _findings(cli, tmp_path / "lora", {"sft.py": LITERAL.format(quant=quant), "run.sh": _run(model)})
    assert got == [], got
    shown = _show(cli, tmp_path / "lora")
    assert "qlora" in shown if quant else "lora" in shown, shown
    assert "get_peft_model(...) in sft.py" in shown, shown


def test_a_70b_lora_whose_16_bit_base_alone_overflows_keeps_mem001_and_says_so(tmp_path, cli):
    got = _findings(cli, tmp_path, {"sft.py": LITERAL.format(quant=""), "run.sh": _run("meta-llama/Llama-2-70b-hf")})
    assert [d["code"] for d in got] == ["MEM001"], got
    msg = got[0]["message"]
    assert "a frozen base" in msg and "M trainable LoRA parameters" in msg, msg
    # 69B frozen bf16 weights, 128.5 GiB, plus the adapters' states
    assert "weights 12" in msg and "gradients 0." in msg, msg


def test_lora_values_bound_from_the_launch_line(tmp_path, cli):
    line = "--use_lora --lora_r 16 --lora_target_modules q_proj k_proj v_proj o_proj"
    # QLoRA: the 4-bit 70B base fits an 80 GB card
    got = _findings(cli, tmp_path / "q", {"sft.py": BOUND, "run.sh": _run("meta-llama/Llama-2-70b-hf",
                                                                           line + " --load_in_4bit")})
    assert got == [], got
    shown = _show(cli, tmp_path / "q")
    assert "--lora_r on the launch line" in shown and "nf4" in shown, shown
    # the same LoRA over a 16-bit base: 128 GiB of frozen weights on every GPU
    got = _findings(cli, tmp_path / "b", {"sft.py": BOUND_16BIT, "run.sh": _run("meta-llama/Llama-2-70b-hf", line)})
    assert [d["code"] for d in got] == ["MEM001"], got
    assert "frozen base" in got[0]["message"]
    # and over a 13B base it fits
    got = _findings(cli, tmp_path / "c", {"sft.py": BOUND_16BIT, "run.sh": _run("meta-llama/Llama-2-13b-hf", line)})
    assert got == [], got


def test_trl_use_peft_and_load_in_4bit_on_the_launch_line(tmp_path, cli):
    lora = "--use_peft --lora_r 16 --lora_target_modules all-linear"
    got = _findings(cli, tmp_path / "q", {"sft.py": TRL, "run.sh": _run("meta-llama/Llama-2-70b-hf",
                                                                         lora + " --load_in_4bit")})
    assert got == [], got
    got = _findings(cli, tmp_path / "b", {"sft.py": TRL, "run.sh": _run("meta-llama/Llama-2-70b-hf", lora)})
    assert [d["code"] for d in got] == ["MEM001"], got
    assert "frozen base" in got[0]["message"]
    # no PEFT flag on a complete line: TRL builds neither a LoraConfig nor a quantized base
    got = _findings(cli, tmp_path / "c", {"sft.py": TRL, "run.sh": _run("meta-llama/Llama-2-13b-hf")})
    assert [d["code"] for d in got] == ["MEM001"] and "frozen base" not in got[0]["message"], got


@pytest.mark.parametrize("script,extra", [
    # PEFT is evident but its size is not provable: never sized as full fine-tuning
    (TRL, "--use_peft"),  # TRL's default rank and targets are not read
    (TRL, "--use_peft --lora_r 16 --lora_target_modules c_attn"),  # a module the estimator does not size
    (TRL, "--use_peft --lora_r 16 --lora_target_modules all-linear --use_dora"),
    (BOUND_16BIT, "--lora_r 16 --lora_target_modules q_proj"),  # no --use_lora: the guard is not known true
    (BOUND_16BIT, "--use_lora --lora_target_modules q_proj"),  # the rank is the dataclass default
    (BOUND_16BIT, "--use_lora --lora_r $R --lora_target_modules q_proj"),
    (BOUND, "--use_lora --lora_r 16 --lora_target_modules q_proj"),  # load_in_4bit not on the line
    (LITERAL.format(quant="").replace('task_type="CAUSAL_LM"', 'modules_to_save=["lm_head"]'), ""),
    (LITERAL.format(quant="").replace('target_modules=["q_proj", "k_proj", "v_proj", "o_proj"],', ""), ""),
    (LITERAL.format(quant="").replace("r=16", "r=rank"), ""),
    (LITERAL.format(quant="").replace("    model = get_peft_model", "    model.freeze_base()\n    model = get_peft_model"),
     ""),
    (LITERAL.format(quant=', device_map="auto"'), ""),
    (LITERAL.format(quant=""), "--lora_r 64"),  # a PEFT flag the literal config does not read
])
def test_peft_whose_size_is_not_provable_stays_silent(tmp_path, cli, script, extra):
    got = _findings(cli, tmp_path, {"sft.py": script, "run.sh": _run("meta-llama/Llama-2-70b-hf", extra)})
    # no error: at most the info that says what to verify (a LoRA and only a LoRA, of unknown size,
    # over a base whose 16-bit weights alone overflow the card: tests/test_values_peft_base.py)
    assert all(d["severity"] == "info" and "LoRA of unknown size" in d["message"] for d in got), got
    if script is not TRL:  # quantization words, a guard, freezing, a device map: not only a LoRA
        assert got == [], got


LOOP = """\
import torch
import torch.distributed as dist
from peft import LoraConfig, get_peft_model
from torch.nn.parallel import DistributedDataParallel as DDP
from transformers import AutoModelForCausalLM

dist.init_process_group("nccl")
model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-70b-hf", torch_dtype=torch.bfloat16)
model = get_peft_model(model, LoraConfig(r=8, target_modules=["q_proj", "v_proj"]))
model = DDP(model.cuda())
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
"""


def test_a_training_loop_with_a_literal_lora_is_sized_as_lora(tmp_path, cli):
    run = "#!/bin/bash\ntorchrun --nproc_per_node 8 train.py\n"
    got = _findings(cli, tmp_path / "a", {"train.py": LOOP, "run.sh": run})
    assert [d["code"] for d in got] == ["MEM001"] and "frozen base" in got[0]["message"], got
    small = LOOP.replace("Llama-2-70b-hf", "Llama-2-13b-hf")
    assert _findings(cli, tmp_path / "b", {"train.py": small, "run.sh": run}) == []


# ------------------------------------------------------------ hub table: more families
def test_new_hub_families_give_their_published_parameter_counts():
    """Gemma 1/2 (a gated GELU MLP: three matrices), Phi-3 medium and Phi-4, InternLM2, OLMo 1/2:
    the rows come from the published config.json fields and count what the model cards say."""
    from parallint.estimator.params import count_params
    from parallint.estimator.spec import hub_shape

    published = {"google/gemma-2b": 2.51e9, "google/gemma-7b": 8.54e9, "google/gemma-2-9b": 9.24e9,
                 "microsoft/Phi-3-medium-4k-instruct": 13.96e9, "microsoft/phi-4": 14.66e9,
                 "internlm/internlm2-7b": 7.74e9, "allenai/OLMo-1B-hf": 1.18e9, "allenai/OLMo-2-0425-1B": 1.48e9}
    for hub, n in published.items():
        got = hub_shape(hub)
        assert got is not None, hub
        assert abs(count_params(got[1]) - n) / n < 0.01, (hub, count_params(got[1]))


def test_a_local_gemma_folder_reads_its_mlp_as_gated(tmp_path):
    from pathlib import Path

    from parallint.readers import hf_model

    cfg = json.dumps({"model_type": "gemma", "hidden_act": "gelu_pytorch_tanh", "hidden_size": 3072,
                      "num_hidden_layers": 28, "num_attention_heads": 16, "intermediate_size": 24576})
    ff = hf_model.read("config.json", Path("config.json"), cfg)
    assert ff.facts.get("model.mlp").value == "swiglu"
    gpt = hf_model.read("config.json", Path("config.json"), cfg.replace('"gemma"', '"gpt2"'))
    assert gpt.facts.get("model.mlp").value == "gelu"
