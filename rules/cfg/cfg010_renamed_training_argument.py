"""CFG010 renamed-training-argument: a TrainingArguments keyword that the job's transformers version does not accept (evaluation_strategy / eval_strategy)."""

from __future__ import annotations

from parallint.model import versions
from parallint.model.diagnostics import Related, Severity
from parallint.model.rule import Example, Rule
from parallint.model.script import job_scripts

TYPE_CHECKING = False  # typing is not imported at run time (start-up, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Iterable

    from parallint.model.diagnostics import Diagnostic

#: transformers 4.41.0 added ``eval_strategy`` and deprecated ``evaluation_strategy``
#: (huggingface/transformers#30190, "to be removed in 4.46"); parallint errs only from 4.52, the
#: first release every report agrees has no ``evaluation_strategy`` left
RENAMED_IN = "4.41"
REMOVED_BY = "4.52"


class RenamedTrainingArgument(Rule):
    code = "CFG010"
    name = "renamed-training-argument"
    severity = Severity.ERROR
    summary = ("a TrainingArguments keyword that the job's transformers version does not accept "
               "(evaluation_strategy / eval_strategy)")
    calls = frozenset({"training_args"})
    facts = frozenset({"version.transformers"})
    doc = """
    ## What it does
    Version-aware (transformers). Reads the keywords of `TrainingArguments(...)` (and
    `Seq2SeqTrainingArguments`, TRL's configs) in the job's scripts against every transformers
    version that can reach the job:

    - `evaluation_strategy=` where every version is 4.52 or newer: an error (removed);
    - `evaluation_strategy=` where every version is in [4.41, 4.52): a warning (deprecated since
      4.41, removed in a later release; the deprecation notice named 4.46);
    - `eval_strategy=` where every version is older than 4.41: an error (not there yet).

    transformers 4.41.0's release notes and huggingface/transformers#30190 rename the argument.
    A version not known or not pinned stays silent.

    ## Why it matters
    `TrainingArguments.__init__() got an unexpected keyword argument 'evaluation_strategy'` (or
    `'eval_strategy'`) stops every rank at start-up; the script worked with the version it was
    written against.

    ## Example

    ## How to fix
    Rename the keyword to the spelling the pinned version accepts, or change the pin.
    """
    valid = (
        Example(files={
            "train.py": "from transformers import TrainingArguments\n\n"
                        "args = TrainingArguments(output_dir='out', eval_strategy='steps')\n",
            "requirements.txt": "transformers==4.46.0\n",
        }, paths=["train.py"]),
        Example(files={
            "train.py": "from transformers import TrainingArguments\n\n"
                        "args = TrainingArguments(output_dir='out', evaluation_strategy='steps')\n",
            "requirements.txt": "transformers==4.40.2\n",
        }, paths=["train.py"]),
        Example(files={  # a range across the rename
            "train.py": "from transformers import TrainingArguments\n\n"
                        "args = TrainingArguments(output_dir='out', evaluation_strategy='steps')\n",
            "requirements.txt": "transformers>=4.30\n",
        }, paths=["train.py"]),
    )
    invalid = (
        Example(files={
            "train.py": "from transformers import TrainingArguments\n\n"
                        "args = TrainingArguments(output_dir='out', evaluation_strategy='steps')\n",
            "requirements.txt": "transformers>=4.52,<5\n",
        }, paths=["train.py"], line=3),
        Example(files={
            "train.py": "from transformers import TrainingArguments\n\n"
                        "args = TrainingArguments(output_dir='out', evaluation_strategy='steps')\n",
            "requirements.txt": "transformers==4.44.2\n",
        }, paths=["train.py"], line=3),
        Example(files={
            "train.py": "from transformers import TrainingArguments\n\n"
                        "args = TrainingArguments(output_dir='out', eval_strategy='steps')\n",
            "requirements.txt": "transformers==4.36.2\n",
        }, paths=["train.py"], line=3),
    )

    def check_job(self, job, ctx) -> "Iterable[Diagnostic]":
        tf = job.facts.all("version.transformers")
        if not tf:
            return
        old = versions.below(tf, RENAMED_IN)
        removed = versions.at_least(tf, REMOVED_BY)
        deprecated = versions.within(tf, RENAMED_IN, REMOVED_BY)
        if not (old or removed or deprecated):
            return
        said = versions.show(tf)
        related = tuple(Related.at(v.span, f"{v.source or v.value} stated here") for v in tf if v.span is not None)[:3]
        for _f, s in job_scripts(job):
            for call in s.by("training_args"):
                for kw in getattr(call.node, "keywords", ()):
                    if kw.arg == "evaluation_strategy" and removed:
                        yield self.report(s.arg_span(call, kw.arg), f"evaluation_strategy is not an argument of "
                                          f"{said} (renamed eval_strategy in 4.41, since removed): TrainingArguments "
                                          f"raises TypeError at start-up; rename it to eval_strategy", related)
                    elif kw.arg == "evaluation_strategy" and deprecated:
                        yield self.report(s.arg_span(call, kw.arg), f"evaluation_strategy is deprecated in {said} "
                                          f"(renamed eval_strategy in 4.41) and removed in later releases; rename "
                                          f"it to eval_strategy", related, Severity.WARNING)
                    elif kw.arg == "eval_strategy" and old:
                        yield self.report(s.arg_span(call, kw.arg), f"eval_strategy is not an argument of {said} "
                                          f"(it came with 4.41): TrainingArguments raises TypeError at start-up; "
                                          f"rename it to evaluation_strategy or change the pin to "
                                          f"transformers>={RENAMED_IN}", related)
