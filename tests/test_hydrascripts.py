"""A NeMo config whose Hydra entry script overwrites a key after loading it: the file's value never
runs, so no rule reports it (parallint.link.hydrascripts, the runner's hydra_assignments)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from parallint.link.hydrascripts import assigned_keys, reset

from conftest import run_cli, write_tree

CONFIG = """
    trainer:
      devices: 8
      num_nodes: 1
    model:
      micro_batch_size: 16
      global_batch_size: 16
      tensor_model_parallel_size: 1
      pipeline_model_parallel_size: 1
    """

SCRIPT = """
    from nemo.core.config import hydra_runner

    @hydra_runner(config_path="{path}", config_name="{name}")
    def main(cfg) -> None:
        {body}
        trainer = make_trainer(cfg)

    if __name__ == "__main__":
        main()
    """

OVERWRITE = "cfg.model.global_batch_size = cfg.trainer.devices * cfg.trainer.num_nodes * cfg.model.micro_batch_size"


def _check(tmp_path: Path, files: dict[str, str], *paths: str) -> list[tuple[str, str, int]]:
    write_tree(tmp_path, {k: textwrap.dedent(v).lstrip("\n") for k, v in files.items()})
    proc = run_cli("check", "--format", "json", "--exit-zero", "--no-cache", *(paths or (".",)), cwd=tmp_path)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    return sorted((d["path"], d["code"], d["line"]) for d in json.loads(proc.stdout))


def test_a_key_the_entry_script_overwrites_is_not_reported(tmp_path):
    files = {"clip/conf/baseline.yaml": CONFIG,
             "clip/train.py": SCRIPT.format(path="conf", name="baseline", body=OVERWRITE),
             "other/conf/baseline.yaml": CONFIG,  # the same config, its script leaves the key alone
             "other/train.py": SCRIPT.format(path="conf", name="baseline", body="print(cfg.model)")}
    assert _check(tmp_path, files) == [("other/conf/baseline.yaml", "BAT002", 6)]
    # the same on the config alone, as pre-commit checks it
    assert _check(tmp_path, files, "clip/conf/baseline.yaml") == []
    assert _check(tmp_path, files, "other/conf/baseline.yaml") == [("other/conf/baseline.yaml", "BAT002", 6)]


def test_the_decorator_must_name_this_config(tmp_path):
    files = {"a/conf/baseline.yaml": CONFIG,
             "a/train.py": SCRIPT.format(path="conf", name="other_config", body=OVERWRITE),
             "b/conf/baseline.yaml": CONFIG,
             "b/train.py": SCRIPT.format(path="elsewhere", name="baseline", body=OVERWRITE)}
    assert _check(tmp_path, files) == [("a/conf/baseline.yaml", "BAT002", 6), ("b/conf/baseline.yaml", "BAT002", 6)]


def test_world_size_from_overwritten_devices_is_unknown(tmp_path):
    files = {"x/conf/gpt.yaml": CONFIG,
             "x/train.py": SCRIPT.format(path="conf", name="gpt", body="cfg.trainer.devices = 2")}
    assert _check(tmp_path, files) == []


def test_assigned_keys_reads_attribute_subscript_and_whole_section_assignments(tmp_path):
    reset()
    body = ("cfg.model.optim.lr = 1e-4\n        cfg.trainer['devices'] = 2\n        cfg.exp_manager = None\n"
            "        cfg.model.micro_batch_size += 1\n        other.model.tp = 4\n        x = cfg.model.seed")
    write_tree(tmp_path, {"conf/run.yaml": "model: {}\n",
                          "run.py": textwrap.dedent(SCRIPT.format(path="conf", name="run.yaml", body=body)).lstrip()})
    keys = assigned_keys(tmp_path / "conf" / "run.yaml", tmp_path)
    assert {k: v[0] for k, v in keys.items()} == {
        "model.optim.lr": "run.py", "trainer.devices": "run.py", "exp_manager": "run.py", "model.micro_batch_size": "run.py"}
    assert keys["model.optim.lr"][1] == 5


def test_a_broken_or_odd_script_next_to_the_config_is_ignored(tmp_path):
    reset()
    write_tree(tmp_path, {"conf/run.yaml": "model: {}\n",
                          "bad.py": "config_name='run'  hydra (\n",
                          "deep.py": "config_name='run' hydra\nx = " + "(" * 5000 + ")" * 5000 + "\n"})
    (tmp_path / "fifo.py").symlink_to("/dev/null")
    assert assigned_keys(tmp_path / "conf" / "run.yaml", tmp_path) == {}


def test_a_warning_of_the_users_script_is_not_printed_nor_fatal(tmp_path):
    """An invalid escape (``"\\d"``) makes ``ast.parse`` warn: parallint keeps quiet and reads on."""
    import warnings

    reset()
    body = 'pattern = "\\d+"\n        cfg.model.global_batch_size = 4'
    write_tree(tmp_path, {"conf/run.yaml": "model: {}\n",
                          "run.py": textwrap.dedent(SCRIPT.format(path="conf", name="run", body=body)).lstrip()})
    assert '"\\d+"' in (tmp_path / "run.py").read_text()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a warning that escaped would turn into a SyntaxError here
        assert list(assigned_keys(tmp_path / "conf" / "run.yaml", tmp_path)) == ["model.global_batch_size"]


def test_no_folder_above_the_repository_is_read(tmp_path):
    """A config at the repository's top: the folder above is someone else's."""
    reset()
    repo = tmp_path / "repo"
    write_tree(tmp_path, {"repo/run.yaml": textwrap.dedent(CONFIG).lstrip(), "repo/.git/HEAD": "ref: refs/heads/main\n",
                          "train.py": textwrap.dedent(SCRIPT.format(path="repo", name="run", body=OVERWRITE)).lstrip()})
    assert assigned_keys(repo / "run.yaml", repo, boundary=repo) == {}
    assert list(assigned_keys(repo / "run.yaml", repo)) == ["model.global_batch_size"]  # no boundary: both folders
    proc = run_cli("check", "--format", "json", "--exit-zero", "--no-cache", "run.yaml", cwd=repo)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr
    assert [(d["code"], d["line"]) for d in json.loads(proc.stdout)] == [("BAT002", 6)]  # the outside script is not its
