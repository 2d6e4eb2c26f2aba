"""DDP001's three tiers, end to end through the CLI: a warning when the model provably uses every
parameter, silence when the code shows the flag is needed, an info hint in every other spelling."""

from __future__ import annotations

import json
import textwrap

import pytest

from tests.conftest import run_cli, write_tree


def _check(tmp_path, files: dict[str, str], *extra: str):
    write_tree(tmp_path, {k: textwrap.dedent(v).lstrip("\n") for k, v in files.items()})
    (tmp_path / ".git").mkdir(exist_ok=True)
    proc = run_cli("check", "--no-cache", "--format", "json", *extra, ".", cwd=tmp_path)
    assert proc.returncode in (0, 1), proc.stderr
    return proc, json.loads(proc.stdout)


def _ddp001(items):
    return sorted((d["path"], d["line"], d["severity"]) for d in items if d["code"] == "DDP001")


SPELLINGS = {
    "lightning_string": ({"train.py": """
        import lightning as L
        trainer = L.Trainer(devices=8, strategy="ddp_find_unused_parameters_true")
        trainer.fit(model, datamodule=dm)
    """}, ("train.py", 2)),
    "lightning_strategy": ({"train.py": """
        import lightning as L
        from lightning.pytorch.strategies import DDPStrategy
        trainer = L.Trainer(strategy=DDPStrategy(find_unused_parameters=True), devices=8)
        trainer.fit(model)
    """}, ("train.py", 3)),
    "hf_training_arguments": ({"train.py": """
        from transformers import Trainer, TrainingArguments
        args = TrainingArguments(output_dir="out", ddp_find_unused_parameters=True)
        Trainer(model=model, args=args).train()
    """}, ("train.py", 2)),
    "accelerate_kwargs": ({"train.py": """
        from accelerate import Accelerator, DistributedDataParallelKwargs
        accelerator = Accelerator(kwargs_handlers=[DistributedDataParallelKwargs(find_unused_parameters=True)])
        model, opt = accelerator.prepare(model, opt)
    """}, ("train.py", 2)),
    "torch_ddp_model_elsewhere": ({"train.py": """
        from torch.nn.parallel import DistributedDataParallel as DDP
        from mypkg import build_model
        model = DDP(build_model(cfg).cuda(), device_ids=[local_rank], find_unused_parameters=True)
        loss.backward()
    """}, ("train.py", 3)),
    "hf_yaml": ({"configs/sft.yaml": """
        output_dir: out
        per_device_train_batch_size: 4
        ddp_find_unused_parameters: true
    """}, ("configs/sft.yaml", 3)),
    "nemo_yaml": ({"conf/gpt.yaml": """
        trainer:
          devices: 8
          num_nodes: 1
          strategy: ddp_find_unused_parameters_true
        model:
          hidden_size: 1024
    """}, ("conf/gpt.yaml", 4)),
    "launch_line": ({"launch.sh": """
        #!/bin/bash
        torchrun --nproc_per_node 8 train.py \\
            --output_dir out --per_device_train_batch_size 4 \\
            --ddp_find_unused_parameters true
    """, "train.py": """
        from transformers import HfArgumentParser, Trainer, TrainingArguments
        parser = HfArgumentParser(TrainingArguments)
        (args,) = parser.parse_args_into_dataclasses()
        Trainer(model=model, args=args).train()
    """}, ("launch.sh", 4)),
}


@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_every_spelling_gets_a_hint_that_does_not_fail_the_gate(tmp_path, name):
    files, (path, line) = SPELLINGS[name]
    proc, items = _check(tmp_path, files)
    assert _ddp001(items) == [(path, line, "info")]
    assert proc.returncode == 0  # the default gate fails on warnings, not on hints


def test_a_hint_fails_a_gate_set_to_info(tmp_path):
    files, _ = SPELLINGS["lightning_string"]
    proc, _items = _check(tmp_path, files, "--fail-level", "info")
    assert proc.returncode == 1


def test_a_noqa_on_a_hint_is_a_used_suppression(tmp_path):
    write_tree(tmp_path, {"train.py": textwrap.dedent("""
        import lightning as L
        trainer = L.Trainer(devices=8, strategy="ddp_find_unused_parameters_true")  # noqa: DDP001
        trainer.fit(model)
    """).lstrip("\n")})
    (tmp_path / ".git").mkdir()
    proc = run_cli("check", "--no-cache", "--select", "DDP001,SYN003", ".", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "SYN003" not in proc.stdout and "DDP001" not in proc.stdout


NEEDED = {
    "gan_manual_optimisation": {"train.py": """
        import lightning as L
        class GAN(L.LightningModule):
            def __init__(self):
                super().__init__()
                self.automatic_optimization = False
        L.Trainer(devices=8, strategy="ddp_find_unused_parameters_true").fit(GAN())
    """},
    "moe_config": {"conf/moe.yaml": """
        trainer:
          devices: 8
          strategy: ddp_find_unused_parameters_true
        model:
          num_experts: 8
    """},
    "lora_on_the_launch_line": {"launch.sh": """
        #!/bin/bash
        torchrun --nproc_per_node 8 train.py --output_dir out --use_peft --lora_r 16 \\
            --ddp_find_unused_parameters true
    """, "train.py": """
        from transformers import HfArgumentParser, Trainer, TrainingArguments
        parser = HfArgumentParser(TrainingArguments)
        (args,) = parser.parse_args_into_dataclasses()
        Trainer(model=model, args=args).train()
    """},
    "comment_gives_the_reason": {"configs/sft.yaml": """
        output_dir: out
        # the vision tower is skipped on text-only batches: required
        ddp_find_unused_parameters: true
    """},
    "inference_config": {"conf/inference.yaml": """
        trainer:
          devices: 8
          strategy: ddp_find_unused_parameters_true
    """},
    "single_process": {"conf/small.yaml": """
        trainer:
          devices: 1
          num_nodes: 1
          strategy: ddp_find_unused_parameters_true
        model:
          hidden_size: 64
    """},
    "branching_forward": {"train.py": """
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP
        from mypkg import Backbone
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.body, self.aux = Backbone(), nn.Linear(8, 2)
            def forward(self, x, step=0):
                h = self.body(x)
                if step % 2 == 0:
                    h = h + self.aux(h).sum()
                return h
        model = DDP(Net().cuda(), find_unused_parameters=True)
        loss.backward()
    """},
}


@pytest.mark.parametrize("name", sorted(NEEDED))
def test_code_that_shows_the_flag_is_needed_is_quiet(tmp_path, name):
    _proc, items = _check(tmp_path, NEEDED[name])
    assert _ddp001(items) == []


def test_the_proven_case_stays_a_warning_and_fails_the_gate(tmp_path):
    proc, items = _check(tmp_path, {"train.py": """
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP
        model = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 2)).cuda()
        model = DDP(model, device_ids=[local_rank], find_unused_parameters=True)
    """})
    assert _ddp001(items) == [("train.py", 4, "warning")]
    assert proc.returncode == 1


def test_false_is_silent_in_every_spelling(tmp_path):
    files = {}
    for name, (fs, _where) in SPELLINGS.items():
        for path, text in fs.items():
            files[f"{name}/{path}"] = (text.replace("=True", "=False").replace("_true", "_false")
                                       .replace("parameters true", "parameters false")
                                       .replace("parameters: true", "parameters: false"))
    _proc, items = _check(tmp_path, files)
    assert _ddp001(items) == []
