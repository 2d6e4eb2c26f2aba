"""Values that flow through the repository's own imports: a model class built in another module
(``from models.mlp import MLP``) is read there (DDP001's warning tier), and a cached result of the
importing file is dropped when that module changes. End to end through the CLI."""

from __future__ import annotations

import json

from conftest import write_tree

MLP = """\
import torch.nn as nn


class MLP(nn.Module):
    def __init__(self, d=16):
        super().__init__()
        self.fc1 = nn.Linear(d, 4 * d)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(4 * d, d)

    def forward(self, x):
{body}
"""
ALL_LAYERS = "        return self.fc2(self.act(self.fc1(x)))"
SKIPS_ONE = "        if x.dim() > 2:\n            return self.fc1(x)\n        return self.fc2(self.act(self.fc1(x)))"
TRAIN = """\
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

{imp}


def main():
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    model = MLP().cuda()
    model = DDP(model, device_ids=[local_rank], find_unused_parameters=True)


if __name__ == "__main__":
    main()
"""


def _ddp001(cli, folder, *args):
    p = cli("check", "--select", "DDP001", "--format", "json", *args, cwd=folder)
    assert "Traceback" not in p.stderr, p.stderr
    return [(d["severity"], d["path"], d["line"]) for d in json.loads(p.stdout)], json.loads(p.stdout)


def _tree(tmp_path, body: str, imp: str = "from models.mlp import MLP", where: str = "models/mlp.py"):
    write_tree(tmp_path, {"pyproject.toml": "[project]\nname = 'x'\n", "models/__init__.py": "",
                          where: MLP.format(body=body), "train.py": TRAIN.format(imp=imp)})


def test_model_class_in_another_module_that_uses_every_layer_is_a_warning(tmp_path, cli):
    _tree(tmp_path, ALL_LAYERS)
    got, raw = _ddp001(cli, tmp_path, "--no-cache", ".")
    assert got == [("warning", "train.py", 15)], raw
    assert "MLP from models/mlp.py" in raw[0]["message"]


def test_clean_twin_whose_forward_skips_a_layer_is_only_a_hint(tmp_path, cli):
    _tree(tmp_path, SKIPS_ONE)
    got, raw = _ddp001(cli, tmp_path, "--no-cache", ".")
    assert got == [("info", "train.py", 15)], raw


def test_relative_import_is_followed(tmp_path, cli):
    _tree(tmp_path, ALL_LAYERS, imp="from .models.mlp import MLP")
    write_tree(tmp_path, {"__init__.py": ""})
    got, _ = _ddp001(cli, tmp_path, "--no-cache", "train.py")
    assert got == [("warning", "train.py", 15)]


def test_a_module_outside_the_repository_is_not_read(tmp_path, cli):
    repo = tmp_path / "repo"
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "mlp.py").write_text(MLP.format(body=ALL_LAYERS))
    write_tree(repo, {"pyproject.toml": "[project]\nname = 'x'\n", "train.py": TRAIN.format(imp="from models.mlp import MLP")})
    (repo / "models").symlink_to(tmp_path / "models")
    got, _ = _ddp001(cli, repo, "--no-cache", "train.py")
    assert got == [("info", "train.py", 15)]


def test_a_cached_result_is_dropped_when_the_imported_module_changes(tmp_path, cli):
    _tree(tmp_path, ALL_LAYERS)
    (tmp_path / ".git").mkdir()
    assert _ddp001(cli, tmp_path, "train.py")[0] == [("warning", "train.py", 15)]
    assert _ddp001(cli, tmp_path, "train.py")[0] == [("warning", "train.py", 15)]  # from the cache
    (tmp_path / "models" / "mlp.py").write_text(MLP.format(body=SKIPS_ONE))
    assert _ddp001(cli, tmp_path, "train.py")[0] == [("info", "train.py", 15)]
    assert _ddp001(cli, tmp_path, ".")[0] == [("info", "train.py", 15)]


# ------------------------------------------------------------ sys.path tweaks
TWEAKS = {
    "insert": 'sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))',
    "pathlib": 'sys.path.append(str(Path(__file__).resolve().parents[1] / "lib"))',
    "constant": 'LIB = os.path.abspath(os.path.join(os.path.dirname(__file__), "../lib"))\nsys.path.insert(0, LIB)',
    "relative": 'sys.path.append("lib")',
}


def _tweaked_tree(tmp_path, tweak: str, where: str = "lib/models/mlp.py"):
    imp = f"import sys\nfrom pathlib import Path\n\n{tweak}\n\nfrom models.mlp import MLP"
    write_tree(tmp_path, {"pyproject.toml": "[project]\nname = 'x'\n", "lib/models/__init__.py": "",
                          where: MLP.format(body=ALL_LAYERS), "scripts/train.py": TRAIN.format(imp=imp)})


def test_a_sys_path_tweak_is_followed_to_the_repository_folder(tmp_path, cli):
    for name, tweak in TWEAKS.items():
        _tweaked_tree(tmp_path, tweak)
        got, raw = _ddp001(cli, tmp_path, "--no-cache", "scripts/train.py")
        assert [g[0] for g in got] == ["warning"], (name, raw)
        assert "MLP from ../lib/models/mlp.py" in raw[0]["message"], raw


def test_without_the_tweak_or_outside_the_repository_the_module_is_not_read(tmp_path, cli):
    _tweaked_tree(tmp_path, "")
    got, _ = _ddp001(cli, tmp_path, "--no-cache", "scripts/train.py")
    assert [g[0] for g in got] == ["info"]
    repo = tmp_path / "b" / "repo"
    outside = tmp_path / "b" / "lib" / "models"
    outside.mkdir(parents=True)
    (outside / "mlp.py").write_text(MLP.format(body=ALL_LAYERS))
    (outside / "__init__.py").write_text("")
    imp = ("import sys\n\nsys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', 'lib'))\n\n"
           "from models.mlp import MLP")
    write_tree(repo, {"pyproject.toml": "[project]\nname = 'x'\n", "train.py": TRAIN.format(imp=imp)})
    got, _ = _ddp001(cli, repo, "--no-cache", "train.py")
    assert [g[0] for g in got] == ["info"]


def test_a_cached_result_is_dropped_when_the_module_a_tweak_reaches_changes(tmp_path, cli):
    _tweaked_tree(tmp_path, TWEAKS["insert"])
    (tmp_path / ".git").mkdir()
    assert [g[0] for g in _ddp001(cli, tmp_path, "scripts/train.py")[0]] == ["warning"]
    assert [g[0] for g in _ddp001(cli, tmp_path, "scripts/train.py")[0]] == ["warning"]
    (tmp_path / "lib" / "models" / "mlp.py").write_text(MLP.format(body=SKIPS_ONE))
    assert [g[0] for g in _ddp001(cli, tmp_path, "scripts/train.py")[0]] == ["info"]
