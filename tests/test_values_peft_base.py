"""Values that flow, issue 21: a LoRA job's frozen base is counted in the dtype it is loaded in
(``torch_dtype=`` of its ``from_pretrained``: fp32 stays 4 bytes a parameter under ``--bf16``
autocast, bf16 is 2 bytes whatever the training precision; DeepSpeed casts the module to the run's
16-bit precision), and a LoRA whose rank or target modules are not provable gets an info that
says what to verify instead of silence, when its base could overflow the GPU. End to end through
the CLI, as a user runs it."""

from __future__ import annotations

import json

import pytest

from conftest import write_tree

SFT = """\
from dataclasses import dataclass, field

import torch
from peft import LoraConfig, get_peft_model
from transformers import AutoModelForCausalLM, HfArgumentParser, Trainer, TrainingArguments


@dataclass
class ModelArguments:
    model_name_or_path: str = field(default="gpt2")


def main():
    model_args, training_args = HfArgumentParser((ModelArguments, TrainingArguments)).parse_args_into_dataclasses()
    model = AutoModelForCausalLM.from_pretrained(model_args.model_name_or_path{load})
    model = get_peft_model(model, LoraConfig({lora}))
    Trainer(model=model, args=training_args).train()


if __name__ == "__main__":
    main()
"""
SIZED = 'r=16, target_modules=["q_proj", "v_proj"]'
Z2 = json.dumps({"train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto",
                 "zero_optimization": {"stage": 2}, "bf16": {"enabled": "auto"}})


def _sft(load: str = "", lora: str = SIZED) -> str:
    return SFT.format(load=load, lora=lora)


def _run(model: str, extra: str = "", flags: str = "--bf16") -> str:
    return (f"#!/bin/bash\ntorchrun --nproc_per_node 8 sft.py --model_name_or_path {model} {flags} \\\n"
            f"    --per_device_train_batch_size 1 --output_dir out {extra}\n")


def _findings(cli, tmp_path, files: dict) -> list:
    write_tree(tmp_path, {"pyproject.toml": "[project]\nname = 'x'\n[tool.parallint]\ngpu = 'A100-80GB'\n", **files})
    p = cli("check", "--no-cache", "--select", "MEM", "--format", "json", ".", cwd=tmp_path)
    assert "Traceback" not in p.stderr, p.stderr
    return json.loads(p.stdout)


# ------------------------------------------------------------ the frozen base's precision
def test_an_fp32_base_under_bf16_autocast_is_4_bytes_a_parameter(tmp_path, cli):
    # Yi-34B: 34.4B frozen parameters, 128 GiB in fp32 (autocast keeps the weights it loaded)
    got = _findings(cli, tmp_path / "fp32", {"sft.py": _sft(", torch_dtype=torch.float32"),
                                             "run.sh": _run("01-ai/Yi-34B")})
    assert [(d["code"], d["severity"]) for d in got] == [("MEM001", "error")], got
    assert "a frozen base" in got[0]["message"] and "weights 128.1 GiB" in got[0]["message"], got
    # its bf16 twin: 64 GiB of frozen weights fit the 80 GB card
    got = _findings(cli, tmp_path / "bf16", {"sft.py": _sft(", torch_dtype=torch.bfloat16"),
                                             "run.sh": _run("01-ai/Yi-34B")})
    assert got == [], got


def test_a_bf16_base_is_stated_without_a_16_bit_flag(tmp_path, cli):
    # no --bf16 on the line: the base still loads in bf16 (the estimator then takes 2 bytes even
    # where the training precision is fp32: test_the_estimator_takes_the_base_dtype_...)
    files = {"sft.py": _sft(', torch_dtype="bfloat16"'), "run.sh": _run("01-ai/Yi-34B", flags="--fp16 False")}
    assert _findings(cli, tmp_path, files) == []
    shown = cli("show", ".", cwd=tmp_path).stdout
    assert "base_dtype: bf16" in shown and "the frozen base kept in bf16" in shown, shown


def test_deepspeed_casts_the_base_to_the_runs_precision(tmp_path, cli):
    # torch_dtype=float32, but DeepSpeed's bf16 engine holds the module in bf16: 64 GiB fits
    files = {"sft.py": _sft(", torch_dtype=torch.float32"), "run.sh": _run("01-ai/Yi-34B", "--deepspeed ds.json"),
             "ds.json": Z2}
    got = _findings(cli, tmp_path, files)
    assert [d for d in got if d["severity"] == "error"] == [], got
    assert "base_dtype" not in cli("show", ".", cwd=tmp_path).stdout


def test_the_estimator_takes_the_base_dtype_over_the_training_precision():
    from parallint.estimator.memory import estimate

    def weights(**training) -> float:
        spec = {"model": {"preset": "llama-2-7b"}, "parallel": {"world_size": 8},
                "training": {"peft": "lora", "lora_rank": 16, "lora_targets": "q,v", "micro_batch": 1, **training},
                "hardware": {"gpu": "A100-80GB"}}
        return estimate(spec, lower_bound=True).weights

    n = 6.74e9
    assert abs(weights(precision="bf16", base_dtype="fp32") / n - 4) < 0.05
    assert abs(weights(precision="fp32", base_dtype="bf16") / n - 2) < 0.05
    # not said: the training precision's figure, as before
    assert abs(weights(precision="bf16") / n - 2) < 0.05 and abs(weights(precision="fp32") / n - 4) < 0.05


@pytest.mark.parametrize("load", [
    "",  # no dtype: transformers' default changed between versions
    ', torch_dtype="auto"',  # the checkpoint's
    ", torch_dtype=dtype",  # a name
    ", torch_dtype=torch.float32).half(",  # cast after loading
])
def test_a_base_dtype_that_is_not_said_is_not_stated(tmp_path, cli, load):
    files = {"sft.py": _sft(load).replace("    model = Auto", "    dtype = torch.float32\n    model = Auto", 1),
             "run.sh": _run("01-ai/Yi-34B")}
    got = _findings(cli, tmp_path, files)
    assert got == [], got  # 2 bytes a parameter under --bf16: the smaller figure fits
    assert "base_dtype" not in cli("show", ".", cwd=tmp_path).stdout


# ------------------------------------------------------------ a LoRA of unknown size
def test_unsized_lora_whose_16_bit_base_overflows_is_an_info_that_says_so(tmp_path, cli):
    got = _findings(cli, tmp_path, {"sft.py": _sft(lora="r=8"), "run.sh": _run("meta-llama/Llama-2-70b-hf")})
    assert [(d["code"], d["severity"], d["path"], d["line"]) for d in got] == [("MEM001", "info", "sft.py", 16)], got
    msg = got[0]["message"]
    assert "LoRA of unknown size over the whole 69.0B-parameter model" in msg, msg
    assert "frozen base alone is 128.5 GiB of 16-bit weights" in msg and "target_modules" in msg, msg
    assert "; use tensor/pipeline parallelism or ZeRO-3/FSDP, or pass the rank" in msg, msg


def test_unsized_lora_that_depends_on_its_dtype_and_adapters_says_what_to_verify(tmp_path, cli):
    files = {"sft.py": _sft(lora="r=8"), "run.sh": _run("01-ai/Yi-34B")}
    got = _findings(cli, tmp_path, files)
    assert [(d["code"], d["severity"]) for d in got] == [("MEM001", "info")], got
    msg = got[0]["message"]
    assert "64.1 GiB of 16-bit weights on every GPU, 128.1 GiB in fp32" in msg, msg
    assert "verify that the base plus the adapters' weights, gradients and optimizer states fit" in msg, msg
    assert "; pass the rank and target modules" in msg, msg


def test_clean_twins_of_the_hint(tmp_path, cli):
    # the adapters' size known: sized, no hint (a bf16 34B base fits)
    files = {"sft.py": _sft(", torch_dtype=torch.bfloat16"), "run.sh": _run("01-ai/Yi-34B")}
    assert _findings(cli, tmp_path / "sized", files) == []
    # rank and targets given on the launch line: sized too
    bound = _sft(", torch_dtype=torch.bfloat16", "r=model_args.lora_r, target_modules=model_args.lora_target_modules") \
        .replace('    model_name_or_path: str = field(default="gpt2")\n',
                 '    model_name_or_path: str = field(default="gpt2")\n    lora_r: int = field(default=8)\n'
                 '    lora_target_modules: list[str] = field(default_factory=lambda: ["q_proj"])\n')
    files = {"sft.py": bound, "run.sh": _run("01-ai/Yi-34B", "--lora_r 16 --lora_target_modules q_proj v_proj")}
    assert _findings(cli, tmp_path / "line", files) == []
    # a base that fits even in fp32 (7B, 25 GiB): nothing to verify
    files = {"sft.py": _sft(lora="r=8"), "run.sh": _run("meta-llama/Llama-2-7b-hf")}
    assert _findings(cli, tmp_path / "small", files) == []
    # ZeRO-3 shards the base: not pure data parallelism
    z3 = Z2.replace('"stage": 2', '"stage": 3')
    files = {"sft.py": _sft(lora="r=8"), "run.sh": _run("meta-llama/Llama-2-70b-hf", "--deepspeed ds.json"),
             "ds.json": z3}
    assert _findings(cli, tmp_path / "z3", files) == []
    # a quantized base or freezing besides the LoRA: not only a LoRA, silent as before
    files = {"sft.py": _sft(", load_in_8bit=True", "r=8"), "run.sh": _run("meta-llama/Llama-2-70b-hf")}
    assert _findings(cli, tmp_path / "q", files) == []


LOOP = """\
import torch
import torch.distributed as dist
from peft import LoraConfig, get_peft_model
from torch.nn.parallel import DistributedDataParallel as DDP
from transformers import AutoModelForCausalLM

dist.init_process_group("nccl")
model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-70b-hf", torch_dtype=torch.bfloat16)
model = get_peft_model(model, LoraConfig({lora}))
model = DDP(model.cuda())
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
"""


def test_a_training_loop_with_an_unsized_lora_is_never_full_fine_tuning(tmp_path, cli):
    run = "#!/bin/bash\ntorchrun --nproc_per_node 8 train.py\n"
    assert _findings(cli, tmp_path / "a", {"train.py": LOOP.format(lora="r=8"), "run.sh": run}) == []
    # its sized twin is counted as a LoRA over a 16-bit base (128 GiB: MEM001)
    got = _findings(cli, tmp_path / "b", {"train.py": LOOP.format(lora=SIZED), "run.sh": run})
    assert [d["code"] for d in got] == ["MEM001"] and "frozen base" in got[0]["message"], got
