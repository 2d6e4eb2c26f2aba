"""CFG008 overlap-param-gather-requirements: --overlap-param-gather without the distributed optimizer or without --overlap-grad-reduce."""

from __future__ import annotations

from parallint.model.diagnostics import Diagnostic, Severity
from parallint.model.rule import Example, Rule
from parallint.rules.cfg._common import _megatron_command

TYPE_CHECKING = False  # typing is not imported at run time (start-up, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Iterable


#: what makes Megatron-LM accept --overlap-param-gather (arguments.py: the distributed optimizer,
#: Megatron FSDP or the dist_muon optimizer), by normalized flag
_SHARDED_OPTIMIZER = frozenset({"use-distributed-optimizer", "use-megatron-fsdp"})


class OverlapParamGatherRequirements(Rule):
    code = "CFG008"
    name = "overlap-param-gather-requirements"
    severity = Severity.ERROR
    summary = "--overlap-param-gather without the distributed optimizer or without --overlap-grad-reduce."
    kinds = frozenset()
    facts = frozenset({"framework"})
    doc = """
    ## What it does
    Checks a Megatron-LM command line that passes `--overlap-param-gather`: Megatron's argument
    validation requires the distributed optimizer (`--use-distributed-optimizer`), Megatron FSDP
    (`--use-megatron-fsdp`) or `--optimizer dist_muon`, and `--overlap-grad-reduce` with it. Silent
    when a word of the command line that could be a flag is unknown (an unexpanded `$EXTRA_ARGS` may
    carry the missing flag; an unknown value of a known flag is fine), with `--yaml-cfg` or `--freeze-all-layers` (which switches the overlap off),
    and when the script's Megatron does not know the flag (CFG006 reports that).

    ## Why it matters
    Parameter all-gathers can only overlap with the forward pass when the optimizer state is
    sharded, and they are scheduled by the same bucketed gradient reduction. Megatron asserts
    both in `validate_args`, on every rank, after the job has waited for its nodes: "--overlap-param-
    gather only supported with distributed optimizer, megatron fsdp, or dist_muon".

    ## Example

    ## How to fix
    Add `--use-distributed-optimizer` (and `--overlap-grad-reduce`), or drop `--overlap-param-gather`.
    """
    valid = (
        Example(files={
            "run.sh": """
            #!/bin/bash
            torchrun --nproc_per_node 8 /opt/Megatron-LM/pretrain_gpt.py \\
                --tensor-model-parallel-size 2 --num-layers 24 --micro-batch-size 2 \\
                --use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather
            """,
        }, paths=["run.sh"]),
        Example(files={
            "run.sh": """
            #!/bin/bash
            torchrun --nproc_per_node 8 /opt/Megatron-LM/pretrain_gpt.py \\
                --tensor-model-parallel-size 2 --overlap-param-gather $OPTIMIZER_ARGS
            """,
        }, paths=["run.sh"]),
    )
    invalid = (
        Example(files={
            "run.sh": """
            #!/bin/bash
            torchrun --nproc_per_node 8 /opt/Megatron-LM/pretrain_gpt.py \\
                --tensor-model-parallel-size 2 --num-layers 24 --micro-batch-size 2 \\
                --overlap-grad-reduce --overlap-param-gather
            """,
        }, line=4, paths=["run.sh"]),
        Example(files={
            "run.sh": """
            #!/bin/bash
            OPT="--use-distributed-optimizer --overlap-param-gather"
            torchrun --nproc_per_node 8 /opt/Megatron-LM/pretrain_gpt.py --num-layers 24 $OPT
            """,
        }, line=2, paths=["run.sh"]),
    )

    def check_job(self, job, ctx) -> Iterable[Diagnostic]:
        found = _megatron_command(job)
        if found is None:
            return
        la, flags, table = found
        values = {id(val) for _, _, val in flags if val is not None}
        if any(not a.known and id(a) not in values for a in la.args or ()):
            return  # an unknown word where a flag could stand (an unexpanded $EXTRA_ARGS)
        names = {name: (fw, val) for name, fw, val in flags}
        if "overlap-param-gather" not in names or names.keys() & {"yaml-cfg", "freeze-all-layers"}:
            return
        if "--overlap-param-gather" not in table.known:
            return  # not Megatron-LM's flag set (Megatron-DeepSpeed has no such flag: CFG006 says so)
        at = names["overlap-param-gather"][0]
        optimizer = names.get("optimizer", (None, None))[1]
        muon = optimizer is not None and optimizer.known and str(optimizer.value) == "dist_muon"
        if not (names.keys() & _SHARDED_OPTIMIZER) and not muon:
            yield self.report(at.span, "--overlap-param-gather needs the distributed optimizer: Megatron stops at "
                                       "start-up; add --use-distributed-optimizer (or drop --overlap-param-gather)")
        elif "overlap-grad-reduce" not in names:
            yield self.report(at.span, "--overlap-param-gather needs --overlap-grad-reduce: Megatron stops at "
                                       "start-up; add --overlap-grad-reduce")
