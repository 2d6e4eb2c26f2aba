"""ENV009 flash-attention-unsupported-gpu: FlashAttention requested on a GPU its version does not support."""

from __future__ import annotations

from parallint.model import versions
from parallint.model.diagnostics import Related, Severity
from parallint.model.launches import LAUNCH_FILE_KINDS
from parallint.model.rule import Example, Rule
from parallint.rules.env._common import gpu_said, job_gpu

TYPE_CHECKING = False  # typing is not imported at run time (start-up, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Iterable

    from parallint.model.diagnostics import Diagnostic

#: flash-attn 1.x ran on Turing (7.5) and Ampere; flash-attn 2.0 needs Ampere (8.0) or newer
FA1_FROM = (7, 5)
FA2_FROM = (8, 0)
FA2 = "2.0"


class FlashAttentionUnsupportedGpu(Rule):
    code = "ENV009"
    name = "flash-attention-unsupported-gpu"
    severity = Severity.ERROR
    summary = "FlashAttention requested on a GPU its version does not support."
    kinds = LAUNCH_FILE_KINDS  # jobs with a launch (the GPU is stated there)
    facts = frozenset({"hardware.gpu", "version.flash_attn"})
    doc = """
    ## What it does
    Version-aware (flash-attn) and GPU-aware. Fires when a Megatron launch line passes
    `--use-flash-attn` and the one GPU type the job provably runs on is older than any
    flash-attn supports (V100, compute capability 7.0, and older), or is a Turing card (T4, 7.5)
    while every flash-attn version that can reach the job is 2.0 or newer (flash-attn 2.0 dropped
    Turing: its README, "FlashAttention-2 currently supports Ampere, Ada, or Hopper GPUs";
    flash-attn 1.x supported Turing and Ampere). No flash-attn version known on a T4 stays silent.

    ## Why it matters
    The kernels check the device on the first forward pass and stop every rank with
    "FlashAttention only supports Ampere GPUs or newer", after the allocation was granted.

    ## Example

    ## How to fix
    Drop `--use-flash-attn` on these GPUs (Megatron then uses its unfused attention), use
    flash-attn 1.x on Turing, or request Ampere or newer GPUs.
    """
    valid = (
        Example(files={
            "train.sbatch": "#!/bin/bash\n#SBATCH --nodes=1\n#SBATCH --gres=gpu:a100:8\n"
                            "srun torchrun --nproc_per_node=8 pretrain_gpt.py --tensor-model-parallel-size 2 --use-flash-attn\n",
            "pretrain_gpt.py": "import sys\nprint(sys.argv)\n",
        }, paths=["train.sbatch"]),
        Example(files={  # a T4 and flash-attn 1.x
            "train.sbatch": "#!/bin/bash\n#SBATCH --nodes=1\n#SBATCH --gres=gpu:t4:4\n"
                            "srun torchrun --nproc_per_node=4 pretrain_gpt.py --tensor-model-parallel-size 2 --use-flash-attn\n",
            "pretrain_gpt.py": "import sys\nprint(sys.argv)\n",
            "requirements.txt": "flash-attn==1.0.9\n",
        }, paths=["train.sbatch"]),
    )
    invalid = (
        Example(files={
            "train.sbatch": "#!/bin/bash\n#SBATCH --nodes=1\n#SBATCH --gres=gpu:t4:4\n"
                            "srun torchrun --nproc_per_node=4 pretrain_gpt.py --tensor-model-parallel-size 2 --use-flash-attn\n",
            "pretrain_gpt.py": "import sys\nprint(sys.argv)\n",
            "requirements.txt": "flash-attn>=2.3\n",
        }, paths=["train.sbatch"], line=4),
        Example(files={
            "train.sbatch": "#!/bin/bash\n#SBATCH --nodes=1\n#SBATCH --gres=gpu:v100:8\n"
                            "srun torchrun --nproc_per_node=8 pretrain_gpt.py --tensor-model-parallel-size 2 --use-flash-attn\n",
            "pretrain_gpt.py": "import sys\nprint(sys.argv)\n",
        }, paths=["train.sbatch"], line=4),
    )

    def check_job(self, job, ctx) -> "Iterable[Diagnostic]":
        la = job.launch
        if la is None or not la.megatron_flags or "use-flash-attn" not in la.flag_names:
            return
        gpu = job_gpu(job, ctx)
        if gpu is None or gpu.cc() >= FA2_FROM:
            return
        fa = job.facts.all("version.flash_attn")
        if gpu.cc() >= FA1_FROM:
            if not versions.at_least(fa, FA2):
                return
            why = f"{versions.show(fa)} supports Ampere or newer only (flash-attn 2 dropped Turing)"
            fix = "use flash-attn 1.x, drop --use-flash-attn or request Ampere or newer GPUs"
        else:
            why = "no flash-attn release supports it"
            fix = "drop --use-flash-attn or request Ampere or newer GPUs"
        word = next((a for a in la.args if a.known and a.value in ("--use-flash-attn", "--use_flash_attn")), None)
        span = word.span if word is not None and word.span is not None else la.span
        related = tuple(Related.at(v.span, f"{v.source or v.value} stated here") for v in fa if v.span is not None)[:3]
        if gpu.value is not None and gpu.value.span is not None:
            related = (Related.at(gpu.value.span, f"{gpu.name} stated here"),) + related
        yield self.report(span, f"--use-flash-attn on {gpu_said(gpu)}: {why}, and the first forward pass stops "
                                f"every rank; {fix}", related)
