"""LCH013 multi-node-default-master: A torchrun on several Slurm or SkyPilot nodes with no master address: torchrun's default is 127.0.0.1."""

from __future__ import annotations

from typing import Iterable

from parallint.model.diagnostics import Diagnostic, Severity
from parallint.model.facts import Value
from parallint.model.launches import (
    LAUNCH_FILE_KINDS, launches, related_at,
)
from parallint.model.rule import Example, Rule
from parallint.rules.lch._common import TORCHRUN_FAMILY, _int_text, _one_node_step, unique


class MultiNodeDefaultMaster(Rule):
    code = "LCH013"
    name = "multi-node-default-master"
    severity = Severity.ERROR
    summary = "A torchrun on several Slurm or SkyPilot nodes with no master address: torchrun's default is 127.0.0.1."
    kinds = LAUNCH_FILE_KINDS
    doc = """
    ## What it does
    Reports a torchrun (or `python -m torch.distributed.run`/`launch`) with a literal `--nnodes`
    greater than 1, started on every node by `srun` or by a SkyPilot task, that has neither
    `--master_addr` nor `--rdzv_endpoint` (nor `--standalone`), and no `PET_MASTER_ADDR` /
    `PET_RDZV_ENDPOINT` in its environment.

    Only where nothing else can supply the address: Slurm and SkyPilot set no `PET_*` variables.
    Under Kubeflow's PyTorchJob or Trainer, TorchX and other operators that inject `PET_MASTER_ADDR`,
    and in a plain shell script that such an operator may run, the rule is silent; so it is when
    an unexpanded variable sits among torchrun's options (it may carry the address).

    ## Why it matters
    torchrun's `--master_addr` defaults to `127.0.0.1` (with `--rdzv_backend c10d` an empty
    endpoint is `localhost`), and torchrun does not read `MASTER_ADDR` from the environment: an
    exported `MASTER_ADDR` only reaches the workers, after the rendezvous. Every node rendezvouses
    with itself and the job hangs until the rendezvous timeout, after the nodes were allocated.

    ## Example

    ## How to fix
    Pass the first node's address: `--rdzv_backend c10d --rdzv_endpoint $HEAD:29500` (under Slurm
    `HEAD=$(scontrol show hostnames $SLURM_JOB_NODELIST | head -n1)`; under SkyPilot the first line
    of `$SKYPILOT_NODE_IPS`), or `--master_addr $HEAD --node_rank $SLURM_NODEID`.
    """
    valid = (
        Example("""
        #!/bin/bash
        #SBATCH --nodes=2
        #SBATCH --ntasks-per-node=1
        HEAD=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n1)
        srun torchrun --nnodes 2 --nproc_per_node 8 --rdzv_backend c10d --rdzv_endpoint $HEAD:29500 train.py
        """, filename="train.sbatch"),
        Example("""
        #!/bin/bash
        torchrun --nnodes 2 --nproc_per_node 8 --node_rank $NODE_RANK train.py
        """, filename="run.sh"),
        Example("""
        #!/bin/bash
        #SBATCH --nodes=2
        srun torchrun --nnodes 2 --nproc_per_node 8 $DIST_ARGS train.py
        """, filename="train.sbatch"),
    )
    invalid = (
        Example("""
        #!/bin/bash
        #SBATCH --nodes=2
        #SBATCH --ntasks-per-node=1
        export MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n1)
        srun torchrun --nnodes 2 --nproc_per_node 8 --node_rank $SLURM_NODEID train.py
        """, filename="train.sbatch", line=5, doc=True),
        Example("""
        resources:
          accelerators: A100:8
        num_nodes: 2
        run: |
          torchrun --nnodes=$SKYPILOT_NUM_NODES --nproc_per_node=8 --node_rank=$SKYPILOT_NODE_RANK train.py
        """, filename="sky.yaml", line=5),
    )

    def check_file(self, f, ctx) -> Iterable[Diagnostic]:
        text = f.text or ""
        if "PET_MASTER_ADDR" in text or "PET_RDZV_ENDPOINT" in text:
            return  # set somewhere the evaluator may not follow (a sourced file, a function)
        return unique(d for d in (self._check(la) for la in launches(f)) if d is not None)

    def _check(self, la) -> Diagnostic | None:
        if la.launcher not in TORCHRUN_FAMILY or "torchx" in la.options or "opaque" in la.options:
            return None
        if any(k in la.options for k in ("master_addr", "rdzv_endpoint", "standalone")):
            return None
        if any(k in (la.env or {}) for k in ("PET_MASTER_ADDR", "PET_RDZV_ENDPOINT")):
            return None
        nv = la.options.get("nnodes")
        n = _int_text(nv)
        w = la.wrapper
        if nv is None or n is None or n <= 1 or w is None or w.launcher not in ("srun", "skypilot"):
            return None
        if w.wrapper is not None or (w.launcher == "srun" and _one_node_step(w)):
            return None
        where = "srun" if w.launcher == "srun" else "the SkyPilot task"
        return self.report(nv.span or la.span,
                           f"{n} nodes started by {where} with no --master_addr or --rdzv_endpoint: torchrun's "
                           f"default master is 127.0.0.1 (it does not read MASTER_ADDR), so every node would "
                           f"rendezvous with itself; pass --master_addr (or --rdzv_endpoint) with the first node's "
                           f"address",
                           related=related_at(Value(n, w.span), f"{where} starts it on every node"))
