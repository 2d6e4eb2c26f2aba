"""Which reader, if any, a file goes to: by name and suffix first, then by a cheap look at the text.

Nothing here imports a parser: classification must cost microseconds per file, because most files
of a repository are not ours and must never be parsed.
"""

from __future__ import annotations

import functools
import re
from pathlib import PurePath

#: kind -> reader module under parallint.readers (imported only when a file of that kind is found)
READERS: dict[str, str] = {
    "python": "python",
    "torchtitan_py": "torchtitan_py",
    "shell": "shell",
    "makefile": "makefile",
    "kube": "kube",
    "deepspeed": "deepspeed",
    "nemo": "nemo",
    "megatron_yaml": "megatron_yaml",
    "torchtitan": "torchtitan",
    "accelerate": "accelerate",
    "neox": "neox",
    "foundry": "foundry",
    "nanotron": "nanotron",
    "hf_model": "hf_model",
    "hftrainargs": "hftrainargs",
    "jobspec": "jobspec",
    "torchtune": "torchtune",
    "skypilot": "skypilot",
    "lightning_cli": "lightning_cli",
}
KINDS = frozenset(READERS)
CONFIG_KINDS = frozenset(
    {"deepspeed", "nemo", "megatron_yaml", "torchtitan", "torchtitan_py", "accelerate", "neox",
     "foundry", "nanotron", "hf_model", "hftrainargs", "jobspec", "torchtune", "lightning_cli"}
)
LAUNCH_KINDS = frozenset({"shell", "makefile", "kube", "skypilot"})

#: A Python file reaches the LibCST reader only when it contains one of these names.
#: (The names the script rules trigger on; broad words such as "torch" would keep most files.)
PYTHON_NEEDLES: tuple[str, ...] = (
    # process groups, collectives, rank branches, hand-written pipeline partitions (PG, PIP)
    "init_process_group", "torch.distributed",
    # wrappers (DDP, DAT001, CKP)
    "DistributedDataParallel", "DDP", "FullyShardedDataParallel", "FSDP", "fully_shard",
    # samplers (DAT002, DAT003)
    "DistributedSampler", "sampler",
    # meshes and model-parallel set-up (LAY007, facts)
    "init_device_mesh", "DeviceMesh", "initialize_model_parallel",
    # devices and checkpoints (DDP002, PG001, CKP)
    "set_device", "torch.save", "torch.load",
    # framework wrappers whose arguments are facts (DDP001, BAT003, links)
    "find_unused_parameters", "deepspeed", "Accelerator", "TrainingArguments", "SFTConfig",
    "DPOConfig", "GRPOConfig", "Trainer(",
    # launchers inside the script (parallint.link.pylaunch)
    "ScalingConfig", "update_parameters", "nemo_run", "mp.spawn", "Fabric(",
    # Horovod's wrappers (DDP005)
    "DistributedOptimizer", "DistributedGradientTape",
    # Horovod's collectives (PG005)
    "allreduce", "allgather", "alltoall", "broadcast_parameters", "broadcast_variables", "broadcast_object",
    # TensorFlow tf.distribute strategies (TFD), PyTorch RPC (PG006, PG007)
    "MirroredStrategy", "ParameterServerStrategy", "TPUStrategy", "CentralStorageStrategy", "init_rpc",
    # TorchX components (parallint.readers.torchx)
    "torchx.components", "torchx.specs", "torchx import",
)

SHELL_SUFFIXES = {".sh", ".bash", ".sbatch", ".slurm", ".zsh", ".ksh"}
STRUCTURED_SUFFIXES = {".json", ".yaml", ".yml", ".toml"}
#: a shell file reaches the reader only when it starts something that can be a training launch
SHELL_NEEDLES: tuple[str, ...] = (
    "torchrun", "torch.distributed", "deepspeed", "accelerate", "srun", "mpirun", "python",
    "SBATCH", "NCCL_", "CUDA_VISIBLE_DEVICES", "MASTER_ADDR", "pretrain", "train", "tune run", "torchx",
    "fabric run", "megatron sft", "megatron pt", "megatron rlhf", "swift sft", "swift pt", "swift rlhf",
    "llamafactory-cli", "lmf train", "axolotl",
)


@functools.cache  # compiled at the first use, not at import (start-up)
def _shebang() -> re.Pattern[bytes]:
    return re.compile(rb"^#!\s*\S*(?:/env\s+)?(?:ba|z|k|da)?sh\b")


#: needles that plugin rules declare (``needles = ("my_launcher",)`` on a Rule), added by the
#: registry when it loads them (see parallint.engine.plugins): files with them reach the readers too
PLUGIN_NEEDLES: dict[str, tuple[str, ...]] = {"python": (), "shell": ()}


def classify(path: str, text: str) -> str | None:
    """The kind of the file at ``path`` (display path) with content ``text``, or None if not ours."""
    p = PurePath(path)
    name, suffix = p.name, p.suffix.lower()
    if any("{{" in part and "}}" in part for part in p.parts):
        return None  # a project template (cookiecutter, copier): rendered before it runs, not a program
    if suffix == ".py":
        extra = any(n in text for n in PLUGIN_NEEDLES["python"])
        needled = extra or any(n in text for n in PYTHON_NEEDLES)  # (each needle is a scan of the text)
        if not needled and "torchtitan" not in text:
            return None
        try:
            from parallint.discover.sniff import sniff_python
        except ImportError:  # pragma: no cover - reader not installed
            sniff_python = None
        if sniff_python is not None:
            kind = sniff_python(path, text)
            if kind:
                return kind
        return "python" if needled else None
    if suffix in SHELL_SUFFIXES or (suffix == "" and _shebang().match(text[:80].encode("utf-8", "replace"))):
        return "shell" if any(n in text for n in SHELL_NEEDLES + PLUGIN_NEEDLES["shell"]) else None
    if name in ("Makefile", "makefile", "GNUmakefile") or suffix == ".mk":
        return "makefile" if any(n in text for n in ("torchrun", "deepspeed", "accelerate", "torch.distributed", "srun", "mpirun")) else None
    if suffix in STRUCTURED_SUFFIXES:
        if name == "pyproject.toml" or name.endswith(".schema.json") or name in ("package.json", "package-lock.json", "tsconfig.json", "parallint.toml"):
            return None
        try:
            from parallint.discover.sniff import sniff_structured
        except ImportError:  # pragma: no cover
            return None
        return sniff_structured(path, text)
    return None


def claims_suffix(path: str) -> bool:
    """True when the file's name says it is of a format parallint reads (so a broken one is SYN001)."""
    p = PurePath(path)
    return (
        p.suffix.lower() in SHELL_SUFFIXES | STRUCTURED_SUFFIXES | {".py"}
        or p.name in ("Makefile", "makefile", "GNUmakefile")
    )
