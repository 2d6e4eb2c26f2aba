"""LCH020 launcher-newer-than-torch: torchrun or torch.distributed.run with a torch release that does not have it yet."""

from __future__ import annotations

from parallint.model import versions
from parallint.model.diagnostics import Related, Severity
from parallint.model.launches import LAUNCH_FILE_KINDS, launches
from parallint.model.rule import Example, Rule

TYPE_CHECKING = False  # typing is not imported at run time (start-up, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Iterable

    from parallint.model.diagnostics import Diagnostic

#: the first torch with each launcher: torch.distributed.run came with 1.9 (torchelastic merged
#: into PyTorch), the ``torchrun`` console script with 1.10 (PyTorch 1.9 and 1.10 release notes)
SINCE = {"torch.distributed.run": "1.9", "torchrun": "1.10"}


class LauncherNewerThanTorch(Rule):
    code = "LCH020"
    name = "launcher-newer-than-torch"
    severity = Severity.ERROR
    summary = "torchrun or torch.distributed.run with a torch release that does not have it yet."
    kinds = LAUNCH_FILE_KINDS
    facts = frozenset({"version.torch"})
    doc = """
    ## What it does
    Version-aware (torch). Reports `torchrun` where every torch version that can reach the job is
    older than 1.10, and `python -m torch.distributed.run` where every one is older than 1.9 (a
    `torch==1.8.1` pin, an NGC 21.02 image). PyTorch 1.9's release notes add
    `torch.distributed.run` (torchelastic moved into PyTorch); 1.10's add the `torchrun` command.
    A torch version not known or not pinned stays silent.

    ## Why it matters
    The job fails before any process starts: `torchrun: command not found`, or "No module named
    torch.distributed.run", on every node, after the allocation was granted.

    ## Example

    ## How to fix
    Use `python -m torch.distributed.launch` with these releases, or pin torch 1.10 or newer.
    """
    valid = (
        Example(files={"run.sh": "#!/bin/bash\ntorchrun --nproc_per_node=8 train.py\n",
                       "requirements.txt": "torch==1.10.0\n"}, paths=["run.sh"]),
        Example(files={"run.sh": "#!/bin/bash\npython -m torch.distributed.run --nproc_per_node=8 train.py\n",
                       "requirements.txt": "torch>=1.9,<1.10\n"}, paths=["run.sh"]),
        Example(files={"run.sh": "#!/bin/bash\ntorchrun --nproc_per_node=8 train.py\n",
                       "requirements.txt": "torch\n"}, paths=["run.sh"]),
    )
    invalid = (
        Example(files={"run.sh": "#!/bin/bash\ntorchrun --nproc_per_node=8 train.py\n",
                       "requirements.txt": "torch==1.9.1\n"}, paths=["run.sh"], line=2),
        Example(files={"run.sh": "#!/bin/bash\npython -m torch.distributed.run --nproc_per_node=8 train.py\n",
                       "requirements.txt": "torch>=1.7,<1.9\n"}, paths=["run.sh"], line=2),
    )

    def check_file(self, f, ctx) -> "Iterable[Diagnostic]":
        torch = None
        for la in launches(f):
            since = SINCE.get(la.launcher)
            if since is None:
                continue
            if torch is None:
                torch = ctx.versions(f).all("version.torch")
            if not versions.below(torch, since):
                continue
            what = "torchrun" if la.launcher == "torchrun" else "python -m torch.distributed.run"
            related = tuple(Related.at(v.span, f"{v.source or v.value} stated here") for v in torch
                            if v.span is not None)[:3]
            yield self.report(la.span, f"{what} came with torch {since}, and the job runs {versions.show(torch)}: "
                                       f"the launch fails before any process starts; use python -m "
                                       f"torch.distributed.launch with this torch, or pin torch {since} or newer",
                              related)
