"""False-finding classes met on repositories never tuned on (held-out set B, first run at
291a3cd), each as a reconstruction in the shape of the real code, with a twin that still fires."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path


def check(tmp_path: Path, files: dict[str, str], *args: str) -> list[dict]:
    for name, text in files.items():
        p = tmp_path / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text).lstrip("\n"))
    out = subprocess.run([sys.executable, "-m", "parallint", "check", "--no-cache", "--format", "json",
                          "--exit-zero", *args, *files], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    return data["diagnostics"] if isinstance(data, dict) else data


GRPO = """
    #!/bin/bash
    CUDA_VISIBLE_DEVICES=0,1 python -m torch.distributed.launch --nproc_per_node 2 train.py \\
        --model_name_or_path Qwen/Qwen2-0.5B \\
        --bf16 True \\
        \\
        `# LoRA options` \\
        --use_peft True \\
        --lora_r 16 \\
        \\
        `# memory options` \\
        --per_device_train_batch_size 4
    echo done
"""


def test_backtick_comments_in_a_continued_command_parse(tmp_path):
    found = check(tmp_path, {"run.sh": GRPO})
    codes = [d["code"] for d in found]
    assert "SYN001" not in codes  # valid bash: not a parse failure
    assert "LCH004" in codes  # and the launch line inside it is still checked


def test_a_real_parse_error_still_reports(tmp_path):
    broken = GRPO.replace("`# memory options`", '"unterminated')
    codes = [d["code"] for d in check(tmp_path, {"run.sh": broken})]
    assert "SYN001" in codes


ACCESSORY_SAVE = """
    import os
    import torch
    import torch.distributed as dist
    import fairscale.nn.model_parallel.initialize as fs_init

    def save_checkpoint(path, model, opt):
        if fs_init.get_data_parallel_rank() == 0:
            fn = (
                "consolidated."
                f"{fs_init.get_model_parallel_rank():02d}-of-"
                f"{fs_init.get_model_parallel_world_size():02d}.pth"
            )
            torch.save(model.state_dict(), os.path.join(path, fn))
        dist.barrier()
        opt_fn = f"optimizer.{dist.get_rank():05d}-of-{dist.get_world_size():05d}.pth"
        torch.save(opt.state_dict(), os.path.join(path, opt_fn))
        final = "final.pth"
        torch.save(model.state_dict(), os.path.join(path, final))

    def main():
        dist.init_process_group("nccl")
        fs_init.initialize_model_parallel(2)
        save_checkpoint("out", model, opt)

    main()
"""


def test_dp_rank_guard_and_rank_named_path_variables(tmp_path):
    found = [d for d in check(tmp_path, {"train.py": ACCESSORY_SAVE}) if d["code"] == "CKP001"]
    # only the last save, to one shared name on every rank, is reported
    assert [d["span"]["line"] if "span" in d else d["line"] for d in found] == [18]


SAMPLE = """
    import os
    import torch
    import torch.distributed as dist

    def main(args, rank):
        dist.init_process_group("nccl")
        torch.cuda.set_device(rank)
        train_args = torch.load(os.path.join(args.ckpt, "model_args.pth"))
        print(train_args.model_parallel_size)
        model = build(train_args).cuda()
        mp_rank = rank
        other = torch.load(os.path.join(args.ckpt, f"consolidated.{mp_rank:02d}.other.pth"))
        loss_scaler.load_state_dict(other["scaler"])
        state = torch.load(os.path.join(args.ckpt, "ema.pth"))
        model.load_state_dict(state["model"])
"""


def test_torch_load_of_non_tensor_state_is_silent_and_a_model_state_fires(tmp_path):
    found = [d for d in check(tmp_path, {"sample.py": SAMPLE}) if d["code"] == "CKP002"]
    assert [d["span"]["line"] if "span" in d else d["line"] for d in found] == [14]


YALM_LAUNCH = """
    #!/bin/bash
    export NCCL_DEBUG=WARN
    MP_SIZE=8
    torchrun --nproc_per_node 8 megatron_lm/tools/generate_samples_gpt2.py \\
        --tensor-model-parallel-size $MP_SIZE --num-layers 80 --hidden-size 10240 --num-attention-heads 128
"""
OLD_ARGS = """
    import argparse
    def parse_args():
        parser = argparse.ArgumentParser()
        parser.add_argument("--tensor-model-parallel-size", type=int, default=1)
        return parser.parse_args()
"""


def test_env004_is_silent_for_a_vendored_megatron_without_the_assertion(tmp_path):
    files = {"examples/generate.sh": YALM_LAUNCH, "megatron_lm/megatron/arguments.py": OLD_ARGS,
             "megatron_lm/tools/generate_samples_gpt2.py": "from megatron import initialize_megatron\n"}
    assert not [d for d in check(tmp_path, files, "--select", "ENV004")]


def test_env004_fires_when_the_vendored_megatron_asserts_it(tmp_path):
    new_args = OLD_ARGS + """
    def validate_args(args):
        if args.tensor_model_parallel_size > 1:
            assert os.environ.get("CUDA_DEVICE_MAX_CONNECTIONS") == "1"
    """
    files = {"examples/generate.sh": YALM_LAUNCH, "megatron_lm/megatron/arguments.py": new_args,
             "megatron_lm/tools/generate_samples_gpt2.py": "from megatron import initialize_megatron\n"}
    assert [d["code"] for d in check(tmp_path, files, "--select", "ENV004")] == ["ENV004"]


def test_a_project_template_is_not_checked(tmp_path):
    files = {"templates/{{cookiecutter.name}}/run_{{cookiecutter.example}}.py":
             "import torch.distributed as dist\n{%- if cookiecutter.with_trainer %}\nx = 1\n{%- endif %}\n"}
    assert not [d for d in check(tmp_path, files) if d["code"] == "SYN001"]


def test_ckp002_on_a_function_with_bare_returns_does_not_crash(tmp_path):
    src = """
        import torch
        import torch.distributed as dist
        def load_best(self, path):
            if path is None:
                return
            state_dict = torch.load(path)
            self.model.load_state_dict(state_dict)
            return
        dist.init_process_group("nccl")
    """
    found = [d for d in check(tmp_path, {"trainer.py": src}) if d["code"] == "CKP002"]
    assert len(found) == 1


SINGLE_BRANCH = """
    import os
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    def train_epoch(model, epoch):
        if epoch % 10 == 0:
            if ddp:
                {ddp_save}
            else:
                torch.save(model.state_dict(), "out/iter.pth")

    if __name__ == "__main__":
        ddp = int(os.environ.get("RANK", -1)) != -1  # is this a ddp run?
        if ddp:
            dist.init_process_group(backend="nccl")
            local_rank = int(os.environ["LOCAL_RANK"])
            torch.cuda.set_device(local_rank)
        model = torch.nn.Linear(4, 4).cuda()
        if ddp:
            model = DDP(model, device_ids=[local_rank])
        for epoch in range(3):
            train_epoch(model, epoch)
        if ddp:
            if dist.get_rank() == 0:
                torch.save(model.module.state_dict(), "out/epoch.pth")
        else:
            torch.save(model.state_dict(), "out/epoch.pth")
        if args_local_rank == -1:
            state = torch.load("out/epoch.pth")
"""


def test_the_not_distributed_branch_of_a_ddp_flag_runs_on_one_process(tmp_path):
    """Found on held-out set J's first run (DLLXW/baby-llama2-chinese pretrain.py and sft.py, the
    nanoGPT idiom ``ddp = int(os.environ.get("RANK", -1)) != -1``): a save in the ``else:`` of
    ``if ddp:`` runs only when the script is not distributed, one process. Three false CKP001
    there. The twin that saves in the ``if ddp:`` branch without a rank guard still fires."""
    ok = SINGLE_BRANCH.replace("{ddp_save}", 'if dist.get_rank() == 0:\n                    torch.save(model.module.state_dict(), "out/iter.pth")')
    ok = ok.replace("args_local_rank", "int(os.environ.get('LOCAL_RANK', -1))")
    assert [d["code"] for d in check(tmp_path, {"pretrain.py": ok})] == []
    bad = SINGLE_BRANCH.replace("{ddp_save}", 'torch.save(model.module.state_dict(), "out/iter.pth")')
    bad = bad.replace("args_local_rank", "int(os.environ.get('LOCAL_RANK', -1))")
    got = [(d["code"], d["line"]) for d in check(tmp_path, {"pretrain.py": bad})]
    assert got == [("CKP001", 9)], got
