"""Values that flow through the repository's module graph (issue 21): a launch's job includes the
repository modules its entry script imports, so a helper reached through ``torchrun -m`` is
checked with the launch's node count; a loader built in another module is followed to its
sampler; and an entry point that only a launch makes parallint's (Megatron's ``pretrain_gpt.py``)
is checked in its jobs when named alone. End to end through the CLI, each with a clean twin."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import write_tree

GENERATE = """\
import argparse
from gpt_oss.dist import init_distributed


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ckpt")
    args = p.parse_args()
    device = init_distributed()
    print(device, args.ckpt)


if __name__ == "__main__":
    main()
"""
DIST = """\
import os
import torch
import torch.distributed as dist


def init_distributed():
    dist.init_process_group("nccl")
    rank = int(os.environ["{var}"])
    torch.cuda.set_device(rank)
    return torch.device("cuda", rank)
"""


def _codes(cli, where: Path, *args: str) -> list[tuple[str, str, int]]:
    res = cli("check", "--no-cache", "--format", "json", *args, cwd=where)
    assert res.returncode in (0, 1), res.stderr
    found = json.loads(res.stdout)
    found = found["diagnostics"] if isinstance(found, dict) else found
    return sorted((d["code"], d["path"], d["line"]) for d in found)


def _gpt_oss(tmp_path: Path, nodes: int, var: str) -> Path:
    (tmp_path / ".git").mkdir()
    write_tree(tmp_path, {
        "run.sh": f"torchrun --nnodes {nodes} --nproc-per-node 4 --rdzv-backend c10d "
                  "--rdzv-endpoint $HEAD:29500 -m gpt_oss.generate --ckpt /ckpt\n",
        "gpt_oss/__init__.py": "",
        "gpt_oss/generate.py": GENERATE,
        "gpt_oss/dist.py": DIST.format(var=var),
    })
    return tmp_path


def test_a_helper_reached_through_dash_m_gets_the_launch_node_count(cli, tmp_path):
    repo = _gpt_oss(tmp_path, 2, "RANK")
    assert _codes(cli, repo, ".") == [("DDP002", "gpt_oss/dist.py", 9), ("DDP002", "gpt_oss/dist.py", 10)]
    res = cli("check", "--no-cache", ".", cwd=repo)
    assert "imported by gpt_oss/generate.py" in res.stdout
    shown = cli("show", "run.sh", cwd=repo).stdout
    assert "# files: run.sh, gpt_oss/generate.py, gpt_oss/dist.py" in shown


@pytest.mark.parametrize("nodes,var", [(1, "RANK"), (2, "LOCAL_RANK")])
def test_the_helper_twins_are_clean(cli, tmp_path, nodes, var):
    assert _codes(cli, _gpt_oss(tmp_path, nodes, var), ".") == []


def test_a_module_the_script_does_not_import_stays_out_of_the_job(cli, tmp_path):
    repo = _gpt_oss(tmp_path, 2, "LOCAL_RANK")
    (repo / "gpt_oss" / "other.py").write_text(DIST.format(var="RANK"))  # never imported
    assert _codes(cli, repo, ".") == []


SAMPLER_MODULE = """\
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def build_train_loader(dataset, batch_size):
    sampler = DistributedSampler(dataset, shuffle={shuffle})
    return DataLoader(dataset, batch_size=batch_size, sampler=sampler)
"""
SAMPLER_TRAIN = """\
import os
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from data_utils import build_train_loader

dist.init_process_group("nccl")
torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
model = DDP(torch.nn.Linear(4, 4).cuda())
train_loader = build_train_loader(dataset, 32)
for epoch in range(10):
{set_epoch}    for batch in train_loader:
        model(batch).sum().backward()
"""


@pytest.mark.parametrize("shuffle,set_epoch,expected", [
    ("True", "", [("DAT002", "train.py", 10)]),
    ("True", "    train_loader.sampler.set_epoch(epoch)\n", []),
    ("False", "", []),
])
def test_a_sampler_built_in_another_module(cli, tmp_path, shuffle, set_epoch, expected):
    (tmp_path / ".git").mkdir()
    write_tree(tmp_path, {"data_utils.py": SAMPLER_MODULE.format(shuffle=shuffle),
                          "train.py": SAMPLER_TRAIN.format(set_epoch=set_epoch)})
    assert _codes(cli, tmp_path, ".") == expected
    if expected:
        text = cli("check", "--no-cache", "train.py", cwd=tmp_path).stdout
        assert "build_train_loader() in data_utils.py" in text and "note: data_utils.py:6:" in text


PRETRAIN = '''\
"""Pretrain GPT."""
from megatron.training import get_args, pretrain
from megatron.core.enums import ModelType


def model_provider(pre_process=True, post_process=True):
    args = get_args()
    return None


if __name__ == "__main__":
    pretrain(None, model_provider, ModelType.encoder_or_decoder, None)
'''
LAUNCH = """\
#!/bin/bash
GPUS_PER_NODE=8
torchrun --nproc_per_node $GPUS_PER_NODE --nnodes 1 pretrain_gpt.py \\
    --tensor-model-parallel-size {tp} \\
    --pipeline-model-parallel-size 4 \\
    --num-layers 24 --hidden-size 1024 --num-attention-heads 16 \\
    --seq-length 2048 --max-position-embeddings 2048 \\
    --micro-batch-size 1 --global-batch-size 16
"""


@pytest.mark.parametrize("cache", [False, True])
@pytest.mark.parametrize("tp,expected", [(4, [("LAY001", "examples/gpt3/train_gpt3.sh", 4)]), (2, [])])
def test_a_megatron_entry_point_named_alone_is_checked_in_its_jobs(cli, tmp_path, tp, expected, cache):
    (tmp_path / ".git").mkdir()
    write_tree(tmp_path, {"pretrain_gpt.py": PRETRAIN, "megatron/__init__.py": "",
                          "examples/gpt3/train_gpt3.sh": LAUNCH.format(tp=tp),
                          "examples/gpt3/other.sh": "torchrun --nproc_per_node 8 other.py --tp 3\n"})
    args = ("pretrain_gpt.py",) if cache else ("--no-cache", "pretrain_gpt.py")
    for _ in range(2 if cache else 1):  # the second run reads the link index it wrote
        res = cli("check", "--format", "json", *args, cwd=tmp_path)
        assert res.returncode == (1 if expected else 0), res.stdout + res.stderr
        found = json.loads(res.stdout)
        found = found["diagnostics"] if isinstance(found, dict) else found
        assert sorted((d["code"], d["path"], d["line"]) for d in found) == expected
    text = cli("check", "--no-cache", "pretrain_gpt.py", cwd=tmp_path).stdout
    assert ("in 1 file." if expected else "(1 file checked)") in text


def test_an_unlaunched_python_file_named_alone_is_still_not_ours(cli, tmp_path):
    (tmp_path / ".git").mkdir()
    write_tree(tmp_path, {"pretrain_gpt.py": PRETRAIN})
    assert "(0 files checked)" in cli("check", "--no-cache", "pretrain_gpt.py", cwd=tmp_path).stdout


def test_the_module_graph_is_bounded_and_stays_in_the_repository(tmp_path):
    from parallint.link import imports

    (tmp_path / ".git").mkdir()
    for i in range(40):  # a chain m0 -> m1 -> ... and a fan-out from the entry
        (tmp_path / f"m{i}.py").write_text(f"import m{i + 1}\n")
    (tmp_path / "entry.py").write_text("import m0\n" + "".join(f"import f{i}\n" for i in range(40)))
    for i in range(40):
        (tmp_path / f"f{i}.py").write_text("x = 1\n")
    (tmp_path / "site-packages").mkdir()
    got = imports.modules(tmp_path / "entry.py")
    assert len(got) == imports.MAX_MODULES
    assert all(tmp_path in p.parents for p in got)
    chain = imports.modules(tmp_path / "m0.py")
    assert [p.name for p in chain] == ["m1.py", "m2.py", "m3.py"]  # MAX_HOPS deep


@pytest.mark.parametrize("cache", [False, True])
def test_a_helper_module_named_alone_is_checked_in_the_launch_of_its_importer(cli, tmp_path, cache):
    """Pre-commit on an edit to gpt_oss/dist.py: the index finds generate.py, which imports it,
    and run.sh, which starts generate.py."""
    repo = _gpt_oss(tmp_path, 2, "RANK")
    args = ("gpt_oss/dist.py",) if cache else ("--no-cache", "gpt_oss/dist.py")
    for _ in range(2 if cache else 1):
        assert _codes(cli, repo, *args) == [("DDP002", "gpt_oss/dist.py", 9), ("DDP002", "gpt_oss/dist.py", 10)]
    (repo / "gpt_oss" / "dist.py").write_text(DIST.format(var="LOCAL_RANK"))
    assert _codes(cli, repo, *args) == []


def test_the_import_statements_the_reader_notes_are_those_the_module_graph_parses(tmp_path):
    """The Python reader's parse hands its import statements on (no second parse of a file it
    read); they are what a parse of the file on its own gives, in the same order."""
    from parallint.link import imports
    from parallint.model import pyshared
    from parallint.readers import python

    text = ("import os, m1\nfrom . import a, b\nif x:\n    from pkg.sub import c as d\n"
            "def f():\n    import m2\n    try:\n        from .. import *\n    except E:\n        import m3\n"
            "class K:\n    from m4 import e\n")
    (tmp_path / ".git").mkdir()
    (tmp_path / "entry.py").write_text(text)
    pyshared.reset()
    parsed = imports.import_statements(text.encode())
    assert parsed[:3] == [("os", 0), ("m1", 0), ("a", 1)] and len(parsed) == 10
    python.read("entry.py", tmp_path / "entry.py", text)
    assert pyshared.STATED == {pyshared.text_key(text): parsed}
    assert imports._imports(tmp_path / "entry.py") == parsed


def test_a_module_without_the_word_a_caller_needs_is_not_loaded(tmp_path):
    """``load_module(..., needs=word)``: a module whose text lacks the word gives None (it is not
    parsed); with the word, or without ``needs``, the module's Script."""
    from parallint.readers import python

    (tmp_path / ".git").mkdir()
    (tmp_path / "data.py").write_text("def build():\n    return DataLoader(ds)\n")
    (tmp_path / "train.py").write_text("from data import build\n")
    python.reset()
    assert python.load_module(tmp_path / "train.py", "data", 0, "DistributedSampler") is None
    got = python.load_module(tmp_path / "train.py", "data", 0)
    assert got is not None and got[0] == "data.py" and "build" in got[1].functions
    assert python.load_module(tmp_path / "train.py", "data", 0, "DataLoader") is not None


def test_the_modules_of_a_run_are_parsed_once_within_the_byte_budget(tmp_path, monkeypatch):
    """A job after job asking for the same twenty modules in turn parses each once (the cache
    kept eight before, and a cyclic walk over more found none of them); past the byte budget the
    least recently used go."""
    from parallint.readers import python

    (tmp_path / ".git").mkdir()
    for i in range(20):
        (tmp_path / f"m{i}.py").write_text(f"def f{i}():\n    return {i}\n")
    (tmp_path / "train.py").write_text("".join(f"from m{i} import f{i}\n" for i in range(20)))
    parsed: list[str] = []
    real = python._load
    monkeypatch.setattr(python, "_load", lambda path, rel, raw: parsed.append(rel) or real(path, rel, raw))
    python.reset()
    for _job in range(3):
        for i in range(20):
            got = python.load_module(tmp_path / "train.py", f"m{i}", 0)
            assert got is not None and f"f{i}" in got[1].functions
    assert len(parsed) == 20
    monkeypatch.setattr(python, "MODULES_BYTES", 100)  # room for four of these modules
    python.reset()
    parsed.clear()
    for _job in range(2):
        for i in range(20):
            python.load_module(tmp_path / "train.py", f"m{i}", 0)
    assert len(parsed) == 40 and 0 < sum(len(k[2]) for k in python._MODULES) <= 100
    python.reset()
