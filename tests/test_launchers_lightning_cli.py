"""LightningCLI YAML (trainer.devices/num_nodes/strategy) and its launch line overrides."""

from __future__ import annotations

from parallint.discover.settings import Config
from parallint.engine.runner import build_jobs, check_paths

from conftest import write_tree

# shaped like Lightning's docs "Tensor Parallelism" with LightningCLI's config file
CONFIG = """\
seed_everything: 42
trainer:
  accelerator: cuda
  devices: 4
  num_nodes: 2
  precision: bf16-true
  strategy:
    class_path: lightning.pytorch.strategies.ModelParallelStrategy
    init_args:
      data_parallel_size: {dp}
      tensor_parallel_size: {tp}
  max_steps: 100
model:
  class_path: model.Llama
  init_args:
    vocab_size: 32000
data:
  class_path: data.TinyStories
"""
MAIN = "from lightning.pytorch.cli import LightningCLI\n\nLightningCLI()\n"


def _diags(tmp_path, files, path, select=("LAY001",)):
    write_tree(tmp_path, files)
    res = check_paths([path], Config(None, tmp_path, {"select": list(select)}), cwd=tmp_path)
    assert not res.errors, res.errors
    return [(d.code, d.span.path, d.span.line) for d in res.diagnostics]


def test_doc_shape_silent_and_read(tmp_path):
    assert _diags(tmp_path, {"config.yaml": CONFIG.format(dp=2, tp=4)}, "config.yaml") == []
    assert _diags(tmp_path, {"config.yaml": CONFIG.format(dp="auto", tp="auto")}, "config.yaml") == []
    (job,) = build_jobs(["config.yaml"], Config(None, tmp_path, {}), cwd=tmp_path)
    assert job.root.kind == "lightning_cli" and job.world_size().value == 8
    assert job.int("parallel.dp") == 2 and job.int("parallel.tp") == 4  # "auto": num_nodes, devices


def test_planted_mismatch(tmp_path):
    assert _diags(tmp_path, {"config.yaml": CONFIG.format(dp=2, tp=2)}, "config.yaml") == [("LAY001", "config.yaml", 11)]


def test_launch_line_overrides(tmp_path):
    files = {"config.yaml": CONFIG.format(dp=2, tp=4), "main.py": MAIN,
             "run.sh": "python main.py fit --config config.yaml --trainer.devices 2\n"}
    assert _diags(tmp_path, files, "run.sh") == [("LAY001", "config.yaml", 11)]
    files["run.sh"] = "python main.py fit --config config.yaml\n"
    assert _diags(tmp_path, files, "run.sh") == []
    # "auto" sizes follow the overridden counts; a strategy override or $ARGS leaves them unknown
    files["config.yaml"] = CONFIG.format(dp="auto", tp="auto")
    files["run.sh"] = "python main.py fit --config config.yaml --trainer.devices 2\n"
    assert _diags(tmp_path, files, "run.sh") == []
    files["config.yaml"] = CONFIG.format(dp=2, tp=2)
    for line in ("python main.py fit --config config.yaml --trainer.strategy.init_args.tensor_parallel_size 4\n",
                 "python main.py fit --config config.yaml $EXTRA\n"):
        files["run.sh"] = line
        assert _diags(tmp_path, files, "run.sh") == [], line


def test_not_lightning_cli(tmp_path):
    nemo = "trainer:\n  devices: 8\n  num_nodes: 1\nmodel:\n  tensor_model_parallel_size: 2\n  class_path: x\n"
    write_tree(tmp_path, {"conf.yaml": nemo})
    (job,) = build_jobs(["conf.yaml"], Config(None, tmp_path, {}), cwd=tmp_path)
    assert job.root.kind != "lightning_cli"
