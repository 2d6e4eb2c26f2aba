"""DeepSpeed ``init_inference`` with injected kernels splits the attention heads evenly over the
tensor-parallel ranks and asserts it ("the attention_heads require to be divisible by the
world_size"): LAY003 against the heads of the hub model the script loads (issue 22), end to end,
with clean twins. AutoTP (no kernel injection) splits uneven heads and stays silent."""

from __future__ import annotations

import pytest

from conftest import write_tree

PIPELINE = """\
import os

import deepspeed
import torch
from transformers import pipeline

local_rank = int(os.getenv("LOCAL_RANK", "0"))
generator = pipeline("text-generation", model="EleutherAI/gpt-j-6b", device=local_rank)
generator.model = deepspeed.init_inference(generator.model, tensor_parallel={{"tp_size": {tp}}},
                                           dtype=torch.half{inject})
print(generator("DeepSpeed is"))
"""
ARGS = """\
import argparse

import deepspeed
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

parser = argparse.ArgumentParser()
parser.add_argument("--name", default="EleutherAI/gpt-j-6b")
parser.add_argument("--mp_size", type=int, default=1)
args = parser.parse_args()

tokenizer = AutoTokenizer.from_pretrained(args.name)
model = AutoModelForCausalLM.from_pretrained(args.name, torch_dtype=torch.float16)
model = deepspeed.init_inference(model, mp_size=args.mp_size, dtype=torch.float16, replace_with_kernel_inject=True)
"""
INJECT = ", replace_with_kernel_inject=True"


def _check(cli, tmp_path, files):
    (tmp_path / ".git").mkdir()
    write_tree(tmp_path, files)
    return cli("check", "--no-cache", "--select", "LAY003", ".", cwd=tmp_path)


@pytest.mark.parametrize("tp,inject,found", [
    (3, INJECT, True),     # gpt-j has 16 heads
    (4, INJECT, False),
    (3, "", False),        # AutoTP splits uneven heads
])
def test_pipeline_model_heads_against_tp_size(cli, tmp_path, tp, inject, found):
    res = _check(cli, tmp_path, {"infer.py": PIPELINE.format(tp=tp, inject=inject),
                                 "run.sh": f"deepspeed --num_gpus {tp} infer.py\n"})
    assert res.returncode == (1 if found else 0), res.stdout + res.stderr
    if found:
        assert "infer.py:9:" in res.stdout and "16 attention heads" in res.stdout, res.stdout


@pytest.mark.parametrize("line,found", [
    ("deepspeed --num_gpus 6 infer.py --mp_size 6", True),
    ("deepspeed --num_gpus 4 infer.py --mp_size 4", False),
    ("deepspeed --num_gpus 6 infer.py --mp_size 6 --name facebook/opt-unknown-model", False),  # shape unknown
    ("deepspeed --num_gpus 6 infer.py --mp_size $MP", False),
])
def test_launch_line_mp_size_against_the_loaded_model(cli, tmp_path, line, found):
    res = _check(cli, tmp_path, {"infer.py": ARGS, "run.sh": line + "\n"})
    assert res.returncode == (1 if found else 0), res.stdout + res.stderr
    if found:
        assert "run.sh:1:" in res.stdout and "tensor-parallel degree 6" in res.stdout, res.stdout


# DeepSpeedExamples' inference scripts: the degree is the launch's world, read from the environment
ENV = """\
import os

import deepspeed
import torch
from transformers import AutoModelForCausalLM

world_size = int(os.getenv("WORLD_SIZE", "1"))
model = AutoModelForCausalLM.from_pretrained("EleutherAI/gpt-j-6b", torch_dtype=torch.float16)
model = deepspeed.init_inference(model, mp_size=world_size, dtype=torch.half, replace_with_kernel_inject=True)
"""


@pytest.mark.parametrize("run,found", [
    ("deepspeed --num_gpus 6 infer.py", True),             # WORLD_SIZE=6 from the launcher, 16 heads
    ("deepspeed --num_gpus 4 infer.py", False),
    ("torchrun --nproc_per_node 6 infer.py", True),
    ("export WORLD_SIZE=6\ndeepspeed --num_gpus 4 infer.py", False),  # the launcher's value wins
    ("export WORLD_SIZE=6\npython infer.py", True),         # one process, but the script reads 6
    ("deepspeed --num_gpus $N infer.py", False),            # world unknown: never the default 1
    ("python infer.py", False),                             # nothing sets it: unknown
])
def test_world_size_from_the_launchers_environment(cli, tmp_path, run, found):
    res = _check(cli, tmp_path, {"infer.py": ENV, "run.sh": "#!/bin/bash\n" + run + "\n"})
    assert res.returncode == (1 if found else 0), res.stdout + res.stderr
    if found:
        assert "infer.py:9:" in res.stdout and "tensor-parallel degree 6" in res.stdout, res.stdout


def test_environment_read_alone_stays_unknown(cli, tmp_path):
    # the script checked on its own: WORLD_SIZE is whatever the launch gives, not the default "1"
    res = _check(cli, tmp_path, {"infer.py": ENV.replace('"1"', '"6"')})
    assert res.returncode == 0, res.stdout + res.stderr
