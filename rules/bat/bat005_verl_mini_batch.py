"""BAT005 verl-mini-batch: verl's PPO mini batch does not fit the train batch or the FSDP actor's GPUs"""

from __future__ import annotations

from parallint.model.diagnostics import Severity
from parallint.model.factrule import FactRule, Finding, View
from parallint.model.rule import Example

_VERL_SH = ("#!/bin/bash\npython3 -m verl.trainer.main_ppo \\\n    data.train_batch_size={batch} \\\n"
            "    actor_rollout_ref.rollout.n={n} \\\n    actor_rollout_ref.actor.ppo_mini_batch_size={mini} \\\n"
            "    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu={micro} \\\n    trainer.n_gpus_per_node=8 \\\n"
            "    trainer.nnodes=1\n")


def _divisors(n: int) -> str:
    ds = [d for d in range(1, n + 1) if n % d == 0]
    return ", ".join(map(str, ds[-4:]))


class VerlMiniBatch(FactRule):
    code = "BAT005"
    facts = frozenset({"parallel.ulysses_sp", "training.global_batch", "training.ppo_micro_per_gpu",
                       "training.ppo_mini_batch", "training.rollout_n"})
    name = "verl-mini-batch"
    severity = Severity.ERROR
    summary = "verl's PPO mini batch does not fit the train batch or the FSDP actor's GPUs"
    doc = """
    ## What it does
    For a verl launch (`python3 -m verl.trainer.main_ppo` with Hydra overrides, read as for
    BAT002) that gives `actor_rollout_ref.actor.ppo_mini_batch_size`, checks what verl checks at
    start-up:

    - `ppo_mini_batch_size <= data.train_batch_size` (`ActorConfig.validate`, any actor);
    - for the FSDP actor (verl's default worker): `ppo_mini_batch_size × rollout.n // (GPUs /
      Ulysses degree)`, the mini batch per rank, is above 0, and divisible by
      `ppo_micro_batch_size_per_gpu` when the line gives it.

    Silent unless the line gives every value (verl's packaged defaults fill `rollout.n` 1,
    `trainer.nnodes` 1 and the Ulysses degree 1 only), with `use_dynamic_bsz`, another config,
    the older global `ppo_micro_batch_size`, both Ulysses keys, or the new worker
    (`trainer.use_legacy_worker_impl=disable`).

    ## Why it matters
    verl stops after the Ray cluster and every worker have started: "train_batch_size (64) must
    be >= actor.ppo_mini_batch_size (128)", "ppo_mini_batch_size 0 should be larger than 0 after
    normalization", "normalized ppo_mini_batch_size 4 should be divisible by
    ppo_micro_batch_size_per_gpu 3".

    ## Example

    ## How to fix
    Lower the mini batch to the train batch or less, raise it to at least the GPUs (over
    `rollout.n` and the Ulysses degree), and choose a micro batch per GPU that divides the mini
    batch per rank.
    """
    valid = (Example(_VERL_SH.format(batch=256, n=1, mini=64, micro=4), filename="run_ppo.sh"),
             Example(_VERL_SH.format(batch=64, n=4, mini=8, micro=2), filename="run_grpo.sh"),)
    invalid = (
        Example(_VERL_SH.format(batch=64, n=1, mini=128, micro=4), filename="run_ppo.sh", line=5, doc=True),
        Example(_VERL_SH.format(batch=64, n=1, mini=4, micro=1), filename="run_ppo.sh", line=5),
        Example(_VERL_SH.format(batch=256, n=1, mini=32, micro=3), filename="run_ppo.sh", line=6),
    )

    def findings(self, view: View):
        if not view.fw("verl"):
            return
        mini_v, gb_v = view.v("training.ppo_mini_batch"), view.v("training.global_batch")
        mini, gb, n = view.i("training.ppo_mini_batch"), view.i("training.global_batch"), view.i("training.rollout_n")
        if mini_v is None or gb_v is None or mini is None or gb is None or n is None or mini <= 0 or n <= 0 or gb % n:
            return
        train = gb // n
        if train < mini:
            yield Finding(mini_v, f"actor_rollout_ref.actor.ppo_mini_batch_size {mini} is larger than "
                                  f"data.train_batch_size {train}: verl's validate_config stops with \"train_batch_size "
                                  f"({train}) must be >= actor.ppo_mini_batch_size ({mini})\"; lower "
                                  f"actor_rollout_ref.actor.ppo_mini_batch_size to {train} or less",
                          [(gb_v, f"data.train_batch_size {train}")])
            return
        sp, w = view.i("parallel.ulysses_sp"), view.world_int
        if sp is None or w is None or sp <= 0 or w <= 0 or w % sp:
            return
        ranks = w // sp
        per = mini * n // ranks
        times = f" × rollout.n {n}" if n > 1 else ""
        over = f"{w} GPUs" + (f" / Ulysses {sp}" if sp > 1 else "")
        rel = [(view.world, f"{w} GPUs")]
        if per == 0:
            need = -(-ranks // n)
            yield Finding(mini_v, f"ppo_mini_batch_size {mini}{times} is less than the FSDP actor's {ranks} "
                                  f"data-parallel ranks ({over}): verl's FSDP worker stops with \"ppo_mini_batch_size "
                                  f"0 should be larger than 0 after normalization\"; raise "
                                  f"actor_rollout_ref.actor.ppo_mini_batch_size to {need} or more",
                          rel)
            return
        micro_v, micro = view.v("training.ppo_micro_per_gpu"), view.i("training.ppo_micro_per_gpu")
        if micro_v is None or micro is None or micro <= 0 or per % micro == 0:
            return
        yield Finding(micro_v, f"ppo_micro_batch_size_per_gpu {micro} does not divide the mini batch per rank "
                               f"{per} (ppo_mini_batch_size {mini}{times} over {ranks} ranks, {over}): verl's FSDP "
                               f"worker stops with \"normalized ppo_mini_batch_size {per} should be divisible by "
                               f"ppo_micro_batch_size_per_gpu {micro}\"; set "
                               f"actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu to a divisor of {per} "
                               f"({_divisors(per)})",
                      [(mini_v, f"ppo_mini_batch_size {mini}")] + rel)
