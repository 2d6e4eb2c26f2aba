"""Readers never raise on unexpected-but-valid values: every leaf of a real-world-shaped config of
each kind is replaced by each odd value (an empty section, a list, null, a word the reader does not
map, a huge or negative number...). The reader must return facts, never an exception, and a value
it cannot map must not become a known fact of the wrong type. (Issue 10 item 10 is the class: an
empty DeepSpeed offload section and NeMo's `activations_checkpoint_granularity: uniform`.)"""

from __future__ import annotations

import copy
import importlib
import json
from pathlib import Path

import pytest
import yaml

from parallint.discover.classify import READERS
from parallint.model.facts import FACT_KEYS

ODD = [{}, [], None, "uniform", "block", 0, -1, 1.5, True, "auto", "${a.b}", "???", [1, 2], {"a": 1},
       "1e3", 10 ** 30, "", "cpu", {"device": {}}, {"device": None}, "-1"]

SEEDS: dict[str, tuple[str, dict]] = {
    "deepspeed": ("ds_config.json", {
        "train_batch_size": 64, "train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 4,
        "optimizer": {"type": "AdamW", "params": {"lr": 1e-4}},
        "zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu", "ratio": 0.5},
                              "offload_param": {"device": "nvme"}, "cpu_offload": False},
        "fp16": {"enabled": False}, "bf16": {"enabled": True},
        "tensor_parallel": {"autotp_size": 2}, "sequence_parallel_size": 2, "pipeline": {"stages": 2}}),
    "nemo": ("megatron_gpt_config.yaml", {
        "trainer": {"devices": 8, "num_nodes": 2, "precision": "bf16-mixed",
                    "strategy": {"find_unused_parameters": False, "cpu_offload": False}},
        "model": {"micro_batch_size": 1, "global_batch_size": 64, "tensor_model_parallel_size": 2,
                  "pipeline_model_parallel_size": 2, "virtual_pipeline_model_parallel_size": None,
                  "sequence_parallel": True, "num_layers": 24, "hidden_size": 2048, "ffn_hidden_size": 5504,
                  "num_attention_heads": 16, "num_query_groups": 4, "encoder_seq_length": 4096,
                  "activation": "swiglu", "normalization": "rmsnorm", "position_embedding_type": "rope",
                  "activations_checkpoint_granularity": "selective", "cpu_offloading": False,
                  "tokenizer": {"library": "huggingface", "type": "meta-llama/Llama-2-7b-hf"},
                  "make_vocab_size_divisible_by": 128, "optim": {"name": "distributed_fused_adam"},
                  "pretrained_model_path": None}}),
    "neox": ("neox.yml", {
        "pipe_parallel_size": 2, "model_parallel_size": 2, "num_layers": 24, "hidden_size": 2048,
        "num_attention_heads": 16, "num_kv_heads": 4, "seq_length": 2048, "intermediate_size": 16384,
        "activation": "swiglu", "mlp_multiple_of": 256, "norm": "rmsnorm", "pos_emb": "rotary",
        "no_weight_tying": True, "use_bias_in_attn_linear": False, "use_bias_in_mlp": False,
        "checkpoint_activations": True, "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 2,
        "zero_optimization": {"stage": 1, "offload_optimizer": {"device": "cpu"}},
        "optimizer": {"type": "Adam"}, "bf16": {"enabled": True}, "precision": "bfloat16"}),
    "megatron_yaml": ("model_config.yaml", {
        "ENV_VARS": {"CUDA_DEVICE_MAX_CONNECTIONS": 1},
        "MODEL_ARGS": {"--num-layers": 12, "--hidden-size": 512, "--num-attention-heads": 8,
                       "--tensor-model-parallel-size": 2, "--pipeline-model-parallel-size": 2,
                       "--sequence-parallel": True, "--micro-batch-size": 4, "--global-batch-size": 32,
                       "--seq-length": 1024, "--bf16": True, "--decoder-first-pipeline-num-layers": 5,
                       "trainer.devices": 8, "model.config.num_layers": 12}}),
    "foundry": ("mpt-7b.yaml", {
        "variables": {"max_seq_len": 2048}, "max_seq_len": "${variables.max_seq_len}",
        "model": {"name": "mpt_causal_lm", "d_model": 4096, "n_heads": 32, "n_layers": 32,
                  "expansion_ratio": 4, "max_seq_len": 2048, "vocab_size": 50368},
        "global_train_batch_size": 256, "device_train_microbatch_size": 8, "precision": "amp_bf16",
        "fsdp_config": {"sharding_strategy": "FULL_SHARD", "activation_checkpointing": True}}),
    "nanotron": ("config.yaml", {
        "parallelism": {"dp": 2, "tp": 2, "pp": 2, "expert_parallel_size": 1},
        "tokens": {"micro_batch_size": 2, "batch_accumulation_per_replica": 4, "sequence_length": 2048},
        "optimizer": {"zero_stage": 1},
        "model": {"model_config": {"hidden_size": 2048, "num_hidden_layers": 16, "num_attention_heads": 16,
                                   "num_key_value_heads": 4, "intermediate_size": 5632, "vocab_size": 32000,
                                   "tie_word_embeddings": True}}}),
    "accelerate": ("accelerate_config.yaml", {
        "compute_environment": "LOCAL_MACHINE", "distributed_type": "FSDP", "machine_rank": 0,
        "num_machines": 2, "num_processes": 16, "mixed_precision": "bf16", "use_cpu": False,
        "fsdp_config": {"fsdp_sharding_strategy": "FULL_SHARD", "fsdp_offload_params": False,
                        "fsdp_version": 2},
        "deepspeed_config": {"zero_stage": 2, "offload_optimizer_device": "cpu",
                             "gradient_accumulation_steps": 4},
        "parallelism_config": {"parallelism_config_dp_replicate_size": 2, "parallelism_config_dp_shard_size": 4,
                               "parallelism_config_tp_size": 2, "parallelism_config_cp_size": 1}}),
    "hf_model": ("config.json", {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
        "intermediate_size": 11008, "num_hidden_layers": 32, "num_attention_heads": 32,
        "num_key_value_heads": 32, "vocab_size": 32000, "max_position_embeddings": 4096,
        "tie_word_embeddings": False, "num_local_experts": 8, "num_experts_per_tok": 2}),
    "hftrainargs": ("training_args.json", {
        "output_dir": "out", "per_device_train_batch_size": 4, "gradient_accumulation_steps": 8,
        "bf16": True, "fp16": False, "ddp_find_unused_parameters": False, "deepspeed": "ds_z3.json"}),
    "jobspec": ("job.yaml", {
        "model": {"preset": "llama-2-7b", "seq_len": 4096},
        "parallel": {"world_size": 16, "tp": 2, "pp": 1, "zero_stage": 1},
        "training": {"micro_batch": 1, "recompute": "selective"}, "hardware": {"gpu": "A100-80GB"}}),
    "torchtitan": ("llama3_8b.toml", {
        "job": {"description": "x"}, "model": {"name": "llama3", "flavor": "8B"},
        "training": {"local_batch_size": 2, "global_batch_size": 64, "seq_len": 8192},
        "parallelism": {"data_parallel_replicate_degree": 1, "data_parallel_shard_degree": -1,
                        "tensor_parallel_degree": 2, "pipeline_parallel_degree": 2,
                        "context_parallel_degree": 1, "pipeline_parallel_schedule": "1F1B"}}),
}


#: facts that are counts: a known one is a number, never a section, a list or a word
NUMBERS = frozenset({"parallel.tp", "parallel.pp", "parallel.vpp", "parallel.cp", "parallel.ep", "parallel.etp",
                     "parallel.dp", "parallel.dp_replicate", "parallel.dp_shard", "parallel.world_size",
                     "parallel.nodes", "parallel.procs_per_node", "parallel.zero_stage", "parallel.sp",
                     "model.layers", "model.hidden", "model.heads", "model.kv_heads", "model.ffn", "model.vocab",
                     "model.seq_len", "model.num_experts", "model.top_k", "model.head_dim",
                     "training.micro_batch", "training.global_batch", "training.grad_accum",
                     "training.train_batch_size"})


def _leaves(d, path=()):
    if isinstance(d, dict):
        for k, v in d.items():
            yield from _leaves(v, path + (k,))
    elif isinstance(d, list):
        for i, v in enumerate(d):
            yield from _leaves(v, path + (i,))
    if path:
        yield path


def _set(d, path, value):
    for p in path[:-1]:
        d = d[p]
    d[path[-1]] = value


def _dump(name: str, data: dict) -> str | None:
    if name.endswith(".json"):
        return json.dumps(data, indent=2)
    if name.endswith(".toml"):
        lines = []
        for sec, body in data.items():
            if not isinstance(body, dict):
                continue
            lines.append(f"[{sec}]")
            for k, v in body.items():
                if isinstance(v, (dict, list)) or v is None or (isinstance(v, int) and abs(v) > 2 ** 62):
                    continue  # not a TOML scalar the seed needs
                lines.append(f"{k} = {json.dumps(v)}")
        return "\n".join(lines) + "\n"
    return yaml.safe_dump(data, sort_keys=False)


@pytest.mark.parametrize("kind", sorted(SEEDS))
def test_reader_survives_every_odd_value(kind):
    name, seed = SEEDS[kind]
    mod = importlib.import_module("parallint.readers." + READERS[kind])
    ff = mod.read(name, Path("/tmp") / name, _dump(name, seed))
    assert not ff.diagnostics and len(ff.facts) > 3, (kind, ff.diagnostics)  # the seed itself reads
    paths = list(_leaves(seed))
    for path in paths:
        for odd in ODD:
            data = copy.deepcopy(seed)
            _set(data, path, copy.deepcopy(odd))
            text = _dump(name, data)
            try:
                ff = mod.read(name, Path("/tmp") / name, text)
            except Exception as exc:  # noqa: BLE001 - the point of the test
                pytest.fail(f"{kind}: {'.'.join(map(str, path))} = {odd!r} raised {type(exc).__name__}: {exc}")
            for key, values in ff.facts.items():
                assert key in FACT_KEYS
                for v in values:
                    if v.known and key in NUMBERS:
                        assert isinstance(v.value, (int, float, bool)), (kind, path, odd, key, v)
