"""ENV008 fp8-unsupported-gpu: FP8 training (Megatron --fp8-format) on a GPU before Ada/Hopper."""

from __future__ import annotations

from parallint.model.diagnostics import Related, Severity
from parallint.model.launches import LAUNCH_FILE_KINDS
from parallint.model.rule import Example, Rule
from parallint.rules.env._common import gpu_said, job_gpu

TYPE_CHECKING = False  # typing is not imported at run time (start-up, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Iterable

    from parallint.model.diagnostics import Diagnostic

#: FP8 tensor cores: Ada (8.9) and Hopper (9.0) on
FP8_FROM = (8, 9)
#: Megatron's FP8 switches (``--fp8-format`` now; ``--fp8-e4m3``/``--fp8-hybrid`` in older releases)
FP8_FLAGS = ("fp8-format", "fp8-e4m3", "fp8-hybrid")


class Fp8UnsupportedGpu(Rule):
    code = "ENV008"
    name = "fp8-unsupported-gpu"
    severity = Severity.ERROR
    summary = "FP8 training (Megatron --fp8-format) on a GPU before Ada/Hopper."
    kinds = LAUNCH_FILE_KINDS  # jobs with a launch (the GPU is stated there)
    facts = frozenset({"hardware.gpu"})
    doc = """
    ## What it does
    GPU-aware. Fires when a Megatron launch line turns FP8 on (`--fp8-format e4m3|hybrid`, or the
    older `--fp8-e4m3`/`--fp8-hybrid`) and the one GPU type the job provably runs on has compute
    capability below 8.9 (A100: 8.0, A10: 8.6, V100: 7.0).

    ## Why it matters
    FP8 tensor cores came with Ada and Hopper. Transformer Engine checks the device when the first
    FP8 layer runs and stops every rank with "Device compute capability 8.9 or higher required for
    FP8 execution" (Transformer Engine, `fp8.py` `check_fp8_support`).

    ## Example

    ## How to fix
    Drop `--fp8-format` (train in bf16) on these GPUs, or request H100 or newer GPUs.
    """
    valid = (
        Example(files={
            "train.sbatch": "#!/bin/bash\n#SBATCH --nodes=1\n#SBATCH --gres=gpu:h100:8\n"
                            "srun torchrun --nproc_per_node=8 pretrain_gpt.py --tensor-model-parallel-size 2 --bf16 --fp8-format hybrid\n",
            "pretrain_gpt.py": "import sys\nprint(sys.argv)\n",
        }, paths=["train.sbatch"]),
        Example(files={
            "train.sbatch": "#!/bin/bash\n#SBATCH --nodes=1\n#SBATCH --gres=gpu:a100:8\n"
                            "srun torchrun --nproc_per_node=8 pretrain_gpt.py --tensor-model-parallel-size 2 --bf16\n",
            "pretrain_gpt.py": "import sys\nprint(sys.argv)\n",
        }, paths=["train.sbatch"]),
    )
    invalid = (
        Example(files={
            "train.sbatch": "#!/bin/bash\n#SBATCH --nodes=1\n#SBATCH --gres=gpu:a100:8\n"
                            "srun torchrun --nproc_per_node=8 pretrain_gpt.py --tensor-model-parallel-size 2 --bf16 --fp8-format hybrid\n",
            "pretrain_gpt.py": "import sys\nprint(sys.argv)\n",
        }, paths=["train.sbatch"], line=4),
    )

    def check_job(self, job, ctx) -> "Iterable[Diagnostic]":
        la = job.launch
        if la is None or not la.megatron_flags or not (la.flag_names & set(FP8_FLAGS)):
            return
        gpu = job_gpu(job, ctx)
        if gpu is None or gpu.cc() >= FP8_FROM:
            return
        word = next((a for a in la.args if a.known and isinstance(a.value, str) and a.value.startswith("--")
                     and a.value[2:].split("=", 1)[0].replace("_", "-").lower() in FP8_FLAGS), None)
        span = word.span if word is not None and word.span is not None else la.span
        related = (Related.at(gpu.value.span, f"{gpu.name} stated here"),) \
            if gpu.value is not None and gpu.value.span is not None else ()
        yield self.report(span, f"FP8 on {gpu_said(gpu)}: FP8 needs compute capability 8.9 or higher, and "
                                f"Transformer Engine stops every rank at the first FP8 layer; drop the FP8 "
                                f"flags (train in bf16) or request H100 or newer GPUs", related)
