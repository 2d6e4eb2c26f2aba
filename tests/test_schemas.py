"""The framework schemas in schemas/ and the CFG001/CFG002 validation built on them."""

from __future__ import annotations

import textwrap

import pytest

from parallint.readers import jsonpos, tomlpos
from parallint.readers.yamlpos import load_all
from parallint.rules.cfg._common import PYTORCHJOB, SCHEMAS, load_schema, schema_problems

NAMES = sorted(set(SCHEMAS.values()) | {PYTORCHJOB})


@pytest.mark.parametrize("name", NAMES)
def test_schema_is_valid_2020_12_and_states_its_version(name):
    from jsonschema import Draft202012Validator

    schema = load_schema(name)  # via importlib.resources, as the rules load it
    Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert any(ch.isdigit() for ch in schema["$comment"]) and "@" in schema["$comment"]


def problems(text: str, fmt: str, schema: str):
    text = textwrap.dedent(text).lstrip("\n")
    tree = {"json": jsonpos.load, "toml": tomlpos.load}.get(fmt, lambda t, p: load_all(t, p)[0])(text, "f")
    return [(kind, span.line, msg) for kind, span, msg in schema_problems(tree, schema)]


HF_ZERO3 = '''
{
  "fp16": {"enabled": "auto", "loss_scale": 0, "loss_scale_window": 1000, "initial_scale_power": 16,
           "hysteresis": 2, "min_loss_scale": 1},
  "bf16": {"enabled": "auto"},
  "optimizer": {"type": "AdamW", "params": {"lr": "auto", "betas": "auto", "eps": "auto", "weight_decay": "auto"}},
  "scheduler": {"type": "WarmupLR", "params": {"warmup_min_lr": "auto", "warmup_max_lr": "auto", "warmup_num_steps": "auto"}},
  "zero_optimization": {
    "stage": 3,
    "offload_optimizer": {"device": "cpu", "pin_memory": true},
    "offload_param": {"device": "nvme", "nvme_path": "/local_nvme", "pin_memory": true},
    "overlap_comm": true, "contiguous_gradients": true, "sub_group_size": 1e9,
    "reduce_bucket_size": "auto", "stage3_prefetch_bucket_size": "auto",
    "stage3_param_persistence_threshold": "auto", "stage3_max_live_parameters": 1e9,
    "stage3_max_reuse_distance": 1e9, "stage3_gather_16bit_weights_on_model_save": true
  },
  "gradient_accumulation_steps": "auto",
  "gradient_clipping": "auto",
  "steps_per_print": 2000,
  "train_batch_size": "auto",
  "train_micro_batch_size_per_gpu": "auto",
  "wall_clock_breakdown": false
}
'''


def test_deepspeed_typical_config_is_clean():
    assert problems(HF_ZERO3, "json", "deepspeed.schema.json") == []


def test_deepspeed_top_level_typo_gets_a_suggestion_custom_key_does_not():
    got = problems('{\n  "train_micro_batch_size_per_gpus": 2,\n  "my_own_setting": 1\n}\n', "json", "deepspeed.schema.json")
    assert got == [("unknown", 2, "unknown key 'train_micro_batch_size_per_gpus' in top level (silently ignored by "
                                  "the framework); rename it to 'train_micro_batch_size_per_gpu'")]


def test_deepspeed_close_key_already_present_is_no_rename():
    # EVA-CLIP's config: gradient_accumulation_dtype is no DeepSpeed key, and the key it is close to
    # is already there, so "rename it to 'gradient_accumulation_steps'" would be wrong
    got = problems('{\n  "gradient_accumulation_steps": 1,\n  "gradient_accumulation_dtype": "fp32"\n}\n', "json",
                   "deepspeed.schema.json")
    assert got == [("unknown", 3, "unknown key 'gradient_accumulation_dtype' in top level (silently ignored by the "
                                  "framework); remove it or correct its name (`parallint rule CFG001` names the "
                                  "framework's schema)")]
    alone = problems('{\n  "gradient_accumulation_dtype": "fp32"\n}\n', "json", "deepspeed.schema.json")
    assert "rename it to 'gradient_accumulation_steps'" in alone[0][2]


def test_deepspeed_strict_section_reports_every_unknown_key():
    got = problems('{\n  "zero_optimization": {\n    "stage": 2,\n    "foo": 1\n  }\n}\n', "json", "deepspeed.schema.json")
    assert [(k, line) for k, line, _ in got] == [("unknown", 4)]
    assert "rejected" in got[0][2]


@pytest.mark.parametrize("snippet,line", [
    ('"zero_optimization": {"stage": 5}', 2),
    ('"train_batch_size": 0', 2),
    ('"train_micro_batch_size_per_gpu": "four"', 2),
    ('"fp16": {"enabled": "yes"}', 2),
    ('"zero_optimization": {"stage": 3, "offload_param": {"device": "gpu"}}', 2),
])
def test_deepspeed_invalid_values(snippet, line):
    got = problems("{\n  " + snippet + "\n}\n", "json", "deepspeed.schema.json")
    assert [(k, ln) for k, ln, _ in got] == [("invalid", line)]


@pytest.mark.parametrize("snippet", ['"train_batch_size": "auto"', '"train_batch_size": GBSIZE',
                                     '"zero_optimization": {"stage": ZERO_STAGE}', '"fp16": {"enabled": "auto"}'])
def test_placeholders_and_auto_are_not_invalid(snippet):
    assert problems("{\n  " + snippet + "\n}\n", "json", "deepspeed.schema.json") == []


@pytest.mark.parametrize("value", ['"inf"', "Infinity", '"Infinity"'])
def test_steps_per_print_infinity_is_accepted(value):
    """accelerate writes float("inf") there itself to stop DeepSpeed's step logging, and public
    configs write it as the string "inf" (issue 22: 4 false CFG002 on InternImage)."""
    assert problems("{\n  \"steps_per_print\": " + value + "\n}\n", "json", "deepspeed.schema.json") == []


@pytest.mark.parametrize("value", ["0", '"never"', "-Infinity"])
def test_steps_per_print_fix_names_what_to_write(value):
    (got,) = problems("{\n  \"steps_per_print\": " + value + "\n}\n", "json", "deepspeed.schema.json")
    assert got[0] == "invalid" and got[2].endswith("set it to a positive integer or 'auto'")


def test_accelerate_cluster_and_sagemaker():
    ok = "compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\nnum_processes: 8\nmixed_precision: 'no'\n"
    assert problems(ok, "yaml", "accelerate.schema.json") == []
    got = problems("compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\nnum_proceses: 8\n", "yaml",
                   "accelerate.schema.json")
    assert got and got[0][:2] == ("unknown", 3) and "num_processes" in got[0][2]
    sm = ("compute_environment: AMAZON_SAGEMAKER\ndistributed_type: NO\nec2_instance_type: ml.p3.2xlarge\n"
          "iam_role_name: r\nregion: us-east-1\n")
    assert problems(sm, "yaml", "accelerate.schema.json") == []
    got = problems("compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPUS\n", "yaml", "accelerate.schema.json")
    assert [(k, ln) for k, ln, _ in got] == [("invalid", 2)]


def test_torchtitan_section_typo_and_degree_type():
    got = problems('[paralelism]\ntensor_parallel_degree = 2\n', "toml", "torchtitan.schema.json")
    assert got and got[0][0] == "unknown" and "parallelism" in got[0][2]
    got = problems('[parallelism]\ntensor_parallel_degree = "2"\ndata_parallel_shard_degree = 0\n', "toml",
                   "torchtitan.schema.json")
    assert sorted(ln for _, ln, _ in got) == [2, 3]
    # an experiment's own section is tolerated (custom_config_module)
    assert problems('[my_experiment]\nfoo = 1\n', "toml", "torchtitan.schema.json") == []


def test_pytorchjob():
    job = """
        apiVersion: kubeflow.org/v1
        kind: PyTorchJob
        metadata: {name: x}
        spec:
          pytorchReplicaSpecs:
            Master:
              replicas: 1
              restartPolicy: OnFailure
              template: {spec: {containers: [{name: pytorch, image: x}]}}
            Launcher:
              replicas: 1
              template: {}
    """
    got = problems(job, "yaml", PYTORCHJOB)
    assert [(k, ln) for k, ln, _ in got] == [("unknown", 10)]
