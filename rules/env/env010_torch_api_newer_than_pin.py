"""ENV010 torch-api-newer-than-pin: a script calls a torch API that the torch the job pins does not have."""

from __future__ import annotations

from parallint.model import versions
from parallint.model.diagnostics import Related, Severity
from parallint.model.rule import Example, Rule
from parallint.model.script import script_of

TYPE_CHECKING = False  # typing is not imported at run time (start-up, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Iterable

    from parallint.model.diagnostics import Diagnostic

#: qualified name -> the torch release that added it (its release notes)
SINCE = {
    "torch.compile": "2.0",  # PyTorch 2.0 release notes: torch.compile
    "torch.nn.functional.scaled_dot_product_attention": "2.0",  # 2.0: "Accelerated Transformers"
    "torch.func.functional_call": "2.0",  # 2.0: functorch APIs moved into torch.func
    "torch.func.vmap": "2.0",
    "torch.func.grad": "2.0",
    "torch.distributed.device_mesh.init_device_mesh": "2.2",  # 2.2: DeviceMesh public (torch.distributed.device_mesh)
}
_DIST = "import torch\nimport torch.distributed as dist\ndist.init_process_group('nccl')\n"
#: words that show the script checks the torch it runs on (then the call may be gated)
_GATES = ("__version__", "hasattr(torch", "hasattr(F", "hasattr(nn.functional", "except AttributeError",
          "except ImportError", "except (ImportError", "except (AttributeError", "is_torch_greater",
          "is_torch_version", "packaging.version", "version.parse", "LooseVersion")


class TorchApiNewerThanPin(Rule):
    code = "ENV010"
    name = "torch-api-newer-than-pin"
    severity = Severity.ERROR
    summary = "A script calls a torch API that the torch the job pins does not have."
    kinds = frozenset({"python"})
    calls = frozenset(SINCE)
    facts = frozenset({"version.torch"})
    doc = """
    ## What it does
    Version-aware (torch). Fires when a script calls `torch.compile` or
    `torch.nn.functional.scaled_dot_product_attention` or `torch.func` (all new in PyTorch 2.0,
    per its release notes), or `torch.distributed.device_mesh.init_device_mesh` (public from
    PyTorch 2.2), and every torch version that can reach the job (its requirements, lock files,
    Dockerfile or container image) is older. Silent when torch is unpinned, when a range reaches
    the release, and when the script shows that it checks the torch it runs on (`__version__`,
    `hasattr(torch, ...)`, `except AttributeError`/`ImportError`).

    ## Why it matters
    The call raises `AttributeError` (or the import `ImportError`) on every rank when it is
    reached, after the job has its GPUs.

    ## Example

    ## How to fix
    Pin a torch that has the API (the release in the message, or newer), or guard the call with a
    version check.
    """
    valid = (
        Example(files={"requirements.txt": "torch==2.1.2\n",
                       "train.py": _DIST + "model = torch.compile(torch.nn.Linear(4, 4))\n"}, paths=["train.py"]),
        Example(files={"requirements.txt": "torch>=1.13\n",
                       "train.py": _DIST + "model = torch.compile(torch.nn.Linear(4, 4))\n"}, paths=["train.py"]),
        Example(files={"requirements.txt": "torch==1.13.1\n",
                       "train.py": _DIST + "model = torch.nn.Linear(4, 4)\nif hasattr(torch, 'compile'):\n"
                                   "    model = torch.compile(model)\n"}, paths=["train.py"]),
        Example(files={"requirements.txt": "torch==2.2.0\n",
                       "train.py": "from torch.distributed.device_mesh import init_device_mesh\n"
                                   "mesh = init_device_mesh('cuda', (2, 4))\n"}, paths=["train.py"]),
    )
    invalid = (
        Example(files={"requirements.txt": "torch==1.13.1\n",
                       "train.py": _DIST + "model = torch.compile(torch.nn.Linear(4, 4))\n"},
                paths=["train.py"], line=4),
        Example(files={"requirements.txt": "torch>=2.0,<2.2\n",
                       "train.py": "from torch.distributed.device_mesh import init_device_mesh\n"
                                   "mesh = init_device_mesh('cuda', (2, 4))\n"}, paths=["train.py"], line=2),
    )

    def check_file(self, f, ctx) -> "Iterable[Diagnostic]":
        s = script_of(f)
        if s is None or any(g in (f.text or "") for g in _GATES):
            return
        torch = None
        seen: set[str] = set()
        for c in s.calls:
            hit = next((q for q in c.qnames if q in SINCE), None)
            if hit is None or hit in seen:
                continue
            if torch is None:
                torch = ctx.versions(f).all("version.torch")
            if not versions.below(torch, SINCE[hit]):
                continue
            seen.add(hit)
            related = tuple(Related.at(v.span, f"{v.source or v.value} stated here") for v in torch
                            if v.span is not None)[:3]
            yield self.report(c.span, f"{hit} came with torch {SINCE[hit]}, and the job runs {versions.show(torch)}: "
                                      f"it raises AttributeError on every rank when reached; raise the torch pin "
                                      f"to {SINCE[hit]} or newer, or guard the call with a version check", related)
