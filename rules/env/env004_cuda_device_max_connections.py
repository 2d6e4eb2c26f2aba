"""ENV004 cuda-device-max-connections: Megatron with TP > 1 or CP > 1 launched without CUDA_DEVICE_MAX_CONNECTIONS=1."""

from __future__ import annotations

from typing import Iterable

from parallint.model.diagnostics import Diagnostic, Severity
from parallint.model.facts import Value
from parallint.model.launches import (
    OPERATOR_ENV, launches,
)
from parallint.model.rule import Example, Rule
from parallint.rules.env._common import _env_items


BLACKWELL_PREFIXES = ("b100", "b200", "b300", "gb200", "gb300", "rtx50", "rtx pro 6000")


def _pre_blackwell(gpu: Value | None) -> bool:
    if gpu is None or not gpu.known:
        return True  # unknown GPU: Megatron's check applies to every architecture before Blackwell
    name = str(gpu.value).lower().replace("nvidia-", "").replace("nvidia ", "")
    return not name.startswith(BLACKWELL_PREFIXES)


#: where a Megatron checkout keeps its argument validation (as the CFG006 table reads it)
_ARGUMENT_MODULES = ("megatron/training/arguments.py", "megatron/arguments.py")


def _own_megatron_lacks_the_check(f, la, ctx) -> bool:
    """The launched script runs on a Megatron copy of the repository (the nearest
    ``megatron/training/arguments.py`` or ``megatron/arguments.py`` above it, inside the checked
    folder) whose argument validation has no CUDA_DEVICE_MAX_CONNECTIONS assertion: an older
    fork (the check came with Megatron-LM's sequence parallelism), so nothing stops the ranks."""
    import os
    from pathlib import Path

    from parallint.util.safeio import read_regular

    if la.script is None or not la.script.known or not isinstance(la.script.value, str):
        return False
    cwd = getattr(ctx, "cwd", None)
    here = getattr(f, "abspath", None)
    if cwd is None or here is None:
        return False
    try:
        root = os.path.realpath(cwd)
        inside = lambda p: p == root or p.startswith(root + os.sep)  # noqa: E731
        for base in (Path(here).parent, Path(root)):
            script = os.path.realpath(base / la.script.value)
            if not inside(script) or not os.path.isfile(script):
                continue
            d = Path(script).parent
            for _ in range(8):
                for rel in _ARGUMENT_MODULES:
                    cand = os.path.realpath(d / rel)
                    if inside(cand) and os.path.isfile(cand):
                        data = read_regular(cand, 4 << 20)
                        return data is not None and b"CUDA_DEVICE_MAX_CONNECTIONS" not in data
                if os.path.realpath(d) == root or d.parent == d:
                    break
                d = d.parent
            return False
    except (OSError, ValueError):
        return False
    return False


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
    (`--deepspeed`) are not checked, nor launches of a repository's own Megatron copy whose
    `arguments.py` has no such assertion (forks older than Megatron-LM's sequence parallelism).

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
            if _own_megatron_lacks_the_check(f, la, ctx):
                continue  # the repository's own (older) Megatron does not assert it
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
