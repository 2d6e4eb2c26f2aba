"""Config readers: positions, unknowns, standalone world sizes, interpolation, SYN001 on bad input."""

from __future__ import annotations

import random
import textwrap
from pathlib import Path

import pytest

from parallint.readers import (
    accelerate, deepspeed, foundry, hf_model, hftrainargs, jsonpos, megatron_yaml, nanotron, nemo, neox,
    tomlpos, torchtitan, torchtitan_py,
)
from parallint.discover.sniff import sniff_python, sniff_structured

ALL_READERS = (accelerate, deepspeed, foundry, hf_model, hftrainargs, megatron_yaml, nanotron, nemo, neox,
               torchtitan, torchtitan_py)


def run(mod, text: str, name: str):
    text = textwrap.dedent(text).lstrip("\n")
    return mod.read(name, Path("/tmp") / name, text)


def vals(ff, key):
    return [(v.value if v.known else None) for v in ff.facts.all(key)]


def one(ff, key):
    vs = ff.facts.all(key)
    assert len(vs) == 1, (key, vs)
    return vs[0]


# --- positioned JSON / TOML ---------------------------------------------------------------
def test_jsonpos_positions_and_duplicates():
    t = jsonpos.load('{\n  "a": 1,\n  "b": {"c": [1, 2], "c": 3}\n}\n', "x.json")
    assert t.get("a").span.line == 2 and t.get("a").span.column == 8
    assert t.key_spans["b"].line == 3
    (key, first, again), = t.get("b").duplicates
    assert key == "c" and first.column < again.column and t.path("b.c").value == 3


def test_jsonpos_lenient_like_hjson():
    t = jsonpos.load('{\n  // comment\n  "a": 1, # another\n  "b": [1, 2,],\n  /* block */ "c": STAGE,\n}\n', "x.json")
    assert t.plain()["a"] == 1 and t.plain()["b"] == [1, 2]
    from parallint.readers.cfgutil import Placeholder, to_value

    assert isinstance(t.get("c").value, Placeholder)
    assert not to_value(t.get("c"), "x").known


@pytest.mark.parametrize("bad,line,col", [('{"a": }', 1, 7), ('{\n  "a": 1\n  "b": 2\n}', 3, 3), ('{"a": "x', 1, 7)])
def test_jsonpos_errors_have_positions(bad, line, col):
    with pytest.raises(jsonpos.JsonPosError) as ei:
        jsonpos.load(bad, "x.json")
    assert (ei.value.line, ei.value.column) == (line, col)


def test_tomlpos_key_positions():
    t = tomlpos.load('[job]\nname = "x"\n\n[parallelism]\n# c\ntensor_parallel_degree = 4\n', "t.toml")
    n = t.path("parallelism.tensor_parallel_degree")
    assert n.value == 4 and n.span.line == 6 and n.span.column == 26
    assert t.get("parallelism").key_spans["tensor_parallel_degree"].line == 6


# --- sniffing ---------------------------------------------------------------------------------
@pytest.mark.parametrize("name,text,kind", [
    ("ds.json", '{"train_micro_batch_size_per_gpu": 2, "zero_optimization": {"stage": 2}}', "deepspeed"),
    ("ds.json", '{"train_batch_size": GBSIZE, "zero_optimization": {"stage": ZERO_STAGE}}', "deepspeed"),
    ("config.json", '{"architectures": ["X"], "model_type": "llama", "num_hidden_layers": 2, "hidden_size": 8}', "hf_model"),
    ("args.json", '{"output_dir": "o", "per_device_train_batch_size": 4}', "hftrainargs"),
    ("gpt.yaml", "trainer:\n  devices: 8\nmodel:\n  tensor_model_parallel_size: 2\n", "nemo"),
    ("model_config.yaml", "MODEL_ARGS:\n  --num-layers: 2\n", "megatron_yaml"),
    ("acc.yaml", "compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\nnum_processes: 8\n", "accelerate"),
    ("neox.yml", '{\n  "pipe_parallel_size": 1,\n  "model_parallel_size": 1\n}\n', "neox"),
    ("mpt.yaml", "max_seq_len: 2048\nglobal_train_batch_size: 256\ntrain_loader:\n  name: text\n", "foundry"),
    ("n.yaml", "general:\n  project: x\nparallelism:\n  dp: 2\n  tp: 1\n  pp: 1\ntokens:\n  micro_batch_size: 1\n", "nanotron"),
    ("job.yaml", "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nspec: {}\n", "kube"),
    ("spec.yaml", "model:\n  layers: 2\nparallel:\n  tp: 1\n", "jobspec"),
    ("spec.yaml", "model:\n  preset: llama-2-7b\ntraining:\n  micro_batch: 1\n", "jobspec"),
    ("t.toml", "[job]\ndescription = 'x'\n[model]\nflavor = 'a'\n[parallelism]\ntensor_parallel_degree = 2\n", "torchtitan"),
    ("pyproject.toml", "[parallelism]\n[training]\n", None),
    ("other.yaml", "name: foo\nsteps: 3\n", None),
    ("package.json", '{"name": "x"}', None),
])
def test_sniff_structured(name, text, kind):
    assert sniff_structured(name, text) == kind


def test_sniff_python_registry_only():
    reg = "from torchtitan.trainer import Trainer\ndef a() -> Trainer.Config:\n    return Trainer.Config(training=1)\n"
    assert sniff_python("torchtitan/models/x/config_registry.py", reg) == "torchtitan_py"
    assert sniff_python("train.py", "import torch\nprint(1)\n") is None


# --- DeepSpeed ----------------------------------------------------------------------------------
def test_deepspeed_facts_and_auto():
    ff = run(deepspeed, '''
        {
          "train_batch_size": 64,
          "train_micro_batch_size_per_gpu": "auto",
          "gradient_accumulation_steps": 4,
          "zero_optimization": {"stage": 2},
          "bf16": {"enabled": true},
          "fp16": {"enabled": false}
        }
        ''', "ds_config.json")
    assert one(ff, "training.train_batch_size").value == 64
    assert one(ff, "training.train_batch_size").span.line == 2
    assert one(ff, "training.train_batch_size").source == "ds_config.json train_batch_size"
    mb = one(ff, "training.micro_batch")
    assert not mb.known and mb.why == "auto"
    assert one(ff, "parallel.zero_stage").value == 2
    assert vals(ff, "training.precision") == ["bf16"]
    assert vals(ff, "framework") == ["deepspeed"]
    assert not ff.diagnostics and not ff.standalone_job


def test_deepspeed_bad_json_is_syn001_with_position():
    ff = run(deepspeed, '{\n  "train_batch_size": 8\n  "fp16": {}\n}\n', "ds_config.json")
    (d,) = ff.diagnostics
    assert d.code == "SYN001" and d.name == "parse-error" and str(d.severity) == "error"
    assert d.span.line == 3 and "line 3" in d.message


# --- NeMo -----------------------------------------------------------------------------------------
NEMO = '''
    trainer:
      devices: 8
      num_nodes: 2
      precision: bf16-mixed
      strategy: ddp_find_unused_parameters_true
    model:
      tensor_model_parallel_size: ${.tp}
      tp: 4
      pipeline_model_parallel_size: ${model.tp}
      micro_batch_size: ${oc.env:MBS}
      global_batch_size: ???
      hidden_size: 4096
      ffn_hidden_size: ${multiply:4, ${.hidden_size}}
      num_attention_heads: 32
    '''


def test_nemo_world_and_interpolations():
    ff = run(nemo, NEMO, "gpt.yaml")
    assert ff.standalone_job
    ws = one(ff, "parallel.world_size")
    assert ws.value == 16 and "devices" in ws.source
    assert one(ff, "parallel.tp").value == 4 and one(ff, "parallel.tp").span.line == 7
    assert one(ff, "parallel.pp").value == 4
    for key in ("training.micro_batch", "training.global_batch", "model.ffn"):
        assert not one(ff, key).known, key
    assert one(ff, "training.precision").value == "bf16"
    assert one(ff, "ddp.find_unused_parameters").value is True


def test_nemo_minus_one_devices_is_unknown():
    ff = run(nemo, "trainer:\n  devices: -1\n  num_nodes: 1\nmodel:\n  tensor_model_parallel_size: 1\n", "gpt.yaml")
    assert not ff.standalone_job and not ff.facts.all("parallel.world_size")
    assert not one(ff, "parallel.procs_per_node").known


# --- Megatron test-case YAML ----------------------------------------------------------------------
def test_megatron_yaml_flags():
    ff = run(megatron_yaml, '''
        ENV_VARS:
          CUDA_DEVICE_MAX_CONNECTIONS: 1
        MODEL_ARGS:
          --num-layers: 12
          --tensor-model-parallel-size: 2
          --sequence-parallel: true
          --fp16: false
          --bf16: true
          --save: ${CHECKPOINT_SAVE_PATH}
          --decoder-first-pipeline-num-layers: 2
        ''', "model_config.yaml")
    assert one(ff, "model.layers").value == 12 and one(ff, "model.layers").span.line == 4
    assert one(ff, "parallel.tp").value == 2
    assert one(ff, "parallel.sequence_parallel").value is True
    assert vals(ff, "training.precision") == ["bf16"]
    assert ff.facts.all("parallel.pp_layout")
    assert "megatron" in vals(ff, "framework")


def test_megatron_yaml_nemo2_keys():
    ff = run(megatron_yaml, '''
        MODEL_ARGS:
          trainer.num_nodes: 1
          trainer.devices: 8
          trainer.strategy.tensor_model_parallel_size: 2
          model.config.num_attention_heads: 16
        ''', "model_config.yaml")
    assert ff.standalone_job and one(ff, "parallel.world_size").value == 8
    assert one(ff, "parallel.tp").value == 2 and one(ff, "model.heads").value == 16


# --- torchtitan -----------------------------------------------------------------------------------
def test_torchtitan_current_generation():
    ff = run(torchtitan, '''
        [training]
        local_batch_size = 8
        seq_len = 2048

        [parallelism]
        data_parallel_shard_degree = -1
        tensor_parallel_degree = 2
        pipeline_parallel_degree = 2
        module_fqns_per_model_part = [["tok_embeddings", "layers.0"], ["layers.1", "norm", "output"]]
        ''', "llama.toml")
    shard = one(ff, "parallel.dp_shard")
    assert not shard.known and shard.why.startswith("inferred")
    assert one(ff, "parallel.tp").value == 2 and one(ff, "parallel.tp").span.line == 7
    assert one(ff, "training.micro_batch").value == 8
    (part,) = ff.data.partitions
    assert part.stages == [["tok_embeddings", "layers.0"], ["layers.1", "norm", "output"]]
    assert part.pp.value == 2 and part.span.line == 9


def test_torchtitan_old_generation():
    ff = run(torchtitan, '''
        [training]
        batch_size = 8
        data_parallel_degree = -1
        tensor_parallel_degree = 8

        [experimental]
        pipeline_parallel_degree = 2
        ''', "old.toml")
    assert not one(ff, "parallel.dp_shard").known
    assert one(ff, "parallel.tp").value == 8 and one(ff, "parallel.pp").value == 2
    assert one(ff, "training.micro_batch").value == 8


REGISTRY = '''
    from torchtitan.config import ParallelismConfig, TrainingConfig
    from torchtitan.trainer import Trainer

    def small() -> Trainer.Config:
        return Trainer.Config(
            training=TrainingConfig(local_batch_size=8, seq_len=2048),
            parallelism=ParallelismConfig(tensor_parallel_degree=2, pipeline_parallel_degree=2,
                                          module_fqns_per_model_part=[["a"], ["b"]]),
        )
    '''


def test_torchtitan_registry_single_config():
    ff = run(torchtitan_py, REGISTRY, "config_registry.py")
    assert one(ff, "parallel.tp").value == 2 and one(ff, "parallel.tp").span.line == 7
    assert list(ff.data.configs) == ["small"] and ff.data.partitions[0].config == "small"


def test_torchtitan_registry_many_configs_keep_apart():
    two = REGISTRY + '''
    def big() -> Trainer.Config:
        return Trainer.Config(parallelism=ParallelismConfig(tensor_parallel_degree=8))
    '''
    ff = run(torchtitan_py, two, "config_registry.py")
    assert set(ff.data.configs) == {"small", "big"}
    assert not ff.facts.all("parallel.tp")  # which one runs is chosen on the command line


def test_torchtitan_registry_syntax_error():
    ff = run(torchtitan_py, "def broken(:\n", "config_registry.py")
    assert [d.code for d in ff.diagnostics] == ["SYN001"]


# --- accelerate, neox, foundry, nanotron, HF --------------------------------------------------------
def test_accelerate():
    ff = run(accelerate, '''
        compute_environment: LOCAL_MACHINE
        distributed_type: DEEPSPEED
        deepspeed_config:
          deepspeed_config_file: ds_zero3.json
          zero3_init_flag: true
        num_machines: 2
        num_processes: 16
        mixed_precision: bf16
        ''', "acc.yaml")
    assert ff.standalone_job and one(ff, "parallel.world_size").value == 16
    assert one(ff, "parallel.nodes").value == 2 and one(ff, "parallel.procs_per_node").value == 8
    assert [v.value for v in ff.links] == ["ds_zero3.json"]
    assert one(ff, "training.precision").value == "bf16"


def test_accelerate_single_process_no_world():
    ff = run(accelerate, "compute_environment: LOCAL_MACHINE\ndistributed_type: NO\nnum_processes: 1\n", "acc.yaml")
    assert not ff.standalone_job


def test_neox_dashes_and_pipe_zero():
    ff = run(neox, '''
        # comment
        {
          "pipe-parallel-size": 0,
          "model-parallel-size": 2,
          "num-layers": 24,
          "train_micro_batch_size_per_gpu": 4,
          "zero_optimization": {"stage": 1},
        }
        ''', "neox.yml")
    assert one(ff, "parallel.pp").value == 1 and one(ff, "parallel.tp").value == 2
    assert one(ff, "model.layers").value == 24 and one(ff, "parallel.zero_stage").value == 1


def test_foundry_variables():
    ff = run(foundry, '''
        variables:
          max_seq_len: 2048
        max_seq_len: ${variables.max_seq_len}
        global_train_batch_size: 256
        device_train_microbatch_size: auto
        train_loader:
          name: text
        ''', "mpt.yaml")
    assert one(ff, "model.seq_len").value == 2048
    assert one(ff, "training.global_batch").value == 256
    assert not one(ff, "training.micro_batch").known


def test_nanotron_world():
    ff = run(nanotron, '''
        general:
          project: x
        parallelism:
          dp: 2
          tp: 4
          pp: 1
        model:
          model_config:
            num_attention_heads: 32
            num_hidden_layers: 16
        tokens:
          micro_batch_size: 2
        ''', "n.yaml")
    assert ff.standalone_job and one(ff, "parallel.world_size").value == 8
    assert one(ff, "model.heads").value == 32 and one(ff, "model.layers").value == 16


def test_hf_model_and_training_args():
    ff = run(hf_model, '{"architectures": ["M"], "num_hidden_layers": 32, "hidden_size": 4096,'
                       ' "num_attention_heads": 32, "num_key_value_heads": 8, "tie_word_embeddings": false,'
                       ' "hidden_act": "silu"}', "config.json")
    assert one(ff, "model.kv_heads").value == 8 and one(ff, "model.mlp").value == "swiglu"
    assert one(ff, "model.tied_embeddings").value is False
    ta = run(hftrainargs, "output_dir: out\nper_device_train_batch_size: 4\nddp_find_unused_parameters: true\n"
                          "deepspeed: ds.json\n", "args.yaml")
    assert one(ta, "ddp.find_unused_parameters").value is True and one(ta, "training.micro_batch").value == 4
    assert [v.value for v in ta.links] == ["ds.json"]


# --- robustness ------------------------------------------------------------------------------------
@pytest.mark.parametrize("mod", ALL_READERS, ids=lambda m: m.__name__.rsplit(".", 1)[-1])
def test_bad_input_never_raises(mod):
    rnd = random.Random(4)
    samples = ["", "\x00\x01\x02", "{" * 5000, "[" * 3000 + "]" * 3000, "a: [" * 500, "key: &a [*a]",
               "x = [\n", "\ufeff{\"a\": 1}", "---\n- 1\n- 2\n", "MODEL_ARGS: 3\n"]
    samples += ["".join(chr(rnd.randrange(0, 0x2FF)) for _ in range(300)) for _ in range(10)]
    for name in ("f.json", "f.yaml", "f.toml", "config_registry.py"):
        for s in samples:
            ff = mod.read(name, Path("/tmp") / name, s)
            for d in ff.diagnostics:
                assert d.code == "SYN001" and d.span.line >= 1 and d.span.column >= 1


def test_alias_bomb_is_syn001():
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n" for p, c in zip("abcdefgh", "bcdefghi"))
    ff = run(nemo, bomb, "gpt.yaml")
    assert [d.code for d in ff.diagnostics] == ["SYN001"]


# --- config partitions (for the PIP rules) ---------------------------------------------------------
def _part(stages, pp=None, layers=None):
    from parallint.model.diagnostics import Span
    from parallint.model.facts import Value
    from parallint.readers.cfgutil import Partition

    sp = Span("t.toml", 3)
    return Partition(stages, sp, [Span("t.toml", 3, 10 * (i + 1)) for i in range(len(stages))], "t.toml x",
                     pp=Value(pp, sp) if pp else None, layers=Value(layers, sp) if layers else None)


def test_partition_problems():
    from parallint.rules.pip._common import partition_problems

    good = _part([["tok_embeddings", "layers.0", "layers.1"], ["layers.2", "layers.3", "norm", "output"]], pp=2, layers=4)
    assert partition_problems(good) == []
    codes = lambda p, **kw: sorted(c for c, _, _ in partition_problems(p, **kw))
    assert codes(_part([["layers.0", "layers.1"], ["layers.1", "layers.2"]])) == ["layers"]          # overlap
    assert codes(_part([["layers.0"], ["layers.2"]])) == ["layers"]                                 # gap
    assert codes(_part([["layers.0"], ["layers.1"]], layers=3)) == ["layers"]                       # last missing
    assert codes(_part([["layers.2", "layers.3"], ["layers.0", "layers.1"]])) == ["layers"]         # order
    assert codes(_part([["layers.0"], ["layers.1"], ["layers.2"]], pp=2)) == ["stages"]
    assert codes(_part([["layers.0"], ["layers.1"], ["layers.2"], ["layers.3"]], pp=2), schedule="1F1B") == ["stages"]
    assert codes(_part([["layers.0"], ["layers.1"], ["layers.2"], ["layers.3"]], pp=2), schedule="Interleaved1F1B") == []


@pytest.mark.parametrize("mod", ALL_READERS, ids=lambda m: m.__name__.rsplit(".", 1)[-1])
def test_type_confused_configs_never_raise(mod):
    """Well-formed documents whose values have the wrong shapes everywhere."""
    rnd = random.Random(7)
    keys = ["trainer", "model", "devices", "num_nodes", "tensor_model_parallel_size", "MODEL_ARGS", "parallelism",
            "training", "zero_optimization", "stage", "fp16", "enabled", "num_processes", "num_machines",
            "deepspeed_config", "parallelism_config", "fsdp_config", "pipe_parallel_size", "strategy", "tokens",
            "model_config", "--num-layers", "trainer.devices", "module_fqns_per_model_part", "variables",
            "train_batch_size", "precision", "distributed_type", "attention_config", "deepspeed", "bf16"]
    leaves = [None, True, False, -1, 0, 3, 2.5, "auto", "???", "${.x}", "${a.b.c}", "${oc.env:X}", "x", [], {}, [1, "a"],
              [[1], ["layers.0"]], {"enabled": "auto"}]

    def gen(depth):
        if depth > 3 or rnd.random() < 0.3:
            return rnd.choice(leaves)
        if rnd.random() < 0.2:
            return [gen(depth + 1) for _ in range(rnd.randrange(3))]
        return {rnd.choice(keys): gen(depth + 1) for _ in range(rnd.randrange(1, 6))}

    import json

    for _ in range(150):
        doc = {rnd.choice(keys): gen(0) for _ in range(rnd.randrange(1, 6))}
        for name, text in (("c.json", json.dumps(doc)), ("c.yaml", json.dumps(doc)), ("config_registry.py", "x = 1\n")):
            ff = mod.read(name, Path("/tmp") / name, text)
            for key, vs in ff.facts.items():
                for v in vs:
                    assert v.span is not None, (key, v)
