"""LAY013 tp-comm-overlap-without-sequence-parallel: Tensor-parallel communication overlap without sequence parallelism (or with TP 1)"""

from __future__ import annotations

from parallint.model.diagnostics import Severity
from parallint.model.factrule import FactRule
from parallint.model.facts import FactMap, Value
from parallint.model.rule import Example
from parallint.rules.lay._common import _meg, _nemo


def _flag_on(node) -> bool:
    """A MODEL_ARGS switch that is passed: ``--flag: true`` (or a value); ``false`` = not passed."""
    return node is not None and node.value is not False and node.value is not None and not node.is_map


_TP_OVERLAP_FIX = "add --sequence-parallel with TP > 1, or remove --tp-comm-overlap"


class TpCommOverlapWithoutSequenceParallel(FactRule):
    code = "LAY013"
    name = "tp-comm-overlap-without-sequence-parallel"
    severity = Severity.ERROR
    summary = "Tensor-parallel communication overlap without sequence parallelism (or with TP 1)"
    facts = frozenset({"parallel.sequence_parallel", "parallel.tp"})
    doc = """
    ## What it does
    Flags Megatron's `--tp-comm-overlap` (Transformer Engine userbuffers) when sequence
    parallelism is not on as launched: `--sequence-parallel` missing, or TP 1 (Megatron then
    turns sequence parallelism off first). For NeMo, `ub_tp_comm_overlap: true` without
    `sequence_parallel: true` is reported as a warning. Command lines with words parallint
    cannot resolve (`$EXTRA_ARGS`) keep it silent.

    ## Why it matters
    Megatron-LM stops at start-up with "Tensor parallel communication/GEMM overlap can happen
    only when sequence parallelism is enabled": the overlap kernels replace the all-gather and
    reduce-scatter that only sequence parallelism uses. NeMo instead switches the overlap off
    silently, so the speed-up the config asks for never happens.

    ## Example

    ## How to fix
    Add `--sequence-parallel` (`sequence_parallel: true`) with TP > 1, or drop the overlap flag.
    """
    valid = (
        Example(_meg("--tensor-model-parallel-size: 4\n--sequence-parallel: true\n--tp-comm-overlap: true\n"
                     "--num-attention-heads: 32"), filename="model_config.yaml"),
        Example(_nemo(tp=4, model_extra="  sequence_parallel: true\n  ub_tp_comm_overlap: true\n"),
                filename="conf/gpt.yaml"),
    )
    invalid = (
        Example(_meg("--tensor-model-parallel-size: 4\n--tp-comm-overlap: true\n--num-attention-heads: 32"),
                filename="model_config.yaml", line=5),
        Example(_meg("--tensor-model-parallel-size: 1\n--sequence-parallel: true\n--tp-comm-overlap: true\n"
                     "--num-attention-heads: 32"), filename="model_config.yaml", line=6),
        Example(files={
            "run.sh": "torchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size 8 \\\n"
                      "    --num-layers 32 --hidden-size 4096 --num-attention-heads 32 --tp-comm-overlap\n",
            "pretrain_gpt.py": "import sys\nprint(sys.argv)\n",
        }, line=2),
    )

    def _verdict(self, sp: Value | None, tp: int | None, tp_stated: bool) -> str | None:
        """Why sequence parallelism is off as launched, or None when it is (or may be) on."""
        if sp is not None and not sp.known:
            return None
        if sp is None or sp.value is not True:
            return "without --sequence-parallel"
        if tp == 1 or (tp is None and not tp_stated):
            return "with TP 1, where Megatron turns sequence parallelism off first"
        return None

    def check_file(self, f, ctx):
        tree = getattr(getattr(f, "data", None), "tree", None)
        if tree is None or not tree.is_map:
            return
        if f.kind == "megatron_yaml":
            args = tree.get("MODEL_ARGS")
            node = args.get("--tp-comm-overlap") if args is not None and args.is_map else None
            if not _flag_on(node):
                return
            sp = f.facts.all("parallel.sequence_parallel")
            why = self._verdict(sp[0] if sp else None, f.facts.int("parallel.tp"), bool(f.facts.all("parallel.tp")))
            if why:
                yield self.report(args.key_spans.get("--tp-comm-overlap", node.span),
                                  f"--tp-comm-overlap {why}: Megatron stops at start-up (\"Tensor parallel "
                                  f"communication/GEMM overlap can happen only when sequence parallelism is enabled\"); "
                                  f"{_TP_OVERLAP_FIX}")
        elif f.kind == "nemo":
            model = tree.get("model")
            node = model.get("ub_tp_comm_overlap") if model is not None and model.is_map else None
            if node is None or node.value is not True:
                return
            sp = f.facts.all("parallel.sequence_parallel")
            if sp and (not sp[0].known or sp[0].value is True):
                return
            yield self.report(model.key_spans.get("ub_tp_comm_overlap", node.span),
                              "ub_tp_comm_overlap without sequence_parallel: NeMo switches the overlap off "
                              "(it needs sequence parallelism's all-gather/reduce-scatter); set model.sequence_parallel "
                              "to true or remove ub_tp_comm_overlap",
                              severity=Severity.WARNING)

    def check_job(self, job, ctx):
        launch = getattr(job, "launch", None)
        args = list(getattr(launch, "args", None) or [])
        if not args or any(not a.known for a in args):
            return  # an unresolved word may carry --sequence-parallel
        words = [a for a in args if isinstance(a.value, str)]
        flag = next((a for a in words if a.value == "--tp-comm-overlap"), None)
        if flag is None or flag.span is None:
            return
        if any(f.path == flag.span.path and f.kind in self.kinds for f in job.files):
            return  # a config file's own finding
        facts = getattr(launch, "facts", None)
        if not isinstance(facts, FactMap):
            return
        sp_on = any(a.value == "--sequence-parallel" for a in words)
        tp = facts.int("parallel.tp")
        if sp_on and tp is None and facts.all("parallel.tp"):
            return
        why = "without --sequence-parallel" if not sp_on else (
            "with TP 1, where Megatron turns sequence parallelism off first" if (tp or 1) == 1 else None)
        if why:
            yield self.report(flag.span, f"--tp-comm-overlap {why}: Megatron stops at start-up (\"Tensor parallel "
                                         f"communication/GEMM overlap can happen only when sequence parallelism "
                                         f"is enabled\"); {_TP_OVERLAP_FIX}")
