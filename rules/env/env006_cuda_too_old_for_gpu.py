"""ENV006 cuda-too-old-for-gpu: torch's CUDA build predates the job's GPU architecture, so its kernels cannot run there."""

from __future__ import annotations

from parallint.model import versions
from parallint.model.diagnostics import Related, Severity
from parallint.model.launches import LAUNCH_FILE_KINDS
from parallint.model.rule import Example, Rule
from parallint.rules.env._common import gpu_said, gpu_where, job_gpu

TYPE_CHECKING = False  # typing is not imported at run time (start-up, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Iterable

    from parallint.model.diagnostics import Diagnostic


def _newest_build(minor_list: list[str]) -> str | None:
    """The newest CUDA any PyTorch release of ``minor_list`` was built for (None: not in the table)."""
    best: tuple[int, int, int, int] | None = None
    text = None
    for m in minor_list:
        for c in versions.pytorch_release(m).get("cuda_builds") or ():
            r = versions.release(str(c))
            if r is not None and (best is None or r > best):
                best, text = r, str(c)
    return text


def _first_torch_for(cuda: str) -> str | None:
    """The first PyTorch minor with a build for CUDA ``cuda`` or newer."""
    floor = versions.release(cuda)
    for m in versions.pytorch_minors():
        builds = [versions.release(str(c)) for c in versions.pytorch_release(m).get("cuda_builds") or ()]
        if floor is not None and any(b is not None and b >= floor for b in builds):
            return m
    return None


def _exact(release_text: str):
    from parallint.model.facts import Value

    return Value("==" + release_text)


class CudaTooOldForGpu(Rule):
    code = "ENV006"
    name = "cuda-too-old-for-gpu"
    severity = Severity.ERROR
    summary = "torch's CUDA build predates the job's GPU architecture, so its kernels cannot run there."
    kinds = LAUNCH_FILE_KINDS  # jobs with a launch (the GPU is stated there)
    facts = frozenset({"hardware.gpu", "version.torch", "version.cuda"})
    doc = """
    ## What it does
    Version-aware (torch, CUDA) and GPU-aware. Takes the one GPU type the job provably runs on
    (`#SBATCH --gres=gpu:h100:8`, a node selector, `[tool.parallint] gpu`) and the first CUDA
    release that targets its architecture (sm_90, H100/H200: CUDA 11.8; sm_100, B200: CUDA 12.8;
    NVIDIA's CUDA toolkit release notes). Fires when every CUDA runtime that can reach the job is
    older: the CUDA the job's image bundles (NGC PyTorch, `pytorch/pytorch:*-cudaX.Y`), a
    `+cu117` wheel, a conda `pytorch-cuda=11.7`, and where torch is pinned, the newest CUDA any
    PyTorch release in the pin was built for (torch 1.13: CUDA 11.7; torch 2.6: CUDA 12.6; PyTorch
    release notes and "Previous PyTorch Versions"). A GPU or version not known, or a pin that
    reaches a release with a new enough build, stays silent.

    ## Why it matters
    A torch binary carries kernels for the architectures its CUDA toolkit knows. On a newer GPU it
    warns "sm_90 is not compatible with the current PyTorch installation" and the first kernel
    fails with "no kernel image is available for execution on the device", on every rank, after the
    allocation was granted.

    ## Example

    ## How to fix
    Use a torch release built for the GPU's CUDA (torch 2.0+ with CUDA 11.8+ for H100, torch 2.7+
    with CUDA 12.8 for B200), or a newer image.
    """
    valid = (
        Example(files={
            "train.sbatch": "#!/bin/bash\n#SBATCH --nodes=1\n#SBATCH --gres=gpu:h100:8\nsrun torchrun --nproc_per_node=8 train.py\n",
            "requirements.txt": "torch==2.1.0\n",
        }, paths=["train.sbatch"]),
        Example(files={  # a range that reaches a release with a CUDA 11.8 build
            "train.sbatch": "#!/bin/bash\n#SBATCH --nodes=1\n#SBATCH --gres=gpu:h100:8\nsrun torchrun --nproc_per_node=8 train.py\n",
            "requirements.txt": "torch>=1.13,<2.2\n",
        }, paths=["train.sbatch"]),
        Example(files={  # no GPU known
            "train.sh": "#!/bin/bash\ntorchrun --nproc_per_node=8 train.py\n",
            "requirements.txt": "torch==1.13.1\n",
        }, paths=["train.sh"]),
    )
    invalid = (
        Example(files={
            "train.sbatch": "#!/bin/bash\n#SBATCH --nodes=1\n#SBATCH --gres=gpu:h100:8\nsrun torchrun --nproc_per_node=8 train.py\n",
            "requirements.txt": "torch==1.13.1\n",
        }, paths=["train.sbatch"], line=3),
        Example(files={  # B200 and an image with CUDA 12.6
            "train.sbatch": "#!/bin/bash\n#SBATCH --nodes=1\n#SBATCH --gres=gpu:b200:8\n"
                            "srun --container-image=nvcr.io#nvidia/pytorch:24.10-py3 torchrun --nproc_per_node=8 train.py\n",
        }, paths=["train.sbatch"], line=3),
    )

    def check_job(self, job, ctx) -> "Iterable[Diagnostic]":
        gpu = job_gpu(job, ctx)
        if gpu is None or not gpu.min_cuda:
            return
        cuda = job.facts.all("version.cuda")
        torch = job.facts.all("version.torch")
        reasons: list[str] = []  # every statement that can reach the job must be too old
        if cuda:
            if not versions.below(cuda, gpu.min_cuda):
                return
            reasons.append(f"CUDA {versions.show(cuda)}")
        if torch:
            minor_list = versions.minors(torch, versions.pytorch_minors())
            newest = _newest_build(minor_list) if minor_list else None
            if newest is None or not versions.below([_exact(newest)], gpu.min_cuda):
                return
            reasons.append(f"{versions.show(torch)}, built for CUDA {newest} at most")
        if not reasons:
            return
        first = _first_torch_for(gpu.min_cuda)
        fix = f"use torch {first} or newer built for CUDA {gpu.min_cuda}+" if first else \
            f"use a torch build for CUDA {gpu.min_cuda} or newer"
        related = tuple(Related.at(v.span, f"{v.source or v.value} stated here") for v in (cuda + torch)
                        if v.span is not None)[:4]
        yield self.report(gpu_where(gpu, job),
                          f"{gpu_said(gpu)} needs CUDA {gpu.min_cuda} or newer, and the job runs "
                          f"{' and '.join(reasons)}: its kernels do not run there (no kernel image is "
                          f"available for execution on the device); {fix}", related)
