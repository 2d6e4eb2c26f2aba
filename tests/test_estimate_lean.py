"""`estimate` reads a tree as `check` does: the Python files no launch or link names keep their
facts, not their syntax trees, and the jobs are the same as with every tree kept."""

from __future__ import annotations

import json

from conftest import write_tree

TRAIN = """\
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("nccl")
model = DDP(model)
"""


def _tree(tmp_path):
    files = {f"tools/helper_{i}.py": TRAIN for i in range(5)}
    files["train.py"] = TRAIN
    files["ds_config.json"] = json.dumps({"train_micro_batch_size_per_gpu": 4, "zero_optimization": {"stage": 2},
                                          "bf16": {"enabled": True}})
    files["run.sh"] = "deepspeed --num_nodes 2 --num_gpus 8 train.py --deepspeed_config ds_config.json\n"
    write_tree(tmp_path, files)


def test_lean_jobs_keep_the_facts_and_drop_unlinked_trees(tmp_path, monkeypatch):
    from parallint.engine.runner import build_jobs
    from parallint.model.script import script_of

    monkeypatch.setenv("PARALLINT_JOBS", "1")
    _tree(tmp_path)
    full = build_jobs(["."], {}, cwd=tmp_path)
    lean = build_jobs(["."], {}, cwd=tmp_path, lean=True)

    def facts(jobs):
        return sorted((j.name, sorted((k, repr([v.value for v in vs])) for k, vs in j.facts.items())) for j in jobs)

    assert facts(full) == facts(lean) and len(lean) >= 2
    kept = {f.path for j in lean for f in j.files if script_of(f) is not None}
    assert "train.py" in kept  # the launched script keeps its tree
    assert not any(p.startswith("tools/") for p in kept)

