"""ENV007 bf16-unsupported-gpu: bf16 training on a GPU without bf16 tensor cores (V100, T4, P100)."""

from __future__ import annotations

from parallint.model.diagnostics import Related, Severity
from parallint.model.launches import LAUNCH_FILE_KINDS
from parallint.model.rule import Example, Rule
from parallint.rules.env._common import gpu_said, job_gpu

TYPE_CHECKING = False  # typing is not imported at run time (start-up, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Iterable

    from parallint.model.diagnostics import Diagnostic

#: bf16 tensor cores came with Ampere (compute capability 8.0)
BF16_FROM = (8, 0)


class Bf16UnsupportedGpu(Rule):
    code = "ENV007"
    name = "bf16-unsupported-gpu"
    severity = Severity.WARNING
    summary = "bf16 training on a GPU without bf16 tensor cores (V100, T4, P100)."
    kinds = LAUNCH_FILE_KINDS  # jobs with a launch (the GPU is stated there)
    facts = frozenset({"hardware.gpu", "training.precision"})
    doc = """
    ## What it does
    GPU-aware. Fires when every precision the job states is bf16 (a DeepSpeed `bf16.enabled`,
    Megatron `--bf16`, HF `bf16: true`, accelerate `mixed_precision: bf16`) and the one GPU type
    it provably runs on has compute capability below 8.0 (V100: 7.0, T4: 7.5, P100: 6.0; NVIDIA's
    "CUDA GPUs - Compute Capability" table). `"auto"`, an unknown GPU or a mix of GPU types stays
    silent.

    ## Why it matters
    bf16 tensor cores came with Ampere. Before it, bf16 matrix products are emulated at a fraction
    of fp16 speed, several kernels (fused optimizers, FlashAttention) refuse bf16, and the HF
    Trainer's check (`is_torch_bf16_gpu_available`, transformers before the emulation-aware torch
    check) stops with "Your setup doesn't support bf16/gpu".

    ## Example

    ## How to fix
    Use fp16 with loss scaling on these GPUs, or request Ampere or newer GPUs.
    """
    valid = (
        Example(files={
            "train.sbatch": "#!/bin/bash\n#SBATCH --nodes=1\n#SBATCH --gres=gpu:a100:8\n"
                            "srun torchrun --nproc_per_node=8 pretrain_gpt.py --tensor-model-parallel-size 2 --bf16\n",
            "pretrain_gpt.py": "import sys\nprint(sys.argv)\n",
        }, paths=["train.sbatch"]),
        Example(files={
            "train.sbatch": "#!/bin/bash\n#SBATCH --nodes=1\n#SBATCH --gres=gpu:v100:8\n"
                            "srun torchrun --nproc_per_node=8 pretrain_gpt.py --tensor-model-parallel-size 2 --fp16\n",
            "pretrain_gpt.py": "import sys\nprint(sys.argv)\n",
        }, paths=["train.sbatch"]),
    )
    invalid = (
        Example(files={
            "train.sbatch": "#!/bin/bash\n#SBATCH --nodes=1\n#SBATCH --gres=gpu:v100:8\n"
                            "srun torchrun --nproc_per_node=8 pretrain_gpt.py --tensor-model-parallel-size 2 --bf16\n",
            "pretrain_gpt.py": "import sys\nprint(sys.argv)\n",
        }, paths=["train.sbatch"], line=4),
    )

    def check_job(self, job, ctx) -> "Iterable[Diagnostic]":
        vals = job.facts.all("training.precision")
        if not vals or any(not v.known for v in vals) or {v.value for v in vals} != {"bf16"}:
            return
        gpu = job_gpu(job, ctx)
        if gpu is None or gpu.cc() >= BF16_FROM:
            return
        at = next((v for v in vals if v.span is not None), None)
        if at is None:
            return
        related = (Related.at(gpu.value.span, f"{gpu.name} stated here"),) \
            if gpu.value is not None and gpu.value.span is not None else ()
        yield self.report(at.span, f"bf16 on {gpu_said(gpu)}: it has no bf16 tensor cores, so bf16 runs "
                                   f"emulated at a fraction of fp16 speed or is refused; use fp16 with loss "
                                   f"scaling, or request Ampere or newer GPUs", related)
