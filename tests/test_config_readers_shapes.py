"""Model-shape, recompute and offload facts of the config readers, and the parameter counts the
estimator derives from them (published counts where the framework builds the published model)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from parallint.estimator.params import count_params
from parallint.readers import neox

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus"


def run(mod, text: str, name: str):
    text = textwrap.dedent(text).lstrip("\n")
    return mod.read(name, Path("/tmp") / name, text)


def fact(ff, key):
    """The single value stated for ``key`` (None when unknown), asserting there is exactly one."""
    vs = ff.facts.all(key)
    assert len(vs) == 1, (key, vs)
    return vs[0].value if vs[0].known else None


def model_of(ff, **extra) -> dict:
    m = {}
    for key in ff.facts.keys():
        v = ff.facts.get(key)
        if key.startswith("model.") and v is not None:
            m[key.split(".", 1)[1]] = v.value
    m.update(extra)
    return m


def corpus(rel: str) -> Path:
    p = CORPUS / rel
    if not p.is_file():
        pytest.skip("../shared/corpus not present")
    return p


def read_corpus(mod, rel: str):
    p = corpus(rel)
    return mod.read(rel, p, p.read_text("utf-8"))


# --- gpt-neox ------------------------------------------------------------------------------------
NEOX_7B_LIKE = '''
    {
      "num_layers": 4,
      "hidden_size": 512,
      "intermediate_size": 4096,
      "num_attention_heads": 8,
      "norm": "rmsnorm",
      "pos_emb": "rotary",
      "no_weight_tying": true,
      "use_bias_in_attn_linear": false,
      "use_bias_in_mlp": false,
      "activation": "swiglu",
      "mlp_multiple_of": 256,
      "checkpoint_activations": true,
    }
'''


def test_neox_gated_mlp_width_follows_parallel_mlp():
    ff = run(neox, NEOX_7B_LIKE, "small.yml")
    # int(4096 * 2/3) = 2730, value branch 1365 -> rounded up to 256: 1536; linear1 3072 = 2 x 1536
    assert fact(ff, "model.ffn") == 1536
    assert ff.facts.get("model.ffn").span.line == 4
    assert "linear1 3072" in ff.facts.get("model.ffn").source
    assert fact(ff, "model.mlp") == "swiglu"
    assert fact(ff, "model.norm") == "rmsnorm"
    assert fact(ff, "model.position_embeddings") == "rope"
    assert fact(ff, "model.tied_embeddings") is False
    assert fact(ff, "model.bias") is False
    assert fact(ff, "training.recompute") == "full"


@pytest.mark.parametrize("extra,ffn", [
    ('"activation": "geglu", "intermediate_size": 3072', 1024),  # 2048 -> 1024, multiple 1
    ('"activation": "swiglu"', 682),  # 4h = 2048 -> 1365 -> 682 (no multiple stated: 1)
    ('"activation": "swiglu", "expansion_factor": 3.0', 512),  # 1536 -> 1024 -> 512
    ('"activation": "gelu", "intermediate_size": 3000', 3000),
])
def test_neox_mlp_widths(extra, ffn):
    ff = run(neox, '{"num_layers": 2, "hidden_size": 512, "num_attention_heads": 8, %s}' % extra, "n.yml")
    assert fact(ff, "model.ffn") == ffn


def test_neox_nothing_stated_stays_unstated():
    ff = run(neox, '{"num_layers": 2, "hidden_size": 512, "num_attention_heads": 8, "norm": "scalenorm"}', "n.yml")
    assert fact(ff, "model.norm") is None  # scalenorm: not a norm the estimator models, unknown
    for key in ("model.ffn", "model.mlp", "model.bias", "model.tied_embeddings",
                "training.recompute", "model.position_embeddings"):
        assert key not in ff.facts, key


def test_neox_unknowns_stay_unknown():
    ff = run(neox, '{"hidden_size": 512, "intermediate_size": "${FFN}", "activation": "swiglu",'
                   ' "checkpoint_activations": "${CKPT}"}', "n.yml")
    assert fact(ff, "model.ffn") is None and fact(ff, "training.recompute") is None
    ff = run(neox, '{"hidden_size": 512, "checkpoint_activations": false, "use_bias_in_attn_linear": false}', "n.yml")
    assert fact(ff, "training.recompute") == "none"
    assert "model.bias" not in ff.facts  # attention without bias, MLP with gpt-neox's default bias


def test_neox_offload():
    ff = run(neox, '{"zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}}}', "n.yml")
    assert fact(ff, "training.offload") is True
    ff = run(neox, '{"zero_optimization": {"stage": 1, "cpu_offload": false}}', "n.yml")
    assert fact(ff, "training.offload") is False


@pytest.mark.parametrize("rel,published", [
    ("EleutherAI__gpt-neox/configs/llama2/7B.yml", 6_738_415_616),  # Llama-2-7B
    ("EleutherAI__gpt-neox/configs/llama2/70B.yml", 68_976_648_192),  # Llama-2-70B
    ("EleutherAI__gpt-neox/configs/llama/13B.yml", 13_015_864_320),  # LLaMA-13B
])
def test_neox_corpus_llama_counts_are_published(rel, published):
    ff = read_corpus(neox, rel)
    assert count_params(model_of(ff, vocab=32000)) == published  # the tokenizer's 32000


def test_neox_corpus_codellama_builds_what_parallel_mlp_builds():
    # The file states no intermediate_size: gpt-neox takes 4h = 32768, two thirds for the gated
    # linear1 (rounded to 512: 22016) and a value branch of 11008 -- not CodeLlama-34B's 22016.
    ff = read_corpus(neox, "EleutherAI__gpt-neox/configs/llama2/codellama_34B.yml")
    assert fact(ff, "model.ffn") == 11008


# --- NeMo ----------------------------------------------------------------------------------------
NEMO = '''
    trainer:
      devices: 8
      num_nodes: 1
      precision: bf16
    model:
      tensor_model_parallel_size: 2
      num_layers: 4
      hidden_size: 512
      ffn_hidden_size: 1536
      num_attention_heads: 8
      num_query_groups: 2
      normalization: {norm}
      activation: {act}
      bias: false
      position_embedding_type: {pos}
      share_embeddings_and_output_weights: false
      make_vocab_size_divisible_by: 128
      activations_checkpoint_granularity: {ckpt}
      tokenizer:
        library: huggingface
        type: {tok}
'''


def nemo_cfg(norm="rmsnorm", act="fast-swiglu", pos="rope", ckpt="null", tok="meta-llama/Meta-Llama-3.1-8B"):
    from parallint.readers import nemo

    return run(nemo, NEMO.format(norm=norm, act=act, pos=pos, ckpt=ckpt, tok=tok), "llama.yaml")


def test_nemo_shape_facts():
    ff = nemo_cfg()
    assert fact(ff, "model.norm") == "rmsnorm" and fact(ff, "model.mlp") == "swiglu"
    assert fact(ff, "model.bias") is False and fact(ff, "model.position_embeddings") == "rope"
    assert fact(ff, "model.tied_embeddings") is False and fact(ff, "model.kv_heads") == 2
    assert fact(ff, "training.recompute") == "none"  # null = no activation checkpointing
    # Llama 3 tokenizer: 128256 tokens, padded to a multiple of 128 x TP 2 = 256 -> 128256
    assert fact(ff, "model.vocab") == 128256
    assert ff.facts.get("model.vocab").span.line == 21


@pytest.mark.parametrize("kw,key,want", [
    ({"norm": "layernorm1p"}, "model.norm", "layernorm"),
    ({"norm": "RMSNorm"}, "model.norm", "rmsnorm"),
    ({"act": "gelu"}, "model.mlp", "gelu"),
    ({"act": "geglu"}, "model.mlp", "swiglu"),
    ({"act": "squared-relu"}, "model.mlp", "gelu"),
    ({"pos": "learned_absolute"}, "model.position_embeddings", "learned"),
    ({"pos": "alibi"}, "model.position_embeddings", None),
    ({"ckpt": "selective"}, "training.recompute", "selective"),
    ({"ckpt": "full"}, "training.recompute", "full"),
    ({"ckpt": "${oc.env:CKPT}"}, "training.recompute", None),
    ({"tok": "meta-llama/Llama-2-7b-hf"}, "model.vocab", 32000),  # 125 x 256: no padding
    ({"tok": "EleutherAI/gpt-neox-20b"}, "model.vocab", "absent"),
])
def test_nemo_spellings(kw, key, want):
    ff = nemo_cfg(**kw)
    if want == "absent":
        assert key not in ff.facts
    else:
        assert fact(ff, key) == want


def test_nemo_offload():
    from parallint.readers import nemo

    ff = run(nemo, "trainer:\n  devices: 8\n  num_nodes: 1\nmodel:\n  cpu_offloading: true\n", "n.yaml")
    assert fact(ff, "training.offload") is True and ff.facts.get("training.offload").span.line == 5
    ff = run(nemo, "trainer:\n  strategy: deepspeed_stage_3_offload\nmodel:\n  cpu_offloading: false\n", "n.yaml")
    assert [v.value for v in ff.facts.all("training.offload")] == [False, True]


@pytest.mark.parametrize("rel,published,vocab", [
    # Llama-3.1-70B: 70,553,706,496 with 128256 tokens; NeMo pads to 128 x TP 4 = 512 -> 128512
    ("NVIDIA__NeMo-Framework-Launcher/launcher_scripts/conf/training/llama/llama3_1_70b.yaml",
     70_553_706_496 + 2 * 8192 * 256, 128512),
    ("NVIDIA__NeMo-Framework-Launcher/launcher_scripts/conf/training/llama/llama3_1_8b.yaml",
     8_030_261_248, 128256),  # Llama-3.1-8B, TP 1
])
def test_nemo_corpus_llama3_counts(rel, published, vocab):
    from parallint.readers import nemo

    ff = read_corpus(nemo, rel)
    assert fact(ff, "model.vocab") == vocab
    assert count_params(model_of(ff)) == published


# --- torchtitan ----------------------------------------------------------------------------------
def tt(model='name = "llama3"\nflavor = "8B"', tp="2", mode='"selective"', extra=""):
    from parallint.readers import torchtitan

    return run(torchtitan, f"""
[model]
{model}

[training]
seq_len = 4096
{extra}

[parallelism]
tensor_parallel_degree = {tp}

[activation_checkpoint]
mode = {mode}
""", "train.toml")


def test_torchtitan_preset_sp_recompute():
    ff = tt()
    assert fact(ff, "model.preset") == "llama-3-8b"
    assert ff.facts.get("model.preset").span.line == 3
    assert fact(ff, "parallel.sequence_parallel") is True
    assert fact(ff, "training.recompute") == "selective"


@pytest.mark.parametrize("model,want", [
    ('name = "llama3"\nflavor = "405B"', "llama-3.1-405b"),  # torchtitan's llama3 405B is Llama 3.1's
    ('name = "llama2"\nflavor = "70B"', "llama-2-70b"),
    ('name = "llama3"\nflavor = "debugmodel"', None),
    ('name = "deepseek_v3"\nflavor = "16B"', None),
    ('name = "llama"\nflavor = "7B"', None),  # torchtrain's generic name: which Llama is not said
])
def test_torchtitan_presets_only_on_a_match(model, want):
    ff = tt(model=model)
    if want is None:
        assert "model.preset" not in ff.facts
    else:
        assert fact(ff, "model.preset") == want


def test_torchtitan_no_sp_without_tp_and_unknowns():
    ff = tt(tp="1", mode='"full"')
    assert "parallel.sequence_parallel" not in ff.facts and fact(ff, "training.recompute") == "full"
    ff = tt(tp='"${TP}"', mode='"memory_budget"')
    assert "parallel.sequence_parallel" not in ff.facts and fact(ff, "training.recompute") is None


def test_torchtitan_cpu_offload():
    assert fact(tt(extra="enable_cpu_offload = true"), "training.offload") is True
    assert fact(tt(extra="enable_cpu_offload = false"), "training.offload") is False


def test_torchtitan_corpus_llama3_405b_count():
    from parallint.estimator.spec import normalize, spec_from_facts
    from parallint.readers import torchtitan

    ff = read_corpus(torchtitan, "pytorch__torchtitan/torchtitan/models/llama3/train_configs/llama3_405b.toml")
    spec = normalize(spec_from_facts(ff.facts))
    assert count_params(spec["model"]) == 405_853_388_800  # Llama-3.1-405B
    assert spec["model"]["seq_len"] == 8192 and spec["parallel"]["sequence_parallel"] is True


# --- nanotron ------------------------------------------------------------------------------------
def nano(tp=2, mode="REDUCE_SCATTER", recompute="true"):
    from parallint.readers import nanotron

    return run(nanotron, f"""
parallelism:
  dp: 2
  tp: {tp}
  pp: 1
  tp_mode: {mode}
  recompute_layer: {recompute}
""", "config.yaml")


def test_nanotron_sp_and_recompute():
    ff = nano()
    assert fact(ff, "parallel.sequence_parallel") is True and ff.facts.get("parallel.sequence_parallel").span.line == 5
    assert fact(ff, "training.recompute") == "full"
    ff = nano(mode="ALL_REDUCE", recompute="false")
    assert fact(ff, "parallel.sequence_parallel") is False and "training.recompute" not in ff.facts
    ff = nano(tp=1)  # no tensor parallelism: nothing is sharded by sequence
    assert "parallel.sequence_parallel" not in ff.facts
    ff = nano(mode="${MODE}", recompute="${RC}")
    assert fact(ff, "parallel.sequence_parallel") is None and fact(ff, "training.recompute") is None


# --- Hugging Face MoE layouts --------------------------------------------------------------------
def hf(doc: dict):
    import json

    from parallint.readers import hf_model

    return run(hf_model, json.dumps(doc, indent=1), "config.json")


def hf_count(doc: dict) -> int:
    from parallint.estimator.spec import normalize, spec_from_facts

    return count_params(normalize(spec_from_facts(hf(doc).facts))["model"])


MIXTRAL_8X7B = {"model_type": "mixtral", "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
                "num_key_value_heads": 8, "intermediate_size": 14336, "num_local_experts": 8,
                "num_experts_per_tok": 2, "vocab_size": 32000, "hidden_act": "silu", "tie_word_embeddings": False}


def test_hf_mixtral_every_layer_and_published_count():
    ff = hf(MIXTRAL_8X7B)
    assert fact(ff, "model.moe_layer_freq") == 1
    assert hf_count(MIXTRAL_8X7B) == 46_702_792_704  # Mixtral-8x7B


def test_hf_qwen_moe_sparse_step_and_shared_expert():
    doc = {"model_type": "qwen2_moe", "hidden_size": 256, "num_hidden_layers": 6, "num_attention_heads": 4,
           "intermediate_size": 1024, "moe_intermediate_size": 128, "shared_expert_intermediate_size": 512,
           "num_experts": 8, "num_experts_per_tok": 2, "decoder_sparse_step": 2, "mlp_only_layers": [5],
           "vocab_size": 1000, "hidden_act": "silu"}
    ff = hf(doc)
    assert fact(ff, "model.moe_layer_freq") == [0, 1, 0, 1, 0, 0]  # (i + 1) % 2 == 0, layer 5 dense
    assert fact(ff, "model.shared_expert_ffn") == 512
    h = 256
    attn = 4 * h * h
    dense = attn + 3 * h * 1024 + 2 * h
    moe = attn + 8 * 3 * h * 128 + h * 8 + 3 * h * 512 + 2 * h
    assert hf_count(doc) == 4 * dense + 2 * moe + 2 * 1000 * h + h
    # the model type's defaults (every layer sparse) apply only to that model type
    ff = hf({k: v for k, v in doc.items() if k not in ("decoder_sparse_step", "mlp_only_layers")})
    assert fact(ff, "model.moe_layer_freq") == [1] * 6


def test_hf_deepseek_first_dense_layers_and_shared_experts():
    doc = {"model_type": "deepseek_v3", "hidden_size": 256, "num_hidden_layers": 5, "num_attention_heads": 4,
           "n_routed_experts": 16, "n_shared_experts": 2, "moe_intermediate_size": 64, "first_k_dense_replace": 2,
           "moe_layer_freq": 1, "intermediate_size": 1024, "vocab_size": 1000}
    ff = hf(doc)
    assert fact(ff, "model.moe_layer_freq") == [0, 0, 1, 1, 1]
    assert fact(ff, "model.shared_expert_ffn") == 128


def test_hf_moe_layout_unknowns():
    ff = hf({"num_hidden_layers": "${L}", "moe_layer_interval": 2, "num_experts": 4})
    assert fact(ff, "model.moe_layer_freq") is None
    ff = hf({"num_hidden_layers": 4, "hidden_size": 64, "num_attention_heads": 2})
    assert "model.moe_layer_freq" not in ff.facts and "model.shared_expert_ffn" not in ff.facts


def test_hf_corpus_openmoe_is_not_40b():
    # ColossalAI OpenMoE: an MoE block every 6th layer ((i + 1) % 6 == 0), each with a dense
    # extra_mlp beside the 32 experts; the other 20 layers are dense
    from parallint.readers import hf_model

    ff = read_corpus(hf_model, "hpcaitech__ColossalAI/colossalai/legacy/moe/openmoe/model/openmoe_8b_config.json")
    assert sum(fact(ff, "model.moe_layer_freq")) == 4
    h, q, f, v = 2048, 24 * 128, 8192, 256384
    attn = 4 * h * q
    dense = attn + 3 * h * f + 2 * h
    moe = attn + 32 * 3 * h * f + 32 * h + 3 * h * f + 2 * h
    want = 20 * dense + 4 * moe + 2 * v * h + h
    from parallint.estimator.spec import normalize, spec_from_facts

    assert count_params(normalize(spec_from_facts(ff.facts))["model"]) == want
    assert 9.0e9 < want < 9.5e9


# --- offload -------------------------------------------------------------------------------------
@pytest.mark.parametrize("zo,want", [
    ({"stage": 3, "offload_optimizer": {"device": "cpu"}}, True),
    ({"stage": 3, "offload_param": {"device": "nvme", "nvme_path": "/local"}}, True),
    ({"stage": 2, "offload_optimizer": {"device": "none"}}, False),
    ({"stage": 2, "offload_optimizer": {"pin_memory": True}}, False),  # DeepSpeed's default device: none
    ({"stage": 2, "cpu_offload": True}, True),  # the pre-0.3.16 spelling
    ({"stage": 2, "offload_optimizer": {"device": "${DEV}"}}, None),
    ({"stage": 2}, "absent"),
])
def test_deepspeed_offload(zo, want):
    import json

    from parallint.readers import deepspeed

    ff = run(deepspeed, json.dumps({"train_batch_size": 8, "zero_optimization": zo}, indent=1), "ds.json")
    if want == "absent":
        assert "training.offload" not in ff.facts
    else:
        assert fact(ff, "training.offload") is want
        assert ff.facts.all("training.offload")[0].span.line == 5


@pytest.mark.parametrize("text,want", [
    ("distributed_type: FSDP\nfsdp_config:\n  fsdp_offload_params: true\n", True),
    ("distributed_type: FSDP\nfsdp_config:\n  fsdp_offload_params: false\n", False),
    ("distributed_type: DEEPSPEED\ndeepspeed_config:\n  offload_optimizer_device: cpu\n  zero_stage: 2\n", True),
    ("distributed_type: DEEPSPEED\ndeepspeed_config:\n  offload_optimizer_device: none\n  zero_stage: 2\n", False),
])
def test_accelerate_offload(text, want):
    from parallint.readers import accelerate

    ff = run(accelerate, "num_processes: 8\n" + text, "acc.yaml")
    assert fact(ff, "training.offload") is want


def test_foundry_offload():
    from parallint.readers import foundry

    ff = run(foundry, "global_train_batch_size: 8\nfsdp_config:\n  sharding_strategy: FULL_SHARD\n"
                      "  activation_cpu_offload: true\n", "run.yaml")
    assert fact(ff, "training.offload") is True and ff.facts.get("training.offload").span.line == 4
