"""The analysis pipeline does each piece of work once (issue 12): no file is parsed twice, syntax
trees are dropped once a file's rules are done, the cyclic collector is left as it was found, and
only files with a declared match reach LibCST."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from conftest import PLANTED_DDP_SCRIPT, write_tree
from parallint.discover.settings import Config
from parallint.engine.registry import get_registry
from parallint.engine.runner import Runner, _gate

LAUNCHED = """\
import torch.distributed as dist
dist.init_process_group("nccl", world_size=4)
"""
MENTION_ONLY = '''\
"""Helpers; see torch.distributed for the process groups."""
import torch


def scale(x):
    return x * 2
'''
BARRIER = """\
import torch.distributed as dist


def sync():
    dist.barrier()
"""
PARTITION = """\
import torch.nn as nn

layers = nn.ModuleList([nn.Linear(8, 8) for _ in range(8)])
stages = [layers[0:3], layers[3:8], layers[8:9]]
"""


@pytest.fixture
def counted(monkeypatch):
    """Scripts built (each file's syntax tree walked into a Script), by the text's first line
    (the tests' files differ there)."""
    from parallint.readers import python as P

    seen: list[str] = []
    real = P._Collector.run

    def counting(self, tree):
        seen.append(self.s.text)
        return real(self, tree)

    monkeypatch.setattr(P._Collector, "run", counting)
    return seen


def _run(tmp_path: Path, files: dict[str, str], rules=None) -> tuple[Runner, list]:
    write_tree(tmp_path, files)
    runner = Runner(Config(None, tmp_path, {}), tmp_path)
    res = runner.check(["."], rules if rules is not None else get_registry().rules)
    assert not res.errors
    return runner, res.diagnostics


def test_a_linked_script_is_parsed_once_and_keeps_its_tree(tmp_path, monkeypatch, counted):
    monkeypatch.setenv("PARALLINT_JOBS", "1")
    runner, diags = _run(tmp_path, {"run.sh": "torchrun --nproc_per_node 8 train.py\n", "train.py": LAUNCHED,
                                    "other.py": PLANTED_DDP_SCRIPT})
    assert {d.code for d in diags} >= {"PG003", "DDP001"}
    assert len(counted) == 2  # train.py and other.py, once each
    assert runner.reparsed == 0
    assert runner.cache[tmp_path / "train.py"].data is not None  # the job rules' script
    assert runner.cache[tmp_path / "other.py"].data is None  # checked on its own, then dropped
    assert gc.isenabled() and gc.get_freeze_count() == 0


def test_workers_parse_each_file_once(tmp_path, monkeypatch):
    monkeypatch.setenv("PARALLINT_JOBS", "2")
    files = {f"t{i}.py": PLANTED_DDP_SCRIPT for i in range(30)}
    files.update({"run.sh": "torchrun --nproc_per_node 8 train.py\n", "train.py": LAUNCHED})
    runner, diags = _run(tmp_path, files)
    assert len([d for d in diags if d.code == "DDP001"]) == 30
    assert any(d.code == "PG003" for d in diags)
    assert runner.reparsed == 0
    assert runner.cache[tmp_path / "train.py"].data is not None
    assert gc.isenabled() and gc.get_freeze_count() == 0


def test_a_file_that_only_mentions_torch_distributed_gets_no_script(tmp_path, monkeypatch, counted):
    monkeypatch.setenv("PARALLINT_JOBS", "1")
    _run(tmp_path, {"helpers.py": MENTION_ONLY, "sync.py": BARRIER})
    assert [t.splitlines()[0] for t in counted] == ["import torch.distributed as dist"]


def test_a_partition_without_calls_still_reaches_the_pipeline_rules(tmp_path, monkeypatch, counted):
    monkeypatch.setenv("PARALLINT_JOBS", "1")
    _, diags = _run(tmp_path, {"pipe.py": PARTITION + "# torch.distributed\n"})
    assert len(counted) == 1
    assert "PIP001" in {d.code for d in diags}


def test_the_gate_takes_a_rules_declared_qualified_name(tmp_path, monkeypatch):
    from parallint.readers.python import CallGate, read
    from parallint.model.rule import Rule

    text = "import torch.distributed\nimport mylib as m\nm.launch.start(8)\n"
    assert read("a.py", tmp_path / "a.py", text, gate=CallGate()).data is None
    assert read("a.py", tmp_path / "a.py", text, gate=CallGate({"mylib.launch.start"})).data is not None

    class Declares(Rule):
        code = "XYZ001"
        name = "declares"
        calls = frozenset({"mylib.launch.start"})
        kinds = frozenset({"python"})

    class Blind(Rule):  # a plugin rule for Python files that does not say what it matches
        code = "XYZ002"
        name = "blind"
        kinds = frozenset({"python"})

    Declares.__module__ = Blind.__module__ = "acme_rules"
    assert "mylib.launch.start" in _gate([Declares]).qnames
    assert _gate([Declares, Blind]) is None
    assert _gate(get_registry().rules) is not None


def test_gated_and_whole_runs_find_the_same(tmp_path, monkeypatch):
    """Every INVALID rule example with a Python file, checked with and without the gate: the same
    findings (without a syntax tree a rule is silent, so the gate could only lose findings)."""
    import parallint.engine.runner as runner_mod

    monkeypatch.setenv("PARALLINT_JOBS", "1")
    rules = get_registry().rules
    n = 0
    for rule in rules:
        for ex in rule.invalid:
            files = ex.all_files()
            if not any(name.endswith(".py") for name in files):
                continue
            n += 1
            folder = tmp_path / f"{rule.code}-{n}"
            write_tree(folder, files)
            cfg = Config(None, folder, dict(ex.config))
            gated = Runner(cfg, folder).check(["."], rules).diagnostics
            with monkeypatch.context() as m:
                m.setattr(runner_mod, "_gate", lambda rules: None)
                whole = Runner(cfg, folder).check(["."], rules).diagnostics
            assert gated == whole, (rule.code, files)
    assert n > 30
