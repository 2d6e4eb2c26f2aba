"""The shell reader: tree-sitter-bash plus the small evaluator, and the facts of launches it finds."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from parallint.readers import shell


def read(text: str, path: str = "run.sh", tmp: Path | None = None):
    text = textwrap.dedent(text).lstrip("\n")
    abspath = (tmp / path) if tmp is not None else Path("/nonexistent") / path
    if tmp is not None:
        abspath.parent.mkdir(parents=True, exist_ok=True)
        abspath.write_text(text)
    return shell.read(path, abspath, text)


def only(ff):
    assert len(ff.launches) == 1, [la.launcher for la in ff.launches]
    return ff.launches[0]


def vals(la, key):
    return [v.value if v.known else None for v in la.facts.all(key)]


def opt(la, key):
    v = la.options.get(key)
    return None if v is None else (v.value if v.known else "?")


def test_assignments_defaults_and_arithmetic():
    la = only(read("""
        GPUS=8
        : ${NODES:=2}
        PER=${PER_NODE:-$GPUS}
        WORLD=$((NODES * PER))
        torchrun --nnodes=$NODES --nproc_per_node "$PER" train.py --world $WORLD
        """))
    assert vals(la, "parallel.nodes") == [2]
    assert vals(la, "parallel.procs_per_node") == [8]
    assert [a.value for a in la.args] == ["--world", "16"]


def test_value_span_points_at_the_definition():
    la = only(read("""
        NNODES=4
        torchrun --nnodes $NNODES --nproc_per_node=8 train.py
        """))
    v = la.facts.all("parallel.nodes")[0]
    assert v.span.line == 1 and v.source == "torchrun --nnodes"


def test_unset_environment_and_command_substitution_are_unknown():
    la = only(read("""
        N=$(scontrol show hostnames | wc -l)
        torchrun --nnodes $N --nproc_per_node $GPUS_PER_NODE train.py
        """))
    assert vals(la, "parallel.nodes") == [None]
    assert vals(la, "parallel.procs_per_node") == [None]
    assert "command substitution" in la.facts.all("parallel.nodes")[0].why


@pytest.mark.parametrize("placeholder", ["<NUM_NODES>", "your_num_nodes", "XXX"])
def test_placeholders_are_unknown(placeholder):
    la = only(read(f"""
        NNODES="{placeholder}"
        torchrun --nnodes=$NNODES --nproc_per_node=8 train.py
        """))
    assert vals(la, "parallel.nodes") == [None]


def test_megatron_style_multiline_string_is_split_into_words():
    la = only(read("""
        GPT_ARGS="--tensor-model-parallel-size 8 \\
            --pipeline-model-parallel-size 4 \\
            --num-layers 96 --seq-length $SEQ"
        torchrun --nproc_per_node=8 pretrain_gpt.py $GPT_ARGS --bf16
        """))
    assert vals(la, "parallel.tp") == [8]
    assert vals(la, "parallel.pp") == [4]
    assert vals(la, "model.layers") == [96]
    assert vals(la, "model.seq_len") == [None]
    assert vals(la, "training.precision") == ["bf16"]
    assert vals(la, "framework") == ["megatron"]
    tp = la.facts.get("parallel.tp")
    assert tp.span.line == 1  # inside the string, where the value is written


def test_arrays_append_and_comments():
    la = only(read("""
        ARGS=(
            --num-layers 24   # the depth
            --hidden-size 1024
        )
        ARGS+=(--tensor-model-parallel-size 2)
        torchrun --nproc_per_node=2 pretrain_gpt.py "${ARGS[@]}"
        """))
    assert vals(la, "model.layers") == [24]
    assert vals(la, "model.hidden") == [1024]
    assert vals(la, "parallel.tp") == [2]


def test_branch_assignments_unknown_unless_all_paths_agree():
    ff = read("""
        if [ "$BIG" = 1 ]; then
            NNODES=4
        else
            NNODES=2
        fi
        if [ -n "$X" ]; then PP=4; else PP=4; fi
        torchrun --nnodes $NNODES --nproc_per_node 8 pretrain_gpt.py --pipeline-model-parallel-size $PP --tensor-model-parallel-size 1
        """)
    la = only(ff)
    assert vals(la, "parallel.nodes") == [None]
    assert vals(la, "parallel.pp") == [4]


def test_if_without_else_keeps_previous_value_only_when_unchanged():
    la = only(read("""
        NNODES=1
        if [ -n "$MULTI" ]; then NNODES=2; fi
        torchrun --nnodes $NNODES --nproc_per_node 8 train.py
        """))
    assert vals(la, "parallel.nodes") == [None]


def test_loop_variable_and_loop_assignments_unknown():
    ff = read("""
        for tp in 1 2 4; do
            torchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size $tp
            LAST=$tp
        done
        torchrun --nnodes $LAST --nproc_per_node 8 train.py
        """)
    assert len(ff.launches) == 2
    assert vals(ff.launches[0], "parallel.tp") == [None]
    assert vals(ff.launches[1], "parallel.nodes") == [None]


def test_and_or_tail_assignment_is_conditional():
    la = only(read("""
        NNODES=2
        [ -z "$SINGLE" ] || NNODES=1
        torchrun --nnodes $NNODES --nproc_per_node 8 train.py
        """))
    assert vals(la, "parallel.nodes") == [None]


def test_case_with_default_branch():
    la = only(read("""
        case "$SIZE" in
            small) NN=1 ;;
            *) NN=1 ;;
        esac
        torchrun --nnodes $NN --nproc_per_node 8 train.py
        """))
    assert vals(la, "parallel.nodes") == [1]


def test_function_called_later_sees_globals():
    la = only(read("""
        launch() {
            torchrun --nnodes $NODES --nproc_per_node 8 train.py
        }
        NODES=3
        launch
        """))
    assert vals(la, "parallel.nodes") == [3]


def test_sbatch_directives_and_slurm_variables():
    la = only(read("""
        #!/bin/bash
        #SBATCH --nodes=4 --ntasks-per-node=1
        #SBATCH --gres=gpu:a100:8
        #SBATCH -J job
        srun torchrun --nnodes $SLURM_NNODES --nproc_per_node $SLURM_GPUS_ON_NODE train.py
        """, "train.sbatch"))
    nodes = la.facts.all("parallel.nodes")
    assert [(v.value, v.source) for v in nodes] == [(4, "#SBATCH --nodes"), (4, "torchrun --nnodes")]
    assert nodes[0].span.line == 2
    assert vals(la, "parallel.procs_per_node") == [8]
    assert vals(la, "hardware.gpu") == ["a100"]
    assert vals(la, "hardware.gpus_per_node_requested") == [8]
    assert la.wrapper is not None and la.wrapper.launcher == "srun"
    assert known(la.wrapper.options["ntasks_per_node_effective"]) == 1


def known(v):
    return v.value if v is not None and v.known else None


def test_sbatch_after_first_command_is_ignored_like_sbatch_does():
    la = only(read("""
        #!/bin/bash
        set -e
        #SBATCH --nodes=4
        torchrun --nnodes 2 --nproc_per_node 8 train.py
        """))
    assert vals(la, "parallel.nodes") == [2]


def test_slurm_variable_default_is_not_a_value():
    la = only(read("""
        NNODES=${SLURM_NNODES:-1}
        MASTER_ADDR=${MASTER_ADDR:-localhost}
        torchrun --nnodes $NNODES --master_addr $MASTER_ADDR --nproc_per_node 8 train.py
        """))
    assert vals(la, "parallel.nodes") == [None]
    assert opt(la, "master_addr") == "?"


def test_exported_environment_and_prefix_assignments():
    la = only(read("""
        export NCCL_DEBUG=INFO
        NOT_EXPORTED=1
        NCCL_IB_DISABLE=1 torchrun --nproc_per_node 8 train.py
        """))
    assert la.env["NCCL_DEBUG"].value == "INFO"
    assert la.env["NCCL_IB_DISABLE"].value == "1"
    assert "NOT_EXPORTED" not in la.env


def test_set_a_exports_everything():
    la = only(read("""
        set -a
        CUDA_DEVICE_MAX_CONNECTIONS=1
        torchrun --nproc_per_node 8 train.py
        """))
    assert la.env["CUDA_DEVICE_MAX_CONNECTIONS"].value == "1"


def test_source_is_followed_with_cycle_guard(tmp_path):
    (tmp_path / "env.sh").write_text("NNODES=4\nsource ./run.sh\n")
    ff = read("""
        source ./env.sh
        torchrun --nnodes $NNODES --nproc_per_node 8 train.py
        """, "run.sh", tmp_path)
    la = only(ff)
    assert vals(la, "parallel.nodes") == [4]
    assert la.facts.all("parallel.nodes")[0].span.path == "env.sh"
    assert ff.data.sources and not ff.data.sources_unresolved


def test_unresolvable_source_is_recorded():
    ff = read("""
        source $HOME/cluster.sh
        torchrun --nproc_per_node 8 train.py
        """)
    assert ff.data.sources_unresolved


def test_heredoc_is_not_executed():
    ff = read("""
        cat > job.sh <<EOF
        torchrun --nnodes 4 --nproc_per_node 8 train.py
        EOF
        """)
    assert ff.launches == []


def test_eval_of_a_known_string():
    la = only(read("""
        cmd="deepspeed --num_gpus 2 pretrain.py --tensor-model-parallel-size 2 --num-layers 4"
        eval $cmd
        """))
    assert la.launcher == "deepspeed"
    assert vals(la, "parallel.procs_per_node") == [2]
    assert vals(la, "parallel.tp") == [2]
    assert la.span.line == 2


def test_bash_c_under_srun():
    la = only(read("""
        #SBATCH --nodes=2
        srun bash -c "cd /work && torchrun --nnodes 2 --nproc_per_node 8 --node_rank \\$SLURM_NODEID train.py"
        """))
    assert la.launcher == "torchrun" and la.wrapper.launcher == "srun"
    assert vals(la, "parallel.nodes") == [2, 2]
    assert opt(la, "node_rank") == "?"


def test_string_operations():
    la = only(read("""
        HOSTS=node1,node2
        A=abc.yaml
        torchrun --nproc_per_node 8 train.py --config ${A%.yaml}.json --x ${HOSTS//,/ }
        """))
    assert [a.value for a in la.args] == ["--config", "abc.json", "--x", "node1", "node2"]
    assert [lk.value for lk in la.links] == ["abc.json"]


def test_unknown_splat_among_launcher_options():
    la = only(read("""
        torchrun $DISTRIBUTED_ARGS pretrain_gpt.py --tensor-model-parallel-size 2
        """))
    assert la.options["opaque"].known is False
    assert la.script.value == "pretrain_gpt.py"
    assert vals(la, "parallel.tp") == [2]


@pytest.mark.parametrize("text", [
    "if then fi (((",
    "echo \"unterminated",
    "torchrun --nnodes=$((2/0)) train.py",
    "X=${Y:?missing}; torchrun --nnodes $X train.py",
    "f() { f; }; f",
    "A=(1 2); A[5]=3; torchrun --nnodes ${A[5]} x.py",
    "$(torchrun --nnodes 2 train.py)",
    "\x00\x01binary",
])
def test_bad_input_never_raises(text):
    ff = shell.read("bad.sh", Path("/nonexistent/bad.sh"), text)
    assert isinstance(ff.launches, list)
    for d in ff.diagnostics:
        assert d.code == "SYN001"


def test_deep_recursion_and_size_limits():
    text = "X=1\n" + "Y=$X$X$X$X\nX=$Y\n" * 8 + "torchrun --nnodes 1 --nproc_per_node 1 t.py\n"
    ff = shell.read("big.sh", Path("/nonexistent/big.sh"), text)
    assert len(ff.launches) == 1


def test_deepspeed_hostfile_nodes_and_slots(tmp_path):
    (tmp_path / "hostfile").write_text("# cluster\nworker-1 slots=8\nworker-2 slots=8\n")
    la = only(read("""
        deepspeed --hostfile hostfile train.py --deepspeed_config ds.json
        """, "run.sh", tmp_path))
    assert vals(la, "parallel.nodes") == [2]
    assert vals(la, "parallel.procs_per_node") == [8]
    limited = only(read("deepspeed --hostfile hostfile --num_nodes 1 --num_gpus 4 train.py\n", "run2.sh", tmp_path))
    assert vals(limited, "parallel.nodes") == [1]
    assert vals(limited, "parallel.procs_per_node") == [4]


def test_exponential_values_and_calls_are_bounded():
    import time

    text = "X=ab\n" + "X=$X$X\n" * 40 + "f() { f; f; }\nf\ntorchrun --nnodes 1 --nproc_per_node 1 t.py\n"
    t = time.perf_counter()
    ff = shell.read("boom.sh", Path("/nonexistent/boom.sh"), text)
    assert time.perf_counter() - t < 10
    assert len(ff.launches) == 1  # the launch after the runaway function is still found


def test_bash_c_at_top_level():
    la = only(read("""
        bash -c "torchrun --nproc_per_node 2 t.py"
        """))
    assert la.launcher == "torchrun"


def test_unreadable_source_makes_every_variable_unknown(tmp_path):
    from parallint.readers.shell import read

    text = (
        "GPUS=8\n"
        'if [ -n "$CFG" ]; then source "$CFG"; fi\n'
        "GPUS=${GPUS:-8}\nNODES=${NODES:-1}\nLAYERS=12\n"
        "torchrun --nnodes $NODES --nproc_per_node $GPUS pretrain_gpt.py --num-layers $LAYERS "
        "--tensor-model-parallel-size 1\n"
    )
    p = tmp_path / "run.sh"
    p.write_text(text)
    f = read("run.sh", p, text)
    (launch,) = f.launches
    assert launch.facts.get("parallel.procs_per_node") is None
    assert launch.facts.get("parallel.nodes") is None
    assert launch.facts.int("model.layers") == 12
