"""ENV001 nccl-transport-disabled: NCCL_P2P_DISABLE, NCCL_SHM_DISABLE or (multi-node) NCCL_IB_DISABLE set for a training launch."""

from __future__ import annotations

from typing import Iterable

from parallint.model.diagnostics import Diagnostic, Severity
from parallint.model.launches import (
    LAUNCH_FILE_KINDS, effective_nodes, launches, procs_per_node,
)
from parallint.model.rule import Example, Rule
from parallint.rules.env._common import _env_items


TRAINING_LAUNCHERS = frozenset({"torchrun", "torch.distributed.run", "torch.distributed.launch", "deepspeed",
                                "accelerate", "composer", "colossalai", "python", "srun", "mpirun", "pytorchjob", "trainjob",
                                "mpijob", "volcano"})


def _net_plugin(la, f) -> bool:
    """The job sends inter-node traffic through a NCCL net plugin (AWS EFA through aws-ofi-nccl and
    libfabric: ``FI_PROVIDER``, ``FI_EFA_*``, ``OFI_NCCL_*``; ``NCCL_NET``/``NCCL_NET_PLUGIN``): NCCL's
    own InfiniBand transport is not what carries it, and disabling it is the recommended setting."""
    names = {k for k, _ in _env_items(la)}
    data = getattr(f, "data", None)
    names.update(getattr(data, "exports", {}) or {})
    names.update(k for k, _ in getattr(data, "assignments", []) or [])
    return any(k.startswith(("FI_", "OFI_NCCL_")) or k in ("NCCL_NET", "NCCL_NET_PLUGIN") for k in names)


def _no_infiniband(la) -> bool:
    """The node is known to have no InfiniBand device (``parallint preflight`` read
    /sys/class/infiniband): disabling NCCL's IB transport changes nothing there."""
    from parallint.model.launches import stated

    v = stated(la, "hardware.infiniband_devices")
    return v is not None and v.known and v.value == 0


def _one_process_per_node(la) -> bool:
    """The launch is known to start one process per node: NCCL's peer-to-peer and shared-memory
    transports carry traffic between processes on one node, so there is nothing to slow down."""
    v = procs_per_node(la)
    return v is not None and v.known and v.value == 1


class NcclTransportDisabled(Rule):
    code = "ENV001"
    name = "nccl-transport-disabled"
    severity = Severity.WARNING
    summary = "NCCL_P2P_DISABLE, NCCL_SHM_DISABLE or (multi-node) NCCL_IB_DISABLE set for a training launch."
    kinds = LAUNCH_FILE_KINDS
    facts = frozenset({"hardware.infiniband_devices"})
    doc = """
    ## What it does
    Reports `NCCL_P2P_DISABLE=1` or `NCCL_SHM_DISABLE=1` in the environment of a training launch
    that starts more than one process per node (or an unknown number; with one process per node,
    as in `torchrun --nproc_per_node 1`, these transports carry nothing), and `NCCL_IB_DISABLE=1` when the launch spans more than one node (within a node InfiniBand is
    not used anyway). `NCCL_IB_DISABLE=1` is not reported when the job uses a NCCL net plugin (AWS
    EFA through aws-ofi-nccl: `FI_PROVIDER`, `FI_EFA_*`, `OFI_NCCL_*`, or
    `NCCL_NET`/`NCCL_NET_PLUGIN`): the plugin, not NCCL's InfiniBand transport, carries the
    inter-node traffic there, nor when `parallint preflight` finds that the node has no
    InfiniBand device.

    ## Why it matters
    These switches are debugging workarounds. With P2P disabled, intra-node traffic goes through
    host memory instead of NVLink; with IB disabled, inter-node traffic falls back to TCP sockets.
    Collectives become several times slower and nothing reports it.

    ## Example

    ## How to fix
    Remove the variable, or keep it only on the machines that need it (e.g. consumer GPUs without
    P2P support) with a comment and `# noqa: ENV001`.
    """
    valid = (
        Example("""
        #!/bin/bash
        export NCCL_DEBUG=INFO
        export NCCL_P2P_DISABLE=0
        torchrun --nproc_per_node=8 train.py
        """, filename="run.sh"),
        Example("""
        #!/bin/bash
        export NCCL_IB_DISABLE=1
        torchrun --nnodes=1 --nproc_per_node=8 train.py
        """, filename="run.sh"),
        Example("""
        #!/bin/bash
        export NCCL_P2P_DISABLE=1
        NUM_GPUS=1
        torchrun --nnodes 1 --nproc_per_node $NUM_GPUS train.py
        """, filename="run.sh"),
        Example("""
        #!/bin/bash
        #SBATCH --nodes=2
        export FI_PROVIDER=efa
        export FI_EFA_USE_DEVICE_RDMA=1
        export NCCL_IB_DISABLE=1
        srun torchrun --nnodes=2 --nproc_per_node=8 train.py
        """, filename="train.sbatch"),
    )
    invalid = (
        Example("""
        #!/bin/bash
        export NCCL_P2P_DISABLE=1
        torchrun --nproc_per_node=8 train.py
        """, filename="run.sh", line=2),
        Example("""
        #!/bin/bash
        #SBATCH --nodes=2
        export NCCL_IB_DISABLE=1
        srun torchrun --nnodes=2 --nproc_per_node=8 train.py
        """, filename="train.sbatch", line=3),
    )

    def check_file(self, f, ctx) -> Iterable[Diagnostic]:
        seen = set()
        for la in launches(f):
            if la.launcher not in TRAINING_LAUNCHERS:
                continue
            for name, v in _env_items(la):
                if name not in ("NCCL_P2P_DISABLE", "NCCL_SHM_DISABLE", "NCCL_IB_DISABLE"):
                    continue
                if not v.known or str(v.value).strip() not in ("1", "true", "True", "TRUE"):
                    continue
                if name != "NCCL_IB_DISABLE" and _one_process_per_node(la):
                    continue
                if name == "NCCL_IB_DISABLE":
                    n = effective_nodes(la)
                    if n is None or n <= 1 or _net_plugin(la, f) or _no_infiniband(la):
                        continue
                key = (name, v.span)
                if key in seen:
                    continue
                seen.add(key)
                what = {"NCCL_P2P_DISABLE": "GPU peer-to-peer (NVLink/PCIe) transfers",
                        "NCCL_SHM_DISABLE": "shared-memory transfers",
                        "NCCL_IB_DISABLE": "InfiniBand/RoCE between nodes"}[name]
                yield self.report(v.span or la.span, f"{name}={v.value} turns off {what}: collectives fall back "
                                                     f"to a slower path; remove {name} (or set it only while debugging)")
