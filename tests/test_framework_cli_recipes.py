"""Framework CLIs that build the Megatron or DeepSpeed config from their own flags or a recipe YAML
(issue 22), end to end through the CLI: ms-swift's ``megatron sft``/``swift sft``, LLaMA-Factory's
``llamafactory-cli train cfg.yaml`` and axolotl's ``axolotl train cfg.yml``. Each planted launch has
a clean twin that differs by the one mistake; the unknown cases are silent."""

from __future__ import annotations

import json

import pytest

from conftest import write_tree

#: a local model folder (30 layers, 32 heads): what `--model ./models/m30` names
MODEL_30 = json.dumps({
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "num_hidden_layers": 30, "hidden_size": 4096,
    "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 11008, "vocab_size": 32000,
    "hidden_act": "silu", "tie_word_embeddings": False}, indent=2)


def _swift(tmp_path, body: str, extra: dict | None = None):
    (tmp_path / ".git").mkdir()
    files = {"models/m30/config.json": MODEL_30, "scripts/sft.sh": "#!/bin/bash\n" + body}
    files.update(extra or {})
    write_tree(tmp_path, files)


def _codes(cli, tmp_path, *select: str) -> tuple[list[dict], str]:
    args = ["check", "--no-cache", "--format", "json", "."]
    for s in select:
        args[1:1] = ["--select", s]
    res = cli(*args, cwd=tmp_path)
    assert res.returncode in (0, 1), res.stdout + res.stderr
    return json.loads(res.stdout or "[]"), res.stdout


MEGATRON_SFT = """NPROC_PER_NODE=8 NNODES=4 \\
megatron sft \\
    --model {model} \\
    --dataset swift/some-sft-data \\
    --tensor_model_parallel_size 8 \\
    --pipeline_model_parallel_size {pp} \\
    --micro_batch_size 2 \\
    --global_batch_size 16 \\
    --sequence_parallel true {extra}\\
    --save out
"""


@pytest.mark.parametrize("model,pp,found", [
    ("models/m30", 4, True),       # a local folder's config.json: 30 layers over PP 4
    ("models/m30", 2, False),
    ("deepseek-ai/deepseek-llm-7b-base", 4, True),   # a hub id in parallint's table (30 layers)
    ("deepseek-ai/deepseek-llm-7b-base", 2, False),
])
def test_megatron_sft_layers_against_pp(cli, tmp_path, model, pp, found):
    _swift(tmp_path, MEGATRON_SFT.format(model=model, pp=pp, extra=""))
    got, out = _codes(cli, tmp_path)
    codes = [d["code"] for d in got]
    assert ("LAY004" in codes) is found, out
    if found:
        d = next(d for d in got if d["code"] == "LAY004")
        assert d["path"] == "scripts/sft.sh" and d["line"] == 7 and "30 layers" in d["message"], d
    else:
        assert got == [], out


def test_megatron_load_of_an_mcore_checkpoint(cli, tmp_path):
    """``--load <hub id>-mcore``: `swift export --to_mcore`'s folder of that hub model."""
    body = MEGATRON_SFT.format(model="x", pp=4, extra="").replace("--model x", "--load deepseek-ai/deepseek-llm-7b-base-mcore")
    _swift(tmp_path, body)
    got, out = _codes(cli, tmp_path)
    assert [d["code"] for d in got] == ["LAY004"], out
    assert "mcore checkpoint" not in got[0]["message"]  # the model is a note, the message the rule's


@pytest.mark.parametrize("pp,found", [(4, True), (2, False)])
def test_megatron_sft_glm_air_mcore_checkpoint_from_modelscope(cli, tmp_path, pp, found):
    """ms-swift issue 5737: GLM-4.5-Air (46 layers) with PP 4; the ModelScope id of the table."""
    body = MEGATRON_SFT.format(model="x", pp=pp, extra="").replace(
        "--model x", "--load ZhipuAI/GLM-4.5-Air-Base-mcore").replace("--tensor_model_parallel_size 8",
                                                                     "--tensor_model_parallel_size 4")
    _swift(tmp_path, body)
    got, out = _codes(cli, tmp_path, "LAY004")
    assert bool(got) is found, out
    if found:
        assert "46 layers" in got[0]["message"], got


@pytest.mark.parametrize("extra", [
    "--decoder_first_pipeline_num_layers 6 ",   # an uneven split: Megatron takes it
    "$EXTRA_ARGS ",                             # may give any flag
])
def test_megatron_sft_silent_when_the_split_is_not_known(cli, tmp_path, extra):
    _swift(tmp_path, MEGATRON_SFT.format(model="models/m30", pp=4, extra=extra))
    got, out = _codes(cli, tmp_path)
    assert "LAY004" not in [d["code"] for d in got], out


def test_megatron_sft_config_file_is_not_read(cli, tmp_path):
    _swift(tmp_path, "NPROC_PER_NODE=8 megatron sft cfg.yaml --pipeline_model_parallel_size 4 --model models/m30\n")
    got, out = _codes(cli, tmp_path)
    assert got == [], out


@pytest.mark.parametrize("body,code,found", [
    # exported NPROC_PER_NODE, one node: TP 8 does not fit 4 processes
    ("export NPROC_PER_NODE=4\nmegatron sft --model models/m30 --tensor_model_parallel_size 8 \\\n"
     "    --micro_batch_size 1 --global_batch_size 16\n", "LAY001", True),
    ("export NPROC_PER_NODE=8\nmegatron sft --model models/m30 --tensor_model_parallel_size 8 \\\n"
     "    --micro_batch_size 1 --global_batch_size 16\n", "LAY001", False),
    # world 8, TP 2: DP 4; micro 3 x 4 does not divide 16
    ("NPROC_PER_NODE=8 megatron pt --model models/m30 --tensor_model_parallel_size 2 \\\n"
     "    --micro_batch_size 3 --global_batch_size 16\n", "BAT002", True),
    ("NPROC_PER_NODE=8 megatron pt --model models/m30 --tensor_model_parallel_size 2 \\\n"
     "    --micro_batch_size 2 --global_batch_size 16\n", "BAT002", False),
    # no NPROC_PER_NODE/NNODES here: the caller's environment may set them, no world is stated
    ("megatron sft --model models/m30 --tensor_model_parallel_size 8 --micro_batch_size 3 --global_batch_size 16\n",
     "LAY001", False),
    # ms-swift's expert TP is 1 unless given (Megatron-LM's is the TP): EP 16 x PP 2 fits 32 processes ...
    ("NPROC_PER_NODE=8 NNODES=4 megatron sft --model models/m30 --tensor_model_parallel_size 8 \\\n"
     "    --pipeline_model_parallel_size 2 --expert_model_parallel_size 16\n", "LAY008", False),
    # ... EP 16 x PP 4 does not
    ("NPROC_PER_NODE=8 NNODES=4 megatron sft --model models/m30 --tensor_model_parallel_size 8 \\\n"
     "    --pipeline_model_parallel_size 4 --expert_model_parallel_size 16\n", "LAY008", True),
    ("NPROC_PER_NODE=8 NNODES=4 megatron sft --model models/m30 --tensor_model_parallel_size 8 \\\n"
     "    --pipeline_model_parallel_size 2 --expert_model_parallel_size 16 --expert_tensor_parallel_size 8\n",
     "LAY008", True),
    # ms-swift turns sequence parallel off under TP 1 (no LAY005)
    ("NPROC_PER_NODE=2 megatron sft --model models/m30 --tensor_model_parallel_size 1 --sequence_parallel true \\\n"
     "    --micro_batch_size 1 --global_batch_size 16\n", "LAY005", False),
])
def test_megatron_world_and_batch(cli, tmp_path, body, code, found):
    _swift(tmp_path, body)
    got, out = _codes(cli, tmp_path)
    assert (code in [d["code"] for d in got]) is found, out


DS_ACC8 = '{\n  "train_micro_batch_size_per_gpu": "auto",\n  "gradient_accumulation_steps": 8,\n' \
          '  "zero_optimization": {"stage": 2}\n}\n'


@pytest.mark.parametrize("acc,ds,found", [
    (4, "ds/ds_z2.json", True),
    (8, "ds/ds_z2.json", False),
    (4, "zero2", False),  # ms-swift's built-in config: its batch keys are auto
])
def test_swift_sft_accumulation_against_deepspeed(cli, tmp_path, acc, ds, found):
    body = ("export NPROC_PER_NODE=4\nCUDA_VISIBLE_DEVICES=0,1,2,3 \\\nswift sft \\\n"
            "    --model Qwen/Qwen2.5-7B-Instruct \\\n    --train_type lora \\\n"
            "    --dataset 'AI-ModelScope/alpaca-gpt4-data-zh#500' \\\n    --per_device_train_batch_size 1 \\\n"
            f"    --gradient_accumulation_steps {acc} \\\n    --deepspeed {ds} \\\n    --output_dir output\n")
    _swift(tmp_path, body, {"ds/ds_z2.json": DS_ACC8})
    got, out = _codes(cli, tmp_path, "BAT003")
    assert bool(got) is found, out
    if found:
        assert got[0]["path"] == "ds/ds_z2.json" and got[0]["related"][0]["path"] == "scripts/sft.sh", got


# ----------------------------------------------------------------------------- LLaMA-Factory

LF_YAML = """### model
model_name_or_path: meta-llama/Meta-Llama-3-8B-Instruct

### method
stage: sft
do_train: true
finetuning_type: full
deepspeed: examples/deepspeed/ds_z3_config.json

### dataset
dataset: identity,alpaca_en_demo
template: llama3
cutoff_len: 2048

### output
output_dir: saves/llama3-8b/full/sft

### train
per_device_train_batch_size: 1
gradient_accumulation_steps: {acc}
learning_rate: 1.0e-5
num_train_epochs: 3.0
bf16: true
"""
LF_DS = '{\n  "train_batch_size": "auto",\n  "train_micro_batch_size_per_gpu": "auto",\n' \
        '  "gradient_accumulation_steps": 2,\n  "bf16": {"enabled": "auto"},\n  "zero_optimization": {"stage": 3}\n}\n'


def _lf(tmp_path, acc: int, line: str):
    (tmp_path / ".git").mkdir()
    write_tree(tmp_path, {
        "examples/train_full/llama3_full_sft.yaml": LF_YAML.format(acc=acc),
        "examples/deepspeed/ds_z3_config.json": LF_DS,
        "run.sh": "#!/bin/bash\n" + line + "\n",
    })


@pytest.mark.parametrize("acc,found", [(8, True), (2, False)])
def test_llamafactory_cli_train(cli, tmp_path, acc, found):
    _lf(tmp_path, acc, "FORCE_TORCHRUN=1 NNODES=1 NPROC_PER_NODE=8 llamafactory-cli train "
                       "examples/train_full/llama3_full_sft.yaml")
    got, out = _codes(cli, tmp_path, "BAT003")
    assert bool(got) is found, out
    if found:
        assert got[0]["related"][0]["path"] == "examples/train_full/llama3_full_sft.yaml", got


def test_llamafactory_world_from_the_environment(cli, tmp_path):
    _lf(tmp_path, 2, "FORCE_TORCHRUN=1 NNODES=2 NPROC_PER_NODE=8 llamafactory-cli train "
                     "examples/train_full/llama3_full_sft.yaml")
    res = cli("show", ".", cwd=tmp_path)
    assert "world size: 16" in res.stdout, res.stdout
    assert "examples/train_full/llama3_full_sft.yaml" in res.stdout.split("# files:")[1].splitlines()[0]


@pytest.mark.parametrize("line", [
    "llamafactory-cli train examples/train_full/llama3_full_sft.yaml",  # torchrun only if the node has GPUs
    "FORCE_TORCHRUN=1 llamafactory-cli train examples/train_full/llama3_full_sft.yaml",  # NPROC_PER_NODE: the GPUs
    "FORCE_TORCHRUN=1 NPROC_PER_NODE=8 llamafactory-cli train examples/train_full/llama3_full_sft.yaml "
    "gradient_accumulation_steps=2",  # an override of the YAML: the file is not linked
])
def test_llamafactory_no_world_or_no_link(cli, tmp_path, line):
    _lf(tmp_path, 2, line)
    res = cli("show", ".", cwd=tmp_path)
    first = res.stdout.split("---")[0]
    assert "# world size:" not in first or "gradient_accumulation_steps=2" in line, first
    if "gradient_accumulation_steps=2" in line:
        assert "llama3_full_sft.yaml" not in first.split("# files:")[1].splitlines()[0], first


# ----------------------------------------------------------------------------- axolotl

AX_YAML = """base_model: NousResearch/Meta-Llama-3-8B
model_type: LlamaForCausalLM
tokenizer_type: AutoTokenizer

load_in_8bit: false
load_in_4bit: false

datasets:
  - path: mhenrichsen/alpaca_2k_test
    type: alpaca
output_dir: ./outputs/lora-out

sequence_len: 4096
adapter: lora
lora_r: 32
lora_alpha: 16
lora_target_linear: true
{batch}
micro_batch_size: 2
num_epochs: 4
optimizer: adamw_torch_fused
learning_rate: 0.0002
bf16: auto
deepspeed: deepspeed_configs/zero2.json
"""
AX_DS = '{\n  "zero_optimization": {"stage": 2},\n  "bf16": {"enabled": "auto"},\n' \
        '  "gradient_accumulation_steps": 8,\n  "train_micro_batch_size_per_gpu": "auto",\n  "train_batch_size": "auto"\n}\n'


def _ax(tmp_path, batch: str, line: str):
    (tmp_path / ".git").mkdir()
    write_tree(tmp_path, {
        "examples/llama-3/lora-8b.yml": AX_YAML.format(batch=batch),
        "deepspeed_configs/zero2.json": AX_DS,
        "run.sh": "#!/bin/bash\n" + line + "\n",
    })


@pytest.mark.parametrize("line", [
    "accelerate launch -m axolotl.cli.train examples/llama-3/lora-8b.yml",
    "axolotl train examples/llama-3/lora-8b.yml",
    "axolotl train examples/llama-3/lora-8b.yml --launcher torchrun -- --nproc_per_node 4",
])
@pytest.mark.parametrize("batch,found", [
    ("gradient_accumulation_steps: 4", True),
    ("gradient_accumulation_steps: 8", False),
    ("gradient_accumulation_steps: 4\nbatch_size: 16", False),  # axolotl derives the accumulation
])
def test_axolotl_accumulation_against_deepspeed(cli, tmp_path, line, batch, found):
    _ax(tmp_path, batch, line)
    got, out = _codes(cli, tmp_path, "BAT003")
    assert bool(got) is found, out
    if found:
        assert got[0]["path"] == "deepspeed_configs/zero2.json", got
        assert got[0]["related"][0]["path"] == "examples/llama-3/lora-8b.yml", got


def test_axolotl_override_on_the_line_is_not_read(cli, tmp_path):
    _ax(tmp_path, "gradient_accumulation_steps: 4", "axolotl train examples/llama-3/lora-8b.yml "
                                                    "--gradient_accumulation_steps 8")
    got, out = _codes(cli, tmp_path, "BAT003")
    assert got == [], out


# ----------------------------------------------------------------------------- verl's PPO mini batch (BAT005)

VERL = ("#!/bin/bash\nset -x\npython3 -m verl.trainer.main_ppo \\\n    algorithm.adv_estimator=grpo \\\n"
        "    data.train_batch_size={batch} \\\n    actor_rollout_ref.rollout.n={n} \\\n"
        "    actor_rollout_ref.actor.ppo_mini_batch_size={mini} \\\n{extra}"
        "    trainer.n_gpus_per_node={gpus} \\\n    trainer.nnodes=1\n")


@pytest.mark.parametrize("batch,n,mini,extra,gpus,found", [
    (64, 5, 128, "", 8, "must be >= actor.ppo_mini_batch_size (128)"),
    (128, 5, 128, "", 8, None),
    # 2 x rollout.n 2 = 4 prompts' responses over 8 FSDP ranks: 0 per rank
    (64, 2, 2, "", 8, "should be larger than 0 after normalization"),
    (64, 2, 4, "", 8, None),
    # Ulysses 2 leaves 4 ranks: 2 x 2 = 4 is enough
    (64, 2, 2, "    actor_rollout_ref.actor.ulysses_sequence_parallel_size=2 \\\n", 8, None),
    # 32 x 1 / 8 = 4 per rank; micro 3 does not divide it
    (256, 1, 32, "    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=3 \\\n", 8, "should be divisible by"),
    (256, 1, 32, "    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2 \\\n", 8, None),
    # the new worker normalizes its own way; a word parallint cannot read may set any key
    (64, 2, 2, "    trainer.use_legacy_worker_impl=disable \\\n", 8, None),
    (64, 2, 2, "    actor_rollout_ref.actor.use_dynamic_bsz=True \\\n", 8, None),
    (64, 5, 128, "    $EXTRA \\\n", 8, None),
])
def test_verl_mini_batch(cli, tmp_path, batch, n, mini, extra, gpus, found):
    (tmp_path / ".git").mkdir()
    write_tree(tmp_path, {"examples/grpo/run.sh": VERL.format(batch=batch, n=n, mini=mini, extra=extra, gpus=gpus)})
    got, out = _codes(cli, tmp_path, "BAT005")
    if found is None:
        assert got == [], out
    else:
        assert len(got) == 1 and found in got[0]["message"], out
        assert got[0]["path"] == "examples/grpo/run.sh", got
