"""The Makefile reader: make variables and recipe lines through the shell evaluator."""

from __future__ import annotations

import textwrap
from pathlib import Path

from parallint.readers import makefile


def read(text: str):
    return makefile.read("Makefile", Path("/nonexistent/Makefile"), textwrap.dedent(text).lstrip("\n"))


def test_recipe_launch_with_make_variables():
    ff = read("""
        NNODES ?= 2
        GPUS := 8
        export NCCL_DEBUG = INFO
        CFG = configs/$(MODEL).yaml
        MODEL = llama

        .PHONY: train
        train: data
        \t@torchrun --nnodes $(NNODES) --nproc_per_node=${GPUS} \\
        \t    train.py --config $(CFG)
        \techo $$HOME
        """)
    assert len(ff.launches) == 1
    la = ff.launches[0]
    assert [v.value for v in la.facts.all("parallel.nodes")] == [2]
    assert [v.value for v in la.facts.all("parallel.procs_per_node")] == [8]
    assert la.span.line == 9
    assert la.env["NCCL_DEBUG"].value == "INFO"
    assert [v.value for v in la.links] == ["configs/llama.yaml"]


def test_shell_function_values_are_unknown():
    ff = read("""
        NNODES := $(shell scontrol show hostnames | wc -l)
        N2 = $(NNODES)
        train:
        \ttorchrun --nnodes $(N2) --nproc_per_node 8 train.py
        \ttorchrun --nnodes $(UNDEFINED) --nproc_per_node 8 train.py
        """)
    # the first recipe line cannot be expanded at all; the second reads an environment variable
    assert len(ff.launches) == 1
    assert [v.known for v in ff.launches[0].facts.all("parallel.nodes")] == [False]


def test_lines_outside_rules_are_not_recipes():
    ff = read("""
        \ttorchrun --nnodes 2 train.py
        X = 1
        """)
    assert ff.launches == []


def test_binary_is_syn001():
    ff = makefile.read("Makefile", Path("/nonexistent/Makefile"), "all:\n\t\x00\x00")
    assert [d.code for d in ff.diagnostics] == ["SYN001"]
