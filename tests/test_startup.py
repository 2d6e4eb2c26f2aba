"""Start-up (issue 12): what a one-file run as pre-commit makes it imports, the typer-free
``check`` parser against typer's own, the GPU catalogue's JSON copy, the plugin pre-scan."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import zipfile

import pytest
import yaml

from conftest import ROOT, write_tree

#: what a one-file config check (and --version) never imports; ``dataclasses`` brings ``inspect``,
#: ``ast``, ``dis`` and ``tokenize`` and builds every class at import (parallint.util.record replaces it)
HEAVY = ("libcst", "jsonschema", "typer", "click", "importlib.metadata", "dataclasses", "inspect")


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
    assert "parallint.engine.runner" in mods  # it really checked
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
    assert not [m for m in ("libcst", "dataclasses", "inspect") if m in mods]


def test_version_imports_nothing_heavy(tmp_path):
    mods, proc = _imported(["--version"], tmp_path)
    assert proc.returncode == 0 and proc.stdout.startswith("parallint ")
    assert not [m for m in HEAVY if m in mods]
    assert "parallint.engine.registry" not in mods


def test_everything_else_goes_to_typer(tmp_path):
    mods, proc = _imported(["check", "--help"], tmp_path)
    assert proc.returncode == 0 and "--select" in proc.stdout and "typer" in mods
    mods, proc = _imported(["check", "--no-such-option"], tmp_path)
    assert proc.returncode == 2 and "No such option" in proc.stderr


def _typer_check():
    import typer.main

    from parallint.cli.app import app

    return typer.main.get_command(app).commands["check"]


def test_fast_parser_knows_every_check_option():
    from parallint.cli.check import CHECK_FLAGS, CHECK_LISTS, CHECK_VALUES

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

    from parallint.cli.check import parse_check, run_check

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


def test_gpu_catalogue_table_is_the_yaml():
    from parallint.estimator.gpus import catalogue_module

    data = ROOT / "lint" / "data"
    want = catalogue_module((data / "gpus.yaml").read_text("utf-8"))
    if os.environ.get("PARALLINT_UPDATE_SNAPSHOTS"):
        (data / "gpus_table.py").write_text(want, "utf-8")
    assert (data / "gpus_table.py").read_text("utf-8") == want, \
        "lint/data/gpus_table.py is stale: PARALLINT_UPDATE_SNAPSHOTS=1 python -m pytest tests/test_startup.py"
    tree = ast.parse(want)
    assert [type(st).__name__ for st in tree.body] == ["Expr", "AnnAssign"]  # a docstring and one literal
    assert ast.literal_eval(tree.body[1].value) == yaml.safe_load((data / "gpus.yaml").read_text("utf-8"))


def test_plugin_prescan(tmp_path):
    from parallint.engine.plugins import may_declare

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


# ------------------------------------------------------------------ what a one-file run imports

def _loaded(args, cwd):
    """Every module in sys.modules when ``parallint ARGS`` ends (rule modules come through
    importlib.import_module, which -X importtime does not show), and the process."""
    out = cwd / ".modules.txt"
    code = ("import atexit, sys\n"
            f"atexit.register(lambda: open({str(out)!r}, 'w').write('\\n'.join(sorted(sys.modules))))\n"
            f"sys.argv = ['parallint'] + {list(args)!r}\n"
            "from parallint.cli.main import main\nmain()\n")
    env = dict(os.environ)
    env.pop("PARALLINT_DEBUG", None)
    proc = subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, env=env, timeout=300)
    mods = set(out.read_text().split("\n")) - _at_interpreter_start()
    out.unlink()
    return mods, proc


_START: set[str] = set()


def _at_interpreter_start() -> set[str]:
    """What this interpreter has loaded before running anything (an editable install's import
    hook brings contextlib, for one): not parallint's doing."""
    if not _START:
        code = "import sys; print('\\n'.join(sorted(sys.modules)))"
        _START.update(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                                     check=True).stdout.split())
    return _START


#: standard modules a config checked on its own does without (docs/architecture.md, "Speed"):
#: ``typing`` (annotations only, under ``TYPE_CHECKING = False``), ``contextlib`` (the runner's
#: context managers are classes), ``copy``, ``signal`` (the runner uses ``_signal``), ``zlib``
#: (the table stamps use binascii's CRC-32)
NOT_AT_START = ("typing", "contextlib", "copy", "signal", "zlib")

#: never imported for a JSON config checked on its own: parsers of other formats, the engine's
#: tools for other cases (git listing, cache writes, config files, did-you-mean), the script and
#: launch rules with the script model they read (and the launch scanner a job without a launch or a
#: Python file never calls), the memory estimator for a job without a model
NOT_FOR_JSON = HEAVY + NOT_AT_START + (
    "yaml", "tomllib", "subprocess", "tempfile", "pickle", "difflib", "configparser", "_hashlib", "textwrap",
    "parallint.model.script", "parallint.readers.python", "parallint.estimator.memory", "parallint.estimator.gpus",
    "parallint.rules.ddp", "parallint.rules.pg", "parallint.rules.dat", "parallint.rules.ckp",
    "parallint.rules.lch", "parallint.rules.env", "parallint.rules.lay.lay007_device_mesh_size_mismatch",
    "parallint.rules.pip.pip001_partition_gap_or_overlap", "parallint.rules.pip.pip002_partition_count_mismatch",
    "parallint.rules.pip.pip003_partition_imbalance", "parallint.rules.syn", "parallint.link.pylaunch",
    "parallint.link.hfargs")


def test_json_check_imports_only_what_a_json_config_needs(tmp_path):
    write_tree(tmp_path, {"ds_config.json": '{"train_batch_size": 15, "train_micro_batch_size_per_gpu": 2,\n'
                                            ' "gradient_accumulation_steps": 2, "zero_optimization": {"stage": 2},\n'
                                            ' "bf16": {"enabled": true}}\n'})
    mods, proc = _loaded(["check", "--format", "json", "ds_config.json"], tmp_path)
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert [d["code"] for d in json.loads(proc.stdout)] == ["BAT001"]  # it really checked
    assert "parallint.rules.bat" in mods and "parallint.readers.jsonpos" in mods
    assert sorted(m for m in NOT_FOR_JSON if m in mods) == []


def test_yaml_check_imports_no_script_rules(tmp_path):
    write_tree(tmp_path, {"megatron_gpt.yaml": "trainer:\n  devices: 8\n  num_nodes: 2\nmodel:\n  micro_batch_size: 2\n"
                                               "  global_batch_size: 64\n  tensor_model_parallel_size: 2\n"})
    mods, proc = _loaded(["check", "megatron_gpt.yaml"], tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "yaml" in mods and "parallint.rules.lay" in mods
    # (DDP001 reads a Lightning/NeMo strategy in YAML, so its module loads, without the script model)
    unwanted = HEAVY + NOT_AT_START + ("json", "tomllib", "subprocess", "tempfile", "parallint.model.script",
                        "parallint.rules.ddp.ddp002_global_rank_as_device", "parallint.rules.pg", "parallint.rules.lch", "parallint.rules.env", "parallint.link.pylaunch",
                        "parallint.link.hfargs")
    assert sorted(m for m in unwanted if m in mods) == []


def test_a_configuration_file_is_read_with_tomllib(tmp_path):
    write_tree(tmp_path, {"pyproject.toml": "[tool.parallint]\nignore = [\"BAT001\"]\n",
                          "ds_config.json": '{"train_batch_size": 15, "train_micro_batch_size_per_gpu": 2,\n'
                                            ' "gradient_accumulation_steps": 2}\n'})
    mods, proc = _loaded(["check", "--format", "json", "ds_config.json"], tmp_path)
    assert proc.returncode == 0 and json.loads(proc.stdout) == [], proc.stderr[-2000:]
    assert "tomllib" in mods or "tomli" in mods


def test_a_launch_brings_its_rules(tmp_path):
    """The deferred families load when a job has what they match: a launch and a script."""
    write_tree(tmp_path, {"run.sh": "torchrun --nnodes 2 --nproc_per_node 8 train.py\n",
                          "train.py": "import torch.distributed as dist\nimport os\n"
                                      "os.environ['MASTER_ADDR'] = 'localhost'\ndist.init_process_group('nccl')\n"})
    mods, proc = _loaded(["check", "--format", "json", "run.sh"], tmp_path)
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    assert {"parallint.rules.lch", "parallint.rules.pg", "parallint.rules.ddp"} <= mods


# ------------------------------------------------------------------ the rule declaration table

def test_rule_declaration_table_is_current():
    from parallint.engine.registry import TABLE, _builtin_names, declaration_table

    path = ROOT / "lint" / "data" / TABLE
    want = declaration_table()
    if os.environ.get("PARALLINT_UPDATE_SNAPSHOTS"):
        path.write_text(want, "utf-8")
    tree = ast.parse(want)
    assert [type(st).__name__ for st in tree.body] == ["Expr", "AnnAssign"]  # a docstring and one literal
    assert set(ast.literal_eval(tree.body[1].value)) == set(_builtin_names())
    assert path.read_text("utf-8") == want, \
        f"lint/data/{TABLE} is stale (a rule module changed): PARALLINT_UPDATE_SNAPSHOTS=1 python -m pytest tests/test_startup.py"


def test_lazy_registry_stands_for_every_rule():
    from parallint.engine.registry import RuleRef, _refs, _builtin_names, get_registry

    eager = {r.code: r for r in get_registry().rules}
    refs = {r.code: r for name in _builtin_names() for r in (_refs(name) or [])}
    assert set(refs) == {c for c, r in eager.items() if r.__module__.startswith("parallint.rules.")}
    for code, ref in refs.items():
        cls = eager[code]
        assert isinstance(ref, RuleRef)
        assert (ref.code, ref.name, ref.severity, ref.summary, ref.kinds, ref.calls, ref.__module__, ref.__qualname__) == \
            (cls.code, cls.name, cls.severity, cls.summary, cls.kinds, cls.calls, cls.__module__, cls.__qualname__)
        assert ref.load() is cls and ref.doc == cls.doc


def test_a_changed_rule_module_is_imported_not_trusted(monkeypatch):
    from parallint.engine import registry

    bat, cfg, lch = ("bat.bat001_deepspeed_batch_identity", "cfg.cfg001_unknown_config_key",
                     "lch.lch001_launcher_world_size_mismatch")
    monkeypatch.setattr(registry, "_TABLE", {**registry._table(), bat: {**registry._table()[bat], "source": "0:0"}})
    assert registry._refs(bat) is None and registry._refs(cfg) is not None
    monkeypatch.setattr(registry, "_TABLE", {k: v for k, v in registry._table().items() if k != lch})
    assert registry._refs(lch) is None


def _job(kinds, launch=None):
    from pathlib import Path

    from parallint.model.facts import FileFacts
    from parallint.model.job import Job

    files = [FileFacts(path=f"f{i}", abspath=Path(f"/f{i}"), kind=k, text="") for i, k in enumerate(kinds)]
    return Job(name="j", root=files[0], launch=launch, files=files)


def test_script_and_launch_job_checks_skip_a_job_of_configs():
    from parallint.engine import registry

    refs = {r.code: r for name in registry._builtin_names() for r in (registry._refs(name) or [])}
    configs = _job(["deepspeed", "nemo"])
    assert not refs["LCH001"].may_match(configs) and not refs["PG003"].may_match(configs)
    assert not refs["DDP002"].may_match(configs) and not refs["LAY007"].may_match(configs)
    assert not refs["DDP001"].may_match(_job(["deepspeed"]))  # its launch-line hint needs a launch or a config it reads
    for code in ("BAT001", "LAY001", "PIP004", "MEM001", "CFG006"):  # config and fact rules: every job
        assert refs[code].may_match(configs), code
    assert refs["PG003"].may_match(_job(["deepspeed", "python"]))
    assert refs["LCH001"].may_match(_job(["deepspeed"], launch=object()))
    assert refs["LCH001"].may_match(_job(["accelerate"]))


def _skippable():
    from parallint.engine import registry

    refs = [r for name in registry._builtin_names() for r in (registry._refs(name) or [])]
    return [r for r in refs if r.checks_jobs and r.scripts_or_launches]


@pytest.mark.parametrize("ref", _skippable(), ids=lambda r: r.code)
def test_deferred_rules_find_what_the_classes_find(ref, tmp_path):
    """Every example of a rule whose job check may be skipped: the same findings through the
    RuleRef as through the class."""
    from parallint.discover.settings import Config
    from parallint.engine.runner import check_paths

    cls = ref.load()
    for i, ex in enumerate(list(cls.valid) + list(cls.invalid)):
        where = tmp_path / f"ex{i}"
        for name, text in ex.all_files().items():
            p = where / name
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text, encoding="utf-8")
        got = [check_paths(list(ex.paths) or ["."], Config(None, where, dict(ex.config)), rules=[r], cwd=where)
               for r in (ref, cls)]
        assert got[0].diagnostics == got[1].diagnostics and not got[0].errors, (ref.code, i)


def test_check_leaves_the_collector_as_it_found_it(tmp_path, monkeypatch, capsys):
    """A run over a few named files keeps the cyclic collector off while it works (start-up) and
    turns it back on, error or not; an embedding process keeps its collector."""
    import gc

    from parallint.cli.check import run_check

    write_tree(tmp_path, {"ds_config.json": '{"train_batch_size": 15, "train_micro_batch_size_per_gpu": 2,\n'
                                            ' "gradient_accumulation_steps": 2}\n'})
    monkeypatch.chdir(tmp_path)
    seen = []
    import parallint.engine.index as index

    real = index.check_files

    def spy(*a, **k):
        seen.append(gc.isenabled())
        return real(*a, **k)

    monkeypatch.setattr(index, "check_files", spy)
    assert gc.isenabled()
    assert run_check(["ds_config.json"], output_format="json") == 1
    assert run_check(["ds_config.json", "--missing--"], output_format="json") in (1, 2)
    assert gc.isenabled() and seen == [False, False]
    assert run_check(["."], output_format="json", exit_zero=True) == 0  # a folder: as before
    assert seen[-1] is True and gc.isenabled()
    capsys.readouterr()


def test_preflight_imports_nothing_heavy(tmp_path, monkeypatch):
    """``parallint preflight`` runs in front of every launch: parsed without typer, and (with no
    nvidia-smi to run) it loads what ``check`` of the same launch line loads, and its own two modules."""
    launch = ["torchrun", "--nproc_per_node", "3", "train.py", "--tensor-model-parallel-size", "2"]
    write_tree(tmp_path, {"train.py": "import torch.distributed as dist\ndist.init_process_group('nccl')\n",
                          "run.sh": " ".join(launch) + "\n"})
    (tmp_path / ".git").mkdir()
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setenv("PARALLINT_HOST_ROOT", str(tmp_path / "no-host"))
    mods, proc = _loaded(["preflight", "--", *launch], tmp_path)
    assert proc.returncode == 1 and " LAY001 " in proc.stdout, proc.stdout + proc.stderr  # it really checked
    assert "parallint.readers.shell" in mods and "parallint.cli.preflight" in mods
    assert sorted(m for m in HEAVY if m in mods) == []
    # nothing of its own beyond: the shell launch path (readers.shell, cmdline, the LCH rules)
    # loads typing and tempfile for either command; preflight runs the file rules on the files the
    # job takes in too (the script), as `check` of the launch file and its script does
    checked, proc = _loaded(["check", "run.sh", "train.py"], tmp_path)
    assert proc.returncode == 1 and " LAY001 " in proc.stdout
    assert sorted(mods - checked) == ["parallint.cli.preflight", "parallint.discover.host"]
