"""Configs that are not what runs stay silent, templates are not syntax errors, odd-but-valid values
are unknown (docs/precision-policy-configs.md). Each case is a hand-written, real-world-shaped
reconstruction; each silent case has a twin that still fires, so no test passes by saying nothing."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from parallint.estimator.params import count_params
from parallint.readers import deepspeed, nemo, neox

from conftest import run_cli, write_tree


def check(tmp_path: Path, files: dict[str, str], *extra: str) -> list[dict]:
    write_tree(tmp_path, {k: textwrap.dedent(v).lstrip("\n") for k, v in files.items()})
    proc = run_cli("check", "--format", "json", "--exit-zero", *extra, ".", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    return json.loads(proc.stdout)


def codes(found: list[dict]) -> list[tuple[str, str, int]]:
    return sorted((d["path"], d["code"], d["line"]) for d in found)


# --- NeMo: base configs a tool rewrites, conversion configs, models restored from a checkpoint ---

NEMO_SP_TP1 = """
    trainer:
      devices: 8
      num_nodes: 2
      precision: bf16
    model:
      micro_batch_size: 1
      global_batch_size: 32
      tensor_model_parallel_size: 1
      pipeline_model_parallel_size: 1
      num_layers: 24
      sequence_parallel: true
    """

NEMO_PP16_ONE_GPU = """
    run:
      name: convert_mixtral
      convert_name: convert_hf_mixtral_to_nemo
    trainer:
      devices: 1
      num_nodes: 1
      precision: 32
    model:
      micro_batch_size: 1
      global_batch_size: 8
      tensor_model_parallel_size: 1
      pipeline_model_parallel_size: 16
      num_layers: 56
    """


def test_auto_configurator_base_config_is_silent_twin_fires(tmp_path):
    found = check(tmp_path, {
        "auto_configurator/base_configs/gpt3.yaml": NEMO_SP_TP1,
        "launcher_scripts/conf/training/gpt3/gpt3_5b.yaml": NEMO_SP_TP1,
    })
    assert codes(found) == [("launcher_scripts/conf/training/gpt3/gpt3_5b.yaml", "LAY005", 11)]


def test_conversion_config_is_silent_twin_fires(tmp_path):
    found = check(tmp_path, {
        "conf/conversion_hf2nemo/hf_mixtral/convert_mixtral_8x22b_nemo.yaml": NEMO_PP16_ONE_GPU,
        "conf/checkpoint/mixtral_8x22b.yaml": NEMO_PP16_ONE_GPU.replace("convert", "run"),
        "conf/training/mixtral_8x22b.yaml": NEMO_PP16_ONE_GPU,
    })
    # a run name alone does not make a conversion: only the conversion stage's own folder does
    assert codes(found) == [("conf/checkpoint/mixtral_8x22b.yaml", "LAY001", 12),
                            ("conf/checkpoint/mixtral_8x22b.yaml", "LAY004", 12),
                            ("conf/training/mixtral_8x22b.yaml", "LAY001", 12),
                            ("conf/training/mixtral_8x22b.yaml", "LAY004", 12)]


def test_model_restored_from_pretrained_checkpoint_keeps_batch_facts():
    text = textwrap.dedent("""
        trainer:
          devices: 1
          num_nodes: 1
        model:
          pretrained_model_path: ???
          micro_batch_size: 4
          global_batch_size: 8
          tensor_model_parallel_size: 2
          pipeline_model_parallel_size: 1
          num_layers: 12
        """).lstrip()
    ff = nemo.read("megatron_t5_lm_adaptation_finetune.yaml", Path("/tmp/x.yaml"), text)
    tp = ff.facts.all("parallel.tp")
    assert len(tp) == 1 and not tp[0].known and "checkpoint" in tp[0].why
    assert ff.facts.get("model.layers") is None
    assert ff.facts.int("training.global_batch") == 8 and ff.facts.int("parallel.world_size") == 1
    ff = nemo.read("megatron_t5_finetune.yaml", Path("/tmp/x.yaml"), text.replace("pretrained_model_path", "data_path"))
    assert ff.facts.int("parallel.tp") == 2


def test_restored_model_lay001_silent_twin_fires(tmp_path):
    base = """
        trainer:
          devices: 1
          num_nodes: 1
        model:
          {key}: /ckpt/t5.nemo
          micro_batch_size: 4
          global_batch_size: 8
          tensor_model_parallel_size: 2
        """
    found = check(tmp_path, {"conf/a.yaml": base.format(key="pretrained_model_path"),
                             "conf/b.yaml": base.format(key="restore_from_path")})
    # restore_from_path (NeMo SFT): the file's TP is merged into the restored config and used
    assert codes(found) == [("conf/b.yaml", "LAY001", 8)]


# --- gpt-neox: parallelism left at 1 by convention; the pipeline engine for pipe_parallel_size 1 ---

NEOX_70B = """
    {
      "pipe_parallel_size": %s,
      "model_parallel_size": 1,
      "num_layers": 80,
      "hidden_size": 8192,
      "intermediate_size": 86016,
      "num_attention_heads": 64,
      "num_kv_heads": 8,
      "seq_length": 4096,
      "norm": "rmsnorm",
      "pos_emb": "rotary",
      "no_weight_tying": true,
      "activation": "swiglu",
      "mlp_multiple_of": 256,
      "zero_optimization": {"stage": 1},
      "train_micro_batch_size_per_gpu": 1,
      "global_num_gpus": 64
    }
    """


def test_neox_parallelism_left_at_one_is_unknown():
    ff = neox.read("70B.yml", Path("/tmp/70B.yml"), textwrap.dedent(NEOX_70B % 1))
    for key in ("parallel.tp", "parallel.pp"):
        vs = ff.facts.all(key)
        assert len(vs) == 1 and not vs[0].known and "convention" in vs[0].why
    ff = neox.read("70B.yml", Path("/tmp/70B.yml"), textwrap.dedent(NEOX_70B % 0))
    assert ff.facts.int("parallel.tp") == 1 and ff.facts.int("parallel.pp") == 1  # 0 is a choice
    ff = neox.read("x.yml", Path("/tmp/x.yml"), '{"pipe_parallel_size": 4, "model_parallel_size": 1}')
    assert ff.facts.int("parallel.tp") == 1 and ff.facts.int("parallel.pp") == 4


def test_neox_mem001_only_on_a_chosen_layout(tmp_path):
    found = check(tmp_path, {"configs/70B.yml": NEOX_70B % 1, "mine/70B.yml": NEOX_70B % 0}, "--select", "MEM001")
    assert [(p, c) for p, c, _ in codes(found)] == [("mine/70B.yml", "MEM001")]


@pytest.mark.parametrize("pipe,stage,fires", [(1, 2, True), (1, 3, True), (0, 2, False), (1, 1, False)])
def test_neox_zero2_with_single_stage_pipeline_engine(tmp_path, pipe, stage, fires):
    text = '{\n  "pipe_parallel_size": %d,\n  "model_parallel_size": 1,\n  "zero_optimization": {"stage": %d}\n}\n'
    found = check(tmp_path, {"configs/local.yml": text % (pipe, stage)}, "--select", "LAY006")
    assert [(d["code"], d["line"]) for d in found] == ([("LAY006", 4)] if fires else [])


def test_neox_codellama_34b_published_count_needs_intermediate_size():
    base = {"layers": 48, "hidden": 8192, "heads": 64, "kv_heads": 8, "vocab": 32000, "mlp": "swiglu",
            "norm": "rmsnorm", "bias": False, "position_embeddings": "rope", "tied_embeddings": False}
    # gpt-neox's ParallelMLP: intermediate_size 65536 -> two thirds (43690) for gate + value,
    # value branch 21845 rounded up to mlp_multiple_of 256 = 22016, CodeLlama-34B's width
    w1, w2 = neox.mlp_widths(8192, 65536, None, True, 256)
    assert (w1, w2) == (44032, 22016)
    assert count_params({**base, "ffn": w2}) == 33_743_970_304  # published CodeLlama-34B
    # without intermediate_size (the file in gpt-neox) the default 4h gives a value branch of 11008
    assert neox.mlp_widths(8192, None, None, True, 256)[1] == 11008


# --- DeepSpeed JSON templates and empty sections ---

@pytest.mark.parametrize("token", ["${zero_stage}", "{{ zero_stage }}", "<ZERO_STAGE>", "%ZERO_STAGE%",
                                   "@ZERO_STAGE@", "ZERO_STAGE"])
def test_deepspeed_template_placeholder_is_unknown_not_syn001(tmp_path, token):
    text = ('{\n  "train_batch_size": 8,\n  "fp16": {"enabled": true},\n  "bf16": {"enabled": true},\n'
            '  "zero_optimization": {"stage": %s, "offload_param": {"device": "cpu"}}\n}\n') % token
    found = check(tmp_path, {"ds_config_TEMPLATE.json": text})
    # the placeholder stays unknown (no CFG004 on an unknown stage); the literal mistake still counts
    assert [(d["code"], d["line"]) for d in found] == [("CFG003", 4)]
    ff = deepspeed.read("ds.json", Path("/tmp/ds.json"), text)
    stage = ff.facts.all("parallel.zero_stage")
    assert len(stage) == 1 and not stage[0].known


def test_jinja_template_is_not_a_syntax_error_but_a_typo_is(tmp_path):
    jinja = ('{\n  "train_batch_size": {{ batch }},\n  {% if offload %}\n  "zero_optimization": {"stage": 3},\n'
             '  {% endif %}\n  "steps_per_print": 10\n}\n')
    broken = '{\n  "train_batch_size": 8,\n  "zero_optimization": {"stage": 3,\n}\n'
    found = check(tmp_path, {"a/ds_config.json": jinja, "b/ds_config.json": broken})
    assert [(d["path"], d["code"]) for d in found] == [("b/ds_config.json", "SYN001")]


@pytest.mark.parametrize("section", ['"offload_optimizer": {}', '"offload_optimizer": {}, "offload_param": {}',
                                     '"offload_param": {}, "cpu_offload": false'])
def test_deepspeed_empty_offload_section_is_read(tmp_path, section):
    text = '{\n  "train_batch_size": 8,\n  "zero_optimization": {"stage": 3, %s}\n}\n' % section
    assert check(tmp_path, {"ds_config.json": text}) == []
    ff = deepspeed.read("ds_config.json", Path("/tmp/ds_config.json"), text)
    assert not ff.diagnostics
    off = ff.facts.all("training.offload")
    assert len(off) == 1 and off[0].known and off[0].value is False  # device defaults to none


# --- NeMo values outside what a rule models ---

@pytest.mark.parametrize("value", ["uniform", "block", "42", "[full]", "{a: 1}"])
def test_nemo_unexpected_recompute_granularity_is_unknown(value):
    text = f"trainer:\n  devices: 8\n  num_nodes: 1\nmodel:\n  activations_checkpoint_granularity: {value}\n"
    ff = nemo.read("gpt.yaml", Path("/tmp/gpt.yaml"), text)
    assert not ff.diagnostics
    rc = ff.facts.all("training.recompute")
    assert len(rc) == 1 and not rc[0].known
    ff = nemo.read("gpt.yaml", Path("/tmp/gpt.yaml"), text.replace(value, "selective"))
    assert ff.facts.get("training.recompute").value == "selective"


def test_nemo_uniform_granularity_cli(tmp_path):
    text = ("trainer:\n  devices: 8\n  num_nodes: 1\nmodel:\n  tensor_model_parallel_size: 4\n"
            "  pipeline_model_parallel_size: 4\n  activations_checkpoint_granularity: uniform\n")
    found = check(tmp_path, {"conf/megatron_gpt_config.yaml": text})
    assert [d["code"] for d in found] == ["LAY001"]  # read, not SYN001; the real mistake is still found


# --- CFG005: a repeat with the same value is a warning (outside DeepSpeed, which refuses it) ---

def test_duplicate_key_same_value_warns_different_value_errs(tmp_path):
    meg = ("MODEL_ARGS:\n  --num-layers: 12\n  --init-method-std: 0.0198\n  --log-timers-to-tensorboard: true\n"
           "  --init-method-std: 0.014\n  --log-timers-to-tensorboard: true  # again\n")
    ds = '{\n  "train_batch_size": 16,\n  "train_batch_size": 16\n}\n'
    found = check(tmp_path, {"functional/case/model_config.yaml": meg, "ds_config.json": ds}, "--select", "CFG005")
    got = sorted((d["path"], d["line"], d["severity"]) for d in found)
    assert got == [("ds_config.json", 3, "error"),
                   ("functional/case/model_config.yaml", 5, "error"),
                   ("functional/case/model_config.yaml", 6, "warning")]
    msg = next(d["message"] for d in found if d["line"] == 5 and d["path"].endswith(".yaml"))
    assert "0.0198" in msg and "0.014" in msg


# --- Python written for a newer interpreter than the one running parallint ---

def test_pep701_fstring_is_not_a_syntax_error(tmp_path):
    new = ('import torch.distributed as dist\nfrom pathlib import Path\n\n'
           'def main(dump_dir):\n    print(f"checkpoints in {str(Path(dump_dir) / "checkpoints")}")\n')
    bad = 'import torch.distributed as dist\n\ndef main(:\n    pass\n'
    found = check(tmp_path, {"apps/train.py": new, "apps/broken.py": bad})
    assert [(d["path"], d["code"]) for d in found] == [("apps/broken.py", "SYN001")]


# --- CFG007: DeepSpeed's 1-bit optimizers refuse ZeRO (DeepSpeed issues #1197, #5046) ---

@pytest.mark.parametrize("name,files,expect", [
    ("ds", {"ds_config.json": '{\n  "train_batch_size": 4096,\n  "optimizer": {\n    "type": "OneBitLamb",\n'
                               '    "params": {"lr": 1e-3, "freeze_step": 1000}\n  },\n'
                               '  "zero_optimization": {"stage": 1}\n}\n'}, [("ds_config.json", 4)]),
    ("ds-stage0", {"ds_config.json": '{\n  "optimizer": {"type": "OneBitAdam"},\n  "zero_optimization": {"stage": 0}\n}\n'}, []),
    ("ds-no-zero", {"ds_config.json": '{\n  "optimizer": {"type": "ZeroOneAdam"},\n  "fp16": {"enabled": true}\n}\n'}, []),
    ("ds-stage-env", {"ds_config.json": '{\n  "optimizer": {"type": "OneBitAdam"},\n  "zero_optimization": {"stage": "${STAGE}"}\n}\n'}, []),
    ("neox", {"configs/1bit.yml": '{\n  "pipe-parallel-size": 0,\n  "model-parallel-size": 2,\n'
                                  '  "optimizer": {"type": "onebitadam", "params": {"lr": 0.0006}},\n'
                                  '  "zero_optimization": {"stage": 2}\n}\n'}, [("configs/1bit.yml", 4)]),
])
def test_one_bit_optimizer_with_zero(tmp_path, name, files, expect):
    found = check(tmp_path, files, "--select", "CFG007")
    assert [(d["path"], d["line"]) for d in found] == expect


@pytest.mark.parametrize("stage,ratio,fires", [(2, 0.3, True), (3, 0.3, False), (2, 1.0, False), ("${S}", 0.3, False)])
def test_partial_offload_needs_zero3(tmp_path, stage, ratio, fires):
    stage_txt = json.dumps(stage)
    text = ('{\n  "zero_optimization": {\n    "stage": %s,\n    "offload_optimizer": {"device": "cpu", "ratio": %s}\n'
            '  }\n}\n') % (stage_txt, ratio)
    found = check(tmp_path, {"ds_config.json": text}, "--select", "CFG007")
    assert [d["line"] for d in found] == ([4] if fires else [])


def test_accelerate_deepspeed_config_file_with_inline_fields(tmp_path):
    yaml_ = ("compute_environment: LOCAL_MACHINE\ndistributed_type: {dt}\ndeepspeed_config:\n"
             "  deepspeed_config_file: configs/ds_zero3.json\n  gradient_accumulation_steps: 4\n"
             "  offload_optimizer_device: cpu\n  zero3_init_flag: true\nmachine_rank: 0\nnum_machines: 1\n"
             "num_processes: 8\n")
    found = check(tmp_path, {"a/accelerate.yaml": yaml_.format(dt="DEEPSPEED"),
                             "b/accelerate.yaml": yaml_.format(dt="'NO'"),  # accelerate's own test fixture shape
                             "c/accelerate.yaml": yaml_.format(dt="DEEPSPEED").replace(
                                 "  deepspeed_config_file: configs/ds_zero3.json\n", "")}, "--select", "CFG007")
    assert [(d["path"], d["line"]) for d in found] == [("a/accelerate.yaml", 5), ("a/accelerate.yaml", 6)]


# --- LAY005: a no-op switch is only the author's mistake where the author can drop it ---

def test_sequence_parallel_from_shared_base_args_is_silent(tmp_path):
    matrix = """
        BASE_MODEL_ARGS: &BASE_MODEL_ARGS
          --num-layers: 12
          --hidden-size: 512
          --num-attention-heads: 8
          --sequence-parallel: true
        MODEL_ARGS:
          <<: *BASE_MODEL_ARGS
          --tensor-model-parallel-size: 1
        MODEL_ARGS_2:
          <<: *BASE_MODEL_ARGS
          --tensor-model-parallel-size: 2
        """
    single = """
        MODEL_ARGS:
          --num-layers: 12
          --hidden-size: 512
          --num-attention-heads: 8
          --sequence-parallel: true
          --tensor-model-parallel-size: 1
        """
    found = check(tmp_path, {"matrix/model_config.yaml": matrix, "single/model_config.yaml": single}, "--select", "LAY005")
    assert [(d["path"], d["line"]) for d in found] == [("single/model_config.yaml", 5)]


# --- LAY013: Megatron asserts on --tp-comm-overlap without sequence parallelism (TE issue #746) ---

def test_tp_comm_overlap_needs_sequence_parallel(tmp_path):
    meg = "MODEL_ARGS:\n  --tensor-model-parallel-size: {tp}\n{sp}  --tp-comm-overlap: true\n  --num-layers: 8\n"
    nemo_ = ("trainer:\n  devices: 8\n  num_nodes: 1\nmodel:\n  tensor_model_parallel_size: 4\n"
             "  sequence_parallel: {sp}\n  ub_tp_comm_overlap: true\n")
    run = ("#!/bin/bash\ntorchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size 4 "
           "--num-layers 8 --tp-comm-overlap {extra}\n")
    found = check(tmp_path, {
        "a/model_config.yaml": meg.format(tp=4, sp=""),                                  # no SP: error
        "b/model_config.yaml": meg.format(tp=1, sp="  --sequence-parallel: true\n"),     # TP 1: error
        "c/model_config.yaml": meg.format(tp=4, sp="  --sequence-parallel: true\n"),     # fine
        "d/conf/gpt.yaml": nemo_.format(sp="false"),                                      # NeMo: warning
        "e/conf/gpt.yaml": nemo_.format(sp="${oc.env:SP}"),                               # unknown: silent
        "f/run.sh": run.format(extra=""),                                                 # error
        "g/run.sh": run.format(extra="$EXTRA_ARGS"),                                      # may carry SP
        "f/pretrain_gpt.py": "import sys\n", "g/pretrain_gpt.py": "import sys\n",
    }, "--select", "LAY013")
    got = sorted((d["path"], d["line"], d["severity"]) for d in found)
    assert got == [("a/model_config.yaml", 3, "error"), ("b/model_config.yaml", 4, "error"),
                   ("d/conf/gpt.yaml", 7, "warning"), ("f/run.sh", 2, "error")]


# --- a model restored with this file merged over the checkpoint's config: unstated degrees are the checkpoint's ---

ALIGNER_RM = """
    trainer:
      num_nodes: 8
      devices: 8
    pretrained_checkpoint:
      restore_from_path: {restore}
    model:
      {tp}micro_batch_size: 2
      global_batch_size: 64
    """


def test_aligner_restored_model_takes_unstated_degrees_from_the_checkpoint(tmp_path):
    """NeMo-Aligner's reward-model config leaves TP and PP to the restored checkpoint: its DP is
    unknown (64 GPUs at TP 8 would make 8, and 64 is a multiple of 2 x 8). Stated, they are used;
    one left unstated (PP, CP) is still the checkpoint's."""
    stated = "tensor_model_parallel_size: 1\n      pipeline_model_parallel_size: 1\n      context_parallel_size: 1\n      "
    found = check(tmp_path, {"conf/rm.yaml": ALIGNER_RM.format(restore="null", tp=""),
                             "conf/rm_tp1.yaml": ALIGNER_RM.format(restore="null", tp="tensor_model_parallel_size: 1\n      "),
                             "conf/rm_all.yaml": ALIGNER_RM.format(restore="null", tp=stated)})
    assert codes(found) == [("conf/rm_all.yaml", "BAT002", 11)]  # PP and CP unstated in rm_tp1: the checkpoint's
    ff = nemo.read("rm.yaml", Path("/tmp/rm.yaml"), textwrap.dedent(ALIGNER_RM.format(restore="null", tp="")))
    tp = ff.facts.all("parallel.tp")
    assert len(tp) == 1 and not tp[0].known and "checkpoint" in tp[0].why and tp[0].span.line == 6


def test_sft_restore_from_path_null_is_pretraining(tmp_path):
    """``model.restore_from_path: null`` (the launcher's training configs): nothing is restored,
    NeMo's default TP and PP of 1 hold; a path restores, and the unstated degrees are unknown."""
    text = """
        trainer:
          num_nodes: 8
          devices: 8
        model:
          restore_from_path: {restore}
          micro_batch_size: 2
          global_batch_size: 64
        """
    found = check(tmp_path, {"conf/pre.yaml": text.format(restore="null"),
                             "conf/sft.yaml": text.format(restore="/ckpt/gpt.nemo")})
    assert codes(found) == [("conf/pre.yaml", "BAT002", 7)]
