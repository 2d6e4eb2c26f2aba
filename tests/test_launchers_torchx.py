"""TorchX `torchx run dist.ddp -j NxM` (and `.torchxconfig`), Lightning `fabric run`."""

from __future__ import annotations

from parallint.discover.settings import Config
from parallint.engine.runner import build_jobs, check_paths

from conftest import write_tree

SCRIPT = "import torch.distributed as dist\n\ndist.init_process_group('nccl')\n"
MEGATRON = "--tensor-model-parallel-size 4 --pipeline-model-parallel-size {pp} --num-layers 32"


def _diags(tmp_path, files, path="run.sh", select=("LAY001",)):
    write_tree(tmp_path, files)
    res = check_paths([path], Config(None, tmp_path, {"select": list(select)}), cwd=tmp_path)
    assert not res.errors, res.errors
    return [(d.code, d.span.path, d.span.line) for d in res.diagnostics]


def _job(tmp_path, files, path="run.sh"):
    write_tree(tmp_path, files)
    (job,) = [j for j in build_jobs([path], Config(None, tmp_path, {}), cwd=tmp_path) if j.launch is not None]
    return job


def test_torchx_doc_example_silent_and_read(tmp_path):
    # TorchX docs (dist.ddp): torchx run -s local_cwd dist.ddp -j 2x4 --script main.py
    files = {"train.py": SCRIPT,
             "run.sh": f"torchx run -s local_cwd dist.ddp -j 2x4 --script train.py -- {MEGATRON.format(pp=2)}\n"}
    assert _diags(tmp_path, files) == []
    job = _job(tmp_path, files)
    assert job.launch.launcher == "torchrun" and [f.path for f in job.files] == ["run.sh", "train.py"]
    assert job.int("parallel.nodes") == 2 and job.int("parallel.procs_per_node") == 4


def test_torchx_planted_mismatch(tmp_path):
    files = {"train.py": SCRIPT,
             "run.sh": f"torchx run -s local_cwd dist.ddp -j 2x4 --script train.py -- {MEGATRON.format(pp=4)}\n"}
    assert _diags(tmp_path, files) == [("LAY001", "run.sh", 1)]


def test_torchx_j_forms_and_torchxconfig(tmp_path):
    one = _job(tmp_path, {"train.py": SCRIPT, "run.sh": "torchx run dist.ddp -j 8 --script train.py\n"})
    assert one.int("parallel.nodes") == 1 and one.int("parallel.procs_per_node") == 8
    elastic = _job(tmp_path, {"train.py": SCRIPT, "run.sh": "torchx run dist.ddp -j 1:2x8 --script train.py\n"})
    assert elastic.int("parallel.nodes") is None and elastic.int("parallel.procs_per_node") == 8
    files = {"train.py": SCRIPT, ".torchxconfig": "[cli:run]\ncomponent = dist.ddp\n\n[component:dist.ddp]\nj = 2x4\n",
             "run.sh": f"torchx run -s local_cwd dist.ddp --script train.py -- {MEGATRON.format(pp=4)}\n"}
    diags = _diags(tmp_path, files)
    assert diags == [("LAY001", "run.sh", 1)]


def test_torchx_other_components_start_nothing(tmp_path):
    write_tree(tmp_path, {"run.sh": "torchx run utils.echo --msg hello\n"})
    jobs = build_jobs(["run.sh"], Config(None, tmp_path, {}), cwd=tmp_path)
    assert all(j.launch is None for j in jobs)


def test_fabric_run_doc_example_and_planted(tmp_path):
    # Lightning docs: fabric run --accelerator=cuda --devices=4 --num-nodes=1 train.py
    files = {"train.py": SCRIPT,
             "run.sh": "fabric run --accelerator=cuda --devices=4 --num-nodes=2 --strategy=ddp train.py "
                       + MEGATRON.format(pp=2) + "\n"}
    assert _diags(tmp_path, files) == []
    assert _job(tmp_path, files).launch.launcher == "fabric"
    files["run.sh"] = files["run.sh"].replace("--num-nodes=2", "--num-nodes=1")
    assert _diags(tmp_path, files) == [("LAY001", "run.sh", 1)]
