"""LCH019 launched-config-missing: a launch line names a config file that is not in the repository."""

from __future__ import annotations

import re
from typing import Iterable

from parallint.model.diagnostics import Diagnostic, Severity
from parallint.model.rule import Example, Rule

#: a command that changes the working directory: the path is then relative to somewhere unknown
_CHDIR = re.compile(r"(?m)(?:^|[;&|(]|\bthen\b|\bdo\b)\s*(?:cd|pushd)\b")



def _written_through_variable(text: str, name: str) -> bool:
    """The script assigns the path to a variable and writes a file through it first
    (``DS_CONFIG=ds_config.json`` ... ``cat <<EOT > $DS_CONFIG``, ``tee``, ``cp``/``mv`` onto it).
    An assigned value with variables in it matches the name with each variable as a wildcard
    (``config_json="config/ds_config_${NAME}.json"``), and a variable copied from one of those
    (``CONFIG=${config_json}``) counts too."""
    assigns = re.findall(r"(?m)^\s*(?:export\s+|local\s+|declare\s+(?:-\w+\s+)*)?([A-Za-z_]\w*)=([^\s;]+)", text)
    ref_of = r"\$(?:{v}\b|\{{{v}\}})"
    held: set[str] = set()
    for var, rhs in assigns:
        base = rhs.strip("\"'").rsplit("/", 1)[-1]
        if not base or re.fullmatch(r"\$\{?\w+\}?", base):
            continue  # a bare variable: a copy, followed below
        pat = "".join(".*" if part.startswith("$") else re.escape(part)
                      for part in re.split(r"(\$\{\w+\}|\$\w+)", base) if part)
        if re.fullmatch(pat, name):
            held.add(var)
    for _ in range(4):  # copies of copies, a few levels
        more = {var for var, rhs in assigns
                if any(re.fullmatch(r"[\"']?" + ref_of.format(v=re.escape(h)) + r"[\"']?", rhs) for h in held)}
        if more <= held:
            break
        held |= more
    for var in held:
        ref = r"[\"']?" + ref_of.format(v=re.escape(var))
        if re.search(r">>?\|?\s*" + ref + r"|\btee\s+(?:-\w+\s+)*" + ref +
                     r"|\b(?:cp|mv|ln|install)\b[^\n;|&]*\s" + ref + r"[\"']?\s*(?:$|[;&|])", text, re.M):
            return True
    return False


def _foreign_script(launch) -> bool:
    """The launch runs a literal relative ``.py`` path that the linker found nowhere (a launch line
    written for another project's checkout, as a benchmark against another library)."""
    if launch is None or getattr(launch, "is_module", False) or getattr(launch, "script_path", None) is not None:
        return False
    v = getattr(launch, "script", None)
    if v is None or not v.known or not isinstance(v.value, str):
        return False
    raw = v.value.strip().strip("'\"")
    # a bare name (train.py) may sit where the command runs in a copy without a repository marker
    return raw.endswith(".py") and "/" in raw and not raw.startswith(("/", "~")) and not any(c in raw for c in "$*?[]{}")


class LaunchedConfigMissing(Rule):
    code = "LCH019"
    name = "launched-config-missing"
    severity = Severity.WARNING
    summary = "A launch line names a config file (--deepspeed, --config_file ...) that is not in the repository."
    kinds = frozenset({"shell", "makefile"})
    doc = """
    ## What it does
    Reports a config file that a launch command names by a literal relative path — `--deepspeed
    ds.json`, `--deepspeed_config`, accelerate's `--config_file`, `--deepspeed_config_file`, and the
    `deepspeed_config_file` of the accelerate config it launches with — when no such file is beside
    the file that names it or at the repository root.

    When that folder holds a file of the same kind with a close name, the message names it.

    It stays silent where the path may be right at run time: a path with a variable, a glob or a
    `~`, an absolute path (a container or cluster path), a path inside a git submodule (not
    checked out), a launch file that changes its working directory (`cd`, `pushd`), and a file
    whose name appears elsewhere in the launch file (it may be written there first, as with
    `cat > ds.json <<EOF`), or a path held in a variable that the file writes through
    (`DS_CONFIG=ds.json` then `cat <<EOT > $DS_CONFIG`, `tee $DS_CONFIG`, `cp base.json $DS_CONFIG`,
    also through a name built from variables, `config_json="config/ds_${NAME}.json"`, and its
    copies), and a path that exists relative to a folder between the launch file's and the
    repository root (a script in `project/bash_script/` run from `project/`), a launch whose own
    script (a relative `.py` path in a folder) is not in the repository either (the line is written for another
    project's checkout), or, in a tree with
    no repository marker (no `.git`, `pyproject.toml` or `setup.py`: a copy), relative to the
    folder parallint runs in when that folder is above the launch file.

    ## Why it matters
    The launcher or the training script opens the file at start-up: DeepSpeed and the HF Trainer
    stop with a missing-file error, accelerate with "config file not found", after the nodes are
    allocated and the container is pulled. A renamed or uncommitted config is the usual cause, and
    a fresh clone of the repository is where it shows.

    ## Example

    ## How to fix
    Correct the path (relative to the folder the command runs in), or commit the file.
    """
    valid = (
        Example("""
        #!/bin/bash
        deepspeed train.py --deepspeed configs/ds_zero2.json
        """, filename="run.sh", files={"configs/ds_zero2.json": '{"train_batch_size": "auto"}\n'}),
        Example("""
        #!/bin/bash
        cat > ds_config.json <<EOF
        {"train_batch_size": 64}
        EOF
        deepspeed train.py --deepspeed ds_config.json
        """, filename="run.sh"),
        Example("""
        #!/bin/bash
        DS_CONFIG=ds_config.json
        cat <<EOT > $DS_CONFIG
        {"train_batch_size": 64}
        EOT
        deepspeed pretrain_gpt.py --deepspeed --deepspeed_config=$DS_CONFIG
        """, filename="run.sh"),
        Example("""
        #!/bin/bash
        cd "$(dirname "$0")/../training"
        deepspeed train.py --deepspeed configs/ds.json
        """, filename="run.sh"),
        Example("""
        #!/bin/bash
        # run from a checkout of the library this benchmarks against
        accelerate launch --config_file examples/accelerate_configs/zero3.yaml examples/scripts/dpo.py
        """, filename="benchmark/run.sh"),
        Example("""
        #!/bin/bash
        accelerate launch --config_file $CONFIG train.py
        deepspeed train.py --deepspeed /workspace/configs/ds.json
        """, filename="run.sh"),
    )
    invalid = (
        Example("""
        #!/bin/bash
        deepspeed --num_gpus 8 train.py --deepspeed configs/ds_zero3.json --bf16
        """, filename="run.sh", line=2, doc=True, files={"configs/ds_zero2.json": '{"train_batch_size": "auto"}\n',
                                                         "train.py": "import deepspeed\n"}),
        Example("""
        #!/bin/bash
        accelerate launch --config_file accelerate/fsdp.yaml train.py
        """, filename="scripts/run.sh", line=2, files={"scripts/train.py": "import torch\n"}),
        Example("""
        #!/bin/bash
        accelerate launch --config_file acc.yaml train.py
        """, filename="run.sh", line=3, files={
            "acc.yaml": "distributed_type: DEEPSPEED\ndeepspeed_config:\n  deepspeed_config_file: ds/zero3.json\n"
                        "num_processes: 8\n", "train.py": "import torch\n"}, paths=("run.sh",)),
    )

    def check_file(self, f, ctx) -> Iterable[Diagnostic]:
        return ()

    def check_job(self, job, ctx) -> Iterable[Diagnostic]:
        missing = getattr(job, "missing", None)
        f = job.root
        if not missing or f is None or f.kind not in self.kinds:
            return
        text = f.text or ""
        if _CHDIR.search(text):
            return  # the working directory at the launch is not known
        if _foreign_script(job.launch):
            return  # the launched script is not in this repository either: the line runs in another checkout
        for v, close in missing:
            raw = str(v.value).strip().strip("'\"")
            name = raw.rsplit("/", 1)[-1]
            if text.count(name) > 1 or _written_through_variable(text, name):
                continue  # named elsewhere too, or written through a variable: it may exist by the launch
            at = v.span or job.launch.span
            what = "deepspeed_config_file" if str(v.source).endswith("deepspeed_config_file") else v.source
            yield self.report(at,
                              f"{what} {raw}: no such file beside {at.path.rsplit('/', 1)[-1]} or at the "
                              f"repository root, so the launch stops when it opens it; "
                              + (f"fix the path (did you mean {close}?)" if close else "fix the path or commit the file"))
