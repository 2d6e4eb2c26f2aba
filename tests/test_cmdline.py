"""Launch command lines -> Launch: launchers, wrappers, options, links and Megatron facts."""

from __future__ import annotations

import pytest

from parallint.readers import cmdline
from parallint.readers.cmdline import Context, Word
from parallint.model.facts import FactMap, Value
from parallint.readers.megatron_args import args_facts, flag_facts, split_flags, vpp_from_layers_per_stage


def parse(line: str, ctx: Context | None = None):
    words = [Word.lit(w) if w != "$X" else Word.unknown("environment variable X", splat=True)
             for w in line.split()]
    return cmdline.parse_command(words, ctx)


def vals(la, key):
    return [v.value if v.known else None for v in la.facts.all(key)]


def test_torchrun_options_both_spellings():
    la = parse("torchrun --nnodes 2 --nproc-per-node=8 --node_rank=1 --master-addr host0 train.py --lr 1")
    assert la.launcher == "torchrun"
    assert vals(la, "parallel.nodes") == [2]
    assert vals(la, "parallel.procs_per_node") == [8]
    assert la.options["node_rank"].value == "1" and la.options["master_addr"].value == "host0"
    assert la.script.value == "train.py" and [a.value for a in la.args] == ["--lr", "1"]


def test_torchrun_elastic_range_and_auto_are_unknown():
    la = parse("torchrun --nnodes 1:4 --nproc_per_node auto train.py")
    assert vals(la, "parallel.nodes") == [None]
    assert vals(la, "parallel.procs_per_node") == [None]
    fixed = parse("torchrun --nnodes 2:2 --nproc_per_node gpu train.py")
    assert vals(fixed, "parallel.nodes") == [2]


def test_python_module_launchers():
    la = parse("python3 -u -m torch.distributed.launch --use_env --nproc_per_node=4 train.py")
    assert la.launcher == "torch.distributed.launch"
    assert vals(la, "parallel.procs_per_node") == [4]
    run = parse("python -m torch.distributed.run --standalone --nproc_per_node 2 -m pkg.train")
    assert run.launcher == "torch.distributed.run" and run.is_module and run.script.value == "pkg.train"
    mod = parse("python -m pkg.train --x 1")
    assert mod.launcher == "python" and mod.is_module and mod.script.value == "pkg.train"
    assert parse("python -c print(1)") is None
    assert parse("python -m pip install x") is None


def test_deepspeed_launcher():
    la = parse("deepspeed --num_nodes 2 --num_gpus 8 --hostfile hosts.txt --master_port 29501 train.py "
               "--deepspeed --deepspeed_config ds.json")
    assert la.launcher == "deepspeed"
    assert vals(la, "parallel.nodes") == [2]
    assert vals(la, "parallel.procs_per_node") == [8]
    assert {v.value for v in la.links} == {"hosts.txt", "ds.json"}


def test_accelerate_launch_total_processes():
    la = parse("accelerate launch --config_file acc.yaml --num_processes 16 --num_machines 2 --multi_gpu "
               "train.py --foo")
    assert la.launcher == "accelerate"
    assert vals(la, "parallel.world_size") == [16]
    assert vals(la, "parallel.nodes") == [2]
    assert la.script.value == "train.py"
    assert "acc.yaml" in [v.value for v in la.links]


def test_srun_wraps_torchrun_and_keeps_layers():
    sched = FactMap()
    sched.add("parallel.nodes", Value(4, None, True, "", "#SBATCH --nodes"))
    ctx = Context(scheduler={"ntasks_per_node": Value("1", None, True, "", "#SBATCH --ntasks-per-node")},
                  scheduler_facts=sched)
    la = parse("srun -N4 --gpus-per-node=8 torchrun --nnodes 4 --nproc_per_node 8 train.py", ctx)
    assert la.launcher == "torchrun" and la.wrapper.launcher == "srun"
    assert [(v.value, v.source) for v in la.facts.all("parallel.nodes")] == [
        (4, "#SBATCH --nodes"), (4, "srun --nodes"), (4, "torchrun --nnodes")]
    assert vals(la, "hardware.gpus_per_node_requested") == [8]
    assert la.wrapper.options["ntasks_per_node_effective"].value == 1


def test_srun_python_takes_tasks_per_node():
    la = parse("srun --nodes=2 --ntasks=16 python train.py")
    assert la.launcher == "python" and la.wrapper.launcher == "srun"
    assert vals(la, "parallel.procs_per_node") == [8]


def test_srun_of_a_shell_script_is_the_launch():
    la = parse("srun -l --ntasks-per-node 1 bash run_node.sh")
    assert la.launcher == "srun" and la.script.value == "run_node.sh"


def test_mpirun_np_and_env():
    la = parse("mpirun -np 16 -npernode 8 -x NCCL_DEBUG=INFO --mca btl ^openib python train.py")
    assert la.launcher == "python" and la.wrapper.launcher == "mpirun"
    assert vals(la, "parallel.world_size") == [16]
    assert vals(la, "parallel.procs_per_node") == [8]
    assert la.env["NCCL_DEBUG"].value == "INFO"


@pytest.mark.parametrize("prefix", ["nohup", "exec", "time", "env NCCL_DEBUG=INFO", "numactl --interleave=all",
                                    "uv run", "CUDA_VISIBLE_DEVICES=0,1"])
def test_wrappers_are_seen_through(prefix):
    la = parse(f"{prefix} torchrun --nproc_per_node 2 train.py")
    assert la is not None and la.launcher == "torchrun"
    assert vals(la, "parallel.procs_per_node") == [2]


def test_env_prefix_is_in_the_launch_env():
    la = parse("CUDA_VISIBLE_DEVICES=0,1 torchrun --nproc_per_node 2 train.py")
    assert la.env["CUDA_VISIBLE_DEVICES"].value == "0,1"


def test_not_launches():
    for line in ("echo torchrun", "pip install torch", "ls", "git clone x"):
        assert parse(line) is None


def test_splat_marks_options_opaque():
    la = parse("torchrun $X train.py")
    assert la.options["opaque"].known is False
    assert "parallel.nodes" not in la.facts


def test_links_from_arguments():
    la = parse("torchrun --nproc_per_node 8 -m torchtitan.train --job.config_file llama3_8b.toml "
               "--config=conf.yaml data.json --lr 1")
    assert {v.value for v in la.links} >= {"llama3_8b.toml", "conf.yaml", "data.json"}


def test_composer_launcher():
    la = parse("composer -n 8 --world_size 16 train.py yamls/pretrain.yaml")
    assert la.launcher == "composer"
    assert vals(la, "parallel.procs_per_node") == [8]
    assert vals(la, "parallel.world_size") == [16]
    assert "yamls/pretrain.yaml" in [v.value for v in la.links]


@pytest.mark.parametrize("text,expected", [("gpu:a100:8", "a100"), ("gpu:h100:4,shard:2", "h100")])
def test_gres_type(text, expected):
    assert cmdline.gpu_type({"gres": Value(text)}, "srun").value == expected
    assert cmdline.gpus_per_node({"gres": Value(text)}, "srun", None, None).value == int(text.split(",")[0][-1])


def test_gpus_total_divided_by_nodes_and_per_task():
    assert cmdline.gpus_per_node({"gpus": Value("16")}, "x", 2, None).value == 8
    assert cmdline.gpus_per_node({"gpus": Value("16")}, "x", None, None) is None
    assert cmdline.gpus_per_node({"gpus_per_task": Value("1")}, "x", 2, Value(4)).value == 4


@pytest.mark.parametrize("constraint,gpu", [("a100", "a100"), ("h100&ib", "h100"), ("a100|h100", None),
                                            ("skylake", None), ("A100-80GB", "A100-80GB")])
def test_constraint_gpu(constraint, gpu):
    v = cmdline.gpu_type({"constraint": Value(constraint)}, "#SBATCH")
    assert (v.value if v is not None else None) == gpu


def test_loopback():
    assert cmdline.is_loopback("localhost") and cmdline.is_loopback("127.0.0.1") and cmdline.is_loopback("::1")
    assert not cmdline.is_loopback("node001") and not cmdline.is_loopback("10.0.0.1")


# -- Megatron arguments -------------------------------------------------------------------------
def test_flag_facts_int_bool_and_yaml_style():
    assert [(k, v.value) for k, v in flag_facts("--tensor-model-parallel-size", Value("8"))] == [("parallel.tp", 8)]
    assert [(k, v.value) for k, v in flag_facts("num_layers", Value(32))] == [("model.layers", 32)]
    assert [(k, v.value) for k, v in flag_facts("--bf16", None)] == [("training.precision", "bf16")]
    assert flag_facts("--bf16", Value(False)) == []
    assert [(k, v.value) for k, v in flag_facts("--sequence-parallel", Value(True))] == [
        ("parallel.sequence_parallel", True)]
    bad = flag_facts("--num-layers", Value("${NUM_LAYERS}"))
    assert bad[0][0] == "model.layers" and not bad[0][1].known
    assert flag_facts("--lr", Value("1e-4")) == []


def test_args_facts_needs_a_megatron_marker():
    words = [Value(w) for w in "--num-layers 12 --hidden-size 768".split()]
    assert len(args_facts(words)) == 0
    words.append(Value("--micro-batch-size"))
    words.append(Value("4"))
    f = args_facts(words)
    assert f.int("model.layers") == 12 and f.int("training.micro_batch") == 4
    assert f.get("framework").value == "megatron"


def test_gqa_vpp_and_both_precisions():
    words = [Value(w) for w in ("--tensor-model-parallel-size 2 --pipeline-model-parallel-size 4 --num-layers 32 "
                                "--num-layers-per-virtual-pipeline-stage 2 --num-query-groups 8 --fp16 --bf16 "
                                "--recompute-activations").split()]
    f = args_facts(words)
    assert "model.kv_heads" not in f  # --num-query-groups means nothing without --group-query-attention
    assert f.int("parallel.vpp") == 4
    assert [v.value for v in f.all("training.precision")] == ["fp16", "bf16"]
    assert f.get("training.recompute").value == "selective"
    f2 = args_facts(words + [Value("--group-query-attention")])
    assert f2.int("model.kv_heads") == 8


def test_vpp_not_computable_is_unknown():
    assert not vpp_from_layers_per_stage(30, 4, Value(2)).known
    assert not vpp_from_layers_per_stage(None, 4, Value(2)).known
    assert vpp_from_layers_per_stage(32, 4, Value(2)).value == 4


def test_split_flags_unknown_value_and_equals():
    words = [Value("--num-layers"), Value.unknown("env"), Value("--seq-length=2048"), Value("--bf16")]
    flags = split_flags(words)
    assert [(n, v.known if v is not None else None) for n, _, v in flags] == [
        ("num-layers", False), ("seq-length", True), ("bf16", None)]


def test_colossalai_run():
    la = parse("colossalai run --nproc_per_node 4 --num_nodes 2 --hostfile ./hostfile --master_addr host1 train.py -c cfg.py")
    assert la.launcher == "colossalai"
    assert vals(la, "parallel.procs_per_node") == [4]
    assert vals(la, "parallel.nodes") == [2]
    assert la.script.value == "train.py"


def test_underscore_options_are_not_megatron():
    words = [Value(w) for w in "--micro_batch_size 8 --tensor_model_parallel_size 2 --num_layers 4".split()]
    assert len(args_facts(words)) == 0
