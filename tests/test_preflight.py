"""``parallint preflight`` (issue 24), end to end as a user runs it: sbatch-style scripts run with
``bash`` under a fake Slurm environment, a fake ``nvidia-smi`` (and a fake ``torchrun`` that leaves
a marker) on ``PATH``, and ``/proc`` and ``/sys`` faked under ``$PARALLINT_HOST_ROOT``."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import run_cli, write_tree

BIN = Path(sys.executable).parent  # the installed `parallint`
CODE = re.compile(r"^\S+:\d+:\d+: ([A-Z]+\d{3}) ", re.M)

#: every variable preflight would copy is dropped from the test's inherited environment (a CI
#: runner inside Slurm or Kubernetes must not change the outcome)
_DIST = re.compile(r"^(SLURM_|MASTER_|PET_|OMPI_|PMI_|PMIX_|MV2_|NCCL_|TORCH_NCCL_|TORCHELASTIC_|SKYPILOT_|LSB_|"
                   r"PBS_|FI_|OFI_NCCL_)|^(WORLD_SIZE|RANK|LOCAL_RANK|LOCAL_WORLD_SIZE|GROUP_RANK|ROLE_RANK|NNODES|NUM_NODES|"
                   r"NODE_RANK|GPUS_PER_NODE|NPROC_PER_NODE|CUDA_VISIBLE_DEVICES|CUDA_DEVICE_MAX_CONNECTIONS)$")

A100_40 = ("NVIDIA A100-SXM4-40GB", 40960)
H100_80 = ("NVIDIA H100 80GB HBM3", 81559)

MEGATRON = "import torch.distributed as dist\n\ndist.init_process_group('nccl')\n"

#: TP 8 × PP 4 on $SLURM_NNODES nodes of 8 processes: statically the world is unknown
GPT_SBATCH = """\
#!/bin/bash
#SBATCH --job-name=gpt
#SBATCH --ntasks-per-node=1
export CUDA_DEVICE_MAX_CONNECTIONS=1
parallint preflight --exec -- torchrun --nnodes "$SLURM_NNODES" --nproc_per_node 8 pretrain_gpt.py \\
    --tensor-model-parallel-size 8 --pipeline-model-parallel-size 4 \\
    --micro-batch-size 1 --global-batch-size 512 --bf16
"""

#: a 4.1B-parameter GPT in pure data parallelism (68.5 GiB of states per GPU): statically the GPU is
#: unknown, and the largest catalogued one holds it
BIG_SBATCH = """\
#!/bin/bash
#SBATCH --job-name=gpt-4b
parallint preflight --exec -- torchrun --nnodes "$SLURM_NNODES" --nproc_per_node "$SLURM_GPUS_ON_NODE" \\
    pretrain_gpt.py --tensor-model-parallel-size 1 --pipeline-model-parallel-size 1 \\
    --num-layers 36 --hidden-size 3072 --num-attention-heads 24 \\
    --seq-length 2048 --max-position-embeddings 2048 \\
    --micro-batch-size 1 --global-batch-size 512 --bf16 --recompute-granularity full --recompute-method uniform
"""


class Node:
    """A fake node: its repository, its programs (nvidia-smi, torchrun) and its /proc and /sys."""

    def __init__(self, tmp: Path) -> None:
        self.repo = tmp / "repo"
        self.bin = tmp / "bin"
        self.host = tmp / "hostroot"
        for d in (self.repo / ".git", self.bin, self.host):
            d.mkdir(parents=True)
        write_tree(self.repo, {"pretrain_gpt.py": MEGATRON, "gpt.sbatch": GPT_SBATCH, "big.sbatch": BIG_SBATCH})
        self._script("torchrun", 'echo "$@" > ran.txt\n')
        self.env: dict[str, str] = {}
        self.pythonpath = ""

    def _script(self, name: str, body: str, where: Path | None = None) -> None:
        p = (where or self.bin) / name
        p.write_text("#!/bin/sh\n" + body)
        p.chmod(0o755)

    def gpus(self, model: tuple[str, int], count: int, driver: str = "535.104.05") -> None:
        name, mib = model
        self._script("nvidia-smi", f'for i in $(seq {count}); do echo "{name}, {mib}, {driver}"; done\n')

    def run(self, *args: str, script: str | None = None) -> subprocess.CompletedProcess:
        """``parallint ARGS`` (or ``bash SCRIPT``) in the repository, with this node's environment."""
        env = {k: v for k, v in os.environ.items() if not _DIST.match(k)}
        env.pop("PARALLINT_DEBUG", None)
        env["PATH"] = os.pathsep.join([str(self.bin), str(BIN), "/usr/bin", "/bin"])
        env["PARALLINT_HOST_ROOT"] = str(self.host)
        if self.pythonpath:
            env["PYTHONPATH"] = self.pythonpath
        env.update(self.env)
        cmd = ["bash", script] if script else [str(BIN / "parallint"), *args]
        return subprocess.run(cmd, cwd=self.repo, capture_output=True, text=True, env=env, timeout=120)

    @property
    def ran(self) -> str | None:
        marker = self.repo / "ran.txt"
        return marker.read_text() if marker.exists() else None


@pytest.fixture
def node(tmp_path):
    return Node(tmp_path)


def _codes(text: str) -> list[str]:
    return sorted(CODE.findall(text))


def _clean(proc) -> None:
    assert "Traceback" not in proc.stderr + proc.stdout, proc.stderr


def test_the_sbatch_jobs_are_silent_when_checked_statically(node):
    p = run_cli("check", "--format", "json", "gpt.sbatch", "big.sbatch", cwd=node.repo)
    assert p.returncode == 0 and json.loads(p.stdout) == [], p.stdout + p.stderr


def test_preflight_finds_lay001_and_lch002_and_does_not_launch(node):
    node.gpus(A100_40, 4)
    node.env.update(SLURM_NNODES="2", SLURM_GPUS_ON_NODE="4", SLURM_JOB_ID="77")
    p = node.run(script="gpt.sbatch")
    _clean(p)
    assert p.returncode == 1, p.stdout + p.stderr
    assert _codes(p.stderr) == ["LAY001", "LCH002"], p.stderr
    assert "the world size is 16" in p.stderr  # 2 nodes (the environment) × 8 processes
    assert "only 4 GPU(s) requested per node (environment SLURM_GPUS_ON_NODE)" in p.stderr
    assert node.ran is None  # --exec runs nothing when there are findings


def test_preflight_without_slurm_gpus_takes_the_host_count(node):
    node.gpus(A100_40, 4)
    node.env.update(SLURM_NNODES="4")
    p = node.run("preflight", "--", "torchrun", "--nnodes", "4", "--nproc_per_node", "8", "pretrain_gpt.py")
    _clean(p)
    assert p.returncode == 1 and _codes(p.stdout) == ["LCH002"], p.stdout + p.stderr
    assert "(host nvidia-smi)" in p.stdout


def test_preflight_clean_twin_is_silent_and_launches(node):
    node.gpus(H100_80, 8)
    node.env.update(SLURM_NNODES="4", SLURM_GPUS_ON_NODE="8")
    p = node.run(script="gpt.sbatch")
    _clean(p)
    assert p.returncode == 0, p.stdout + p.stderr
    assert _codes(p.stdout + p.stderr) == []
    assert node.ran == ("--nnodes 4 --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size 8 "
                        "--pipeline-model-parallel-size 4 --micro-batch-size 1 --global-batch-size 512 --bf16\n")


def test_preflight_uses_the_cards_real_memory(node):
    node.gpus(A100_40, 8)
    node.env.update(SLURM_NNODES="2", SLURM_GPUS_ON_NODE="8")
    p = node.run(script="big.sbatch")
    _clean(p)
    assert p.returncode == 1 and _codes(p.stderr) == ["MEM001"], p.stderr
    assert "the A100-40GB's 40.0 GiB" in p.stderr and node.ran is None


def test_preflight_memory_clean_twin_launches(node):
    node.gpus(H100_80, 8)
    node.env.update(SLURM_NNODES="2", SLURM_GPUS_ON_NODE="8")
    p = node.run(script="big.sbatch")
    _clean(p)
    assert p.returncode == 0 and _codes(p.stdout + p.stderr) == [], p.stdout + p.stderr
    assert node.ran is not None and node.ran.startswith("--nnodes 2 --nproc_per_node 8 pretrain_gpt.py")


def test_exec_runs_the_command_only_when_clean(node):
    p = node.run("preflight", "--exec", "--", "sh", "-c", "echo ran > marker")
    assert p.returncode == 0, p.stdout + p.stderr
    assert (node.repo / "marker").read_text() == "ran\n"
    (node.repo / "marker").unlink()
    # the script of `sh -c` is read with the environment bound: $SLURM_NNODES is 2 there
    node.env.update(SLURM_NNODES="2")
    script = ("torchrun --nnodes $SLURM_NNODES --nproc_per_node 8 pretrain_gpt.py "
              "--tensor-model-parallel-size 8 --pipeline-model-parallel-size 4; echo ran > marker")
    p = node.run("preflight", "--exec", "--", "sh", "-c", script)
    _clean(p)
    assert p.returncode == 1 and "LAY001" in _codes(p.stderr), p.stdout + p.stderr
    assert not (node.repo / "marker").exists()


def test_exit_status_without_exec_and_a_missing_program(node):
    p = node.run("preflight", "--", "sh", "-c", "echo ran > marker")
    assert p.returncode == 0 and not (node.repo / "marker").exists()  # checked, not run
    assert "All checks passed" in p.stdout
    p = node.run("preflight", "--exec", "--", "no-such-program-parallint-test")
    assert p.returncode == 127 and "cannot run no-such-program-parallint-test" in p.stderr


def test_show_prints_the_facts_with_their_origins(node, tmp_path):
    node.gpus(A100_40, 4, driver="550.54.15")
    site = tmp_path / "env" / "site-packages"
    for dist in ("torch-2.3.1.dist-info", "deepspeed-0.14.2.dist-info", "nvidia_nccl_cu12-2.20.5.dist-info"):
        (site / dist).mkdir(parents=True)
    node.pythonpath = str(site)
    (node.host / "sys/class/infiniband/mlx5_0").mkdir(parents=True)
    write_tree(node.host, {"proc/modules": "nvidia_peermem 16384 0 - Live 0x0\nnvidia 1 0 - Live 0x0\n"})
    node.env.update(SLURM_NNODES="2", NCCL_DEBUG="INFO", NCCL_AUTH_TOKEN="hunter2", AWS_SECRET_ACCESS_KEY="s3cr3t")
    p = node.run("preflight", "--show", "--", "torchrun", "--nproc_per_node", "4", "pretrain_gpt.py",
                 "--tensor-model-parallel-size", "2")
    _clean(p)
    out = p.stdout
    assert p.returncode == 0 and node.ran is None, p.stderr
    assert "environment:  # origin: environment" in out and 'SLURM_NNODES: "2"' in out and "NCCL_DEBUG" in out
    assert "hunter2" not in out and "s3cr3t" not in out and "HOME" not in out  # never a secret, only distributed vars
    assert "gpus: 4  # nvidia-smi" in out and '"NVIDIA A100-SXM4-40GB"' in out
    assert 'driver: "550.54.15"  # nvidia-smi' in out
    assert 'torch: "2.3.1"' in out and 'deepspeed: "0.14.2"' in out and 'nccl: "2.20.5"' in out
    assert 'transformers: null' in out
    assert 'infiniband: ["mlx5_0"]' in out and "nvidia_peermem: true" in out
    # the job: nodes from the environment, the GPU and its memory from the host
    assert re.search(r"nodes: 2  # parallint-preflight\.sh:\d+ environment SLURM_NNODES", out), out
    assert re.search(r"gpu: A100-40GB  # parallint-preflight\.sh:\d+ host nvidia-smi", out), out
    assert "gpu_memory_bytes: 42949672960" in out


def test_proc_is_read_when_there_is_no_nvidia_smi(node):
    for i in range(4):
        write_tree(node.host, {f"proc/driver/nvidia/gpus/0000:0{i}:00.0/information":
                               "Model: \t\t NVIDIA A100-SXM4-40GB\nIRQ:   \t\t 42\n"})
    write_tree(node.host, {"proc/driver/nvidia/version":
                           "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023\n"})
    p = node.run("preflight", "--", "torchrun", "--nproc_per_node", "8", "pretrain_gpt.py")
    _clean(p)
    assert p.returncode == 1 and _codes(p.stdout) == ["LCH002"], p.stdout + p.stderr
    assert "(host /proc/driver/nvidia)" in p.stdout
    p = node.run("preflight", "--show", "--", "torchrun", "--nproc_per_node", "8", "pretrain_gpt.py")
    assert "gpus: 4  # /proc/driver/nvidia" in p.stdout and 'driver: "535.104.05"  # /proc/driver/nvidia/version' in p.stdout


def test_nothing_known_about_the_host_stays_silent(node):
    p = node.run("preflight", "--", "torchrun", "--nproc_per_node", "8", "pretrain_gpt.py")
    _clean(p)
    assert p.returncode == 0 and _codes(p.stdout) == [], p.stdout + p.stderr


def test_an_nvidia_smi_inside_the_repository_is_not_run(node):
    (node.repo / "tools").mkdir()
    node._script("nvidia-smi", 'touch "$(dirname "$0")/../smi-ran"\necho "NVIDIA A100-SXM4-40GB, 40960, 1"\n',
                 node.repo / "tools")
    node.bin.joinpath("torchrun").unlink()
    env_path = f"{node.repo / 'tools'}"
    node.env["PATH"] = os.pathsep.join([env_path, str(BIN), "/usr/bin", "/bin"])
    p = node.run("preflight", "--show", "--", "torchrun", "--nproc_per_node", "8", "pretrain_gpt.py")
    assert p.returncode == 0 and not (node.repo / "smi-ran").exists(), p.stdout + p.stderr
    assert "is inside the repository (not run)" in p.stdout


def test_usage_errors_exit_2(node):
    p = node.run("preflight")
    assert p.returncode == 2 and "after '--'" in p.stderr, p.stderr
    p = node.run("preflight", "--no-such-option", "--", "true")
    assert p.returncode == 2
    p = node.run("preflight", "--help")
    assert p.returncode == 0 and "--exec" in p.stdout and "--show" in p.stdout
    p = node.run("preflight", "--format", "xml", "--", "true")
    assert p.returncode == 2 and "unknown format" in p.stderr
    p = node.run("preflight", "--root", "no-such-folder", "--", "true")
    assert p.returncode == 2 and "not a folder" in p.stderr


def test_json_format_and_root_option(node, tmp_path):
    node.gpus(A100_40, 4)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if not _DIST.match(k)}
    env.update(PATH=os.pathsep.join([str(node.bin), str(BIN), "/usr/bin", "/bin"]), PARALLINT_HOST_ROOT=str(node.host))
    p = subprocess.run([str(BIN / "parallint"), "preflight", "--root", str(node.repo), "--format", "json", "--",
                        "torchrun", "--nproc_per_node", "8", "pretrain_gpt.py"], cwd=elsewhere, capture_output=True,
                       text=True, env=env, timeout=120)
    found = json.loads(p.stdout)
    assert p.returncode == 1 and [d["code"] for d in found] == ["LCH002"], p.stdout + p.stderr
    assert found[0]["path"].endswith("repo/parallint-preflight.sh")


def test_a_static_check_reads_the_command_behind_preflight(node):
    """``parallint preflight ... -- CMD`` in a script is a wrapper: ``check`` sees CMD."""
    write_tree(node.repo, {"run.sh": "#!/bin/bash\nparallint preflight --exec -- torchrun --nproc_per_node 3 "
                                     "pretrain_gpt.py --tensor-model-parallel-size 2\n"})
    p = run_cli("check", "run.sh", cwd=node.repo)
    assert p.returncode == 1 and _codes(p.stdout) == ["LAY001"], p.stdout + p.stderr


def test_a_hanging_nvidia_smi_is_stopped_and_the_gpus_stay_unknown(node):
    node._script("nvidia-smi", "sleep 60\n")
    p = node.run("preflight", "--show", "--", "torchrun", "--nproc_per_node", "8", "pretrain_gpt.py")
    assert p.returncode == 0 and "nvidia-smi took over 2 s (stopped)" in p.stdout, p.stdout + p.stderr
    p = node.run("preflight", "--", "torchrun", "--nproc_per_node", "8", "pretrain_gpt.py")
    assert p.returncode == 0 and _codes(p.stdout) == [], p.stdout + p.stderr


def test_the_environment_reaches_the_env_rules(node):
    """NCCL_IB_DISABLE=1 in the real environment of a 2-node launch is ENV001; on AWS EFA
    (libfabric's FI_PROVIDER in the environment) it is the recommended setting: silent."""
    node.env.update(SLURM_NNODES="2", NCCL_IB_DISABLE="1")
    launch = ("preflight", "--", "torchrun", "--nnodes", "2", "--nproc_per_node", "8", "pretrain_gpt.py")
    p = node.run(*launch)
    assert p.returncode == 1 and _codes(p.stdout) == ["ENV001"], p.stdout + p.stderr
    assert re.search(r"^parallint-preflight\.sh:\d+:\d+: ENV001 NCCL_IB_DISABLE=1 ", p.stdout, re.M)
    node.env["FI_PROVIDER"] = "efa"
    p = node.run(*launch)
    assert p.returncode == 0 and _codes(p.stdout) == [], p.stdout + p.stderr


def test_ib_disabled_on_a_node_without_infiniband_is_silent(node):
    """preflight reads /sys/class/infiniband: where the node has no RDMA device (a /sys/class
    without it), NCCL_IB_DISABLE=1 changes nothing and ENV001 is silent; with a device it fires."""
    node.env.update(SLURM_NNODES="2", NCCL_IB_DISABLE="1")
    (node.host / "sys/class/net/eth0").mkdir(parents=True)
    launch = ("preflight", "--", "torchrun", "--nnodes", "2", "--nproc_per_node", "8", "pretrain_gpt.py")
    p = node.run(*launch)
    assert p.returncode == 0 and _codes(p.stdout) == [], p.stdout + p.stderr
    (node.host / "sys/class/infiniband/mlx5_0").mkdir(parents=True)
    p = node.run(*launch)
    assert _codes(p.stdout) == ["ENV001"], p.stdout + p.stderr


# -- the installed versions (issue 24): origin host, they replace the repository's pins ----------
PARSER_LOCAL_RANK = """\
import argparse
import torch.distributed as dist

parser = argparse.ArgumentParser()
parser.add_argument("--local_rank", type=int, default=0)
args = parser.parse_args()
dist.init_process_group("nccl")
"""
TRAINER = """\
import torch.distributed as dist
from transformers import TrainingArguments

dist.init_process_group("nccl")
args = TrainingArguments(output_dir="out", evaluation_strategy="steps")
"""
COMPILE = "import torch\nimport torch.distributed as dist\n\ndist.init_process_group('nccl')\n" \
          "model = torch.compile(torch.nn.Linear(4, 4))\n"


def _install(node: Node, tmp: Path, *dists: str) -> None:
    """A fake environment: a site-packages folder holding the ``*.dist-info`` folders ``dists``."""
    site = tmp / "env" / "site-packages"
    if site.exists():
        for old in site.iterdir():
            old.rmdir()
    for d in dists:
        (site / f"{d}.dist-info").mkdir(parents=True)
    node.pythonpath = str(site)


def test_installed_torch_replaces_the_pin_for_lch004(node, tmp_path):
    """LCH family: a torch 1.x pin makes LCH004 the deprecation notice; the torch 2.x installed on
    the node passes --local-rank, and the parser knows only --local_rank: the crash (error)."""
    write_tree(node.repo, {"train.py": PARSER_LOCAL_RANK, "requirements.txt": "torch==1.13.1\n"})
    launch = ("preflight", "--", "python", "-m", "torch.distributed.launch", "--nproc_per_node", "1", "train.py")
    p = node.run(*launch)  # nothing installed: the pin decides
    _clean(p)
    assert _codes(p.stdout) == ["LCH004"] and "(1 info)" in p.stdout and "works here: torch==1.13.1" in p.stdout
    _install(node, tmp_path, "torch-2.3.1+cu121")
    p = node.run(*launch)
    _clean(p)
    assert p.returncode == 1 and _codes(p.stdout) == ["LCH004"], p.stdout + p.stderr
    assert "passes --local-rank=N with torch 2.3.1+cu121 installed (parallint-preflight.sh:3)" in p.stdout
    assert "(1 error)" in p.stdout and "torch==1.13.1" not in p.stdout  # the pin is not what runs
    # and the other way round: a 2.x pin, torch 1.13 installed: only the deprecation
    write_tree(node.repo, {"requirements.txt": "torch>=2.1\n"})
    _install(node, tmp_path, "torch-1.13.1")
    p = node.run(*launch)
    assert _codes(p.stdout) == ["LCH004"] and "(1 info)" in p.stdout, p.stdout + p.stderr
    assert "works here: torch 1.13.1 installed" in p.stdout


def test_installed_torch_too_old_for_torchrun_is_lch020(node, tmp_path):
    launch = ("preflight", "--", "torchrun", "--nproc_per_node", "1", "pretrain_gpt.py")
    _install(node, tmp_path, "torch-1.9.1")
    p = node.run(*launch)
    _clean(p)
    assert p.returncode == 1 and _codes(p.stdout) == ["LCH020"], p.stdout + p.stderr
    assert "the job runs torch 1.9.1 installed (parallint-preflight.sh:3)" in p.stdout
    _install(node, tmp_path, "torch-1.10.0")
    assert _codes(node.run(*launch).stdout) == []


def test_installed_transformers_decides_cfg010(node, tmp_path):
    """CFG family: a range across the rename is silent statically; the installed release decides."""
    write_tree(node.repo, {"train.py": TRAINER, "requirements.txt": "transformers>=4.30\n"})
    launch = ("preflight", "--", "torchrun", "--nproc_per_node", "1", "train.py")
    assert _codes(node.run(*launch).stdout) == []
    _install(node, tmp_path, "transformers-4.52.0")
    p = node.run(*launch)
    _clean(p)
    assert p.returncode == 1 and _codes(p.stdout) == ["CFG010"], p.stdout + p.stderr
    assert "evaluation_strategy is not an argument of transformers 4.52.0 installed" in p.stdout
    _install(node, tmp_path, "transformers-4.40.2")
    assert _codes(node.run(*launch).stdout) == []


def test_installed_torch_build_against_the_real_gpu_is_env006(node, tmp_path):
    """ENV family: the host's H100 (nvidia-smi) and the torch installed there, built for CUDA 11.3."""
    node.gpus(H100_80, 1)
    launch = ("preflight", "--", "torchrun", "--nproc_per_node", "1", "pretrain_gpt.py")
    _install(node, tmp_path, "torch-1.12.1+cu113")
    p = node.run(*launch)
    _clean(p)
    assert p.returncode == 1 and _codes(p.stdout) == ["ENV006"], p.stdout + p.stderr
    assert "torch 1.12.1+cu113 installed (a +cu113 build)" in p.stdout
    _install(node, tmp_path, "torch-2.3.1+cu121")
    assert _codes(node.run(*launch).stdout) == []


def test_installed_torch_reaches_the_scripts_file_rules(node, tmp_path):
    """ENV010 is a file rule on the launched script: preflight runs the file rules on every file
    the job takes in, with the installed torch."""
    write_tree(node.repo, {"train.py": COMPILE, "requirements.txt": "torch\n"})
    launch = ("preflight", "--", "torchrun", "--nproc_per_node", "1", "train.py")
    assert _codes(node.run(*launch).stdout) == []
    _install(node, tmp_path, "torch-1.13.1")
    p = node.run(*launch)
    _clean(p)
    assert p.returncode == 1 and _codes(p.stdout) == ["ENV010"], p.stdout + p.stderr
    assert re.search(r"^train\.py:5:\d+: ENV010 torch\.compile came with torch 2\.0, and the job runs torch "
                     r"1\.13\.1 installed", p.stdout, re.M)


def test_installed_versions_are_not_used_when_the_command_runs_in_an_image(node, tmp_path):
    _install(node, tmp_path, "torch-1.9.1")
    launch = ("preflight", "--", "srun", "--container-image=nvcr.io#nvidia/pytorch:23.10-py3",
              "torchrun", "--nproc_per_node", "1", "pretrain_gpt.py")
    p = node.run(*launch)
    _clean(p)
    assert p.returncode == 0 and _codes(p.stdout) == [], p.stdout + p.stderr
    p = node.run("preflight", "--show", *launch[1:])
    assert "the installed versions are not used: the command names a container image" in p.stdout
    assert "version.torch: ==2.1.0" in p.stdout  # the image's (NGC 23.10), not the 1.9.1 installed here


def test_installed_deepspeed_decides_cfg011(node, tmp_path):
    """CFG011 (a file rule on the config the command names) with the DeepSpeed installed on the
    node: ZeRO++'s keys came with 0.10.0, and 0.9.5's zero_optimization rejects them."""
    write_tree(node.repo, {"train.py": MEGATRON, "requirements.txt": "deepspeed>=0.9\n",
                           "ds.json": '{\n  "train_micro_batch_size_per_gpu": 1,\n  "zero_optimization": '
                                      '{"stage": 3, "zero_quantized_weights": true}\n}\n'})
    launch = ("preflight", "--", "deepspeed", "--num_gpus", "1", "train.py", "--deepspeed_config", "ds.json")
    assert _codes(node.run(*launch).stdout) == []  # a range across 0.10.0: silent
    _install(node, tmp_path, "deepspeed-0.9.5")
    p = node.run(*launch)
    _clean(p)
    assert p.returncode == 1 and _codes(p.stdout) == ["CFG011"], p.stdout + p.stderr
    assert "zero_optimization.zero_quantized_weights is not a key of deepspeed 0.9.5 installed" in p.stdout
    _install(node, tmp_path, "deepspeed-0.10.0")
    assert _codes(node.run(*launch).stdout) == []
