"""ENV: environment variables at a training launch (NCCL transports, visible devices, Megatron's
CUDA_DEVICE_MAX_CONNECTIONS, NCCL variable typos)."""

from __future__ import annotations

import difflib
from typing import Iterable

from parallint.model.diagnostics import Diagnostic, Severity
from parallint.model.facts import Value, known_int
from parallint.model.rule import Example, Rule
from parallint.model.launches import (
    LAUNCH_FILE_KINDS, OPERATOR_ENV, effective_nodes, launches, procs_per_node, related_at,
)

TRAINING_LAUNCHERS = frozenset({"torchrun", "torch.distributed.run", "torch.distributed.launch", "deepspeed",
                                "accelerate", "composer", "colossalai", "python", "srun", "mpirun", "pytorchjob", "trainjob",
                                "mpijob", "volcano"})


def _env_items(la) -> Iterable[tuple[str, Value]]:
    seen = set()
    w = la
    while w is not None:
        for k, v in w.env.items():
            if k not in seen:
                seen.add(k)
                yield k, v
        w = w.wrapper


class NcclTransportDisabled(Rule):
    code = "ENV001"
    name = "nccl-transport-disabled"
    severity = Severity.WARNING
    summary = "NCCL_P2P_DISABLE, NCCL_SHM_DISABLE or (multi-node) NCCL_IB_DISABLE set for a training launch."
    kinds = LAUNCH_FILE_KINDS
    doc = """
    ## What it does
    Reports `NCCL_P2P_DISABLE=1` or `NCCL_SHM_DISABLE=1` in the environment of a training launch,
    and `NCCL_IB_DISABLE=1` when the launch spans more than one node (within a node InfiniBand is
    not used anyway). `NCCL_IB_DISABLE=1` is not reported when the job uses a NCCL net plugin (AWS
    EFA through aws-ofi-nccl: `FI_PROVIDER`, `FI_EFA_*`, `OFI_NCCL_*`, or
    `NCCL_NET`/`NCCL_NET_PLUGIN`): the plugin, not NCCL's InfiniBand transport, carries the
    inter-node traffic there.

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
                if name == "NCCL_IB_DISABLE":
                    n = effective_nodes(la)
                    if n is None or n <= 1 or _net_plugin(la, f):
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


def _net_plugin(la, f) -> bool:
    """The job sends inter-node traffic through a NCCL net plugin (AWS EFA through aws-ofi-nccl and
    libfabric: ``FI_PROVIDER``, ``FI_EFA_*``, ``OFI_NCCL_*``; ``NCCL_NET``/``NCCL_NET_PLUGIN``): NCCL's
    own InfiniBand transport is not what carries it, and disabling it is the recommended setting."""
    names = {k for k, _ in _env_items(la)}
    data = getattr(f, "data", None)
    names.update(getattr(data, "exports", {}) or {})
    names.update(k for k, _ in getattr(data, "assignments", []) or [])
    return any(k.startswith(("FI_", "OFI_NCCL_")) or k in ("NCCL_NET", "NCCL_NET_PLUGIN") for k in names)


class VisibleDevicesFewerThanProcs(Rule):
    code = "ENV002"
    facts = frozenset({"parallel.world_size"})
    name = "visible-devices-fewer-than-procs"
    severity = Severity.ERROR
    summary = "CUDA_VISIBLE_DEVICES lists fewer devices than the processes started per node."
    kinds = LAUNCH_FILE_KINDS
    doc = """
    ## What it does
    Counts the devices in a literal `CUDA_VISIBLE_DEVICES` set for `torchrun`,
    `torch.distributed.launch` or `accelerate launch` and compares with the processes per node.
    (Under `srun` with a GPU request Slurm sets the variable itself; `deepspeed` ignores it when
    `--num_gpus`/`--include` are given, so neither is checked.)

    ## Why it matters
    Local ranks beyond the visible devices call `set_device(LOCAL_RANK)` on a device that does not
    exist ("invalid device ordinal") or, without `set_device`, pile onto the same GPU.

    ## Example

    ## How to fix
    List one device per process, or lower `--nproc_per_node`.
    """
    valid = (
        Example("""
        #!/bin/bash
        CUDA_VISIBLE_DEVICES=0,1,2,3 torchrun --nproc_per_node=4 train.py
        """, filename="run.sh"),
        Example("""
        #!/bin/bash
        export CUDA_VISIBLE_DEVICES=$GPUS
        torchrun --nproc_per_node=4 train.py
        """, filename="run.sh"),
    )
    invalid = (
        Example("""
        #!/bin/bash
        export CUDA_VISIBLE_DEVICES=0,1
        torchrun --nproc_per_node=4 train.py
        """, filename="run.sh", line=2),
        Example("""
        #!/bin/bash
        CUDA_VISIBLE_DEVICES=0 accelerate launch --num_processes 2 --num_machines 1 train.py
        """, filename="run.sh", line=2),
    )

    def check_file(self, f, ctx) -> Iterable[Diagnostic]:
        for la in launches(f):
            if la.launcher not in ("torchrun", "torch.distributed.run", "torch.distributed.launch", "accelerate"):
                continue
            if la.wrapper is not None and la.wrapper.launcher == "srun":
                continue
            v = la.env.get("CUDA_VISIBLE_DEVICES")
            if v is None or not v.known:
                continue
            devs = [d for d in str(v.value).split(",") if d.strip()]
            if not devs:
                continue
            p = procs_per_node(la)
            if p is None and la.launcher == "accelerate":
                ws = la.facts.get("parallel.world_size")
                if ws is not None and "num_machines" not in la.options:
                    p = ws
            pi = known_int(p)
            if pi is None or pi <= len(devs):
                continue
            assert p is not None  # known_int(None) is None
            yield self.report(
                v.span or la.span,
                f"CUDA_VISIBLE_DEVICES={v.value} shows {len(devs)} device(s) but {pi} processes start on this node "
                f"({p.source}); list {pi} devices or start {len(devs)} "
                f"{'process' if len(devs) == 1 else 'processes'} per node",
                related=related_at(p, f"{p.source} = {pi}"),
            )


def _loopback_only(value: str) -> bool:
    items = [i.strip() for i in value.split(",") if i.strip()]
    if not items or any(i.startswith("^") for i in items):
        return False
    return all(i.lstrip("=").startswith("lo") and i.lstrip("=")[2:].isdigit() or i.lstrip("=") == "lo"
               for i in items)


class NcclSocketLoopback(Rule):
    code = "ENV003"
    name = "nccl-socket-loopback"
    severity = Severity.ERROR
    summary = "NCCL_SOCKET_IFNAME selects only the loopback interface for a multi-node launch."
    kinds = LAUNCH_FILE_KINDS
    doc = """
    ## What it does
    Reports `NCCL_SOCKET_IFNAME=lo` (or a list of only loopback interfaces) in the environment of a
    launch that spans more than one node.

    ## Why it matters
    NCCL's bootstrap and socket transport then listen on 127.0.0.1, which no other node can reach:
    the first collective hangs or fails with "Connection refused" (pytorch#52916).

    ## Example

    ## How to fix
    Name the cluster network interface (`eth0`, `ib0`, `bond0`), or exclude loopback with
    `NCCL_SOCKET_IFNAME=^lo,docker`.
    """
    valid = (
        Example("""
        #!/bin/bash
        #SBATCH --nodes=2
        export NCCL_SOCKET_IFNAME=^lo,docker0
        srun torchrun --nnodes=2 --nproc_per_node=8 train.py
        """, filename="train.sbatch"),
        Example("""
        #!/bin/bash
        export NCCL_SOCKET_IFNAME=lo
        torchrun --standalone --nnodes=1 --nproc_per_node=8 train.py
        """, filename="run.sh"),
    )
    invalid = (
        Example("""
        #!/bin/bash
        #SBATCH --nodes=2
        export NCCL_SOCKET_IFNAME=lo
        srun torchrun --nnodes=2 --nproc_per_node=8 train.py
        """, filename="train.sbatch", line=3),
    )

    def check_file(self, f, ctx) -> Iterable[Diagnostic]:
        seen = set()
        for la in launches(f):
            n = effective_nodes(la)
            if n is None or n <= 1:
                continue
            for name, v in _env_items(la):
                if name != "NCCL_SOCKET_IFNAME" or not v.known or v.span in seen:
                    continue
                if _loopback_only(str(v.value)):
                    seen.add(v.span)
                    yield self.report(v.span or la.span,
                                      f"NCCL_SOCKET_IFNAME={v.value} keeps NCCL on the loopback interface but the "
                                      f"job spans {n} nodes: the other nodes cannot connect; set it to the interface "
                                      f"between the nodes (e.g. eth0, ib0) or unset it")


BLACKWELL_PREFIXES = ("b100", "b200", "b300", "gb200", "gb300", "rtx50", "rtx pro 6000")


def _pre_blackwell(gpu: Value | None) -> bool:
    if gpu is None or not gpu.known:
        return True  # unknown GPU: Megatron's check applies to every architecture before Blackwell
    name = str(gpu.value).lower().replace("nvidia-", "").replace("nvidia ", "")
    return not name.startswith(BLACKWELL_PREFIXES)


class CudaDeviceMaxConnections(Rule):
    code = "ENV004"
    facts = frozenset({"framework", "hardware.gpu", "parallel.cp", "parallel.tp"})
    name = "cuda-device-max-connections"
    severity = Severity.WARNING
    summary = "Megatron with TP > 1 or CP > 1 launched without CUDA_DEVICE_MAX_CONNECTIONS=1."
    kinds = frozenset({"shell", "kube"})
    doc = """
    ## What it does
    For a Megatron-LM launch (Megatron arguments on the command line) with tensor or context
    parallelism > 1 on a GPU before Blackwell (or an unknown GPU), checks that the environment has
    `CUDA_DEVICE_MAX_CONNECTIONS=1`. Only launch files that manage the environment themselves are
    checked: the file exports variables (or the container sets `env`) and sources no file
    parallint cannot follow. Launches with `--use-torch-fsdp2`, `--use-megatron-fsdp` or
    `--overlap-moe-expert-parallel-comm` (which want more connections) and DeepSpeed's Megatron fork
    (`--deepspeed`) are not checked.

    ## Why it matters
    Megatron's argument validation asserts "Using tensor model parallelism or context parallelism
    require setting the environment variable CUDA_DEVICE_MAX_CONNECTIONS to 1" in every rank, after
    the nodes have been allocated and the containers started.

    ## Example

    ## How to fix
    `export CUDA_DEVICE_MAX_CONNECTIONS=1` before the launch.
    """
    valid = (
        Example("""
        #!/bin/bash
        export CUDA_DEVICE_MAX_CONNECTIONS=1
        torchrun --nproc_per_node=8 pretrain_gpt.py --tensor-model-parallel-size 8 --num-layers 24
        """, filename="run.sh"),
        Example("""
        #!/bin/bash
        source ./cluster_env.sh
        export NCCL_DEBUG=WARN
        torchrun --nproc_per_node=8 pretrain_gpt.py --tensor-model-parallel-size 8 --num-layers 24
        """, filename="run.sh"),
        Example("""
        #!/bin/bash
        #SBATCH --gres=gpu:b200:8
        export NCCL_DEBUG=WARN
        srun torchrun --nproc_per_node=8 pretrain_gpt.py --tensor-model-parallel-size 8 --num-layers 24
        """, filename="run.sh"),
    )
    invalid = (
        Example("""
        #!/bin/bash
        export NCCL_DEBUG=WARN
        torchrun --nproc_per_node=8 pretrain_gpt.py --tensor-model-parallel-size 8 --num-layers 24
        """, filename="run.sh", line=3),
        Example("""
        #!/bin/bash
        export CUDA_DEVICE_MAX_CONNECTIONS=32
        torchrun --nproc_per_node=8 pretrain_gpt.py --context-parallel-size 2 --num-layers 24
        """, filename="run.sh", line=2),
    )

    def check_file(self, f, ctx) -> Iterable[Diagnostic]:
        data = f.data
        if f.kind == "shell":
            if data is None or not getattr(data, "exports", None) or data.sources:
                return
        for la in launches(f):
            fw = la.facts.get("framework")
            if fw is None or fw.value != "megatron":
                continue
            tp, cp = la.facts.int("parallel.tp"), la.facts.int("parallel.cp")
            if not ((tp or 1) > 1 or (cp or 1) > 1):
                continue
            if not _pre_blackwell(la.facts.get("hardware.gpu")):
                continue
            words = {a.value for a in la.args if a.known and isinstance(a.value, str)}
            if words & {"--use-torch-fsdp2", "--use-megatron-fsdp", "--overlap-moe-expert-parallel-comm",
                        "--deepspeed", "--deepspeed_config", "--deepspeed-config"}:
                continue
            if any(not a.known and a.source == "splat" for a in la.args):
                continue  # an unexpanded $ARGS may carry any of those
            if f.kind == "kube":
                if not any(k not in OPERATOR_ENV for k in la.env):
                    continue  # the container sets no environment of its own
            env = dict(_env_items(la))
            v = env.get("CUDA_DEVICE_MAX_CONNECTIONS")
            what = "TP=%s" % tp if (tp or 1) > 1 else "CP=%s" % cp
            if v is None:
                set_not_exported = any(n == "CUDA_DEVICE_MAX_CONNECTIONS" for n, _ in getattr(data, "assignments", []))
                extra = " (it is set but not exported)" if set_not_exported else ""
                yield self.report(la.span, f"Megatron with {what} requires CUDA_DEVICE_MAX_CONNECTIONS=1 in the "
                                           f"environment{extra}; its argument check stops every rank; export "
                                           f"CUDA_DEVICE_MAX_CONNECTIONS=1 before the launch")
            elif v.known and str(v.value).strip() != "1":
                yield self.report(v.span or la.span, f"CUDA_DEVICE_MAX_CONNECTIONS={v.value}, but Megatron with {what} "
                                                     f"requires 1; its argument check stops every rank; set it to 1")


TORCH_NCCL = frozenset("""
TORCH_NCCL_ASYNC_ERROR_HANDLING TORCH_NCCL_BLOCKING_WAIT TORCH_NCCL_DUMP_ON_TIMEOUT TORCH_NCCL_DESYNC_DEBUG
TORCH_NCCL_ENABLE_TIMING TORCH_NCCL_ENABLE_MONITORING TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC TORCH_NCCL_TRACE_BUFFER_SIZE
TORCH_NCCL_TRACE_CPP_STACK TORCH_NCCL_WAIT_TIMEOUT_DUMP_MILSEC TORCH_NCCL_DEBUG_INFO_TEMP_FILE
TORCH_NCCL_DEBUG_INFO_PIPE_FILE TORCH_NCCL_AVOID_RECORD_STREAMS TORCH_NCCL_USE_COMM_NONBLOCKING TORCH_NCCL_NAN_CHECK
TORCH_NCCL_COORD_CHECK_MILSEC TORCH_NCCL_LOG_CPP_STACK_ON_UNCLEAN_SHUTDOWN TORCH_NCCL_ABORT_IN_DESTROY_PG
TORCH_NCCL_CUDA_EVENT_CACHE TORCH_NCCL_USE_TENSOR_REGISTER_ALLOCATOR_HOOK TORCH_NCCL_HIGH_PRIORITY
TORCH_NCCL_PROPAGATE_ERROR TORCH_NCCL_EXTRA_DUMP_ON_EXEC TORCH_NCCL_RETHROW_CUDA_ERRORS TORCH_NCCL_ENABLE_NAN_CHECK
TORCH_NCCL_DUMP_DEBUG_INFO TORCH_NCCL_SHOULD_DUMP_ON_TIMEOUT TORCH_NCCL_TRACE_BUFFER TORCH_NCCL_BCAST_UNIQUEID
TORCH_NCCL_RAS_ENABLE TORCH_NCCL_ENABLE_NONBLOCKING TORCH_NCCL_EAGER_INIT TORCH_NCCL_DEBUG_INFO_FILE
TORCH_NCCL_WAIT_TIMEOUT_DUMP_MILSEC TORCH_NCCL_DUMP_TRACE TORCH_NCCL_ENABLE_COMM_SPLIT TORCH_NCCL_CHECK_NAN
""".split())


class UnknownNcclVariable(Rule):
    code = "ENV005"
    name = "unknown-nccl-variable"
    severity = Severity.WARNING
    summary = "An NCCL_*/TORCH_NCCL_* variable that NCCL and PyTorch do not know (a typo), with a did-you-mean."
    kinds = LAUNCH_FILE_KINDS
    doc = """
    ## What it does
    Reports an `NCCL_*` or `TORCH_NCCL_*` variable assigned in a launch file (shell, Makefile,
    Kubernetes `env`) whose name NCCL and PyTorch do not read, when it is one or two letters away
    from one they do read.

    ## Why it matters
    NCCL never checks its environment for typos: `NCCL_SOCKET_IFNAM=eth0` or
    `NCCL_IB_DISABLED=1` is silently ignored and the job runs with the default the user meant to
    change — usually discovered while debugging a hang on the wrong interface.

    ## Example

    ## How to fix
    Use the name suggested in the message (`NCCL_SOCKET_IFNAME`).
    """
    valid = (
        Example("""
        #!/bin/bash
        export NCCL_SOCKET_IFNAME=eth0
        export NCCL_DEBUG=INFO
        export TORCH_NCCL_ASYNC_ERROR_HANDLING=1
        torchrun --nproc_per_node=8 train.py
        """, filename="run.sh"),
    )
    invalid = (
        Example("""
        #!/bin/bash
        export NCCL_SOCKET_IFNAM=eth0
        torchrun --nproc_per_node=8 train.py
        """, filename="run.sh", line=2),
        Example("""
        apiVersion: kubeflow.org/v1
        kind: PyTorchJob
        metadata: {name: typo}
        spec:
          pytorchReplicaSpecs:
            Master:
              replicas: 1
              template:
                spec:
                  containers:
                    - name: pytorch
                      image: img
                      command: [torchrun, --nproc_per_node=8, train.py]
                      env:
                        - name: NCCL_IB_DISABLED
                          value: "1"
        """, filename="job.yaml", line=15),
    )

    def check_file(self, f, ctx) -> Iterable[Diagnostic]:
        cands: list[tuple[str, Value]] = []
        data = f.data
        for name, v in getattr(data, "assignments", []) or []:
            cands.append((name, v))
        for la in launches(f):
            for name, v in _env_items(la):
                cands.append((name, v))
        seen = set()
        for name, v in cands:
            if not (name.startswith("NCCL_") or name.startswith("TORCH_NCCL_")):
                continue
            if name in NCCL_KNOWN or name in TORCH_NCCL or v.span is None:
                continue
            key = (name, v.span.path, v.span.line)
            if key in seen:
                continue
            seen.add(key)
            pool = TORCH_NCCL if name.startswith("TORCH_NCCL_") else NCCL_DOCUMENTED
            close = difflib.get_close_matches(name, list(pool), n=1, cutoff=0.88)
            if not close or _edit_distance(name, close[0]) > 2:
                continue
            yield self.report(v.span, f"{name} is not a variable NCCL or PyTorch reads; rename it to {close[0]}")


def _edit_distance(a: str, b: str) -> int:
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


# Names NCCL reads (NCCL_PARAM definitions and getenv calls in NVIDIA/nccl src/, plus every NCCL_*
# identifier there and a few historical/PyTorch-era names), so that only near-misses are reported.
NCCL_KNOWN = frozenset("""
NCCL_ALGO NCCL_ALGO_ NCCL_ALGO_COLLNET_CHAIN NCCL_ALGO_COLLNET_DIRECT NCCL_ALGO_NVLS
NCCL_ALGO_NVLS_TREE NCCL_ALGO_PAT NCCL_ALGO_PROTO_IGNORE NCCL_ALGO_RING NCCL_ALGO_TREE
NCCL_ALGO_UNDEF NCCL_ALL NCCL_ALLGATHERV_ENABLE NCCL_ALLGATHERV_SCHED_H_ NCCL_ALLOC
NCCL_ALLOCATOR_H_ NCCL_ALLOC_HOST NCCL_ALLOC_H_ NCCL_ALLOC_P2P_NET_LL_BUFFERS
NCCL_AMPERE_COMPCAP_IDX NCCL_API NCCL_API_MAGIC NCCL_ARGCHECK_H_ NCCL_ASYNC_ERROR_HANDLING
NCCL_BITOPS_H_ NCCL_BLACKWELL_COMPCAP_IDX NCCL_BLOCKING_WAIT NCCL_BOOTSTRAP NCCL_BOOTSTRAP_H_
NCCL_BUFFSIZE NCCL_BUILD_MLX5DV NCCL_BUILD_RDMA_CORE NCCL_BYTES_ALIGNMENT NCCL_CALL NCCL_CE_COLL_H_
NCCL_CE_SYNC_OPS_PER_RANK_MC NCCL_CE_SYNC_OPS_PER_RANK_UC NCCL_CGA_CLUSTER_SIZE NCCL_CHANNEL_H_
NCCL_CHECKS_DISABLE NCCL_CHECKS_H_ NCCL_CHECK_CUDACC NCCL_CHECK_MODE NCCL_CHECK_POINTERS
NCCL_CHUNK_SIZE NCCL_COLL NCCL_COLLECTIVES_H_ NCCL_COLLNET_ENABLE NCCL_COLLNET_NODE_THRESHOLD
NCCL_COLLNET_PLUGIN_SYMBOL NCCL_COMMINIT_FUNCNAME_LEN NCCL_COMMON_KERNEL_H_ NCCL_COMM_BLOCKING
NCCL_COMM_HASH_LENGTH NCCL_COMM_H_ NCCL_COMM_ID NCCL_COMM_NAME_MAX NCCL_COMM_NULL
NCCL_COMM_PROPERTIES_INITIALIZER NCCL_COMM_SHRINK_SHARE_RESOURCES NCCL_COMM_SPLIT_SHARE_RESOURCES
NCCL_COMPILER_GCC NCCL_COMPILER_MSVC NCCL_CONFIG_DEFAULT NCCL_CONFIG_INITIALIZER
NCCL_CONFIG_UNDEF_INT NCCL_CONFIG_UNDEF_PTR NCCL_CONF_FILE NCCL_CONNECT_ROUND_MAX_PEERS
NCCL_CONVERT_ORDER NCCL_CORE_H_ NCCL_CPUSET_H_ NCCL_CREATE_THREAD_CONTEXT NCCL_CROSS_NIC
NCCL_CTA_POLICY NCCL_CTA_POLICY_DEFAULT NCCL_CTA_POLICY_EFFICIENCY NCCL_CTA_POLICY_ZERO
NCCL_CUDAWRAP_H_ NCCL_CUDA_ARCH NCCL_CUDA_ARCH_ NCCL_CUDA_ARCH_FAMILY_SPECIFIC
NCCL_CUDA_ARCH_SPECIFIC NCCL_CUMEM_ENABLE NCCL_CUMEM_HOST_ENABLE NCCL_DEBUG NCCL_DEBUG_FILE
NCCL_DEBUG_H_ NCCL_DEBUG_RESET_TRIGGERED NCCL_DEBUG_SUBSYS NCCL_DEBUG_TIMESTAMP_FORMAT
NCCL_DEBUG_TIMESTAMP_LEVELS NCCL_DEFINE_PARAM NCCL_DESTROY NCCL_DESYNC_DEBUG NCCL_DEVCOMM_V22902_H_
NCCL_DEVICE_COMMON_H_ NCCL_DEVICE_CTA_COUNT NCCL_DEVICE_GIN_GDAKI_ENABLE_DEBUG
NCCL_DEVICE_GIN_GPI_ENABLE_DEBUG NCCL_DEVICE_H_ NCCL_DEVICE_INLINE
NCCL_DEVICE_PERMIT_EXPERIMENTAL_CODE NCCL_DEVICE_RUNTIME_H_ NCCL_DEVICE_RUNTIME_INTERNAL_H_
NCCL_DEVICE_SYMMETRIC_KERNEL_H_ NCCL_DEVICE_SYMMETRIC_PRIMITIVES_H_ NCCL_DEVICE_THREADS_PER_CTA
NCCL_DEVICE_UNPACK NCCL_DEV_API_JIT NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER NCCL_DIRECT_NIC
NCCL_DISABLE_MEM_MANAGER NCCL_DMABUF_ENABLE NCCL_ELASTIC_BUFFER_REGISTER NCCL_ENABLE_MONITORING
NCCL_ENABLE_NET_PROFILING NCCL_ENABLE_TIMING NCCL_ENABLE_VERSION_CHECK NCCL_ENQUEUE_H_ NCCL_ENV
NCCL_ENV_H_ NCCL_ENV_PLUGIN NCCL_ENV_PLUGIN_SYMBOL NCCL_ERR_H_ NCCL_EXTERN_C NCCL_FUNC
NCCL_GDAKI_USE_RELIABLE_DB NCCL_GDRCOPY_ENABLE NCCL_GDRCOPY_FIFO_ENABLE NCCL_GDRCOPY_FLUSH_ENABLE
NCCL_GDRCOPY_SYNC_ENABLE NCCL_GDRWRAP_H_ NCCL_GDR_FLUSH_DISABLE NCCL_GIN_BACKEND_MASK_ALL
NCCL_GIN_CONNECTION_FULL NCCL_GIN_CONNECTION_NONE NCCL_GIN_CONNECTION_RAIL
NCCL_GIN_COUNTER_POOL_SIZE NCCL_GIN_ENABLE NCCL_GIN_ERROR_QUERY_SEC NCCL_GIN_GDAKI_ENABLE
NCCL_GIN_GDAKI_GPU_CONTEXT_MAX_SIZE NCCL_GIN_GDAKI_GPU_CONTEXT_VERSION
NCCL_GIN_GDAKI_MAX_DEST_RD_ATOMIC NCCL_GIN_GDAKI_MAX_QP_RD_ATOMIC NCCL_GIN_GDAKI_NIC_HANDLER
NCCL_GIN_GDAKI_QP_DEPTH NCCL_GIN_GDAKI_VERSION NCCL_GIN_GPI_ENABLE NCCL_GIN_GPI_VERSION
NCCL_GIN_HANDLE_MAXSIZE NCCL_GIN_HAS_FENCE_ACQUIRE_RELEASE_PTX NCCL_GIN_H_ NCCL_GIN_IB_ALLGATHER_TAG
NCCL_GIN_IB_ALLTOALL_TAG NCCL_GIN_IB_TC NCCL_GIN_MAX_CONNECTIONS NCCL_GIN_MAX_PLUGINS
NCCL_GIN_NCONNECTIONS NCCL_GIN_NUM_INTERNAL_PLUGINS NCCL_GIN_NUM_RESERVED_PLUGINS NCCL_GIN_PLUGIN
NCCL_GIN_PLUGIN_REF_COUNT NCCL_GIN_PLUGIN_SYMBOL NCCL_GIN_PROXY_ENABLE NCCL_GIN_PROXY_GFD_VERSION
NCCL_GIN_PROXY_GPU_CONTEXT_MAX_SIZE NCCL_GIN_PROXY_GPU_CONTEXT_VERSION NCCL_GIN_PROXY_QUEUE_SIZE
NCCL_GIN_PROXY_VERSION NCCL_GIN_RESOURCE_SHARING_CTA NCCL_GIN_RESOURCE_SHARING_GPU
NCCL_GIN_RESOURCE_SHARING_THREAD NCCL_GIN_SIGNAL_OP_ADD NCCL_GIN_SIGNAL_OP_INC
NCCL_GIN_SIGNAL_POOL_SIZE NCCL_GIN_SIGNAL_TYPE_INDEXED NCCL_GIN_SIGNAL_TYPE_NONE
NCCL_GIN_SIGNAL_TYPE_VA NCCL_GIN_TYPE NCCL_GIN_TYPE_GDAKI NCCL_GIN_TYPE_GPI NCCL_GIN_TYPE_NONE
NCCL_GIN_TYPE_PROXY NCCL_GIN_VERSION_COUNT NCCL_GIT_BRANCH NCCL_GIT_COMMIT_HASH
NCCL_GIT_VERSION_STRING NCCL_GRAPH NCCL_GRAPH_DUMP_FILE NCCL_GRAPH_DUMP_FILE_RANK NCCL_GRAPH_FILE
NCCL_GRAPH_HELPER_DISABLE NCCL_GRAPH_H_ NCCL_GRAPH_MIXING_SUPPORT NCCL_GRAPH_REGISTER
NCCL_GRAPH_STREAM_ORDERING NCCL_GRAPH_XML_MAX_NODES NCCL_GRAPH_XML_VERSION NCCL_GRID_CONSTANT
NCCL_GROUP_CUDA_STREAM NCCL_GROUP_H_ NCCL_HEADER_DEPS NCCL_HOME NCCL_HOPPER_COMPCAP_IDX NCCL_HOSTID
NCCL_HOST_DEVICE_INLINE NCCL_HW_NET NCCL_HW_NVLINK NCCL_HW_PCI NCCL_H_ NCCL_IBVERBS_LIB
NCCL_IBVERBS_LIBS NCCL_IBVWRAP_H_ NCCL_IBV_CORE_H_ NCCL_IBV_SYMBOLS_H_ NCCL_IB_ADAPTIVE_ROUTING
NCCL_IB_ADDR_FAMILY NCCL_IB_ADDR_RANGE NCCL_IB_AR_THRESHOLD NCCL_IB_CUDA_SUPPORT NCCL_IB_DATA_DIRECT
NCCL_IB_DEVICE_PCI_ORDER NCCL_IB_DISABLE NCCL_IB_ECE_ENABLE NCCL_IB_FIFO_TC
NCCL_IB_FLUSH_REQ_WR_ID_OFFSET NCCL_IB_GDR_LEVEL NCCL_IB_GID_INDEX NCCL_IB_HCA NCCL_IB_LLSTR
NCCL_IB_MAX_DEVS_PER_NIC NCCL_IB_MAX_QPS NCCL_IB_MERGE_NICS NCCL_IB_MERGE_VFS NCCL_IB_MQP_RETRY_ALL
NCCL_IB_MQP_RETRY_CNT NCCL_IB_MQP_RETRY_SLEEP_MSEC NCCL_IB_OOO_RQ NCCL_IB_PCI_RELAXED_ORDERING
NCCL_IB_PKEY NCCL_IB_PLANE_MAX_INDEX NCCL_IB_PLANE_VIRT_BIT NCCL_IB_PORT_RECOVERY_WR_ID
NCCL_IB_PREPOST_RECEIVE_WORK_REQUESTS NCCL_IB_QPS_PER_CONNECTION NCCL_IB_QUERY_PORT_SPEED
NCCL_IB_RECEIVER_SIDE_MATCHING_SCHEME NCCL_IB_RECV_WR_ID_DUMMY NCCL_IB_RESILIENCY_PORT_FAILOVER
NCCL_IB_RESILIENCY_PORT_FAILOVER_MAX_ATTEMPTS NCCL_IB_RESILIENCY_PORT_FAILOVER_PROBE_DELAY
NCCL_IB_RESILIENCY_PORT_RECOVERY NCCL_IB_RESILIENCY_PORT_RECOVERY_ACK_MSG_ID
NCCL_IB_RESILIENCY_PORT_RECOVERY_ACK_TIMEOUT
NCCL_IB_RESILIENCY_PORT_RECOVERY_ALIVE_MSG_BATCH_INTERVAL
NCCL_IB_RESILIENCY_PORT_RECOVERY_ALIVE_MSG_BATCH_SIZE
NCCL_IB_RESILIENCY_PORT_RECOVERY_ALIVE_MSG_BATCH_SIZE_MAX
NCCL_IB_RESILIENCY_PORT_RECOVERY_ALIVE_MSG_SEQUENCE_SIZE
NCCL_IB_RESILIENCY_PORT_RECOVERY_ALIVE_MSG_SEQUENCE_SIZE_MIN
NCCL_IB_RESILIENCY_PORT_RECOVERY_ALIVE_MSG_TIMEOUT NCCL_IB_RESILIENCY_PORT_RECOVERY_ATTEMPTS_MAX
NCCL_IB_RESILIENCY_PORT_RECOVERY_CQ_SIZE NCCL_IB_RESILIENCY_PORT_RECOVERY_START_DELAY
NCCL_IB_RETRY_CNT NCCL_IB_RETURN_ASYNC_EVENTS NCCL_IB_ROCE_VERSION_NUM
NCCL_IB_ROUTABLE_FLID_GID_INDEX NCCL_IB_SL NCCL_IB_SL_DEFAULT NCCL_IB_SPLIT_DATA_ON_QPS
NCCL_IB_SUBNET_AWARE_ROUTING NCCL_IB_SUBNET_PREFIX_LEN NCCL_IB_TC NCCL_IB_TC_DEFAULT NCCL_IB_TIMEOUT
NCCL_IB_USE_INLINE NCCL_IB_WARN_RAIL_LOCAL NCCL_IF_CONSTEXPR NCCL_IGNORE_COLLNET_MISMATCH
NCCL_IGNORE_CPU_AFFINITY NCCL_IGNORE_DISABLED_P2P NCCL_IGNORE_NET_MISMATCH NCCL_INFO_H_ NCCL_INIT
NCCL_INSPECTOR_COLL_POOL_SIZE NCCL_INSPECTOR_COMM_POOL_SIZE NCCL_INSPECTOR_DUMP_COLL_RING_SIZE
NCCL_INSPECTOR_DUMP_DIR NCCL_INSPECTOR_DUMP_MIN_SIZE_BYTES NCCL_INSPECTOR_DUMP_P2P_RING_SIZE
NCCL_INSPECTOR_DUMP_THREAD_ENABLE NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS
NCCL_INSPECTOR_DUMP_VERBOSE NCCL_INSPECTOR_ENABLE NCCL_INSPECTOR_ENABLE_P2P
NCCL_INSPECTOR_ENABLE_WARN NCCL_INSPECTOR_EVENT_POOL_H_ NCCL_INSPECTOR_P2P_POOL_SIZE
NCCL_INSPECTOR_POOL_GROW NCCL_INSPECTOR_PROM_DUMP NCCL_INSPECTOR_REQUIRE_KERNEL_TIMING
NCCL_INSP_EVT_TRK_KERNEL_NEVT NCCL_INSP_EVT_TRK_KERNEL_RECORD NCCL_INSP_EVT_TRK_KERNEL_START
NCCL_INSP_EVT_TRK_KERNEL_STOP NCCL_INSP_EVT_TRK_OP_NEVT NCCL_INSP_EVT_TRK_OP_START
NCCL_INSP_EVT_TRK_OP_STOP NCCL_INT_DEBUG_H_ NCCL_INT_ENV_H_ NCCL_INT_GIN_H_ NCCL_INT_NET_H_
NCCL_INT_RMA_H_ NCCL_INT_TUNER_H_ NCCL_INVALID_SOCKET NCCL_IPC_COLLECTIVE NCCL_IPC_PIPENAME_STR
NCCL_IPC_POOL_SIZE NCCL_IPC_REG_BUFFER NCCL_IPC_SENDRECV NCCL_IPC_SOCKNAME_LEN NCCL_IPC_SOCKNAME_STR
NCCL_IPC_USE_ABSTRACT_SOCKET NCCL_IR_EXTERN_C NCCL_L1_SHARED_MEMORY_CARVEOUT NCCL_LAUNCH_MODE
NCCL_LAUNCH_ORDER_IMPLICIT NCCL_LAUNCH_RACE_FATAL NCCL_LEGACY_CUDA_REGISTER
NCCL_LL128_ALIGNMENT_PER_WARP NCCL_LL128_BUFFSIZE NCCL_LL128_C2C NCCL_LL128_DATAELEMS
NCCL_LL128_ELEMS_PER_THREAD NCCL_LL128_FLAGTHREAD NCCL_LL128_LINEELEMS NCCL_LL128_LINESIZE
NCCL_LL128_MAX_NTHREADS NCCL_LL128_NTHREADS NCCL_LL128_SHMEM_ELEMS_PER_THREAD NCCL_LL128_SHMEM_SIZE
NCCL_LL128_THREAD_THRESHOLD NCCL_LL_ALIGNMENT_PER_THREAD NCCL_LL_BUFFSIZE NCCL_LL_CLEAN_MASK
NCCL_LL_FLAG NCCL_LL_FLAG_MAX NCCL_LL_LINES_PER_THREAD NCCL_LL_MAX_NTHREADS NCCL_LL_THREAD_THRESHOLD
NCCL_LL_THRESHOLD NCCL_LOCAL_REGISTER NCCL_LOG_ABORT NCCL_LOG_INFO NCCL_LOG_NONE NCCL_LOG_TRACE
NCCL_LOG_VERSION NCCL_LOG_WARN NCCL_LSA_TEAM_SIZE NCCL_MAGIC NCCL_MAX_ARITY
NCCL_MAX_CGA_CLUSTER_SIZE NCCL_MAX_CONNS NCCL_MAX_CTAS NCCL_MAX_DEV_WORK_BATCH_BYTES
NCCL_MAX_DEV_WORK_BATCH_COLLS NCCL_MAX_DEV_WORK_P2P_PER_BATCH NCCL_MAX_DIRECT_ARITY NCCL_MAX_GROUPS
NCCL_MAX_LOCAL_RANKS NCCL_MAX_NCHANNELS NCCL_MAX_NETDEVS NCCL_MAX_NET_SIZE NCCL_MAX_NET_SIZE_BYTES
NCCL_MAX_NRINGS NCCL_MAX_NTHREADS NCCL_MAX_NVLS_ARITY NCCL_MAX_NVLS_TREE_ARITY NCCL_MAX_OPS
NCCL_MAX_P2P_NCHANNELS NCCL_MAX_P2P_PEERS NCCL_MAX_PAGE_SIZE NCCL_MAX_PROXY_CONNECTIONS
NCCL_MAX_RINGS NCCL_MAX_SLICE_PER_CHUNK NCCL_MAX_TREE_ARITY NCCL_MAX_TREE_ARITY_TOP
NCCL_MAX_XML_DEPTH NCCL_MEM_EXPORT_PEERS_INIT NCCL_MEM_MANAGER_H_ NCCL_MEM_SYNC_DOMAIN NCCL_MIN_CTAS
NCCL_MIN_NCHANNELS NCCL_MIN_NRINGS NCCL_MIN_NTHREADS NCCL_MIN_P2P_NCHANNELS NCCL_MIN_RINGS
NCCL_MLOPART_RDMA_ENABLE NCCL_MLX5DVWRAP_H_ NCCL_MLX5DV_CORE_H_ NCCL_MLX5DV_SYMBOLS_H_
NCCL_MNNVL_CLIQUE_ID NCCL_MNNVL_CROSS_CLIQUE NCCL_MNNVL_ENABLE NCCL_MNNVL_H_
NCCL_MNNVL_RAIL_PER_HOST NCCL_MNNVL_SCATTER_NETS_ENABLE NCCL_MNNVL_UUID NCCL_MODE_NORMAL
NCCL_MODE_OFFSET NCCL_MODE_PTR NCCL_MULTI_RANK_GPU_ENABLE NCCL_MULTI_SEGMENT_REGISTER
NCCL_NCHANNELS_PER_NET_PEER NCCL_NCHANNELS_PER_PEER NCCL_NET NCCL_NETDEVS_POLICY
NCCL_NETDEVS_POLICY_AUTO NCCL_NET_ATTR_INIT NCCL_NET_ATTR_UNDEF NCCL_NET_DEVICE_GIN_
NCCL_NET_DEVICE_GIN_GDAKI NCCL_NET_DEVICE_GIN_GPI NCCL_NET_DEVICE_GIN_PROXY NCCL_NET_DEVICE_HOST
NCCL_NET_DEVICE_H_ NCCL_NET_DEVICE_INVALID_VERSION NCCL_NET_DEVICE_UNPACK
NCCL_NET_DEVICE_UNPACK_MAX_QUEUE_DEPTH NCCL_NET_DEVICE_UNPACK_VERSION NCCL_NET_DISABLE_INTRA
NCCL_NET_FORCE_FLUSH NCCL_NET_FORCE_MERGE NCCL_NET_GDR_C2C NCCL_NET_GDR_COPY_FLUSH_ENABLE
NCCL_NET_GDR_LEVEL NCCL_NET_GDR_MLOPART NCCL_NET_GDR_READ NCCL_NET_HANDLE_MAXSIZE
NCCL_NET_HANDLE_MAXSIZE_V4 NCCL_NET_H_ NCCL_NET_IB_MAX_RECVS NCCL_NET_IB_REQ_FLUSH
NCCL_NET_IB_REQ_GIN_IGET NCCL_NET_IB_REQ_GIN_IPUT NCCL_NET_IB_REQ_RECV NCCL_NET_IB_REQ_SEND
NCCL_NET_IB_REQ_UNUSED NCCL_NET_ID_UNDEF NCCL_NET_MAP_ADD_POINTER NCCL_NET_MAP_DEVMEM
NCCL_NET_MAP_DEV_MEM NCCL_NET_MAP_GDCMEM NCCL_NET_MAP_GET_POINTER NCCL_NET_MAP_HOSTMEM
NCCL_NET_MAP_MASK_DEVMEM NCCL_NET_MAP_MASK_OFFSET NCCL_NET_MAP_MASK_SHARED NCCL_NET_MAP_MASK_USED
NCCL_NET_MAP_MEMS NCCL_NET_MAP_OFFSET_BANK NCCL_NET_MAP_OFFSET_NULL NCCL_NET_MAP_SHARED_DEVMEM
NCCL_NET_MAP_SHARED_HOSTMEM NCCL_NET_MAX_DEVS_PER_NIC NCCL_NET_MAX_DEVS_PER_NIC_V11
NCCL_NET_MAX_DEVS_PER_NIC_V12 NCCL_NET_MAX_PLUGINS NCCL_NET_MAX_REQUESTS NCCL_NET_MAX_REQUESTS_V3
NCCL_NET_MAX_REQUESTS_V6 NCCL_NET_MERGE_LEVEL NCCL_NET_MERGE_POLICY NCCL_NET_MERGE_POLICY_ALL
NCCL_NET_MERGE_POLICY_RAIL NCCL_NET_MR_FLAG_FORCE_SO NCCL_NET_MR_FLAG_SIGNAL_NEVER_RESET
NCCL_NET_MTU_SIZE NCCL_NET_MULTI_REQUEST NCCL_NET_NUM_INTERNAL_PLUGINS
NCCL_NET_OPTIONAL_RECV_COMPLETION NCCL_NET_OVERHEAD NCCL_NET_PLUGIN NCCL_NET_PLUGIN_REF_COUNT
NCCL_NET_PLUGIN_SYMBOL NCCL_NET_REG_BUFFER NCCL_NET_SHARED_BUFFERS NCCL_NET_SHARED_COMMS
NCCL_NET_SIGNAL_OP_ADD NCCL_NET_SIGNAL_OP_INC NCCL_NET_TRAFFIC_CLASS_UNDEF NCCL_NET_VERSION_COUNT
NCCL_NO_CACHE NCCL_NO_OPTIMIZE NCCL_NSOCKS_PERTHREAD NCCL_NSTEPS NCCL_NTHREADS NCCL_NUM_ALGORITHMS
NCCL_NUM_ALGORITHMS_V5 NCCL_NUM_COMPCAPS NCCL_NUM_COMPCAPS_V5 NCCL_NUM_FUNCTIONS NCCL_NUM_HW_LINKS
NCCL_NUM_HW_LINKS_V5 NCCL_NUM_PROTOCOLS NCCL_NUM_PROTOCOLS_V5 NCCL_NUM_RMA_CTX
NCCL_NUM_TUNING_SCALES NCCL_NUM_TUNING_SCALES_V5 NCCL_NVB_DISABLE NCCL_NVB_PRECONNECT
NCCL_NVLINK_BW_IDX_BLACKWELL NCCL_NVLINK_BW_IDX_HOPPER NCCL_NVLINK_BW_IDX_NUM
NCCL_NVLINK_UTIL_CENTRIC_SCHED_ENABLE NCCL_NVLS NCCL_NVLSTREE_MAX_CHUNKSIZE NCCL_NVLS_CHUNKSIZE
NCCL_NVLS_ENABLE NCCL_NVLS_MIN_POLL NCCL_NVLS_NCHANNELS NCCL_NVLS_REG_BUFFER NCCL_NVLS_TREE
NCCL_NVMLWRAP_H_ NCCL_NVML_DIRECT NCCL_NVML_FN NCCL_NVTX3_FUNC_RANGE
NCCL_NVTX_DEFINE_STRUCT_WITH_SCHEMA NCCL_NVTX_DEFINE_STRUCT_WITH_SCHEMA_ENTRIES NCCL_NVTX_DISABLE
NCCL_NVTX_H_ NCCL_NVTX_PAYLOAD_ENTRIES NCCL_OOB_NET_ENABLE NCCL_OOB_NET_IFNAME NCCL_OS_DL_LAZY
NCCL_OS_DL_NOW NCCL_OS_H_ NCCL_OS_LINUX NCCL_OS_LINUX_H_ NCCL_OS_SOCKET_PAIR_H_ NCCL_OS_WINDOWS
NCCL_P2P NCCL_P2P_DIRECT_DISABLE NCCL_P2P_DISABLE NCCL_P2P_EPOCH_ENABLE NCCL_P2P_H_ NCCL_P2P_LEVEL
NCCL_P2P_LL_THRESHOLD NCCL_P2P_MAX_PEERS NCCL_P2P_MAX_PHYSICAL_SEGMENTS NCCL_P2P_NET_CHUNKSIZE
NCCL_P2P_NVL_CHUNKSIZE NCCL_P2P_PCI_CHUNKSIZE NCCL_P2P_PER_CHANNEL_NET_BW NCCL_P2P_PXN_LEVEL
NCCL_P2P_READ NCCL_P2P_READ_ENABLE NCCL_P2P_SCHEDULE_GROUP_SIZE NCCL_P2P_USE_CUDA_MEMCPY
NCCL_P2P_WRITE NCCL_PARAM NCCL_PARAM_COMPILER_EXPECT NCCL_PARAM_DEFAULT
NCCL_PARAM_DEFINE_TYPED_GETTER NCCL_PARAM_DUMP_ALL NCCL_PARAM_FLAG_CACHED NCCL_PARAM_FLAG_DEPRECATED
NCCL_PARAM_FLAG_NONE NCCL_PARAM_FLAG_NO_ENVPLUGIN_INIT NCCL_PARAM_FLAG_PUBLISHED
NCCL_PARAM_FLAG_UNUSED NCCL_PARAM_H_ NCCL_PARAM_IF_CONSTEXPR NCCL_PARAM_TYPE_BOOL
NCCL_PARAM_TYPE_CSTR NCCL_PARAM_TYPE_I16 NCCL_PARAM_TYPE_I32 NCCL_PARAM_TYPE_I64 NCCL_PARAM_TYPE_I8
NCCL_PARAM_TYPE_RAW NCCL_PARAM_TYPE_U16 NCCL_PARAM_TYPE_U32 NCCL_PARAM_TYPE_U64 NCCL_PARAM_TYPE_U8
NCCL_PAT_ENABLE NCCL_PAT_NWORKERS NCCL_PLUGINS NCCL_PLUGIN_H_ NCCL_PLUGIN_MAX_RECVS NCCL_POLLERR
NCCL_POLLIN NCCL_PRIMITIVES_H_ NCCL_PRIVATE_INCLUDES NCCL_PROFILE
NCCL_PROFILER_CE_POLLER_INTERVAL_MICROSECONDS NCCL_PROFILER_CE_TIMING NCCL_PROFILER_H_
NCCL_PROFILER_INTERFACE_VERSION NCCL_PROFILER_NET_IB_VER NCCL_PROFILER_NET_SOCKET_VER
NCCL_PROFILER_NET_TYPE_IB NCCL_PROFILER_NET_TYPE_MASK NCCL_PROFILER_NET_TYPE_SOCK
NCCL_PROFILER_NET_VER_BITS NCCL_PROFILER_NET_VER_MASK NCCL_PROFILER_PLUGIN
NCCL_PROFILE_CE_BATCH_POOL_SIZE NCCL_PROFILE_CE_COLL_POOL_SIZE NCCL_PROFILE_CE_SYNC_POOL_SIZE
NCCL_PROFILE_COLL_API_POOL_SIZE NCCL_PROFILE_COLL_POOL_SIZE NCCL_PROFILE_DUMP_FILE
NCCL_PROFILE_EVENT_MASK NCCL_PROFILE_GROUP_API_POOL_SIZE NCCL_PROFILE_GROUP_POOL_SIZE
NCCL_PROFILE_KERNEL_LAUNCH_POOL_SIZE NCCL_PROFILE_P2P_API_POOL_SIZE NCCL_PROFILE_P2P_POOL_SIZE
NCCL_PROFILE_PROXY_CTRL_POOL_SIZE NCCL_PROFILE_PROXY_DETACH_POOL_SIZE NCCL_PROGRESS_APPENDOP_FREQ
NCCL_PROTO NCCL_PROTO_ NCCL_PROTO_LL NCCL_PROTO_LL128 NCCL_PROTO_SIMPLE NCCL_PROTO_UNDEF NCCL_PROXY
NCCL_PROXY_APPEND_BATCH_SIZE NCCL_PROXY_CONN_POOL_MASK NCCL_PROXY_CONN_POOL_SIZE
NCCL_PROXY_CONN_POOL_SIZE_POW2 NCCL_PROXY_CPUSET NCCL_PROXY_DUMP_SIGNAL NCCL_PROXY_H_
NCCL_PROXY_MAX_SUBS NCCL_PTR_CUDA NCCL_PTR_DMABUF NCCL_PTR_HOST NCCL_PXN_C2C NCCL_PXN_DISABLE
NCCL_RAS NCCL_RAS_ADDR NCCL_RAS_CLIENT NCCL_RAS_CLIENT_PORT NCCL_RAS_CLIENT_PROTOCOL NCCL_RAS_ENABLE
NCCL_RAS_H_ NCCL_RAS_INTERNAL_H_ NCCL_RAS_TIMEOUT_FACTOR NCCL_REC_PAGE_SIZE NCCL_REDOP
NCCL_REDUCE_KERNEL_H_ NCCL_REG NCCL_REGISTER_H_ NCCL_REGISTER_INLINE_H_ NCCL_REGULAR_BUFFER
NCCL_REPORT_CONNECT_PROGRESS NCCL_REVOKE_DEFAULT NCCL_RMA_DISABLE NCCL_RMA_H_
NCCL_RMA_MAX_CONNECTIONS NCCL_RMA_MAX_PLUGINS NCCL_RMA_NUM_INTERNAL_PLUGINS
NCCL_RMA_NUM_RESERVED_PLUGINS NCCL_RMA_PLUGIN NCCL_RMA_PLUGIN_REF_COUNT NCCL_RMA_PROXY_DUMP_SIGNAL
NCCL_RMA_PROXY_QUEUE_SIZE NCCL_RMA_VERSION_COUNT NCCL_RUNTIME_CONNECT NCCL_SCHEDULER_H_
NCCL_SEARCH_GLOBAL_TIMEOUT NCCL_SEARCH_TIMEOUT NCCL_SEARCH_TIMEOUT_SAMECHANNELS
NCCL_SEARCH_TIMEOUT_TREE NCCL_SET_CPU_STACK_SIZE NCCL_SET_STACK_SIZE NCCL_SET_THREAD_NAME
NCCL_SHADOW_MEMPOOL_MAX_SIZE NCCL_SHARED_STEPS NCCL_SHARP_DISABLE NCCL_SHM NCCL_SHMEM_PAT_STEPS
NCCL_SHMUTILS_H_ NCCL_SHM_DISABLE NCCL_SHM_H_ NCCL_SHM_LOCALITY NCCL_SHM_MEMCPY_MODE
NCCL_SHM_USE_CUDA_MEMCPY NCCL_SHRINK NCCL_SHRINK_ABORT NCCL_SHRINK_DEFAULT NCCL_SIGNAL
NCCL_SIGNAL_NONE NCCL_SIMPLE_ALIGNMENT NCCL_SIMPLE_EXTRA_GROUP_IF_NTHREADS_GE
NCCL_SIMPLE_MAX_NTHREADS NCCL_SIMPLE_THREAD_THRESHOLD NCCL_SIM_INFO_INITIALIZER
NCCL_SINGLE_PROC_MEM_REG_ENABLE NCCL_SINGLE_RING_THRESHOLD NCCL_SOCKET_FAMILY NCCL_SOCKET_H_
NCCL_SOCKET_IFNAME NCCL_SOCKET_INLINE NCCL_SOCKET_MAGIC NCCL_SOCKET_MIN_TASKSIZE
NCCL_SOCKET_NTHREADS NCCL_SOCKET_PAIR_INVALID NCCL_SOCKET_POLL_TIMEOUT_MSEC NCCL_SOCKET_RCVBUF
NCCL_SOCKET_RECV NCCL_SOCKET_RETRY_CNT NCCL_SOCKET_RETRY_SLEEP_MSEC NCCL_SOCKET_SEND
NCCL_SOCKET_SNDBUF NCCL_SPINS_BEFORE_CHECK_ABORT NCCL_SPLIT_NOCOLOR NCCL_SRCDIR NCCL_STEPS
NCCL_STRONGSTREAM_H_ NCCL_SUSPEND_MEM NCCL_SYMMETRIC_SCHED_H_ NCCL_SYM_CE_THRESHOLD NCCL_SYM_CTAS
NCCL_SYM_GIN_KERNELS_ENABLE NCCL_SYM_KERNEL NCCL_SYM_KERNELS_H_ NCCL_SYM_KERNEL_CELL_SIZE
NCCL_SYM_NOWIN_ENABLE NCCL_SYM_REUSE_SYSMEM_HANDLES NCCL_SYM_RS_GIN_CHUNK_SIZE NCCL_SYM_TMA_ENABLE
NCCL_TESTS_SPLIT_MASK NCCL_THREAD_NAMELEN NCCL_THREAD_THRESHOLDS NCCL_TIMER_H_
NCCL_TOPO_CPU_ARCH_ARM NCCL_TOPO_CPU_ARCH_MIXED NCCL_TOPO_CPU_ARCH_POWER NCCL_TOPO_CPU_ARCH_X86
NCCL_TOPO_CPU_MODEL_INTEL_BDW NCCL_TOPO_CPU_MODEL_INTEL_ERP NCCL_TOPO_CPU_MODEL_INTEL_SKL
NCCL_TOPO_CPU_MODEL_INTEL_SRP NCCL_TOPO_CPU_MODEL_YONGFENG NCCL_TOPO_CPU_VENDOR_AMD
NCCL_TOPO_CPU_VENDOR_INTEL NCCL_TOPO_CPU_VENDOR_MIXED NCCL_TOPO_CPU_VENDOR_ZHAOXIN
NCCL_TOPO_DUMP_FILE NCCL_TOPO_DUMP_FILE_RANK NCCL_TOPO_FILE NCCL_TOPO_GPU_LOCAL_ID
NCCL_TOPO_GPU_LOCAL_RANK_SHIFT NCCL_TOPO_H_ NCCL_TOPO_ID NCCL_TOPO_ID_LOCAL_ID
NCCL_TOPO_ID_LOCAL_ID_MASK NCCL_TOPO_ID_SYSTEM_ID NCCL_TOPO_LOCAL_NIC_ID NCCL_TOPO_MAX_HOPS
NCCL_TOPO_MAX_LINKS NCCL_TOPO_MAX_NODES NCCL_TOPO_MLOPART NCCL_TOPO_MLOPART_BUSID
NCCL_TOPO_MLOPART_DEV_MAX NCCL_TOPO_MLOPART_MASK NCCL_TOPO_NODE_TYPES
NCCL_TOPO_PATTERN_BALANCED_TREE NCCL_TOPO_PATTERN_COLLNET_DIRECT NCCL_TOPO_PATTERN_NVLS
NCCL_TOPO_PATTERN_RING NCCL_TOPO_PATTERN_SPLIT_TREE NCCL_TOPO_PATTERN_TREE NCCL_TOPO_SPLIT_MLOPART
NCCL_TOPO_UNDEF NCCL_TOPO_XML_DEPTH_MAX NCCL_TOPO_XML_MAX_NODES NCCL_TOPO_XML_VERSION
NCCL_TRANSPORT_H_ NCCL_TREES_H_ NCCL_TREE_THRESHOLD NCCL_TUNER_CONFIG_FILE NCCL_TUNER_H_
NCCL_TUNER_PLUGIN NCCL_TUNER_PLUGIN_SYMBOL NCCL_TUNING NCCL_TUNING_SCALE_1NODE
NCCL_TUNING_SCALE_2NODES NCCL_TUNING_SCALE_4NODES NCCL_TYPES_H_ NCCL_UID_STAGGER_RATE
NCCL_UID_STAGGER_THRESHOLD NCCL_UNDEF_DEV_COUNT NCCL_UNDEF_FLOAT NCCL_UNIQUE_ID_BYTES
NCCL_UNPACK_DOUBLE_NCHANNELS NCCL_USE_CMAKE NCCL_UTILS_H_ NCCL_VOLTA_COMPCAP_IDX
NCCL_WARN_ENABLE_DEBUG_INFO NCCL_WINDOWS_H_ NCCL_WIN_COLL_SYMMETRIC NCCL_WIN_DEFAULT NCCL_WIN_ENABLE
NCCL_WIN_REQUIRED_ALIGNMENT NCCL_WIN_STRICT_ORDERING NCCL_WIN_STRIDE NCCL_WORK_ARGS_BYTES
NCCL_WORK_FIFO_BYTES NCCL_WORK_FIFO_BYTES_DEFAULT NCCL_WORK_FIFO_DEPTH""".split())

#: the suggestions: names users actually set (documented environment variables)
NCCL_DOCUMENTED = frozenset(n for n in NCCL_KNOWN if not n.endswith("_") and n.count("_") <= 5 and not any(
    n.startswith(p) for p in ("NCCL_ALGO_", "NCCL_PROTO_", "NCCL_FUNC_", "NCCL_TYPE_", "NCCL_OP_", "NCCL_NET_DEV",
                              "NCCL_TOPO_CPU", "NCCL_TOPO_PATTERN", "NCCL_NUM_", "NCCL_MAX_OPS", "NCCL_STEPS",
                              "NCCL_LL_", "NCCL_LL128_", "NCCL_SIMPLE_", "NCCL_WORK_", "NCCL_SHMEM_",
                              "NCCL_PTR_", "NCCL_CONN_", "NCCL_DEVICE_", "NCCL_KERNEL_", "NCCL_UNDEF",
                              "NCCL_PROFILER_", "NCCL_PROXY_PROFILE_", "NCCL_STATIC_", "NCCL_ALLOC")))
