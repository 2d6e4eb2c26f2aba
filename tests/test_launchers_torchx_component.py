"""TorchX components written in Python (parallint.readers.torchx): ``dist.ddp``/``dist.spmd`` calls
and ``specs.Role`` command lines, read as data."""

from __future__ import annotations

from parallint.discover.settings import Config
from parallint.readers.torchx import component_launches
from parallint.engine.runner import build_jobs, check_paths

from conftest import write_tree

SCRIPT = "import torch.distributed as dist\n\ndist.init_process_group('nccl')\n"
# TorchX "basics": a ddp-style trainer spelled as an AppDef with one role
ROLE = """\
import torchx.specs as specs


def trainer(image: str = "trainer:latest") -> specs.AppDef:
    return specs.AppDef(
        name="gpt",
        roles=[
            specs.Role(
                name="trainer",
                image=image,
                entrypoint="python",
                args=["-m", "torch.distributed.run", "--nnodes", "2", "--nproc_per_node", "4",
                      "--rdzv_backend", "c10d", "--rdzv_endpoint", "$${rank0_env}:29500",
                      "pretrain_gpt.py", "--tensor-model-parallel-size", "4", "--pipeline-model-parallel-size", "{pp}"],
                resource=specs.Resource(cpu=32, gpu=4, memMB=200000),
                num_replicas=2,
            )
        ],
    )
"""


def _diags(tmp_path, files, path, select=("LAY001",)):
    write_tree(tmp_path, files)
    res = check_paths([path], Config(None, tmp_path, {"select": list(select)}), cwd=tmp_path)
    assert not res.errors, res.errors
    return [(d.code, d.span.path, d.span.line) for d in res.diagnostics]


def _job(tmp_path, files, path):
    write_tree(tmp_path, files)
    jobs = [j for j in build_jobs([path], Config(None, tmp_path, {}), cwd=tmp_path) if j.launch is not None]
    return jobs


def test_role_command_line_with_replicas_and_gpus(tmp_path):
    files = {"comp.py": ROLE.replace("{pp}", "2"), "pretrain_gpt.py": SCRIPT}
    assert _diags(tmp_path, files, "comp.py") == []
    (job,) = _job(tmp_path, files, "comp.py")
    assert job.int("parallel.nodes") == 2 and job.int("parallel.procs_per_node") == 4
    assert job.int("hardware.gpus_per_node_requested") == 4
    assert job.launch.wrapper is not None and job.launch.wrapper.launcher == "torchx"
    assert [f.path for f in job.files] == ["comp.py", "pretrain_gpt.py"]
    files["comp.py"] = ROLE.replace("{pp}", "3")
    assert _diags(tmp_path, files, "comp.py") == [("LAY001", "comp.py", 14)]


def test_values_from_component_parameters_stay_unknown(tmp_path):
    comp = ("from torchx.components import dist\n\n\n"
            "def trainer(j: str = '2x8', *args: str):\n"
            "    return dist.ddp(*args, '--tensor-model-parallel-size', '16', script='pretrain_gpt.py', j=j)\n")
    files = {"comp.py": comp, "pretrain_gpt.py": SCRIPT}
    assert _diags(tmp_path, files, "comp.py") == []
    (job,) = _job(tmp_path, files, "comp.py")
    assert job.int("parallel.nodes") is None and job.int("parallel.procs_per_node") is None
    # a role whose args or replicas come from parameters
    role = ROLE.replace("{pp}", "3").replace("num_replicas=2", "num_replicas=nnodes").replace(
        '"--nnodes", "2"', '"--nnodes", str(nnodes)').replace("image: str", "nnodes: int, image: str")
    assert _diags(tmp_path, {"comp.py": role, "pretrain_gpt.py": SCRIPT}, "comp.py") == []


def test_default_j_and_spmd(tmp_path):
    comp = ("from torchx.components import dist\n\n\ndef small():\n"
            "    return dist.ddp('--tensor-model-parallel-size', '4', script='pretrain_gpt.py')\n\n\n"
            "def big():\n"
            "    return dist.spmd('--tensor-model-parallel-size', '8', script='pretrain_gpt.py', j='2',"
            " h='aws_p4d.24xlarge')\n")
    files = {"comp.py": comp, "pretrain_gpt.py": SCRIPT}
    small, big = _job(tmp_path, files, "comp.py")
    assert small.int("parallel.nodes") == 1 and small.int("parallel.procs_per_node") == 2  # ddp's j="1x2"
    assert big.int("parallel.procs_per_node") is None  # spmd -j 2: GPUs per host from the host type
    assert _diags(tmp_path, files, "comp.py") == [("LAY001", "comp.py", 5)]


def test_not_components(tmp_path):
    assert component_launches("a.py", tmp_path / "a.py", "import torchx\nfor j in ('1x2', '2x2'):\n"
                              "    torchx.components.dist.ddp(script='t.py', j=j)\n") == []
    assert component_launches("a.py", tmp_path / "a.py", "def ddp(script, j):\n    pass\n\n"
                              "ddp(script='t.py', j='2x8')  # torchx\n") == []
    assert component_launches("a.py", tmp_path / "a.py", "import torchx\ndef f(:\n") == []
    echo = "import torchx.specs as specs\nspecs.Role(name='echo', entrypoint='/bin/echo', args=['hi'])\n"
    assert component_launches("a.py", tmp_path / "a.py", echo) == []


def test_loopback_master_in_a_role_command_line(tmp_path):
    role = ROLE.replace("{pp}", "2").replace('"--rdzv_backend", "c10d", "--rdzv_endpoint", "$${rank0_env}:29500",',
                                             '"--master_addr", "localhost", "--node_rank", "$${replica_id}",')
    files = {"comp.py": role, "pretrain_gpt.py": SCRIPT}
    assert _diags(tmp_path, files, "comp.py", select=("LCH006",)) == [("LCH006", "comp.py", 13)]
    assert _diags(tmp_path, {"comp.py": ROLE.replace("{pp}", "2"), "pretrain_gpt.py": SCRIPT}, "comp.py",
                  select=("LCH006",)) == []
