"""The language server keeps each file's facts and the tables a run builds between analyses
(issue 27, ``engine.kept.KeptFacts``, ``megatron_table.keep``, ``pyparser_import.keep``): an
edited session publishes what a fresh analysis of the same buffers and files publishes, for an
edit that changes the findings and one that does not, for an edit of a module the script imports
and for a file changed on disk."""

from __future__ import annotations

from pathlib import Path

import pytest

from parallint.cli.server import Linter

from conftest import age_tree as _age, write_tree

ARGS = ("import argparse\n\ndef parse_args(extra_args_provider=None):\n"
        "    parser = argparse.ArgumentParser(allow_abbrev=False)\n"
        "    parser.add_argument('--tensor-model-parallel-size', type=int)\n"
        "    parser.add_argument('--micro-batch-size', type=int)\n"
        "    parser.add_argument('--deepspeed-config', type=str)\n"
        "{more}"
        "    return parser.parse_args()\n")
TREE = {
    "megatron/__init__.py": "",
    "megatron/training/__init__.py": "from .training import pretrain\n",
    "megatron/training/training.py": "def pretrain(*a, **k):\n    pass\n",
    "megatron/training/arguments.py": ARGS.format(more=""),
    "helpers/__init__.py": "",
    "helpers/dev.py": ("import os\nimport torch\nimport torch.distributed as dist\n\ndef device():\n"
                       "    dist.barrier()\n    return torch.device('cuda', int(os.environ['LOCAL_RANK']))\n"),
    "pretrain_gpt.py": ("import torch\nimport torch.distributed as dist\nfrom helpers.dev import device\n"
                        "from megatron.training import pretrain\n\n"
                        "dist.init_process_group('nccl')\ntorch.cuda.set_device(device())\n"
                        "pretrain(None, None, None, None)\n"),
    "examples/run.sh": ("#!/bin/bash\ncd \"$(dirname \"$0\")/..\"\n"
                        "torchrun --nnodes 2 --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size 3 "
                        "--micro-batch-size 1 --num-layers 2\n"),
    "examples/run_ds.sh": "deepspeed --num_gpus 8 train_ds.py --deepspeed_config ds.json\n",
    "examples/train_ds.py": ("import deepspeed\nengine, *_ = deepspeed.initialize(model=None, "
                             "config='ds.json')\n"),
    "examples/ds.json": ('{"train_batch_size": 30, "train_micro_batch_size_per_gpu": 4, '
                         '"gradient_accumulation_steps": 1}\n'),
    "tests/cases/gpt/model_config.yaml": ("MODEL_ARGS:\n  --tensor-model-parallel-size: 3\n"
                                          "  --micro-batch-size: 1\n"),
}


@pytest.fixture
def repo(tmp_path, monkeypatch):
    root = tmp_path / "repo"
    write_tree(root, TREE)
    (root / ".git").mkdir()
    monkeypatch.setenv("PARALLINT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PARALLINT_JOBS", "1")
    monkeypatch.chdir(root)
    _age(root)
    return root


def _flat(out: dict) -> list[tuple]:
    return sorted((str(p), d.code, d.span.line, d.span.column, d.message, tuple(r.message for r in d.related))
                  for p, ds in out.items() for d in ds)


def _fresh(root: Path, buffers: dict[Path, str], changed: Path) -> list[tuple]:
    """A fresh analysis of the same buffers, nothing kept; the session's kept tables (module
    state) are put back after it."""
    from parallint.link import imports, megatron_table
    from parallint.model import pyshared
    from parallint.readers import pyparser_import

    saved = [(megatron_table, dict(megatron_table._MEMO), dict(megatron_table._SEEN)),
             (pyparser_import, dict(pyparser_import._ROOTS), dict(pyparser_import._RESOLVED),
              dict(pyparser_import._BASES), dict(pyparser_import._LAST)),
             (imports, dict(pyshared.STATED))]
    lin = Linter(root, keep=False)
    lin.buffers.update(buffers)
    try:
        return _flat(lin.lint(changed))
    finally:
        megatron_table.keep(True)
        pyparser_import.keep(True)
        imports.keep(True)
        for d, was in zip((megatron_table._MEMO, megatron_table._SEEN), saved[0][1:]):
            d.update(was)
        for d, was in zip((pyparser_import._ROOTS, pyparser_import._RESOLVED, pyparser_import._BASES,
                           pyparser_import._LAST), saved[1][1:]):
            d.update(was)
        pyshared.STATED.update(saved[2][1])


def _edit(lin: Linter, root: Path, path: Path, text: str) -> tuple[list[tuple], list[tuple]]:
    lin.buffers[path] = text
    return _flat(lin.lint(path)), _fresh(root, lin.buffers, path)


def test_edits_publish_what_a_fresh_analysis_publishes(repo):
    lin = Linter(repo)
    script, launch, yaml = repo / "pretrain_gpt.py", repo / "examples/run.sh", repo / "tests/cases/gpt/model_config.yaml"
    first = {}
    for p in (script, launch, yaml, repo / "examples/ds.json"):
        lin.buffers[p] = p.read_text()
        first[p] = _flat(lin.lint(p))
    assert any(x[1] == "CFG006" for x in first[launch])  # --num-layers: not Megatron's
    assert lin.kept.files  # the facts were kept

    # an edit that changes nothing the rules see: the same findings, from the kept facts of the others
    misses = lin.kept.misses
    kept, fresh = _edit(lin, repo, script, script.read_text() + "# a comment\n")
    assert kept == fresh == first[script]
    assert lin.kept.misses == misses + 1  # only the edited buffer was read again
    kept, fresh = _edit(lin, repo, launch, launch.read_text() + "# a comment\n")
    assert kept == fresh
    assert [x[1:] for x in kept] == [x[1:] for x in first[launch]]

    # edits that change the findings: the launch's flags, the DeepSpeed batch, the imported module
    kept, fresh = _edit(lin, repo, launch, launch.read_text().replace(" --num-layers 2", ""))
    assert kept == fresh
    assert not any(x[1] == "CFG006" for x in kept)
    ds = repo / "examples/ds.json"
    before, _ = _edit(lin, repo, ds, ds.read_text())
    kept, fresh = _edit(lin, repo, ds, ds.read_text().replace('"train_batch_size": 30', '"train_batch_size": 32'))
    assert kept == fresh != before
    helper = repo / "helpers/dev.py"
    lin.buffers[helper] = helper.read_text().replace("LOCAL_RANK", "RANK")
    kept, fresh = _flat(lin.lint(script)), _fresh(repo, lin.buffers, script)
    assert kept == fresh
    kept, fresh = _edit(lin, repo, yaml, yaml.read_text().replace("size: 3", "size: 4"))
    assert kept == fresh


def test_a_file_changed_on_disk_is_read_again(repo):
    """The kept Megatron table follows its arguments module; a module created on disk is found."""
    lin = Linter(repo)
    launch = repo / "examples/run.sh"
    lin.buffers[launch] = launch.read_text()
    before = _flat(lin.lint(launch))
    assert any(x[1] == "CFG006" and "--num-layers" in x[4] for x in before)
    args = repo / "megatron/training/arguments.py"
    args.write_text(ARGS.format(more="    parser.add_argument('--num-layers', type=int)\n"))
    _age(repo, 20)
    lin.buffers[launch] = launch.read_text() + "# edit\n"
    kept = _flat(lin.lint(launch))
    assert kept == _fresh(repo, lin.buffers, launch)
    assert not any(x[1] == "CFG006" and "--num-layers" in x[4] for x in kept)


def test_a_module_created_on_disk_is_what_the_import_finds(repo):
    """The kept import resolution follows the tree: ``from helpers.dev import device`` finds
    src/helpers/dev.py until a helpers/dev.py is created beside the script (searched first)."""
    (repo / "src").mkdir()
    (repo / "helpers").rename(repo / "src/helpers")
    _age(repo)
    lin = Linter(repo)
    script = repo / "pretrain_gpt.py"
    lin.buffers[script] = script.read_text()
    assert repo / "src/helpers/dev.py" in lin.lint(script)  # the imported module is of the job
    write_tree(repo, {"helpers/__init__.py": "", "helpers/dev.py": TREE["helpers/dev.py"].replace("LOCAL_RANK", "RANK")})
    _age(repo, 20)
    lin.buffers[script] = script.read_text() + "# edit\n"
    kept = _flat(lin.lint(script))
    assert kept == _fresh(repo, lin.buffers, script)
    assert any(x[1] == "DDP002" and x[0] == str(repo / "helpers/dev.py") for x in kept)


def test_a_changed_gitignore_changes_who_links_the_script(repo):
    """The kept exclusions (the link index's Excluder) follow the .gitignore files: an ignored
    launch no longer makes the script's job (it is still checked on its own, once, to clear
    what it showed as a file of the script's job)."""
    (repo / ".gitignore").write_text("notes/\n")
    _age(repo)
    lin = Linter(repo)
    script = repo / "pretrain_gpt.py"
    lin.buffers[script] = script.read_text()
    lin.lint(script)
    assert repo / "examples/run.sh" in lin.job_files[script]
    (repo / ".gitignore").write_text("notes/\nexamples/run.sh\n")
    _age(repo, 20)
    lin.buffers[script] = script.read_text() + "# edit\n"
    out, _ = lin.lint_buffer(script) or ({}, [])
    fresh = Linter(repo, keep=False)
    fresh.buffers.update(lin.buffers)
    want, _ = fresh.lint_buffer(script) or ({}, [])
    assert _flat({script: out[script]}) == _flat({script: want[script]})
    assert lin.job_files[script] == fresh.job_files[script]
    assert repo / "examples/run.sh" not in lin.job_files[script]


def test_an_analysis_stopped_by_a_newer_edit_leaves_the_next_one_right(repo):
    """``stop()`` (a newer edit arrived) abandons an analysis part way, before a file is read or a
    rule runs; what it kept by then does not change the next analysis."""
    lin = Linter(repo)
    launch = repo / "examples/run.sh"
    lin.buffers[launch] = launch.read_text()
    asked = []

    def stop() -> bool:
        asked.append(1)
        return len(asked) > 3

    assert lin.lint_buffer(launch, stop) is None
    assert len(asked) == 4
    lin.buffers[launch] = launch.read_text() + "# edit\n"
    got = lin.lint_buffer(launch, lambda: False)
    assert got is not None
    assert _flat({launch: got[0][launch]}) == [x for x in _fresh(repo, lin.buffers, launch) if x[0] == str(launch)]
    assert any(x[1] == "CFG006" for x in _flat(got[0]))


@pytest.mark.parametrize("kept", [False, True])
def test_a_kept_session_reads_without_a_full_collection_up_front(tmp_path, monkeypatch, kept):
    """Reading many files pauses the cyclic collector; a ``check`` run collects the heap first, a
    session that keeps facts does not (its heap is large and long-lived: a full collection cost
    seconds at each edit of a Megatron workspace). The findings are the same either way."""
    import gc

    from parallint.discover.settings import Config
    from parallint.engine.kept import KeptFacts
    from parallint.engine.registry import get_registry
    from parallint.engine.runner import Runner

    files = {f"m{i:02d}.py": f"import torch.distributed as dist\ndist.init_process_group('nccl')\nX = {i}\n"
             for i in range(20)}
    write_tree(tmp_path, files)
    events: list[str] = []
    collect, freeze = gc.collect, gc.freeze
    monkeypatch.setattr(gc, "collect", lambda *a: events.append("collect") or collect(*a))
    monkeypatch.setattr(gc, "freeze", lambda: events.append("freeze") or freeze())
    runner = Runner(Config(None, tmp_path, {}), tmp_path)
    if kept:
        runner.kept = KeptFacts()
    got = runner.collect(["."], get_registry().enabled(None, [], []))
    assert sorted(f.path for f in got) == sorted(files)
    assert events[:1] == (["freeze"] if kept else ["collect"])  # the heap is collected before the pause only in check
