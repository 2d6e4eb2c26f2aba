"""An example parallint plugin: a house rule against launching through the in-house `acmerun`
wrapper with a hard-coded node count. See docs/plugins.md."""

from __future__ import annotations

import re

from parallint import Example, Rule, Severity  # the stable plugin API (docs/plugins.md)

_NODES = re.compile(r"\bacmerun\b.*--nodes[ =](\d+)")


class AcmeHardcodedNodes(Rule):
    code = "ACME001"  # your own prefix: codes are unique across parallint and every plugin
    name = "acme-hardcoded-nodes"
    severity = Severity.WARNING
    summary = "acmerun with a hard-coded --nodes (use the scheduler's allocation)"
    # which files check_file sees (parallint.discover.classify.KINDS): here shell launch files
    kinds = frozenset({"shell"})
    # the pre-filter skips a shell file that names no launcher it knows; `acmerun` is ours
    needles = ("acmerun",)
    doc = """
    ## What it does
    Flags `acmerun ... --nodes N` with a literal N in a launch script.

    ## Why it matters
    The node count belongs to the allocation (`#SBATCH --nodes`); a literal drifts from it.

    ## Example
    ```sh
    acmerun --nodes 4 train.py
    ```

    ## How to fix
    Pass `--nodes "$SLURM_NNODES"`.
    """
    valid = (Example('#!/bin/bash\nacmerun --nodes "$SLURM_NNODES" train.py\n', filename="run.sh"),)
    invalid = (Example("#!/bin/bash\nacmerun --nodes 4 train.py\n", filename="run.sh", line=2),)

    def check_file(self, f, ctx):
        for i, line in enumerate(f.text.splitlines(), 1):
            m = _NODES.search(line)
            if m:
                yield self.report(f.span(i, m.start(1) + 1), f"acmerun --nodes {m.group(1)} is hard-coded; "
                                                             "pass the scheduler's node count")
