"""Linking files into jobs, and `parallint show`, end to end."""

from __future__ import annotations

import json

import yaml

from parallint.discover.settings import Config
from parallint.engine.runner import build_jobs

from conftest import write_tree

DS = '{"train_batch_size": 64, "train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 4}\n'
SCRIPT = "import deepspeed\nimport torch.distributed as dist\ndist.init_process_group('nccl')\n"


def _jobs(tmp_path, paths=("."), settings=None):
    return build_jobs(list(paths), Config(None, tmp_path, settings or {}), cwd=tmp_path)


def test_launch_links_script_and_config_relative_to_launch_and_root(tmp_path):
    write_tree(tmp_path, {
        "pyproject.toml": "[project]\nname='x'\n",
        "scripts/run.sh": "deepspeed --num_gpus 8 train.py --deepspeed_config configs/ds.json\n",
        "train.py": SCRIPT,
        "configs/ds.json": DS,
    })
    (job,) = [j for j in _jobs(tmp_path, ["scripts/run.sh"]) if j.launch is not None]
    assert [f.path for f in job.files] == ["scripts/run.sh", "train.py", "configs/ds.json"]
    assert job.int("training.micro_batch") == 2 and job.int("parallel.procs_per_node") == 8


def test_module_launch_links_package_module(tmp_path):
    write_tree(tmp_path, {
        "run.sh": "torchrun --nproc_per_node 4 -m pkg.train\n",
        "pkg/__init__.py": "",
        "pkg/train.py": SCRIPT,
    })
    (job,) = [j for j in _jobs(tmp_path, ["run.sh"]) if j.launch is not None]
    assert [f.path for f in job.files] == ["run.sh", "pkg/train.py"]


def test_declared_links_and_standalone_jobs(tmp_path):
    write_tree(tmp_path, {
        "run.sh": "torchrun --nproc_per_node 8 $SCRIPT\n",
        "ds.json": DS,
        "other.json": DS,
    })
    jobs = _jobs(tmp_path, settings={"links": [{"launch": "run.sh", "files": ["ds.json"]}]})
    launch_job = next(j for j in jobs if j.launch is not None)
    assert [f.path for f in launch_job.files] == ["run.sh", "ds.json"]
    # a file no launch took in is a job of its own; a linked one is not repeated
    assert sorted(j.name for j in jobs if j.launch is None) == ["other.json"]


def test_unknown_and_missing_links_link_nothing(tmp_path):
    write_tree(tmp_path, {"run.sh": "torchrun --nproc_per_node 8 missing.py --deepspeed_config $CFG\n"})
    (job,) = _jobs(tmp_path)
    assert [f.path for f in job.files] == ["run.sh"]


def test_show_prints_job_spec_yaml_with_sources(tmp_path, cli):
    write_tree(tmp_path, {
        "run.sh": "deepspeed --num_gpus 8 train.py --deepspeed_config ds.json\n",
        "train.py": SCRIPT, "ds.json": DS,
    })
    p = cli("show", "run.sh", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    doc = yaml.safe_load(p.stdout)
    assert doc["training"]["micro_batch"] == 2 and doc["training"]["grad_accum"] == 4
    assert doc["parallel"]["gpus_per_node"] == 8  # job-spec field (procs_per_node is a comment)
    assert "# procs_per_node: 8" in p.stdout
    line = next(ln for ln in p.stdout.splitlines() if ln.strip().startswith("micro_batch:"))
    assert "ds.json:1" in line
    assert "# files: run.sh, train.py, ds.json" in p.stdout


def test_show_and_estimate_agree_on_a_shown_job(tmp_path, cli):
    write_tree(tmp_path, {"job.yaml": (
        "model: {layers: 24, hidden: 2048, heads: 16, vocab: 50257, seq_len: 2048}\n"
        "parallel: {dp: 8}\ntraining: {micro_batch: 4, precision: bf16}\nhardware: {gpu: A100-80GB}\n")})
    shown = cli("show", "job.yaml", cwd=tmp_path).stdout
    (tmp_path / "shown.yaml").write_text(shown)
    a = json.loads(cli("estimate", "--format", "json", "job.yaml", cwd=tmp_path).stdout)
    b = json.loads(cli("estimate", "--format", "json", "shown.yaml", cwd=tmp_path).stdout)
    assert a[0]["param_count"] == b[0]["param_count"] and a[0]["per_gpu"] == b[0]["per_gpu"]


def test_script_of_two_launches_reports_the_most_severe_once(tmp_path, cli):
    write_tree(tmp_path, {
        "one_node.sh": "torchrun --nproc_per_node 8 train.py\n",
        "two_nodes.sh": "torchrun --nnodes 2 --nproc_per_node 8 --rdzv_endpoint host:29500 train.py\n",
        "train.py": ("import torch\nimport torch.distributed as dist\n"
                     "dist.init_process_group('nccl')\ntorch.cuda.set_device(dist.get_rank())\n"),
    })
    items = json.loads(cli("check", "--select", "DDP002", "--format", "json", ".", cwd=tmp_path).stdout)
    assert [(d["path"], d["line"], d["severity"]) for d in items] == [("train.py", 4, "error")]


def test_torchrun_rendezvous_without_nnodes_is_one_node():
    from parallint.readers.cmdline import Word, parse_command
    from parallint.model.launch import launch_world_size

    def ws(line):
        la = parse_command([Word.lit(t) for t in line.split()])
        v = launch_world_size(la)
        return v.value if v is not None else None

    assert ws("torchrun --rdzv_backend c10d --rdzv_endpoint localhost:0 --nproc_per_node 4 train.py") == 4
    assert ws("torchrun --rdzv-backend=c10d --rdzv-endpoint=$HOST:29500 --nproc-per-node=8 train.py") == 8
    assert ws("python -m torch.distributed.launch --master_addr 10.0.0.1 --nproc_per_node 2 train.py") == 2
    assert ws("torchrun --nnodes 1:4 --rdzv_backend c10d --nproc_per_node 8 train.py") is None
    assert ws("deepspeed --hostfile hosts --num_gpus 8 train.py") is None
