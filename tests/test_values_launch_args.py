"""Values that flow: launch-line script arguments bind to the script's argparse parser (also one in
another repository module), and CFG009 reports a flag the parser rejects."""

from __future__ import annotations

import json

from conftest import write_tree

TRAIN = """\
import argparse
from megatron.core import parallel_state


def parse_args():
    parser = argparse.ArgumentParser()
    group = parser.add_argument_group("parallel")
    group.add_argument("--tp", type=int, default=2)
    group.add_argument("--pp", type=int, default=3)
    return parser.parse_args()


def main():
    args = parse_args()
    parallel_state.initialize_model_parallel(tensor_model_parallel_size=args.tp,
                                             pipeline_model_parallel_size=args.pp)


main()
"""
PARSER_MODULE = """\
import argparse


def _parser():
    p = argparse.ArgumentParser()
    p.add_argument("--tensor-parallel", type=int, default=2)
    p.add_argument("--pipeline-parallel", type=int, default=3)
    return p


def get_args():
    return _parser().parse_args()
"""
TRAIN_IMPORTING = """\
from gpt.arguments import get_args
from megatron.core import parallel_state


def main():
    args = get_args()
    parallel_state.initialize_model_parallel(args.tensor_parallel, args.pipeline_parallel)


main()
"""


def _findings(cli, tmp_path, files, select):
    write_tree(tmp_path, {"pyproject.toml": "[project]\nname = 'x'\n", **files})
    p = cli("check", "--no-cache", "--select", select, "--format", "json", ".", cwd=tmp_path)
    assert "Traceback" not in p.stderr, p.stderr
    return json.loads(p.stdout)


def _run(args: str) -> str:
    return f"#!/bin/bash\ntorchrun --standalone --nproc_per_node 8 train.py {args}\n"


def test_launch_line_overrides_the_argparse_default(tmp_path, cli):
    assert _findings(cli, tmp_path, {"train.py": TRAIN, "run.sh": _run("--tp 2 --pp 4")}, "LAY001") == []


def test_overridden_degrees_that_do_not_fit_are_quoted_from_the_launch_line(tmp_path, cli):
    got = _findings(cli, tmp_path, {"train.py": TRAIN, "run.sh": _run("--tp=4 --pp 4")}, "LAY001")
    assert len(got) == 1
    assert "TP 4 × PP 4 = 16" in got[0]["message"]
    assert got[0]["path"] == "run.sh"


def test_reassigned_argument_stays_unknown(tmp_path, cli):
    script = TRAIN.replace("    parallel_state.", "    args.pp = 3\n    parallel_state.", 1)
    assert _findings(cli, tmp_path, {"train.py": script, "run.sh": _run("--tp 4 --pp 4")}, "LAY001") == []


def test_parser_in_another_module_clean_and_bad(tmp_path, cli):
    files = {"gpt/__init__.py": "", "gpt/arguments.py": PARSER_MODULE, "train.py": TRAIN_IMPORTING}
    clean = _findings(cli, tmp_path, {**files, "run.sh": _run("--pipeline-parallel 4")}, "LAY001")
    assert clean == []
    bad = _findings(cli, tmp_path, {**files, "run.sh": _run("--seed 1")}, "LAY001")
    assert len(bad) == 1 and "TP 2 × PP 3 = 6" in bad[0]["message"]


PLAIN = """\
import argparse
import torch.distributed as dist

parser = argparse.ArgumentParser()
parser.add_argument("--learning-rate", type=float, default=1e-3)
parser.add_argument("--bf16", action="store_true")
args = parser.parse_args()
dist.init_process_group("nccl")
"""


def test_cfg009_unrecognized_flag_with_did_you_mean(tmp_path, cli):
    got = _findings(cli, tmp_path, {"train.py": PLAIN, "run.sh": _run("--bf16 --learning-rte 3e-4")}, "CFG009")
    assert len(got) == 1
    assert "--learning-rte" in got[0]["message"] and "did you mean --learning-rate?" in got[0]["message"]


def test_cfg009_suggests_no_option_the_line_already_passes(tmp_path, cli):
    # FastVideo's preprocess scripts pass --model_path and --model_type; the parser has only the
    # first, so "rename it to --model_path" would repeat an option the line already gives
    script = PLAIN.replace('"--bf16", action="store_true"', '"--model_path", type=str')
    line = "--model_path x --model_type wan"
    got = _findings(cli, tmp_path, {"train.py": script, "run.sh": _run(line)}, "CFG009")
    assert len(got) == 1 and "--model_type" in got[0]["message"]
    assert "did you mean" not in got[0]["message"] and "remove it or add it" in got[0]["message"]
    alone = _findings(cli, tmp_path, {"train.py": script, "run.sh": _run("--model_type wan")}, "CFG009")
    assert "did you mean --model_path?" in alone[0]["message"]


def test_cfg009_accepts_exact_and_prefix_flags(tmp_path, cli):
    assert _findings(cli, tmp_path, {"train.py": PLAIN, "run.sh": _run("--learning 3e-4 --bf16")}, "CFG009") == []


def test_cfg009_silent_with_parse_known_args(tmp_path, cli):
    script = PLAIN.replace("args = parser.parse_args()", "args, _ = parser.parse_known_args()")
    assert _findings(cli, tmp_path, {"train.py": script, "run.sh": _run("--learning-rte 3e-4")}, "CFG009") == []


def test_cfg009_silent_with_an_unknown_parent_parser(tmp_path, cli):
    script = PLAIN.replace("import argparse\n", "import argparse\nfrom common import base_parser\n") \
        .replace("ArgumentParser()", "ArgumentParser(parents=[base_parser()])")
    assert _findings(cli, tmp_path, {"train.py": script, "run.sh": _run("--learning-rte 3e-4")}, "CFG009") == []


def test_cfg009_silent_when_a_helper_adds_options(tmp_path, cli):
    script = PLAIN.replace("import argparse\n", "import argparse\nfrom common import add_model_args\n") \
        .replace("args = parser", "add_model_args(parser)\nargs = parser")
    assert _findings(cli, tmp_path, {"train.py": script, "run.sh": _run("--learning-rte 3e-4")}, "CFG009") == []
