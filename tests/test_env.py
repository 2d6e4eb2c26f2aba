"""ENV rules beyond their examples."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from parallint.readers import kube, shell
from conftest import rule_family

env = rule_family("env")


def sh(text: str, tmp: Path | None = None, name: str = "run.sh"):
    text = textwrap.dedent(text).lstrip("\n")
    p = (tmp / name) if tmp else Path("/nonexistent") / name
    if tmp:
        p.write_text(text)
    return shell.read(name, p, text)


def run(rule, ff):
    return list(rule().check_file(ff, None))


def test_env001_reported_once_per_assignment():
    ff = sh("""
        export NCCL_SHM_DISABLE=1
        torchrun --nproc_per_node 8 a.py
        torchrun --nproc_per_node 8 b.py
        """)
    (d,) = run(env.NcclTransportDisabled, ff)
    assert d.span.line == 1 and "NCCL_SHM_DISABLE" in d.message


def test_env001_unexported_or_unknown_is_silent():
    ff = sh("""
        NCCL_P2P_DISABLE=1
        export NCCL_SHM_DISABLE=$SHM
        torchrun --nproc_per_node 8 a.py
        """)
    assert run(env.NcclTransportDisabled, ff) == []


def test_env002_srun_and_deepspeed_not_checked():
    ff = sh("""
        export CUDA_VISIBLE_DEVICES=0
        srun torchrun --nproc_per_node 8 a.py
        deepspeed --num_gpus 8 a.py
        """)
    assert run(env.VisibleDevicesFewerThanProcs, ff) == []


def test_env002_reports_at_the_variable_with_nproc_related():
    ff = sh("""
        NPROC=4
        CUDA_VISIBLE_DEVICES=0,1 torchrun --nproc_per_node $NPROC a.py
        """)
    (d,) = run(env.VisibleDevicesFewerThanProcs, ff)
    assert d.span.line == 2 and d.related[0].line == 1


@pytest.mark.parametrize("value,fires", [("lo", True), ("=lo", True), ("lo,lo0", True), ("^lo", False),
                                         ("eth0", False), ("lo,eth0", False), ("$IFACE", False)])
def test_env003_loopback_values(value, fires):
    ff = sh(f"""
        #SBATCH --nodes=2
        export NCCL_SOCKET_IFNAME={value}
        srun torchrun --nnodes 2 --nproc_per_node 8 a.py
        """)
    assert bool(run(env.NcclSocketLoopback, ff)) is fires


def test_env003_kube_multi_node():
    text = textwrap.dedent("""
        apiVersion: kubeflow.org/v1
        kind: PyTorchJob
        metadata: {name: j}
        spec:
          pytorchReplicaSpecs:
            Master:
              replicas: 1
              template: {spec: {containers: [{name: pytorch, image: i, command: [torchrun, t.py],
                         env: [{name: NCCL_SOCKET_IFNAME, value: lo}]}]}}
            Worker:
              replicas: 1
              template: {spec: {containers: [{name: pytorch, image: i, command: [torchrun, t.py]}]}}
        """).lstrip()
    ff = kube.read("job.yaml", Path("/nonexistent/job.yaml"), text)
    assert len(run(env.NcclSocketLoopback, ff)) == 1


MEGATRON = "torchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size 2 --num-layers 4 {extra}\n"


@pytest.mark.parametrize("extra", ["--use-torch-fsdp2", "--deepspeed --deepspeed_config ds.json",
                                   "--overlap-moe-expert-parallel-comm", "$MORE_ARGS"])
def test_env004_exemptions(extra):
    ff = sh("export NCCL_DEBUG=WARN\n" + MEGATRON.format(extra=extra))
    assert run(env.CudaDeviceMaxConnections, ff) == []


def test_env004_needs_a_file_that_manages_its_environment():
    no_exports = sh(MEGATRON.format(extra=""))
    assert run(env.CudaDeviceMaxConnections, no_exports) == []
    tp1 = sh("export NCCL_DEBUG=WARN\n" + MEGATRON.format(extra="").replace("size 2", "size 1"))
    assert run(env.CudaDeviceMaxConnections, tp1) == []


def test_env004_set_but_not_exported(tmp_path):
    ff = sh("export NCCL_DEBUG=WARN\nCUDA_DEVICE_MAX_CONNECTIONS=1\n" + MEGATRON.format(extra=""))
    (d,) = run(env.CudaDeviceMaxConnections, ff)
    assert "not exported" in d.message


def test_env004_followed_source_that_sets_it(tmp_path):
    (tmp_path / "env.sh").write_text("export CUDA_DEVICE_MAX_CONNECTIONS=1\n")
    ff = sh("source env.sh\nexport NCCL_DEBUG=WARN\n" + MEGATRON.format(extra=""), tmp_path)
    assert run(env.CudaDeviceMaxConnections, ff) == []


@pytest.mark.parametrize("name,fires", [("NCCL_SOCKET_IFNAM", True), ("NCCL_IB_DISABLED", True),
                                        ("TORCH_NCCL_ASYNC_ERROR_HANDLIN", True), ("NCCL_DEBUG", False),
                                        ("NCCL_ASYNC_ERROR_HANDLING", False), ("NCCL_MY_CLUSTER_THING", False),
                                        ("NCCL_IB_HCA", False), ("TORCH_NCCL_DUMP_ON_TIMEOUT", False)])
def test_env005_typos_only(name, fires):
    ff = sh(f"export {name}=1\ntorchrun --nproc_per_node 2 a.py\n")
    found = run(env.UnknownNcclVariable, ff)
    assert bool(found) is fires
    if fires:
        assert "; rename it to " in found[0].message
