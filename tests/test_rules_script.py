"""Script-level rules (DDP, PG, DAT, CKP, PIP, LAY007) through the real engine, on the bundled
examples, on patterns taken from real training repositories, and on unknown values."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from parallint.discover.settings import Config
from parallint.model.diagnostics import Severity
from parallint.engine.runner import check_paths

from conftest import ROOT, write_tree

SCRIPT_FAMILIES = ("DDP", "PG", "DAT", "CKP", "PIP", "LAY007")


def run(tmp_path: Path, files: dict[str, str], paths=(".",)):
    write_tree(tmp_path, {k: textwrap.dedent(v).lstrip("\n") for k, v in files.items()})
    result = check_paths(list(paths), Config(None, tmp_path, {}), cwd=tmp_path)
    assert not result.errors, result.errors
    return [d for d in result.diagnostics if d.code.startswith(SCRIPT_FAMILIES)]


def codes(diags):
    return sorted((d.path, d.span.line, d.code) for d in diags)


# ------------------------------------------------------------------ bundled examples
def test_examples_give_exactly_their_findings():
    res = check_paths(
        ["examples/clean", "examples/ddp_find_unused", "examples/pipeline_split"],
        Config(None, ROOT, {}), cwd=ROOT,
    )
    assert not res.errors
    found = [(d.path, d.span.line, d.code) for d in res.diagnostics]
    assert found == [
        ("examples/ddp_find_unused/train.py", 37, "DDP001"),
        ("examples/pipeline_split/train_gap.py", 43, "PIP001"),
    ]


# ------------------------------------------------------------------ severity of DDP002
GLOBAL_RANK_SCRIPT = """
    import os
    import torch
    import torch.distributed as dist
    dist.init_process_group("nccl")
    rank = int(os.environ["RANK"])
    torch.cuda.set_device(rank)
"""


@pytest.mark.parametrize(
    "launch,expected",
    [
        (None, []),  # no launch says how many nodes: the global rank may be the local one
        ("torchrun --nnodes 1 --nproc_per_node 8 train.py\n", []),  # one node: it is
        ("torchrun --nproc_per_node 8 train.py\n", []),  # torchrun's default is one node
        ("torchrun --nnodes 4 --nproc_per_node 8 train.py\n", [(6, Severity.ERROR)]),
    ],
)
def test_global_rank_fires_only_on_several_nodes(tmp_path, launch, expected):
    files = {"train.py": GLOBAL_RANK_SCRIPT}
    if launch:
        files["run.sh"] = launch
    found = [d for d in run(tmp_path, files) if d.code == "DDP002"]
    assert [(d.span.line, d.severity) for d in found] == expected


# ------------------------------------------------------------------ DDP001 tiers
def test_find_unused_in_configs_that_show_the_need_is_quiet(tmp_path):
    """A config whose model is a GAN (its name, a discriminator) or an adapter: the flag is needed."""
    found = run(tmp_path, {
        "hifigan.yaml": """
            trainer:
              devices: 8
              strategy: ddp_find_unused_parameters_true
            model:
              generator: {upsample_rates: [8, 8, 2, 2]}
        """,
        "qlora.yml": "base_model: google/gemma-3-1b-it\nadapter: qlora\nddp_find_unused_parameters: true\n",
    })
    assert [d for d in found if d.code == "DDP001"] == []


def test_find_unused_in_a_plain_config_is_a_hint(tmp_path):
    """Nothing shows the model: an info hint on the flag's line, which does not fail the gate."""
    found = run(tmp_path, {
        "conf/gpt.yaml": """
            trainer:
              devices: 8
              num_nodes: 2
              strategy: ddp_find_unused_parameters_true
            model:
              hidden_size: 1024
        """,
    })
    got = [(d.span.path, d.span.line, d.severity) for d in found if d.code == "DDP001"]
    assert got == [("conf/gpt.yaml", 4, Severity.INFO)]


@pytest.mark.parametrize("model,fires", [
    ("nn.Sequential(nn.Linear(8, 8), nn.GELU(), nn.Linear(8, 2)).cuda(local_rank)", True),
    ("nn.Linear(8, 8).to(local_rank)", True),
    ("build_model(cfg)", None),  # not shown: a hint
    ("nn.Sequential(nn.Linear(8, 8), Router(8))", False),  # routes experts: the flag is needed
    ("nn.Sequential(*layers)", None),
])
def test_find_unused_fires_only_on_models_using_every_parameter(tmp_path, model, fires):
    found = run(tmp_path, {"train.py": f"""
        import torch.nn as nn
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP
        dist.init_process_group("nccl")
        model = {model}
        model = DDP(model, device_ids=[local_rank], find_unused_parameters=True)
    """})
    got = [(d.span.line, d.severity) for d in found if d.code == "DDP001"]
    expected = {True: [(6, Severity.WARNING)], None: [(6, Severity.INFO)], False: []}[fires]
    assert got == expected


def test_find_unused_in_a_conditional_rebinding_uses_the_last_binding(tmp_path):
    found = run(tmp_path, {"train.py": """
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP
        model = nn.Linear(8, 8)
        model = MoE(model)  # wraps it in routed experts
        model = DDP(model, find_unused_parameters=True)
    """})
    assert [d for d in found if d.code == "DDP001"] == []


# ------------------------------------------------------------------ framework-managed code stays quiet
@pytest.mark.parametrize(
    "header,expected",
    [
        # accelerate shards the data, but the script saves on its own: every process writes
        ("from accelerate import Accelerator\naccelerator = Accelerator()\n", ["CKP001"]),
        ("import lightning as L\ntrainer = L.Trainer(devices=8)\n", []),
        ("from transformers import Trainer\ntrainer = Trainer(model=model)\n", []),
    ],
)
def test_frameworks_shard_data_and_guard_saves(tmp_path, header, expected):
    body = """
        import torch
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP
        from torch.utils.data import DataLoader
        model = DDP(model)
        train_loader = DataLoader(train_set, shuffle=True)
        torch.save(model.state_dict(), "ckpt.pt")
    """
    found = run(tmp_path, {"train.py": header + textwrap.dedent(body)})
    assert [d.code for d in found if d.code in ("DAT001", "CKP001", "CKP002")] == expected


# ------------------------------------------------------------------ patterns from real repositories
REAL_PATTERNS = {
    # pytorch/examples ddp-tutorial-series: the device index doubles as the rank
    "tutorial_gpu_id.py": """
        import os
        import torch
        from torch.distributed import init_process_group
        from torch.nn.parallel import DistributedDataParallel as DDP
        from torch.utils.data import DataLoader, DistributedSampler
        class Trainer:
            def __init__(self, model, train_data, gpu_id):
                self.gpu_id = gpu_id
                self.model = DDP(model.to(gpu_id), device_ids=[gpu_id])
                self.train_data = train_data
            def _save_checkpoint(self, epoch):
                torch.save(self.model.module.state_dict(), "checkpoint.pt")
            def train(self, max_epochs):
                for epoch in range(max_epochs):
                    self.train_data.sampler.set_epoch(epoch)
                    if self.gpu_id == 0 and epoch % 10 == 0:
                        self._save_checkpoint(epoch)
        def main(rank, world_size):
            torch.cuda.set_device(rank)
            init_process_group(backend="nccl", rank=rank, world_size=world_size)
            loader = DataLoader(ds, batch_size=32, shuffle=False, sampler=DistributedSampler(ds))
            Trainer(model, loader, rank).train(10)
    """,
    # HF examples: rank 0 downloads while the others wait, then releases them
    "download_barrier.py": """
        import torch
        from torch.nn.parallel import DistributedDataParallel as DDP
        def load_and_cache(args):
            if args.local_rank not in [-1, 0]:
                torch.distributed.barrier()
            data = download()
            if args.local_rank == 0:
                torch.distributed.barrier()
            return data
        def main(args):
            if args.local_rank != -1:
                torch.distributed.init_process_group(backend="nccl")
                torch.cuda.set_device(args.local_rank)
            model = DDP(model, device_ids=[args.local_rank])
            if args.local_rank in [-1, 0]:
                torch.save(model.state_dict(), "model.bin")
    """,
    # imagenet: a save guarded by rank arithmetic; a per-branch map_location choice
    "imagenet_like.py": """
        import torch
        import torch.distributed as dist
        import torch.multiprocessing as mp
        def main_worker(gpu, ngpus_per_node, args):
            if args.distributed:
                dist.init_process_group(backend=args.dist_backend, init_method=args.dist_url,
                                        world_size=args.world_size, rank=args.rank)
            model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[args.gpu])
            if args.resume:
                if args.gpu is None:
                    checkpoint = torch.load(args.resume)
                else:
                    checkpoint = torch.load(args.resume, map_location=f"cuda:{args.gpu}")
            for epoch in range(args.start_epoch, args.epochs):
                if not args.multiprocessing_distributed or args.rank % ngpus_per_node == 0:
                    torch.save(model.state_dict(), "checkpoint.pth.tar")
        def main():
            mp.spawn(main_worker, nprocs=8, args=(8, args))
    """,
    # a platform-dependent backend
    "platform_backend.py": """
        import sys
        import torch
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP
        def setup(rank):
            torch.cuda.set_device(rank)
            if sys.platform == "win32":
                dist.init_process_group(backend="gloo", init_method="file:///tmp/x", rank=rank, world_size=2)
            else:
                dist.init_process_group("nccl")
            return DDP(model, device_ids=[rank])
        setup(0)
    """,
    # nanoGPT-style: DDP only when launched by torchrun
    "nanogpt_like.py": """
        import os
        import torch
        from torch.distributed import init_process_group
        from torch.nn.parallel import DistributedDataParallel as DDP
        ddp = int(os.environ.get("RANK", -1)) != -1
        if ddp:
            init_process_group(backend="nccl")
            ddp_rank = int(os.environ["RANK"])
            ddp_local_rank = int(os.environ["LOCAL_RANK"])
            device = f"cuda:{ddp_local_rank}"
            torch.cuda.set_device(device)
            master_process = ddp_rank == 0
        else:
            master_process = True
            device = "cuda"
        model = DDP(model, device_ids=[ddp_local_rank])
        for it in range(1000):
            if it % 250 == 0 and master_process:
                torch.save(checkpoint, os.path.join(out_dir, "ckpt.pt"))
        ckpt = torch.load(ckpt_path, map_location=device)
    """,
    # unit tests: separate classes, separate worlds
    "test_meshes.py": """
        import torch.distributed as dist
        from torch.distributed.device_mesh import init_device_mesh
        class TestA:
            def test_mesh(self):
                mesh = init_device_mesh("cuda", (2, 2), mesh_dim_names=("dp", "cp"))
        class TestB:
            def setUp(self):
                dist.init_process_group(backend="gloo", init_method="tcp://localhost:1", world_size=1, rank=0)
    """,
}


def test_real_world_patterns_are_quiet(tmp_path):
    assert codes(run(tmp_path, REAL_PATTERNS)) == []


# ------------------------------------------------------------------ unknown values never fire
UNKNOWN = {
    "ddp001.py": """
        import os
        from torch.nn.parallel import DistributedDataParallel as DDP
        model = DDP(model, find_unused_parameters=os.environ["FIND_UNUSED"] == "1")
        model2 = DDP(model, find_unused_parameters=cfg.find_unused)
    """,
    "ddp004.py": """
        from torch.nn.parallel import DistributedDataParallel as DDP
        model = DDP(model, device_ids=list(range(torch.cuda.device_count())))
    """,
    "pg001.py": """
        import os
        import torch.distributed as dist
        dist.init_process_group(backend=os.environ.get("BACKEND", "nccl"))
    """,
    "dat003.py": """
        from torch.utils.data import DataLoader, DistributedSampler
        loader = DataLoader(ds, sampler=DistributedSampler(ds), shuffle=args.shuffle)
    """,
    "pip001.py": """
        import torch.distributed as dist
        dist.init_process_group("gloo")
        stages = [model.layers[:k], model.layers[k + 1:]]
        stage = stages[dist.get_rank()]
    """,
    "lay007.py": """
        import os
        import torch.distributed as dist
        from torch.distributed.device_mesh import init_device_mesh
        dist.init_process_group("gloo", world_size=int(os.environ["WORLD_SIZE"]))
        mesh = init_device_mesh("cuda", (2, 4))
    """,
}


def test_unknown_values_never_fire(tmp_path):
    assert codes(run(tmp_path, UNKNOWN)) == []


# ------------------------------------------------------------------ a few rule details
def test_collective_with_group_or_paired_is_quiet_but_lone_one_fires(tmp_path):
    found = run(tmp_path, {"c.py": """
        import torch.distributed as dist
        dist.init_process_group("gloo")
        def a(t):
            if dist.get_rank() in stage_ranks:
                dist.all_reduce(t, group=stage_group)
        def b(t):
            if dist.get_rank() == 0:
                dist.broadcast(t, 0)
            else:
                dist.broadcast(t, 0)
        def c(t):
            if dist.get_rank() == 0:
                dist.all_gather(out, t)
    """})
    assert codes(found) == [("c.py", 13, "PG005")]
    assert "rank() == 0" in found[0].message and found[0].related[0].line == 12


def test_per_rank_checkpoint_files_are_fine(tmp_path):
    found = run(tmp_path, {"s.py": """
        import torch
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP
        dist.init_process_group("gloo")
        rank = dist.get_rank()
        torch.save(opt.state_dict(), f"optim_rank{rank}.pt")
        torch.save(model.state_dict(), "model.pt")
    """})
    assert codes(found) == [("s.py", 7, "CKP001")]


def test_sampler_created_every_epoch_needs_no_set_epoch(tmp_path):
    found = run(tmp_path, {"s.py": """
        from torch.utils.data import DataLoader, DistributedSampler
        for epoch in range(10):
            sampler = DistributedSampler(ds, seed=epoch)
            loader = DataLoader(ds, sampler=sampler)
            for batch in loader:
                step(batch)
    """})
    assert codes(found) == []


def test_pipeline_missing_last_layers_when_count_is_known(tmp_path):
    found = run(tmp_path, {"p.py": """
        import torch.nn as nn
        import torch.distributed as dist
        dist.init_process_group("gloo", world_size=2)
        layers = nn.ModuleList([Block() for _ in range(12)])
        stages = [layers[:6], layers[6:10]]
        stage = stages[dist.get_rank()]
    """})
    assert codes(found) == [("p.py", 5, "PIP001")]
    assert "10..11" in found[0].message


def test_mesh_against_launch_world_size(tmp_path):
    files = {
        "run.sh": "torchrun --nnodes 2 --nproc_per_node 8 train.py\n",
        "train.py": """
            from torch.distributed.device_mesh import init_device_mesh
            mesh = init_device_mesh("cuda", (2, 4), mesh_dim_names=("dp", "tp"))
        """,
    }
    found = run(tmp_path, files)
    assert codes(found) == [("train.py", 2, "LAY007")]
    assert "16" in found[0].message and found[0].related and found[0].related[0].path == "run.sh"


def test_every_invalid_script_example_passes_the_needle_filter():
    """The reader's NEEDLES must let through every script a rule is meant to catch."""
    from parallint.readers.python import NEEDLES
    from parallint.engine.registry import get_registry

    for rule in get_registry().rules:
        if rule.__module__.rsplit(".", 1)[-1] not in ("ddp", "pg", "dat", "ckp", "pip", "lay_mesh"):
            continue
        for ex in rule.invalid:
            for name, text in ex.all_files().items():
                if name.endswith(".py"):
                    assert any(n in text for n in NEEDLES), (rule.code, name)
