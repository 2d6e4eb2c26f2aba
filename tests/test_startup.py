"""Start-up (issue 12): what a one-file run as pre-commit makes it imports, the typer-free
``check`` parser against typer's own, the GPU catalogue's JSON copy, the plugin pre-scan."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile

import pytest
import yaml

from conftest import ROOT, write_tree

HEAVY = ("libcst", "jsonschema", "typer", "click", "importlib.metadata")


def _imported(args, cwd):
    """Modules imported by ``python -X importtime -m parallint ARGS`` (and its stdout)."""
    env = dict(os.environ)
    env.pop("PARALLINT_DEBUG", None)
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "parallint", *args], cwd=cwd,
                          capture_output=True, text=True, env=env, timeout=300)
    mods = {line.rsplit("|", 1)[1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")}
    return mods, proc


@pytest.mark.parametrize("name,text,finding", [
    ("ds_config.json", '{"train_batch_size": 16, "train_micro_batch_size_per_gpu": 2,\n'
                       ' "gradient_accumulation_steps": 2, "zero_optimization": {"stage": 2}}\n', False),
    ("ds_bad.json", '{"train_batch_size": 15, "train_micro_batch_size_per_gpu": 2,\n'
                    ' "gradient_accumulation_steps": 2, "zero_optimization": {"stage": 2}}\n', True),
    ("megatron_gpt.yaml", "trainer:\n  devices: 8\n  num_nodes: 2\nmodel:\n  micro_batch_size: 2\n"
                          "  global_batch_size: 64\n  tensor_model_parallel_size: 2\n  num_layers: 24\n"
                          "  hidden_size: 2048\n  num_attention_heads: 16\n", False),
])
def test_config_check_imports_no_libcst_jsonschema_or_typer(tmp_path, name, text, finding):
    write_tree(tmp_path, {name: text})
    mods, proc = _imported(["check", "--format", "json", name], tmp_path)
    assert proc.returncode == (1 if finding else 0), proc.stderr[-2000:]
    found = json.loads(proc.stdout)
    assert bool(found) == finding and all(d["path"] == name for d in found)
    assert "parallint.runner" in mods  # it really checked
    assert not [m for m in HEAVY if m in mods], [m for m in HEAVY if m in mods]


def test_training_script_check_imports_no_libcst(tmp_path):
    """The Python rules read CPython's ``ast``: a one-file run on a training script, with a
    finding, never imports LibCST."""
    text = ("import torch\nimport torch.distributed as dist\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
            "def main():\n    dist.init_process_group('nccl')\n    model = DDP(torch.nn.Linear(2, 2).cuda(),"
            " find_unused_parameters=True)\n    torch.save(model.state_dict(), 'x.pt')\nmain()\n")
    write_tree(tmp_path, {"train.py": text})
    mods, proc = _imported(["check", "--format", "json", "train.py"], tmp_path)
    found = json.loads(proc.stdout)
    assert found and all(d["path"] == "train.py" for d in found), proc.stderr[-2000:]
    assert "parallint.readers.python" in mods  # it really read the script
    assert "libcst" not in mods


def test_version_imports_nothing_heavy(tmp_path):
    mods, proc = _imported(["--version"], tmp_path)
    assert proc.returncode == 0 and proc.stdout.startswith("parallint ")
    assert not [m for m in HEAVY if m in mods]
    assert "parallint.registry" not in mods


def test_everything_else_goes_to_typer(tmp_path):
    mods, proc = _imported(["check", "--help"], tmp_path)
    assert proc.returncode == 0 and "--select" in proc.stdout and "typer" in mods
    mods, proc = _imported(["check", "--no-such-option"], tmp_path)
    assert proc.returncode == 2 and "No such option" in proc.stderr


def _typer_check():
    import typer.main

    from parallint.cli_typer import app

    return typer.main.get_command(app).commands["check"]


def test_fast_parser_knows_every_check_option():
    from parallint.check_cmd import CHECK_FLAGS, CHECK_LISTS, CHECK_VALUES

    flags, values, lists = {}, {}, {}
    for p in _typer_check().params:
        if p.param_type_name != "option":
            assert p.name == "paths"
            continue
        table = flags if p.is_flag else lists if p.multiple else values
        for opt in p.opts:
            table[opt] = p.name
        assert not p.secondary_opts, p.opts  # no --no-X variants to parse
    assert (flags, values, lists) == (CHECK_FLAGS, CHECK_VALUES, CHECK_LISTS)


ARGVS = [
    [], ["."], ["a.py", "b.yaml"], ["--format", "json", "x"], ["--format=json", "x"], ["x", "--exit-zero"],
    ["--select", "DDP", "--select", "PG001,BAT", "--ignore", "X", "src"], ["-o", "out.txt", "--statistics", "a"],
    ["--format", "json", "--format", "sarif"], ["--", "-weird", "--format"], ["-", "--stdin-filename", "t.py"],
    ["--config", "pyproject.toml", "--fail-level", "error", "--gpu", "A100", "--include-tests", "--no-cache", "a"],
    ["--max-file-size", "4MB", "--all-job-findings", "--baseline", "b.json", "--show-docs-link", "p"],
    ["--related-findings", "a.json"],
    ["--write-baseline", "w.json", "--add-noqa", "--extend-select", "CFG", ""],
    # not the plain case: typer decides
    ["--help"], ["-h"], ["--format"], ["--format", "--exit-zero"], ["--bogus"], ["-oout.txt"], ["--exit-zero=1"],
    ["--statistic"], ["-x"],
]


@pytest.mark.parametrize("argv", ARGVS, ids=[" ".join(a) or "(none)" for a in ARGVS])
def test_fast_parser_agrees_with_typer(argv):
    import inspect

    from parallint.check_cmd import parse_check, run_check

    fast = parse_check(list(argv))
    if fast is None:
        return
    ctx = _typer_check().make_context("check", list(argv))
    defaults = {k: p.default for k, p in inspect.signature(run_check).parameters.items()}
    assert set(defaults) == set(ctx.params)

    def norm(v):
        return list(v) if isinstance(v, (list, tuple)) and v else (None if isinstance(v, (list, tuple)) else v)

    expect = {k: norm(v) for k, v in ctx.params.items()}
    got = {k: norm(fast.get(k, defaults[k])) for k in defaults}
    assert got == expect


def test_gpu_catalogue_json_is_the_yaml():
    from parallint.estimator.gpus import catalogue_json

    data = ROOT / "lint" / "data"
    want = catalogue_json((data / "gpus.yaml").read_text("utf-8"))
    if os.environ.get("PARALLINT_UPDATE_SNAPSHOTS"):
        (data / "gpus.json").write_text(want, "utf-8")
    assert (data / "gpus.json").read_text("utf-8") == want, \
        "lint/data/gpus.json is stale: PARALLINT_UPDATE_SNAPSHOTS=1 python -m pytest tests/test_startup.py"
    assert json.loads(want)["gpus"] == yaml.safe_load((data / "gpus.yaml").read_text("utf-8"))


def test_plugin_prescan(tmp_path):
    from parallint.plugins import may_declare

    site = tmp_path / "site"
    write_tree(site, {"a-1.dist-info/entry_points.txt": "[console_scripts]\na = a:main\n",
                      "b-1.dist-info/METADATA": "Name: b\n", "c.egg-info": "not a folder\n"})
    assert not may_declare("parallint.rules", [str(site), str(tmp_path / "missing")])
    write_tree(site, {"Acme-1.DIST-INFO/entry_points.txt": "[parallint.rules]\nacme = acme_rules\n"})
    assert may_declare("parallint.rules", [str(site)])
    archive = tmp_path / "lib.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("x.py", "")
    assert may_declare("parallint.rules", [str(archive)])  # cannot see inside: look properly
    assert may_declare("parallint.rules", [str(tmp_path / "thing.egg")])
