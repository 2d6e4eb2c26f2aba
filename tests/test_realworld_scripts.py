"""Script rules on shapes taken from real training repositories (issue 9).

Every snippet is a small hand-written reconstruction of a pattern seen in public code, not a copy.
A false-positive class gets a VALID shape (no finding); a missed class an INVALID one.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from parallint.discover.settings import Config
from parallint.model.diagnostics import Severity
from parallint.engine.runner import check_paths

from conftest import write_tree

FAMILIES = ("DDP", "PG", "DAT", "CKP", "PIP")


def run(tmp_path: Path, files: dict[str, str]):
    write_tree(tmp_path, {k: textwrap.dedent(v).lstrip("\n") for k, v in files.items()})
    result = check_paths(["."], Config(None, tmp_path, {}), cwd=tmp_path)
    assert not result.errors, result.errors
    return [d for d in result.diagnostics if d.code.startswith(FAMILIES)]


def found(tmp_path, files, code):
    return [(d.path, d.span.line, d.severity) for d in run(tmp_path, files) if d.code == code]


# ================================================================ DDP002: single-node harnesses
SINGLE_NODE = {
    # a unit test spawning ranks with torch.multiprocessing on localhost
    "mp_spawn": {"tests/test_comm.py": """
        import torch
        import torch.distributed as dist
        import torch.multiprocessing as mp
        def _worker(rank, world_size, port):
            dist.init_process_group("nccl", init_method=f"tcp://localhost:{port}", rank=rank, world_size=world_size)
            torch.cuda.set_device(dist.get_rank())
            x = torch.ones(4).cuda(dist.get_rank())
            dist.all_reduce(x)
        def test_all_reduce():
            mp.spawn(_worker, args=(2, 29500), nprocs=2)
    """},
    # a ColossalAI-style test using the project's own spawn helper
    "colossal_spawn": {"tests/test_layer.py": """
        import torch
        import torch.distributed as dist
        from colossalai.testing import rerun_if_address_is_in_use, spawn
        def run_dist(rank, world_size, port):
            torch.cuda.set_device(dist.get_rank())
            layer = make_layer().to(rank)
        @rerun_if_address_is_in_use()
        def test_layer():
            spawn(run_dist, 4)
    """},
    # a pytest world-size fixture (composer/llm-foundry style): ranks on one host
    "world_size_fixture": {"tests/test_moe.py": """
        import pytest
        import torch
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP
        @pytest.mark.world_size(2)
        def test_moe_matches_reference():
            rank = dist.get_rank()
            device = torch.device(f"cuda:{rank}")
            model = DDP(build().to(device), device_ids=[rank])
    """},
    # a checkpoint test run by torchrun on one box (no launch in the repository says more)
    "plain_test": {"tests/checkpoint_test.py": """
        import torch
        import torch.distributed as dist
        dist.init_process_group("nccl")
        x = torch.randn(8).cuda(dist.get_rank())
    """},
}


@pytest.mark.parametrize("name", sorted(SINGLE_NODE))
def test_global_rank_as_device_in_single_node_harnesses_is_quiet(tmp_path, name):
    assert found(tmp_path, SINGLE_NODE[name], "DDP002") == []


def test_global_rank_as_device_under_a_two_node_slurm_job_is_an_error(tmp_path):
    got = found(tmp_path, {
        "launch.sbatch": """
            #!/bin/bash
            #SBATCH --nodes=2
            #SBATCH --ntasks-per-node=8
            #SBATCH --gpus-per-node=8
            srun python pretrain.py
        """,
        "pretrain.py": """
            import os
            import torch
            import torch.distributed as dist
            dist.init_process_group("nccl")
            torch.cuda.set_device(int(os.environ["SLURM_PROCID"]))
        """,
    }, "DDP002")
    assert got == [("pretrain.py", 5, Severity.ERROR)]


# ================================================================ DDP001: evidence decides
LEGIT_FIND_UNUSED = {
    # a GAN with manual optimisation: the generator's step leaves the discriminator unused
    "gan_lightning": """
        import lightning as L
        from lightning.pytorch.strategies import DDPStrategy
        class GAN(L.LightningModule):
            def __init__(self):
                super().__init__()
                self.automatic_optimization = False
            def configure_optimizers(self):
                return [opt_g, opt_d]
        trainer = L.Trainer(strategy=DDPStrategy(find_unused_parameters=True), devices=8)
    """,
    # an MoE layer, with the reason written next to the flag
    "moe_commented": """
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP
        dist.init_process_group("nccl")
        model = DDP(
            MixtralBlock(cfg).cuda(),
            # not all experts are routed every step
            find_unused_parameters=True,
        )
    """,
    # LoRA adapters on a frozen base, through the HF Trainer
    "lora_trainer": """
        from peft import get_peft_model
        from transformers import Trainer, TrainingArguments
        model = get_peft_model(base, lora_config)
        args = TrainingArguments(output_dir="out", gradient_checkpointing=True, ddp_find_unused_parameters=True)
        Trainer(model=model, args=args).train()
    """,
    # a DPO step: the reference model's parameters are frozen
    "dpo_wrapper": """
        from torch.nn.parallel import DistributedDataParallel as DDP
        class DPOTrainer:
            def shard(self):
                self.model = DDP(self.model, device_ids=[self.device.index], find_unused_parameters=True)
    """,
}


@pytest.mark.parametrize("name", sorted(LEGIT_FIND_UNUSED))
def test_find_unused_parameters_where_it_is_needed_is_quiet(tmp_path, name):
    assert found(tmp_path, {"train.py": LEGIT_FIND_UNUSED[name]}, "DDP001") == []


def test_find_unused_parameters_in_never_training_configs_is_quiet(tmp_path):
    files = {
        "conf/magpietts_inference.yaml": """
            mode: test
            trainer:
              devices: 1
              strategy: ddp_find_unused_parameters_true
        """,
        "conf/hifigan.yaml": """
            trainer:
              strategy: ddp_find_unused_parameters_true
            model:
              discriminator: {periods: [2, 3, 5]}
        """,
    }
    assert found(tmp_path, files, "DDP001") == []


def test_find_unused_parameters_on_a_plain_mlp_is_flagged(tmp_path):
    got = found(tmp_path, {"train.py": """
        import os
        import torch
        import torch.distributed as dist
        from torch import nn
        from torch.nn.parallel import DistributedDataParallel as DDP
        local_rank = int(os.environ["LOCAL_RANK"])
        torch.cuda.set_device(local_rank)
        dist.init_process_group("nccl")
        net = nn.Sequential(nn.Flatten(), nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 10))
        net = net.to(local_rank)
        net = DDP(net, device_ids=[local_rank], find_unused_parameters=True)
    """}, "DDP001")
    assert got == [("train.py", 11, Severity.WARNING)]


# ================================================================ CKP001: guards and buffers
GUARDED_SAVES = {
    # open_lm: the flag is computed in main() and read in save_checkpoint(), defined above it
    "flag_attribute": """
        import torch
        import torch.distributed as dist
        def save_checkpoint(args, model, epoch):
            if args.save_logs:
                torch.save({"state_dict": model.state_dict()}, f"{args.checkpoint_path}/epoch_{epoch}.pt")
        def main(args):
            dist.init_process_group("nccl")
            args.save_logs = args.logs and args.logs.lower() != "none" and is_master(args)
            for epoch in range(args.epochs):
                save_checkpoint(args, model, epoch)
        if __name__ == "__main__":
            main(parse_args())
    """,
    # a local flag
    "local_flag": """
        import torch
        import torch.distributed as dist
        def main():
            dist.init_process_group("nccl")
            should_save = dist.get_rank() == 0
            if should_save:
                torch.save(model.state_dict(), "model.pt")
        main()
    """,
    # accelerate's predicate
    "accelerate_predicate": """
        import torch
        from accelerate import Accelerator
        accelerator = Accelerator()
        for epoch in range(3):
            train_one_epoch()
            accelerator.wait_for_everyone()
            if accelerator.is_main_process:
                torch.save(accelerator.unwrap_model(model).state_dict(), "model.pt")
    """,
    # Fabric's predicate, with an early return
    "fabric_early_return": """
        import torch
        import lightning as L
        fabric = L.Fabric(devices=8, strategy="ddp")
        fabric.launch()
        def save(model):
            if not fabric.is_global_zero:
                return
            torch.save(model.state_dict(), "model.pt")
        save(model)
    """,
    # a helper predicate named for rank zero
    "helper_predicate": """
        import torch
        import deepspeed
        deepspeed.init_distributed()
        def is_rank_0():
            return torch.distributed.get_rank() == 0
        if is_rank_0():
            torch.save(model.state_dict(), "final.pt")
    """,
    # serialising into memory is not writing a checkpoint
    "bytes_buffer": """
        import io
        import torch
        import torch.distributed as dist
        dist.init_process_group("nccl")
        def to_bytes(obj):
            buffer = io.BytesIO()
            torch.save(obj, buffer)
            return buffer.getvalue()
        payload = to_bytes(model.state_dict())
    """,
}


@pytest.mark.parametrize("name", sorted(GUARDED_SAVES))
def test_guarded_or_in_memory_saves_are_quiet(tmp_path, name):
    assert found(tmp_path, {"train.py": GUARDED_SAVES[name]}, "CKP001") == []


@pytest.mark.parametrize("setup", [
    "import deepspeed\ndeepspeed.init_distributed()\n",
    "from accelerate import Accelerator\naccelerator = Accelerator()\n",
    "from lightning.fabric import Fabric\nfabric = Fabric(devices=8)\nfabric.launch()\n",
    "from torch.distributed.device_mesh import init_device_mesh\nmesh = init_device_mesh('cuda', (8,))\n",
])
def test_unguarded_save_after_any_distributed_setup_is_flagged(tmp_path, setup):
    code = "import torch\n" + setup + "train()\ntorch.save(model.state_dict(), 'final.pt')\n"
    got = found(tmp_path, {"train.py": code}, "CKP001")
    assert len(got) == 1 and got[0][1] == code.count("\n")


def test_setup_inside_an_uncalled_library_function_does_not_make_a_script(tmp_path):
    got = found(tmp_path, {"lib/parallel.py": """
        import torch
        from torch.distributed.device_mesh import init_device_mesh
        class Engine:
            def build_mesh(self):
                self.mesh = init_device_mesh("cuda", (8,))
        torch.save(DEFAULTS, "defaults.pt")
    """}, "CKP001")
    assert got == []


def test_load_without_map_location_after_deepspeed_init_is_flagged_but_not_under_fabric(tmp_path):
    ds = found(tmp_path / "a", {"train.py": """
        import torch
        import deepspeed
        deepspeed.init_distributed()
        model.load_state_dict(torch.load(args.student_checkpoint))
    """}, "CKP002")
    assert [line for _p, line, _s in ds] == [4]
    fabric = found(tmp_path / "b", {"train.py": """
        import torch
        import lightning as L
        fabric = L.Fabric(devices=2, strategy="fsdp")
        fabric.launch()
        fabric.save("ckpt.pt", state)
        ckpt = torch.load("ckpt.pt", weights_only=True)
    """}, "CKP002")
    assert fabric == []


# ================================================================ PG001 / PG005
def test_nccl_with_world_size_one_is_quiet(tmp_path):
    assert found(tmp_path, {"convert.py": """
        import torch.distributed as dist
        dist.init_process_group("nccl", init_method="tcp://localhost:12345", rank=0, world_size=1)
        convert_checkpoint()
    """}, "PG001") == []


def test_nccl_without_set_device_mentioned_only_in_a_comment_is_flagged(tmp_path):
    got = found(tmp_path, {"ddp.py": """
        import torch.distributed as dist
        # TODO: torch.cuda.set_device(local_rank) and export CUDA_VISIBLE_DEVICES
        dist.init_process_group(backend="nccl")
        model = build().cuda()
    """}, "PG001")
    assert [line for _p, line, _s in got] == [3]


def test_nccl_test_that_names_every_device_is_quiet(tmp_path):
    """picotron-style test: tensors on cuda:LOCAL_RANK only, nothing on the default GPU."""
    assert found(tmp_path, {"tests/test_tp.py": """
        import os
        import torch
        import torch.distributed as dist
        local_rank = int(os.environ["LOCAL_RANK"])
        device = torch.device("cuda", local_rank)
        dist.init_process_group(rank=int(os.environ["RANK"]), world_size=int(os.environ["WORLD_SIZE"]), backend="nccl")
        x = torch.randn(2, 4, device=device)
        layer = torch.nn.Linear(4, 4, device=device)
    """}, "PG001") == []


def test_collective_matched_inside_a_method_of_the_other_ranks_is_quiet(tmp_path):
    assert found(tmp_path, {"deploy.py": """
        import torch
        import torch.distributed as dist
        def serve(model, args):
            if dist.is_initialized():
                if dist.get_rank() == 0:
                    server = start_server(model, args)
                    server.serve()
                    dist.broadcast(torch.tensor([1], device="cuda"), src=0)
                    server.stop()
                elif dist.get_rank() > 0:
                    model.generate_other_ranks()
    """}, "PG005") == []


def test_collective_whose_other_branch_only_logs_still_fires(tmp_path):
    got = found(tmp_path, {"train.py": """
        import logging
        import torch.distributed as dist
        def report(loss):
            if dist.get_rank() == 0:
                dist.all_reduce(loss)
            else:
                logging.info("waiting")
    """}, "PG005")
    assert [line for _p, line, _s in got] == [5]


# ================================================================ DAT001 / DAT002 / DAT004
def test_a_comment_about_distributed_sampler_does_not_hide_dat001(tmp_path):
    got = found(tmp_path, {"train.py": """
        from torch.nn.parallel import DistributedDataParallel as DDP
        from torch.utils.data import DataLoader
        model = DDP(model, device_ids=[local_rank])
        # TODO: use a DistributedSampler here
        train_loader = DataLoader(train_set, batch_size=32, shuffle=True)
    """}, "DAT001")
    assert [line for _p, line, _s in got] == [5]


def test_a_docstring_mentioning_set_epoch_does_not_hide_dat002(tmp_path):
    got = found(tmp_path, {"train.py": '''
        """Fine-tuning. Remember: the sampler needs set_epoch (see docs)."""
        from torch.utils.data import DataLoader, DistributedSampler
        train_sampler = DistributedSampler(train_dataset)
        train_dataloader = DataLoader(train_dataset, sampler=train_sampler, batch_size=8)
        for epoch in range(args.num_train_epochs):
            for step, batch in enumerate(train_dataloader):
                train_step(batch)
    '''}, "DAT002")
    assert [line for _p, line, _s in got] == [3]


def test_a_loader_prepared_by_accelerate_needs_no_set_epoch(tmp_path):
    files = {"train.py": """
        from accelerate import Accelerator
        from torch.utils.data import DataLoader, DistributedSampler
        accelerator = Accelerator()
        sampler = DistributedSampler(train_set)
        train_loader = DataLoader(train_set, sampler=sampler, batch_size=8)
        model, train_loader = accelerator.prepare(model, train_loader)
        for epoch in range(3):
            for batch in train_loader:
                step(batch)
    """}
    assert found(tmp_path, files, "DAT002") == []
    # ... but it is sharded twice
    assert [line for _p, line, _s in found(tmp_path, files, "DAT004")] == [6]


def test_double_sharding_through_self_attributes(tmp_path):
    got = found(tmp_path, {"trainer.py": """
        from accelerate import Accelerator
        from torch.utils.data import DataLoader
        from torch.utils.data.distributed import DistributedSampler
        class Trainer:
            def __init__(self, cfg):
                self.accelerator = Accelerator(gradient_accumulation_steps=cfg.accum)
                self.train_loader = DataLoader(
                    self.train_set, batch_size=cfg.bs,
                    sampler=DistributedSampler(self.train_set, shuffle=True),
                )
                self.model, self.opt, self.train_loader = self.accelerator.prepare(
                    self.model, self.opt, self.train_loader)
    """}, "DAT004")
    assert [(p, line, s) for p, line, s in got] == [("trainer.py", 11, Severity.WARNING)]


def test_sampler_with_explicit_single_replica_is_not_double_sharding(tmp_path):
    assert found(tmp_path, {"train.py": """
        from accelerate import Accelerator
        from torch.utils.data import DataLoader, DistributedSampler
        accelerator = Accelerator()
        loader = DataLoader(ds, sampler=DistributedSampler(ds, num_replicas=1, rank=0))
        loader = accelerator.prepare(loader)
    """}, "DAT004") == []


# ================================================================ PIP002 per-stage lists
def test_per_stage_layer_counts_shorter_than_the_world(tmp_path):
    got = found(tmp_path, {"pipe.py": """
        import torch.distributed as dist
        dist.init_process_group("nccl", world_size=4)
        rank = dist.get_rank()
        layer_splits = [10, 10, 12]
        first = sum(layer_splits[:rank])
        my_layers = blocks[first:first + layer_splits[rank]]
    """}, "PIP002")
    assert [line for _p, line, _s in got] == [4]


def test_per_stage_list_matching_the_world_is_quiet(tmp_path):
    assert found(tmp_path, {"pipe.py": """
        import torch.distributed as dist
        dist.init_process_group("nccl", world_size=4)
        rank = dist.get_rank()
        bounds = [0, 8, 16, 24, 32]
        my_layers = blocks[bounds[rank]:bounds[rank + 1]]
        colors = ["r", "g"]
        print(colors[rank % 2])
    """}, "PIP002") == []


# ================================================================ degrees reaching the mesh
def test_degrees_from_a_dataclass_default_and_a_return_value_reach_the_facts(tmp_path):
    from parallint.readers.python import read

    text = textwrap.dedent("""
        from dataclasses import dataclass
        from torch.distributed.device_mesh import init_device_mesh
        from megatron.core import parallel_state
        @dataclass
        class Parallelism:
            dp: int = 2
            tp: int = 4
        def pipeline_degree():
            return 2
        cfg = Parallelism(tp=8)
        mesh = init_device_mesh("cuda", (cfg.dp, cfg.tp), mesh_dim_names=("dp", "tp"))
        parallel_state.initialize_model_parallel(cfg.tp, pipeline_degree())
    """)
    f = read("t.py", tmp_path / "t.py", text)
    assert [v.value for v in f.facts.known("parallel.dp")] == [2]
    assert [v.value for v in f.facts.known("parallel.tp")] == [8, 8]
    assert [v.value for v in f.facts.known("parallel.pp")] == [2]


def test_degrees_that_the_code_may_change_stay_unknown(tmp_path):
    from parallint.readers.python import read

    text = textwrap.dedent("""
        from dataclasses import dataclass
        from megatron.core import parallel_state
        @dataclass
        class Parallelism:
            tp: int = 4
        def pipeline_degree():
            if big_model:
                return 8
            return 2
        cfg = Parallelism()
        cfg.tp = args.tp
        parallel_state.initialize_model_parallel(cfg.tp, pipeline_degree())
    """)
    f = read("t.py", tmp_path / "t.py", text)
    assert f.facts.known("parallel.tp") == [] and f.facts.known("parallel.pp") == []


NET = """
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    class Net(nn.Module):
        def __init__(self, hidden=128):
            super().__init__()
            self.hidden = hidden
            self.conv = nn.Conv2d(1, 32, 3)
            self.fc1 = nn.Linear(5408, hidden)
            self.fc2 = nn.Linear(hidden, 10)
        def forward(self, x):
            x = F.relu(self.conv(x))
            x = torch.flatten(x, 1)
            {body}
    dist.init_process_group("nccl")
    model = DDP(Net().cuda(local_rank), device_ids=[local_rank], find_unused_parameters=True)
"""


@pytest.mark.parametrize("body,fires", [
    ("return self.fc2(F.relu(self.fc1(x)))", True),
    ("return self.fc1(x)", False),  # fc2 never runs: the flag is needed
    ("return self.fc2(self.fc1(x)) if self.training else self.fc1(x)", False),  # a branch
    ("h = self.fc1(x)\n            if h.sum() > 0:\n                h = self.fc2(h)\n            return h", False),
])
def test_find_unused_parameters_on_a_model_class_of_the_file(tmp_path, body, fires):
    got = found(tmp_path, {"train.py": NET.replace("{body}", body)}, "DDP001")
    assert bool(got) is fires
