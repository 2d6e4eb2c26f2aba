"""The shell reader on scripts tree-sitter cannot parse whole: templates with placeholders, a
trailing backslash, unparseable statements (reported, never dropped silently), `eval` of a string
with unknown parts, and bounded work on hostile input."""

from __future__ import annotations

import textwrap
import time
from pathlib import Path

from parallint.model.diagnostics import Severity
from parallint.readers import shell


def read(text: str, path: str = "run.sh"):
    text = textwrap.dedent(text).lstrip("\n")
    return shell.read(path, Path("/nonexistent") / path, text)


MEGATRON_TEMPLATE = """
    #!/bin/bash
    GPUS_PER_NODE=8
    DISTRIBUTED_ARGS="--nproc_per_node $GPUS_PER_NODE --nnodes 1 --node_rank 0 --master_addr localhost --master_port 6000"

    CHECKPOINT_PATH=<PATH_OF_LANGUAGE_MODEL> (e.g., /357m)
    VOCAB_FILE=<Specify path to file>/gpt2-vocab.json
    INPUT_PATH=<PATH_OF_INPUT_DATA> \\
            (e.g., /data/test.txt)

    python -m torch.distributed.launch $DISTRIBUTED_ARGS ./tasks/main.py \\
        --tensor-model-parallel-size 2 \\
        --load ${CHECKPOINT_PATH} \\
        --vocab-file $VOCAB_FILE \\
        --micro-batch-size 4 \\
        --sample-input-file=<PATH_OF_SAMPLES>
"""


def test_placeholder_lines_do_not_drop_the_script():
    ff = read(MEGATRON_TEMPLATE)
    assert not ff.diagnostics
    assert len(ff.launches) == 1
    la = ff.launches[0]
    assert la.launcher == "torch.distributed.launch"
    assert la.span.line == 10
    assert la.facts.get("parallel.procs_per_node").value == 8
    assert la.facts.get("parallel.tp").value == 2
    load = la.args[[a.value for a in la.args].index("--load") + 1]
    assert not load.known and "PATH_OF_LANGUAGE_MODEL" in load.why
    vocab = la.args[[a.value for a in la.args].index("--vocab-file") + 1]
    assert not vocab.known and "Specify path" in vocab.why
    assert not la.args[-1].known and "PATH_OF_SAMPLES" in la.args[-1].why
    assert la.facts.get("training.micro_batch").value == 4


def test_trailing_backslash_at_end_of_file():
    ff = read("torchrun --nproc_per_node 4 train.py \\\n    --lr 1e-4 \\\n")
    assert [la.launcher for la in ff.launches] == ["torchrun"]
    assert not ff.diagnostics


def test_unparseable_launch_is_reported_not_silent():
    ff = read("""
        #!/bin/bash
        NGPU=8
        if [ -z "$X" ]; then
          export LAUNCHER="torchrun --nproc_per_node $NGPU \\
            --nnodes 2
        fi
        echo done
    """)
    assert not ff.launches
    assert [d.code for d in ff.diagnostics] == ["SYN001"]
    d = ff.diagnostics[0]
    assert d.severity == Severity.INFO and 2 <= d.span.line <= 4
    assert "not checked" in d.message


def test_unparseable_line_without_a_launch_is_skipped_and_its_variables_unknown():
    ff = read("""
        NPROC=4
        NPROC="${A:$B+1}"
        torchrun --nproc_per_node $NPROC train.py
    """)
    la = ff.launches[0]
    vs = la.facts.all("parallel.procs_per_node")
    assert vs and not any(v.known for v in vs)
    assert "cannot parse" in vs[0].why
    assert not ff.diagnostics


def test_eval_of_a_string_with_unknown_parts():
    ff = read("""
        NGPU=4
        OUT=$1
        run_cmd="python3 -m torch.distributed.launch --nproc_per_node=${NGPU} --master_port=${MASTER_PORT} \\
            train.py --output_dir ${OUT}/run --deepspeed > ${OUT}/log.txt"
        echo ${run_cmd}
        eval ${run_cmd}
    """)
    assert [la.launcher for la in ff.launches] == ["torch.distributed.launch"]
    la = ff.launches[0]
    assert la.span.line == 6
    assert la.facts.get("parallel.procs_per_node").value == 4
    port = la.options["master_port"]
    assert not port.known and "MASTER_PORT" in port.why
    assert la.script.value == "train.py"


def test_recursive_function_is_read_once_per_level_not_exponentially():
    body = "\n".join(["f() {", "  torchrun --nproc_per_node 8 train.py", "  f", "  f", "  f", "}", "f", "f"])
    t0 = time.perf_counter()
    ff = read(body)
    assert time.perf_counter() - t0 < 5
    assert 1 <= len(ff.launches) <= 4


def test_many_calls_are_capped():
    lines = ["g() { torchrun --nproc_per_node 8 train.py; }"] + ["g"] * 5000
    ff = read("\n".join(lines))
    assert len(ff.launches) <= shell.MAX_LAUNCHES


def test_positions_on_a_very_long_line_are_linear():
    line = ("é" * 50 + " ") * 20000  # one 2 MB line
    src = shell.Src("x.sh", line.encode())
    t0 = time.perf_counter()
    for k in range(0, len(src.data), 100):
        src.pos(k)
    assert time.perf_counter() - t0 < 5  # bisect per position, not a decode of the line
    k = len(("é" * 50 + " ").encode()) * 3
    assert src.pos(k) == (1, 51 * 3 + 1)


def test_a_long_launch_line_keeps_character_columns():
    # 1,000 words on one line (shell.MAX_WORDS caps a followed command at 1,024)
    args = " ".join(f"--opt{i} é{i}" for i in range(500))
    text = f"torchrun --nproc_per_node 8 train.py {args} --last 1\n"
    t0 = time.perf_counter()
    ff = read(text)
    assert time.perf_counter() - t0 < 20
    last = ff.launches[0].args[-1]
    assert last.span.column == len(text.rstrip("\n")) - len("1") + 1


def test_src_columns_count_characters():
    src = shell.Src("x.sh", "é=1 ab\nxyz".encode())
    assert src.pos(0) == (1, 1)
    assert src.pos(len("é=1 ".encode())) == (1, 5)
    assert src.pos(len("é=1 ab\nx".encode())) == (2, 2)


def test_repairs_are_bounded_by_a_plain_parse():
    """Many unclosed constructs: re-parsing stops within a small multiple of one parse."""
    text = "".join(f"V{i}=<PATH {i}> (e.g. x)\nif [ x ]; then\n" for i in range(200)) + \
        "torchrun --nproc_per_node 8 t.py\n"
    t0 = time.perf_counter()
    shell._parser().parse(text.encode())
    one = time.perf_counter() - t0
    t0 = time.perf_counter()
    ff = read(text)
    assert time.perf_counter() - t0 < 8 * one + 2
    assert [la.launcher for la in ff.launches] == ["torchrun"]


def test_every_placeholder_assignment_is_filled_in_one_pass():
    text = "".join(f"P{i}=<Specify path {i}>\n" for i in range(300)) + "torchrun --nproc_per_node 8 t.py $P7\n"
    data, tree, placeholders = shell.parse_repaired(text.encode())
    assert not tree.root_node.has_error and len(placeholders) == 300
    ff = read(text)
    assert "Specify path 7" in ff.launches[0].args[0].why


def test_a_runaway_command_is_not_followed():
    """Found by the mutation fuzzer (shell input 18736, seed 2): a variable holding thousands of
    words, expanded into 14 commands, took 1.4 s. A command of more than shell.MAX_WORDS words is
    not a launch anyone writes: it is not followed."""
    args = " ".join(f"--opt{i} {i}" for i in range(600))
    ff = read(f"torchrun --nproc_per_node 8 train.py {args}\n")
    assert ff.launches == []


def test_an_escaped_string_comparison_in_a_test_parses(tmp_path):
    """Issue 22 (TransformerEngine's qa scripts): `[ "$v" \\< "3.0.0" ]` is valid bash that
    tree-sitter-bash does not parse; the launch after it is checked and no SYN001 is reported."""
    from conftest import run_cli

    (tmp_path / ".git").mkdir()
    (tmp_path / "test.sh").write_text(
        'export NCCL_P2P_DISABLE=1\nfor fa_version in "${FA_VERSIONS[@]}"\ndo\n  if [ "${fa_version}" \\< "3.0.0" ]\n  then\n'
        '    export A=1\n  elif [[ "${fa_version}" == 4.* ]]\n  then\n    export B=1\n  fi\ndone\n'
        'torchrun --nproc_per_node 2 train.py\n')
    res = run_cli("check", "--no-cache", "test.sh", cwd=tmp_path)
    assert "SYN001" not in res.stdout
    assert "ENV001" in res.stdout  # the launch after the test is read, with its environment
    assert "\\<" in (tmp_path / "test.sh").read_text()  # the file itself is untouched
