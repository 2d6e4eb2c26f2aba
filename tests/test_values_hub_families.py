"""Values that flow, issue 21: the hub table's newer families (DeepSeek V2/V3/R1 with multi-head
latent attention and their MoE layout, ChatGLM and GLM-4, OPT, BLOOM, Gemma 3, GLM-4.5) give the
parameter counts their publishers state, and a DeepSeek-V3 named on a launch line is sized end to
end through the CLI."""

from __future__ import annotations

import json

import pytest

from conftest import write_tree


def _count(hub: str) -> tuple[float, float]:
    from parallint.estimator.params import count_active_params, count_params
    from parallint.estimator.spec import hub_shape

    got = hub_shape(hub)
    assert got is not None, hub
    return count_params(got[1]), count_active_params(got[1])


def _near(got: float, published: float, within: float = 0.02) -> bool:
    return abs(got - published) / published < within


def test_deepseek_mla_and_moe_give_the_published_sizes():
    # DeepSeek-V3 / R1: 671B total, 37B active (the MTP module's 14B is not part of either)
    for hub in ("deepseek-ai/DeepSeek-V3", "deepseek-ai/DeepSeek-R1"):
        total, active = _count(hub)
        assert _near(total, 671e9) and _near(active, 37e9, 0.03), (hub, total, active)
    total, active = _count("deepseek-ai/DeepSeek-V2")  # 236B total, 21B active
    assert _near(total, 236e9) and _near(active, 21e9, 0.03), (total, active)
    total, _ = _count("deepseek-ai/DeepSeek-V2-Lite")  # 15.7B (no query compression)
    assert _near(total, 15.7e9), total


def test_mla_is_what_makes_deepseek_small_enough():
    """The latent attention's own projections are what V3 counts per layer, not plain 128-head
    attention of width 7168: q_a (+ norm), q_b, kv_a (latent + shared rotary key, + norm), kv_b, o."""
    from parallint.estimator.params import count_params
    from parallint.estimator.spec import hub_shape

    shape = dict(hub_shape("deepseek-ai/DeepSeek-V3")[1])
    mla = count_params(shape)
    for k in ("kv_lora_rank", "q_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"):
        shape.pop(k)
    h, heads = 7168, 128
    per_layer = (h * 1536 + 1536 + 1536 * heads * (128 + 64) + h * (512 + 64) + 512
                 + 512 * heads * (128 + 128) + heads * 128 * h)
    assert count_params(shape) - mla == 61 * (4 * h * h - per_layer)
    # a latent attention without its head widths is not a shape: the estimate stays silent
    from parallint.estimator.params import ShapeError

    with pytest.raises(ShapeError):
        count_params({**shape, "kv_lora_rank": 512})


def test_deepseek_v2_lite_config_json_reads_like_its_hub_row():
    """A local config.json (q_lora_rank null) gives the same facts the hub row does."""
    from pathlib import Path

    from parallint.estimator.params import count_params
    from parallint.estimator.spec import hub_shape
    from parallint.readers import hf_model

    cfg = {"model_type": "deepseek_v2", "hidden_size": 2048, "intermediate_size": 10944,
           "moe_intermediate_size": 1408, "num_hidden_layers": 27, "num_attention_heads": 16,
           "num_key_value_heads": 16, "vocab_size": 102400, "tie_word_embeddings": False, "hidden_act": "silu",
           "n_routed_experts": 64, "n_shared_experts": 2, "num_experts_per_tok": 6, "first_k_dense_replace": 1,
           "moe_layer_freq": 1, "kv_lora_rank": 512, "q_lora_rank": None, "qk_nope_head_dim": 128,
           "qk_rope_head_dim": 64, "v_head_dim": 128}
    ff = hf_model.read("config.json", Path("config.json"), json.dumps(cfg))
    shape = {k.split(".", 1)[1]: vs[0].value for k, vs in ff.facts.items() if vs[0].known and k.startswith("model.")}
    assert shape["kv_lora_rank"] == 512 and not shape.get("q_lora_rank")
    assert count_params(shape) == count_params(hub_shape("deepseek-ai/DeepSeek-V2-Lite")[1])


def test_chatglm_and_glm4_read_their_own_key_names():
    # ffn_hidden_size, padded_vocab_size, multi_query_group_num, kv_channels; SwiGLU without hidden_act
    for hub, published in (("THUDM/chatglm2-6b", 6.24e9), ("THUDM/chatglm3-6b", 6.24e9),
                           ("THUDM/glm-4-9b-chat", 9.40e9)):
        total, _ = _count(hub)
        assert _near(total, published), (hub, total)


def test_opt_sizes():
    for hub, published in (("facebook/opt-125m", 125.2e6), ("facebook/opt-1.3b", 1.316e9),
                           ("facebook/opt-2.7b", 2.65e9), ("facebook/opt-6.7b", 6.66e9),
                           ("facebook/opt-13b", 12.85e9), ("facebook/opt-30b", 29.97e9),
                           ("facebook/opt-66b", 65.7e9)):
        total, _ = _count(hub)
        assert _near(total, published), (hub, total)


def test_bloom_sizes():
    for hub, published in (("bigscience/bloom-560m", 559e6), ("bigscience/bloom-1b1", 1.065e9),
                           ("bigscience/bloom-1b7", 1.722e9), ("bigscience/bloom-3b", 3.003e9),
                           ("bigscience/bloom-7b1", 7.069e9), ("bigscience/bloomz-7b1", 7.069e9),
                           ("bigscience/bloom", 176.2e9)):
        total, _ = _count(hub)
        assert _near(total, published), (hub, total)


def test_gemma_3_1b_size():
    total, _ = _count("google/gemma-3-1b-it")  # GeGLU MLP sized as SwiGLU, tied embeddings
    assert _near(total, 1.0e9), total


def test_glm_4_5_moe_sizes():
    total, active = _count("zai-org/GLM-4.5")  # 355B total, 32B active
    assert _near(total, 355e9) and _near(active, 32e9, 0.06), (total, active)
    total, active = _count("zai-org/GLM-4.5-Air")  # 106B total, 12B active, 46 layers
    assert _near(total, 106e9) and _near(active, 12e9, 0.12), (total, active)
    from parallint.estimator.spec import hub_shape

    air = hub_shape("zai-org/GLM-4.5-Air")[1]
    assert air["layers"] == 46 and air["moe_layer_freq"] == [0] + [1] * 45


SFT = """\
from dataclasses import dataclass, field

from transformers import AutoModelForCausalLM, HfArgumentParser, Trainer, TrainingArguments


@dataclass
class ModelArguments:
    model_name_or_path: str = field(default="gpt2")


def main():
    model_args, training_args = HfArgumentParser((ModelArguments, TrainingArguments)).parse_args_into_dataclasses()
    model = AutoModelForCausalLM.from_pretrained(model_args.model_name_or_path)
    Trainer(model=model, args=training_args).train()


if __name__ == "__main__":
    main()
"""
Z3 = json.dumps({"train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto",
                 "zero_optimization": {"stage": 3}, "bf16": {"enabled": "auto"}})


def _findings(cli, tmp_path, files: dict) -> list:
    write_tree(tmp_path, {"pyproject.toml": "[project]\nname = 'x'\n", **files})
    p = cli("check", "--no-cache", "--select", "MEM", "--format", "json", ".", cwd=tmp_path)
    assert "Traceback" not in p.stderr, p.stderr
    return json.loads(p.stdout)


def test_deepseek_v3_with_plain_ddp_is_mem001(tmp_path, cli):
    run = ("#!/bin/bash\ntorchrun --nproc_per_node 8 sft.py --model_name_or_path deepseek-ai/DeepSeek-V3 --bf16 \\\n"
           "    --per_device_train_batch_size 1 --output_dir out\n")
    got = _findings(cli, tmp_path, {"sft.py": SFT, "run.sh": run})
    assert [d["code"] for d in got] == ["MEM001"], got
    assert "671.0B-parameter model" in got[0]["message"], got[0]["message"]


def test_deepseek_v3_zero3_over_512_gpus_is_silent(tmp_path, cli):
    # 671B x 16 bytes over 512 H100s: about 20 GiB of states a GPU, and the largest MoE layer's
    # gather fits beside them (the estimator's figure; 256 GPUs is a near miss)
    run = ("#!/bin/bash\n#SBATCH --nodes=64\n#SBATCH --gres=gpu:h100:8\n"
           "srun torchrun --nnodes 64 --nproc_per_node 8 sft.py --model_name_or_path deepseek-ai/DeepSeek-V3 --bf16 \\\n"
           "    --per_device_train_batch_size 1 --output_dir out --deepspeed ds_z3.json\n")
    assert _findings(cli, tmp_path, {"sft.py": SFT, "train.sbatch": run, "ds_z3.json": Z3}) == []
