"""LLaMA-Factory jobs sized (issue 21): ``llamafactory-cli train cfg.yaml`` states the model its YAML
names (a hub id in parallint's table or a local folder's ``config.json``) and how LLaMA-Factory
keeps its states (``finetuning_type``, ``lora_rank``, ``lora_target``, ``quantization_bit``,
``pure_bf16``, the DeepSpeed config), so MEM001 predicts the out-of-memory of a full fine-tune
under pure data parallelism and stays silent on its ZeRO-3 and LoRA/QLoRA twins. End to end
through the CLI, each planted case with a clean twin."""

from __future__ import annotations

import json

import pytest

from conftest import write_tree

BIG = json.dumps({
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "num_hidden_layers": 80, "hidden_size": 8192,
    "num_attention_heads": 64, "num_key_value_heads": 8, "intermediate_size": 28672, "vocab_size": 32000,
    "hidden_act": "silu", "tie_word_embeddings": False}, indent=2)

Z3 = '{"train_batch_size": "auto", "train_micro_batch_size_per_gpu": "auto", ' \
     '"gradient_accumulation_steps": "auto", "zero_optimization": {"stage": 3}}\n'


def _yaml(model: str = "meta-llama/Llama-2-70b-hf", method: str = "finetuning_type: full", extra: str = "",
          stage: str = "sft") -> str:
    return (f"### model\nmodel_name_or_path: {model}\n\n### method\nstage: {stage}\ndo_train: true\n{method}\n{extra}"
            "\n### dataset\ndataset: alpaca_en_demo\ntemplate: llama2\ncutoff_len: 2048\n\n"
            "### train\noutput_dir: saves/out\nper_device_train_batch_size: 1\ngradient_accumulation_steps: 8\n"
            "learning_rate: 1.0e-5\nbf16: true\n")


def _tree(tmp_path, yaml: str, env: str = "FORCE_TORCHRUN=1 NPROC_PER_NODE=8", gpu: str | None = None):
    (tmp_path / ".git").mkdir()
    files = {"examples/train/job.yaml": yaml, "examples/deepspeed/ds_z3.json": Z3, "models/big/config.json": BIG,
             "run.sh": f"#!/bin/bash\n{env} llamafactory-cli train examples/train/job.yaml\n"}
    if gpu:
        files["pyproject.toml"] = f"[project]\nname = 'x'\n[tool.parallint]\ngpu = '{gpu}'\n"
    write_tree(tmp_path, files)


def _mem(cli, tmp_path) -> list[dict]:
    res = cli("check", "--no-cache", "--format", "json", "--select", "MEM001", ".", cwd=tmp_path)
    assert res.returncode in (0, 1), res.stdout + res.stderr
    return json.loads(res.stdout or "[]")


def test_full_fine_tune_of_70b_under_pure_data_parallelism_is_mem001(cli, tmp_path):
    _tree(tmp_path, _yaml())
    (d,) = _mem(cli, tmp_path)
    assert d["path"] == "run.sh" and d["severity"] == "error", d
    assert "69.0B-parameter model" in d["message"] and "pure data parallelism" in d["message"], d


def test_its_zero3_twin_over_32_gpus_is_silent(cli, tmp_path):
    _tree(tmp_path, _yaml(extra="deepspeed: examples/deepspeed/ds_z3.json\n"),
          env="FORCE_TORCHRUN=1 NNODES=4 NPROC_PER_NODE=8")
    assert _mem(cli, tmp_path) == []


def test_a_local_model_folder_is_the_model(cli, tmp_path):
    _tree(tmp_path, _yaml(model="./models/big"))
    (d,) = _mem(cli, tmp_path)
    assert "69.0B-parameter model" in d["message"], d
    res = cli("show", ".", cwd=tmp_path)
    assert "models/big/config.json" in res.stdout.split("# files:")[1].splitlines()[0], res.stdout


@pytest.mark.parametrize("method,found", [
    ("finetuning_type: lora\nlora_rank: 8\nlora_target: all", True),   # a 16-bit 69B base: 128 GiB on each 80 GB card
    ("finetuning_type: lora\nlora_target: q_proj,v_proj\nquantization_bit: 4", False),  # QLoRA: a 4-bit base fits
    ("finetuning_type: lora\nlora_target: all\nquantization_bit: 4", False),
])
def test_lora_and_qlora_on_80gb_cards(cli, tmp_path, method, found):
    _tree(tmp_path, _yaml(method=method), gpu="A100-80GB")
    got = _mem(cli, tmp_path)
    assert bool(got) is found, got
    if found:
        assert "a frozen base, 103.5M trainable LoRA parameters" in got[0]["message"], got


def test_lora_estimate_counts_the_adapters_and_a_frozen_base(cli, tmp_path):
    _tree(tmp_path, _yaml(method="finetuning_type: lora\nlora_rank: 8\nlora_target: all"))
    res = cli("estimate", "run.sh", "--format", "json", cwd=tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr
    (job,) = json.loads(res.stdout)
    # r=8 over q,k,v,o,gate,up,down of 80 layers (hidden 8192, KV 1024, FFN 28672): 1,294,336 a
    # layer; their 16-bit gradients and fp32 master and Adam moments (12 bytes); a 16-bit frozen base
    trainable = 80 * 1_294_336
    assert job["per_gpu"]["gradients"] == 2 * trainable, job
    assert job["per_gpu"]["optimizer"] == 12 * trainable, job
    assert job["per_gpu"]["weights"] > 2 * job["param_count"] * 0.99, job


def test_an_unreadable_lora_target_is_an_info_saying_what_to_verify(cli, tmp_path):
    _tree(tmp_path, _yaml(method="finetuning_type: lora\nlora_target: c_attn"), gpu="A100-80GB")
    (d,) = _mem(cli, tmp_path)
    assert d["severity"] == "info" and "LoRA of unknown size" in d["message"], d


@pytest.mark.parametrize("yaml", [
    _yaml(stage="dpo"),                                         # a reference model too: not sized
    _yaml(method="finetuning_type: freeze"),                    # part of the model trained
    _yaml(extra="use_galore: true\n"),                          # GaLore's projected optimizer states
    _yaml(extra="optim: adamw_8bit\n"),                         # 8-bit optimizer states
    _yaml(model="someone/unknown-model"),                       # no shape for that id
])
def test_what_is_not_sized_stays_silent(cli, tmp_path, yaml):
    _tree(tmp_path, yaml)
    assert _mem(cli, tmp_path) == []


def test_an_override_on_the_line_leaves_the_model_unknown(cli, tmp_path):
    (tmp_path / ".git").mkdir()
    write_tree(tmp_path, {"examples/train/job.yaml": _yaml(), "run.sh": "#!/bin/bash\nFORCE_TORCHRUN=1 "
               "NPROC_PER_NODE=8 llamafactory-cli train examples/train/job.yaml finetuning_type=lora\n"})
    assert _mem(cli, tmp_path) == []
