"""Values that flow: the launch line's words bound to a click command, a ``fire.Fire`` function, a
Hydra entry function and LightningCLI's ``--trainer.*`` flags. The line's value wins over the
default and the finding is located at its word; a word parallint cannot read (``$ARGS``) makes the
value unknown, never the default."""

from __future__ import annotations

import json

from parallint.discover.settings import Config
from parallint.engine.runner import build_jobs

from conftest import write_tree

CLICK = """\
import click
from megatron.core import parallel_state


@click.command()
@click.option("--tp", default=2, help="tensor parallel")
@click.option("--pp", "--pipeline", type=int, default=4)
@click.option("--fp8/--no-fp8", default=False)
def main(tp, pp, fp8):
    parallel_state.initialize_model_parallel(tensor_model_parallel_size=tp,
                                             pipeline_model_parallel_size=pp)


if __name__ == "__main__":
    main()
"""
FIRE = """\
import fire
from megatron.core import parallel_state


def main(tp: int = 2, pp_size=4, seed=1):
    parallel_state.initialize_model_parallel(tensor_model_parallel_size=tp,
                                             pipeline_model_parallel_size=pp_size)


if __name__ == "__main__":
    fire.Fire(main)
"""
TYPER = """\
import typer
from megatron.core import parallel_state


def main(tp: int = 2, pipeline_size: int = 4, fp8: bool = False):
    parallel_state.initialize_model_parallel(tensor_model_parallel_size=tp,
                                             pipeline_model_parallel_size=pipeline_size)


if __name__ == "__main__":
    typer.run(main)
"""
TYPER_APP = """\
from typing import Annotated

import typer
from megatron.core import parallel_state

app = typer.Typer(add_completion=False)


@app.command()
def train(data: str, tp: Annotated[int, typer.Option("--tp", "-t")] = 2,
          pp: int = typer.Option(4, "--pp", "--pipeline")):
    parallel_state.initialize_model_parallel(tensor_model_parallel_size=tp,
                                             pipeline_model_parallel_size=pp)


if __name__ == "__main__":
    app()
"""
HYDRA = """\
import hydra
from megatron.core import parallel_state


@hydra.main(config_path="conf", config_name="config", version_base=None)
def main(cfg):
    parallel_state.initialize_model_parallel(tensor_model_parallel_size=cfg.model.tp,
                                             pipeline_model_parallel_size=cfg.model.pp)


if __name__ == "__main__":
    main()
"""
HYDRA_CONFIG = "model:\n  tp: 2\n  pp: 4\ntrainer:\n  devices: 8\n"


def _findings(cli, tmp_path, files, select="LAY001"):
    write_tree(tmp_path, {"pyproject.toml": "[project]\nname = 'x'\n", **files})
    p = cli("check", "--no-cache", "--select", select, "--format", "json", ".", cwd=tmp_path)
    assert "Traceback" not in p.stderr, p.stderr
    return json.loads(p.stdout)


def _run(args: str) -> str:
    return f"#!/bin/bash\ntorchrun --standalone --nproc_per_node 8 train.py {args}\n"


def _one_at_the_line(got, word):
    assert len(got) == 1, got
    f = got[0]
    assert "TP 4 × PP 4 = 16" in f["message"]
    assert f["path"] == "run.sh" and f["line"] == 2
    line = _run("").splitlines()[1]
    assert f["column"] > len(line) - 1  # at the word after the script, not at the default
    assert word


# ------------------------------------------------------------------ click
def test_click_option_on_the_launch_line_wins_over_its_default(tmp_path, cli):
    got = _findings(cli, tmp_path, {"train.py": CLICK, "run.sh": _run("--tp 4")})
    _one_at_the_line(got, "--tp")
    assert got[0]["column"] == len("torchrun --standalone --nproc_per_node 8 train.py --tp ") + 1


def test_click_defaults_and_right_values_are_silent(tmp_path, cli):
    for args in ("", "--tp=1 --pipeline 8", "--pp 2 --fp8", "--tp 4 --pp 2"):
        assert _findings(cli, tmp_path, {"train.py": CLICK, "run.sh": _run(args)}) == [], args


def test_click_unknown_word_never_falls_back_to_the_default(tmp_path, cli):
    # --pp may come from $EXTRA: its default 4 is not what runs
    for args in ("--tp 4 $EXTRA", '"$@" --tp 4', "--tp $TP"):
        assert _findings(cli, tmp_path, {"train.py": CLICK, "run.sh": _run(args)}) == [], args


def test_click_envvar_default_is_unknown(tmp_path, cli):
    script = CLICK.replace('type=int, default=4)', 'type=int, default=4, envvar="PP")')
    assert _findings(cli, tmp_path, {"train.py": script, "run.sh": _run("--tp 4")}) == []
    assert len(_findings(cli, tmp_path, {"train.py": script, "run.sh": _run("--tp 4 --pp 4")})) == 1


def test_click_command_called_with_arguments_is_not_bound(tmp_path, cli):
    script = CLICK.replace("    main()\n", '    main(["--tp", "1"])\n')
    assert _findings(cli, tmp_path, {"train.py": script, "run.sh": _run("--tp 4")}) == []


# ------------------------------------------------------------------ typer
def test_typer_run_option_on_the_launch_line_wins_over_its_default(tmp_path, cli):
    for args in ("--tp 4", "--tp=4", "--fp8 --tp 4"):
        _one_at_the_line(_findings(cli, tmp_path, {"train.py": TYPER, "run.sh": _run(args)}), args)


def test_typer_defaults_dashes_and_right_values_are_silent(tmp_path, cli):
    # typer spells pipeline_size as --pipeline-size; --pipeline_size is not an option of the command
    for args in ("", "--tp 4 --pipeline-size 2", "--no-fp8", "--tp 4 $EXTRA", "--tp $TP", "--tp 4 --pipeline_size 2"):
        assert _findings(cli, tmp_path, {"train.py": TYPER, "run.sh": _run(args)}) == [], args


def test_typer_app_with_one_command_binds_options_and_arguments(tmp_path, cli):
    got = _findings(cli, tmp_path, {"train.py": TYPER_APP, "run.sh": _run("/data --tp 4")})
    _one_at_the_line(got, "--tp")
    for args in ("/data", "/data -t 1 --pipeline 8", "/data --pp 2 --tp 4"):
        assert _findings(cli, tmp_path, {"train.py": TYPER_APP, "run.sh": _run(args)}) == [], args


def test_typer_app_with_a_callback_or_two_commands_is_not_bound(tmp_path, cli):
    two = TYPER_APP.replace("\n\nif __name__", "\n\n@app.command()\ndef evaluate():\n    pass\n\n\nif __name__")
    callback = TYPER_APP.replace("@app.command()", "@app.callback()\ndef common():\n    pass\n\n\n@app.command()")
    for script in (two, callback):
        assert _findings(cli, tmp_path, {"train.py": script, "run.sh": _run("train /data --tp 4")}) == []


def test_typer_envvar_default_is_unknown(tmp_path, cli):
    script = TYPER_APP.replace('typer.Option(4, "--pp", "--pipeline")', 'typer.Option(4, "--pp", envvar="PP")')
    assert _findings(cli, tmp_path, {"train.py": script, "run.sh": _run("/data --tp 4")}) == []
    assert len(_findings(cli, tmp_path, {"train.py": script, "run.sh": _run("/data --tp 4 --pp 4")})) == 1


# ------------------------------------------------------------------ fire
def test_fire_flag_on_the_launch_line_wins_over_the_parameter_default(tmp_path, cli):
    for args in ("--tp 4", "--tp=4", "--seed 3 --tp 4"):
        _one_at_the_line(_findings(cli, tmp_path, {"train.py": FIRE, "run.sh": _run(args)}), args)


def test_fire_defaults_dashes_and_unknown_words(tmp_path, cli):
    for args in ("", "--pp-size 1 --tp 4", "--tp 4 --pp_size=2", "--tp 4 $EXTRA", "--tp 4 8", "-t 4"):
        assert _findings(cli, tmp_path, {"train.py": FIRE, "run.sh": _run(args)}) == [], args


def test_fire_function_called_elsewhere_is_not_bound(tmp_path, cli):
    script = FIRE.replace("    fire.Fire(main)\n", "    fire.Fire(main)\n    main(tp=1)\n")
    assert _findings(cli, tmp_path, {"train.py": script, "run.sh": _run("--tp 4")}) == []


# ------------------------------------------------------------------ Hydra
def test_hydra_override_wins_over_the_config(tmp_path, cli):
    files = {"train.py": HYDRA, "conf/config.yaml": HYDRA_CONFIG}
    for args in ("model.tp=4", "++model.tp=4", "trainer.devices=2 model.tp=4"):
        got = _findings(cli, tmp_path, {**files, "run.sh": _run(args)})
        _one_at_the_line(got, args)


def test_hydra_config_values_and_the_right_override_are_silent(tmp_path, cli):
    files = {"train.py": HYDRA, "conf/config.yaml": HYDRA_CONFIG}
    for args in ("", "model.tp=1 model.pp=8", "model.pp=2 model.tp=4"):
        assert _findings(cli, tmp_path, {**files, "run.sh": _run(args)}) == [], args


def test_hydra_config_default_reaches_the_rule(tmp_path, cli):
    files = {"train.py": HYDRA, "conf/config.yaml": HYDRA_CONFIG.replace("tp: 2", "tp: 4")}
    got = _findings(cli, tmp_path, {**files, "run.sh": _run("trainer.devices=8")})
    assert len(got) == 1 and "TP 4 × PP 4 = 16" in got[0]["message"]


def test_hydra_unknown_overrides_stay_silent(tmp_path, cli):
    files = {"train.py": HYDRA, "conf/config.yaml": HYDRA_CONFIG.replace("tp: 2", "tp: 4"),
             "conf/model/big.yaml": "tp: 8\npp: 1\n"}
    for args in ("model.tp=4 $EXTRA", "model=big", "--config-name other", "model.tp=${oc.env:TP}",
                 "-m model.pp=1,2", "model.pp=$PP"):
        assert _findings(cli, tmp_path, {**files, "run.sh": _run(args)}) == [], args


def test_hydra_composed_or_reassigned_config_is_unknown(tmp_path, cli):
    composed = "defaults:\n  - _self_\n  - model: big\n" + HYDRA_CONFIG.replace("tp: 2", "tp: 4")
    files = {"train.py": HYDRA, "conf/config.yaml": composed, "conf/model/big.yaml": "tp: 8\npp: 1\n"}
    assert _findings(cli, tmp_path, {**files, "run.sh": _run("")}) == []
    script = HYDRA.replace("def main(cfg):\n", "def main(cfg):\n    cfg.model.pp = 1\n")
    files = {"train.py": script, "conf/config.yaml": HYDRA_CONFIG}
    assert _findings(cli, tmp_path, {**files, "run.sh": _run("model.tp=4")}) == []


# ------------------------------------------------------- Hydra config groups (model=llama7b)
GROUPED = "defaults:\n  - model: small\n  - _self_\ntrainer:\n  devices: 8\n"
GROUPS = {"conf/model/small.yaml": "tp: 2\npp: 4\n", "conf/model/bad.yaml": "tp: 2\npp: 3\n"}


def test_hydra_group_choice_of_the_defaults_list_is_read(tmp_path, cli):
    files = {"train.py": HYDRA, "conf/config.yaml": GROUPED, **GROUPS}
    assert _findings(cli, tmp_path / "a", {**files, "run.sh": _run("")}) == []
    bad = {**files, "conf/config.yaml": GROUPED.replace("model: small", "model: bad")}
    got = _findings(cli, tmp_path / "b", {**bad, "run.sh": _run("")})
    assert len(got) == 1 and "TP 2 × PP 3 = 6" in got[0]["message"], got
    p = cli("show", ".", cwd=tmp_path / "b")
    assert "model/bad.yaml" in p.stdout, p.stdout


def test_hydra_group_pick_on_the_launch_line_selects_the_groups_file(tmp_path, cli):
    files = {"train.py": HYDRA, "conf/config.yaml": GROUPED, **GROUPS}
    got = _findings(cli, tmp_path / "a", {**files, "run.sh": _run("model=bad")})
    assert len(got) == 1 and "TP 2 × PP 3 = 6" in got[0]["message"], got
    assert got[0]["path"] == "run.sh" and got[0]["line"] == 2
    # a value the line gives wins over the pick, wherever it stands
    for args in ("model=bad model.pp=4", "model.pp=4 model=bad"):
        assert _findings(cli, tmp_path / "b", {**files, "run.sh": _run(args)}) == [], args
    # with _self_ last the primary's own keys win over the group's
    primary = GROUPED + "model:\n  pp: 4\n"
    assert _findings(cli, tmp_path / "c", {**files, "conf/config.yaml": primary, "run.sh": _run("model=bad")}) == []


def test_hydra_groups_parallint_does_not_compose_stay_unknown(tmp_path, cli):
    files = {"train.py": HYDRA, **GROUPS}
    bad = GROUPED.replace("model: small", "model: bad")
    cases = {
        "no _self_": bad.replace("  - _self_\n", ""),  # Hydra 1.0 and 1.1 differ
        "optional": bad.replace("  - model: bad", "  - optional model: bad"),
        "another entry": bad.replace("  - _self_", "  - db: mysql\n  - _self_"),
    }
    for name, cfg in cases.items():
        assert _findings(cli, tmp_path / name.replace(" ", "_"), {**files, "conf/config.yaml": cfg,
                                                               "run.sh": _run("")}) == [], name
    pkg = {**files, "conf/config.yaml": bad, "conf/model/bad.yaml": "# @package _global_\ntp: 2\npp: 3\n"}
    assert _findings(cli, tmp_path / "pkg", {**pkg, "run.sh": _run("")}) == []
    for i, args in enumerate(("model=missing", "+model=bad", "-m model=bad,small", "model=bad $EXTRA")):
        got = _findings(cli, tmp_path / f"w{i}", {**files, "conf/config.yaml": GROUPED, "run.sh": _run(args)})
        assert got == [], (args, got)


# ------------------------------------------------------------------ LightningCLI
LCLI = """\
seed_everything: 42
trainer:
  accelerator: cuda
  devices: 8
  num_nodes: 1
  accumulate_grad_batches: 2
  strategy: ddp_find_unused_parameters_true
model:
  class_path: model.Llama
"""


def _lightning_job(tmp_path, line):
    write_tree(tmp_path, {"pyproject.toml": "[project]\nname = 'x'\n", "config.yaml": LCLI,
                          "main.py": "from lightning.pytorch.cli import LightningCLI\n\nLightningCLI()\n",
                          "run.sh": f"#!/bin/bash\n{line}\n"})
    jobs = build_jobs(["run.sh", "config.yaml"], Config(None, tmp_path, {}), cwd=tmp_path)
    return next(j for j in jobs if j.root.path == "run.sh")


def test_lightning_flags_after_the_config_win_and_keep_the_launch_line(tmp_path):
    job = _lightning_job(tmp_path, "python main.py fit --config config.yaml --trainer.accumulate_grad_batches 4 "
                                   "--trainer.strategy ddp")
    v = job.facts.get("training.grad_accum")
    assert v.value == 4 and v.span.path == "run.sh" and v.span.line == 2
    assert job.facts.get("ddp.find_unused_parameters") is None  # "ddp": not the config's _true


def test_lightning_flags_before_the_config_lose_to_it(tmp_path):
    job = _lightning_job(tmp_path, "python main.py fit --trainer.accumulate_grad_batches 4 --config config.yaml")
    v = job.facts.get("training.grad_accum")
    assert v.value == 2 and v.span.path == "config.yaml"


def test_lightning_unknown_word_makes_the_config_values_unknown(tmp_path):
    job = _lightning_job(tmp_path, "python main.py fit --config config.yaml $EXTRA")
    for key in ("training.grad_accum", "parallel.procs_per_node"):
        assert job.facts.get(key) is None and job.facts.all(key) and not job.facts.all(key)[0].known, key
    assert job.facts.get("ddp.find_unused_parameters") is None


# ------------------------------------------------------------------ argparse
ARGPARSE = """\
import argparse
from megatron.core import parallel_state

parser = argparse.ArgumentParser()
parser.add_argument("--tp", type=int, default=4)
parser.add_argument("--pp", type=int, default=4)
args = parser.parse_args()
parallel_state.initialize_model_parallel(args.tp, args.pp)
"""


def test_argparse_unknown_word_never_falls_back_to_the_default(tmp_path, cli):
    assert len(_findings(cli, tmp_path, {"train.py": ARGPARSE, "run.sh": _run("--seed 1")})) == 1
    for args in ("$EXTRA", '"$@"', "--tp 4 ${ARGS}"):
        assert _findings(cli, tmp_path, {"train.py": ARGPARSE, "run.sh": _run(args)}) == [], args


def test_hydra_show_cites_the_launch_line_and_the_config_read_is_a_cached_side_read(tmp_path, cli):
    files = {"pyproject.toml": "[project]\nname = 'x'\n", "train.py": HYDRA, "conf/config.yaml": HYDRA_CONFIG,
             "run.sh": _run("model.tp=4")}
    write_tree(tmp_path, files)
    p = cli("show", ".", cwd=tmp_path)
    assert "tp: 4  # run.sh:2 " in p.stdout and "model.tp=4 on the launch line" in p.stdout, p.stdout
    (tmp_path / ".git").mkdir()

    def standalone():
        q = cli("check", "--select", "LAY001", "--format", "json", "train.py", cwd=tmp_path)
        return [d["message"] for d in json.loads(q.stdout)]

    # checked on its own, the config's values are the script's: TP 4 × PP 4 needs a world of 16
    (tmp_path / "conf" / "config.yaml").write_text(HYDRA_CONFIG.replace("tp: 2", "tp: 4"))
    write_tree(tmp_path, {"run.sh": _run("")})
    assert len(standalone()) == 1
    assert len(standalone()) == 1  # from the cache
    (tmp_path / "conf" / "config.yaml").write_text(HYDRA_CONFIG)
    assert standalone() == []
