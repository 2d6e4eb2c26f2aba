"""LAY014 rollout-tp-not-dividing-world: the rollout engine's tensor-parallel degree does not divide the GPUs of an RL job."""

from __future__ import annotations

from parallint.model.diagnostics import Severity
from parallint.model.factrule import FactRule, Finding, View
from parallint.model.rule import Example

_RUN = """
#!/bin/bash
python3 -m verl.trainer.main_ppo \\
    algorithm.adv_estimator=grpo \\
    data.train_batch_size=16 \\
    actor_rollout_ref.model.path=Qwen/Qwen2.5-7B-Instruct \\
    actor_rollout_ref.rollout.name=vllm \\
    actor_rollout_ref.rollout.tensor_model_parallel_size={tp} \\
    actor_rollout_ref.rollout.n=8 \\
    trainer.n_gpus_per_node={gpus} \\
    trainer.nnodes=1
"""


class RolloutTpNotDividingWorld(FactRule):
    code = "LAY014"
    facts = frozenset({"parallel.rollout_tp", "parallel.world_size"})
    name = "rollout-tp-not-dividing-world"
    severity = Severity.ERROR
    summary = "The rollout engine's tensor-parallel degree does not divide the GPUs of an RL job."
    doc = """
    ## What it does
    Checks the tensor-parallel degree of an RL framework's rollout engine against the GPUs of the
    job: verl's `actor_rollout_ref.rollout.tensor_model_parallel_size` against
    `trainer.n_gpus_per_node × trainer.nnodes`, when the launch line gives both and holds no word
    parallint cannot read (`$@` may override any key).

    ## Why it matters
    verl splits its workers into rollout groups of TP GPUs each and asserts the split when it
    builds the rollout ("rollout world_size: 1 is not divisible by infer_tp: 2", verl#1191): the
    job stops after the model is loaded on every GPU, often when a recipe for 8 GPUs is run on
    fewer.

    ## Example

    ## How to fix
    Set the rollout's tensor-parallel size to a divisor of the GPU count, or request more GPUs.
    """
    valid = (Example(_RUN.format(tp=2, gpus=8), filename="run_grpo.sh"),
             Example(_RUN.format(tp=1, gpus=1), filename="run_grpo.sh"))
    invalid = (Example(_RUN.format(tp=2, gpus=1), filename="run_grpo.sh", line=7, doc=True),
               Example(_RUN.format(tp=4, gpus=6), filename="run_grpo.sh", line=7))

    def findings(self, view: View):
        tp, world = view.i("parallel.rollout_tp"), view.i("parallel.world_size")
        if tp is None or world is None or tp <= 0 or world <= 0 or world % tp == 0:
            return
        tp_v, world_v = view.v("parallel.rollout_tp"), view.v("parallel.world_size")
        assert tp_v is not None and world_v is not None  # view.i gave ints for the same keys
        yield Finding(tp_v, f"rollout tensor parallel {tp} does not divide the job's {world} GPU(s) ({world_v.source}); "
                            f"verl asserts it when it builds the rollout; set the rollout's "
                            f"tensor_model_parallel_size to a divisor of {world} or request a multiple of {tp} GPUs",
                      [(world_v, f"{world} GPU(s)")])
