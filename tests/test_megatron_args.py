"""Megatron command-line flags -> normalized facts: recomputation defaults and old spellings."""

from __future__ import annotations

from parallint.model.diagnostics import Span
from parallint.model.facts import Value
from parallint.readers.megatron_args import args_facts


def _words(*ws):
    return [Value(w, Span("run.sh", 1, i + 1)) if w is not None else Value.unknown("environment variable ARGS")
            for i, w in enumerate(ws)]


BASE = ("--tensor-model-parallel-size", "2", "--num-layers", "24")


def test_no_recompute_flag_on_a_complete_command_line_is_megatrons_default():
    v = args_facts(_words(*BASE)).get("training.recompute")
    assert v is not None and v.value == "none" and "default" in v.source


def test_unknown_words_or_config_files_leave_recompute_unknown():
    assert args_facts(_words(*BASE, None)).get("training.recompute") is None
    assert args_facts(_words(*BASE, "--yaml-cfg", "x.yaml")).get("training.recompute") is None
    assert args_facts(_words(*BASE, "--recompute-method", "uniform")).get("training.recompute") is None


def test_explicit_recompute_spellings():
    assert args_facts(_words(*BASE, "--recompute-granularity", "full")).get("training.recompute").value == "full"
    assert args_facts(_words(*BASE, "--recompute-activations")).get("training.recompute").value == "selective"
    assert args_facts(_words(*BASE, "--checkpoint-activations")).get("training.recompute").value == "full"


def test_shape_flags():
    f = args_facts(_words(*BASE, "--swiglu", "--normalization", "RMSNorm", "--disable-bias-linear",
                          "--position-embedding-type", "rope", "--group-query-attention", "--num-query-groups", "8"))
    assert f.get("model.mlp").value == "swiglu" and f.get("model.norm").value == "rmsnorm"
    assert f.get("model.bias").value is False and f.get("model.position_embeddings").value == "rope"
    assert f.get("model.kv_heads").value == 8


def test_cpu_offload_flags():
    assert args_facts(_words(*BASE, "--optimizer-cpu-offload")).get("training.offload").value is True
    assert args_facts(_words(*BASE, "--cpu-offloading")).get("training.offload").value is True
    assert args_facts(_words(*BASE)).get("training.offload") is None


# -- CFG006: the argument table -----------------------------------------------------------------
import json  # noqa: E402
from pathlib import Path as _Path  # noqa: E402


def _cfg006(tmp_path, files, paths=("run.sh",)):
    from conftest import write_tree
    from parallint.discover.settings import Config
    from parallint.engine.runner import check_paths

    write_tree(tmp_path, files)
    res = check_paths(list(paths), Config(None, tmp_path, {}), cwd=tmp_path)
    assert not res.errors, res.errors
    return [(d.span.line, d.message) for d in res.diagnostics if d.code == "CFG006"]


LAUNCH = "torchrun --nproc_per_node 8 {script} --tensor-model-parallel-size 2 --micro-batch-size 1 {extra}\n"


def test_bundled_tables_hold_real_flags_and_renames():
    from parallint.link import megatron_table

    lm, mds = megatron_table.bundled("megatron-lm"), megatron_table.bundled("megatron-deepspeed")
    for flag in ("--tensor-model-parallel-size", "--micro-batch-size", "--use-distributed-optimizer",
                 "--no-gradient-accumulation-fusion"):
        assert flag in lm["flags"] and flag in mds["flags"]
    assert "--deepspeed_config" in mds["flags"] and "--deepspeed_config" not in lm["flags"]
    assert "--DDP-impl" in mds["flags"] and "--DDP-impl" not in lm["flags"]
    assert lm["rejected"]["--batch-size"] == "--micro-batch-size"
    assert lm["renamed"]["--activations-checkpoint-method"] == "--recompute-method"
    assert "pretrain_gpt.py" in lm["scripts"]


def test_typo_gets_a_did_you_mean(tmp_path):
    found = _cfg006(tmp_path, {"run.sh": LAUNCH.format(script="/opt/Megatron-LM/pretrain_gpt.py",
                                                        extra="--pipeline-model-paralel-size 2")})
    assert len(found) == 1 and "rename it to --pipeline-model-parallel-size" in found[0][1]


def test_deepspeed_signals_pick_the_megatron_deepspeed_table(tmp_path):
    line = LAUNCH.format(script="/opt/Megatron-LM/pretrain_gpt.py", extra="--DDP-impl local")
    assert "removed" in _cfg006(tmp_path / "a", {"run.sh": line})[0][1]
    line = LAUNCH.format(script="pretrain_gpt.py", extra="--DDP-impl local --deepspeed --deepspeed_config ds.json")
    assert _cfg006(tmp_path / "b", {"run.sh": line}) == []
    # unknown framework: a flag known to either passes
    line = LAUNCH.format(script="pretrain_gpt.py", extra="--DDP-impl local --use-mcore-models")
    assert _cfg006(tmp_path / "c", {"run.sh": line}) == []


SCRIPT_WITH_PROVIDER = """
from megatron.training import pretrain
{imports}

def extra_args(parser):
    group = parser.add_argument_group(title="mine")
    group.add_argument("--my-flag", type=int)
    {delegate}
    return parser

pretrain(None, None, None, None, extra_args_provider={provider}{more})
"""


def _script(imports="", delegate="", provider="extra_args", more=""):
    return SCRIPT_WITH_PROVIDER.format(imports=imports, delegate=delegate, provider=provider, more=more)


def test_script_flags_and_providers(tmp_path):
    line = LAUNCH.format(script="train.py", extra="--my-flag 1 --their-flag 2")
    # own provider: --my-flag is fine, --their-flag is not
    found = _cfg006(tmp_path / "a", {"run.sh": line, "train.py": _script()})
    assert [m.split()[0] for _, m in found] == ["--their-flag"]
    # the provider hands the parser to a module of the repository that adds --their-flag
    found = _cfg006(tmp_path / "b", {"run.sh": line, "train.py": _script(
        imports="from helpers import add_more", delegate="parser = add_more(parser)"),
        "helpers.py": "def add_more(parser):\n    parser.add_argument('--their-flag')\n    return parser\n"})
    assert found == []
    # ... to a module parallint cannot read: silent
    found = _cfg006(tmp_path / "c", {"run.sh": line, "train.py": _script(
        imports="from somewhere_else import add_more", delegate="parser = add_more(parser)")})
    assert found == []
    # an imported provider that is not in the repository: silent
    found = _cfg006(tmp_path / "d", {"run.sh": line, "train.py": _script(
        imports="from megatron.post_training.arguments import add_modelopt_args", provider="add_modelopt_args")})
    assert found == []
    # ignore_unknown_args=True: silent
    found = _cfg006(tmp_path / "e", {"run.sh": line, "train.py": _script(more=", ignore_unknown_args=True")})
    assert found == []
    # the provider hands a group to a helper that makes flags from a config dataclass's fields
    # (Megatron's retro add_config_args): they cannot be listed, silent
    dynamic = ("def add_config_args(parser, config_cls):\n    for field in fields(config_cls):\n"
               "        parser.add_argument('--' + field.name.replace('_', '-'))\n    return parser\n")
    found = _cfg006(tmp_path / "f", {"run.sh": line, "train.py": _script(
        imports="from helpers import add_config_args", delegate="add_config_args(group, RetroConfig)"),
        "helpers.py": dynamic})
    assert found == []
    found = _cfg006(tmp_path / "g", {"run.sh": line, "train.py": _script(  # its literal twin still checks
        imports="from helpers import add_config_args", delegate="add_config_args(group, RetroConfig)"),
        "helpers.py": dynamic.replace("'--' + field.name.replace('_', '-')", "'--retro-seed'")})
    assert [m.split()[0] for _, m in found] == ["--their-flag"]


def test_not_a_megatron_entry_script_is_silent(tmp_path):
    script = ("import argparse\nparser = argparse.ArgumentParser()\nparser.add_argument('--x')\n"
              "args = parser.parse_args()\n")
    line = LAUNCH.format(script="train.py", extra="--their-flag 2")
    assert _cfg006(tmp_path, {"run.sh": line, "train.py": script}) == []
    # an unlinked script that is not one of Megatron's entry scripts
    line = LAUNCH.format(script="/elsewhere/my_train.py", extra="--their-flag 2")
    assert _cfg006(tmp_path / "b", {"run.sh": line}) == []


def test_vendored_megatron_is_the_table(tmp_path):
    files = {
        ".git/HEAD": "ref: refs/heads/main\n",
        "megatron/__init__.py": "",
        "megatron/arguments.py": (
            "import argparse\n\ndef parse_args(extra_args_provider=None):\n"
            "    parser = argparse.ArgumentParser(allow_abbrev=False)\n"
            "    g = parser.add_argument_group('x')\n"
            "    g.add_argument('--tensor-model-parallel-size', type=int)\n"
            "    g.add_argument('--micro-batch-size', type=int)\n"
            "    g.add_argument('--batch-size', type=int)\n"
            "    g.add_argument('--fork-only-flag', action='store_true')\n"
            "    args = parser.parse_args()\n"
            "    assert args.batch_size is None, '--batch-size argument is no longer ' \\\n"
            "        'valid, use --micro-batch-size instead'\n"
            "    return args\n"),
        "pretrain_gpt.py": "from megatron.training import pretrain\npretrain(None, None, None, None)\n",
        "run.sh": LAUNCH.format(script="pretrain_gpt.py", extra="--fork-only-flag --batch-size 4 --num-layers 2"),
    }
    found = _cfg006(tmp_path, files)
    msgs = sorted(m.split()[0] for _, m in found)
    assert msgs == ["--batch-size", "--num-layers"]
    assert any("no longer valid" in m and "--micro-batch-size" in m for _, m in found)


def test_update_script_regenerates_a_table(tmp_path):
    import subprocess
    import sys

    root = _Path(__file__).resolve().parent.parent
    ck = tmp_path / "Megatron-Fork"
    (ck / "megatron").mkdir(parents=True)
    (ck / "megatron" / "arguments.py").write_text(
        "import deepspeed\n\ndef parse_args(p):\n    p.add_argument('--num-layers')\n"
        "    p = deepspeed.add_config_arguments(p)\n")
    out = tmp_path / "out"
    out.mkdir()
    r = subprocess.run([sys.executable, str(root / "scripts" / "update_megatron_args.py"), str(ck), "--out", str(out)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    data = json.loads((out / "megatron-deepspeed.args.json").read_text())
    assert "--num-layers" in data["flags"] and "--deepspeed_config" in data["flags"]


def test_a_megatron_copy_linked_from_outside_the_repository_is_not_read(tmp_path):
    """Security issue, item 3: a `megatron` folder that is a link out of the repository is not
    read for its flags (their names would be echoed into CI logs); its table is unknown, silent."""
    import os

    outside = tmp_path / "outside" / "megatron"
    outside.mkdir(parents=True)
    (outside / "__init__.py").write_text("")
    (outside / "arguments.py").write_text(
        "import argparse\n\ndef parse_args(extra_args_provider=None):\n"
        "    parser = argparse.ArgumentParser(allow_abbrev=False)\n"
        "    parser.add_argument('--tensor-model-parallel-size', type=int)\n"
        "    parser.add_argument('--secret-token-flag')\n"
        "    return parser.parse_args()\n")
    repo = tmp_path / "repo"
    files = {
        ".git/HEAD": "ref: refs/heads/main\n",
        "pretrain_gpt.py": "from megatron.training import pretrain\npretrain(None, None, None, None)\n",
        "run.sh": LAUNCH.format(script="pretrain_gpt.py", extra="--secret-token-flg 1 --num-layers 2"),
    }
    for name, text in files.items():
        p = repo / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    os.symlink(outside, repo / "megatron")
    found = _cfg006(repo, {})
    assert found == [], found
    assert not any("secret-token-flag" in m for _, m in found)
