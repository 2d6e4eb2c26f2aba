"""MEM001 pure-data-parallel-oversized: Pure data parallelism (no TP/PP, no parameter sharding) for a model whose weights, gradients and optimizer states alone exceed one GPU."""

from __future__ import annotations

from parallint.model.diagnostics import Severity
from parallint.model.rule import Example, Rule
from parallint.rules.mem._common import (_MEGATRON_130B_FITS, _anchor, _gib, _headroom, _parts, _pure_dp_oversized,
                                         _related, _setup, _unsized_lora)

TYPE_CHECKING = False  # typing is not imported at run time (start-up, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Iterable


class PureDataParallelOversized(Rule):
    code = "MEM001"
    facts = frozenset({
        "framework", "hardware.gpu", "model.layers", "model.param_count", "model.preset", "training.micro_batch",
        "training.offload", "training.peft",
    })
    name = "pure-data-parallel-oversized"
    severity = Severity.ERROR
    summary = ("Pure data parallelism (no TP/PP, no parameter sharding) for a model whose weights, "
               "gradients and optimizer states alone exceed one GPU.")
    doc = """
    ## What it does
    Estimates the model states every rank holds when the job uses no model parallelism
    (TP = PP = 1) and does not shard parameters (ZeRO < 3, no FSDP full shard): 16-bit weights
    and gradients plus fp32 master weights and Adam moments, 16 bytes per parameter (ZeRO paper
    accounting; ZeRO-1/2 shard the optimizer states and gradients over the data-parallel ranks).
    It reports the job when these exceed `memory-headroom` (default 0.9) × one GPU's memory. The
    model comes from the job's configs, or from a Hugging Face hub id or local model folder that
    an HF Trainer script's launch line names (`--model_name_or_path`; shapes from parallint's hub
    table, never downloaded). The GPU comes from the job (`--gres`, `--constraint`, node selectors, the job spec) or from
    `gpu` in `[tool.parallint]`; without one, the largest GPU in parallint's catalogue is used.
    Values parallint cannot resolve (environment variables, `auto`) keep the rule silent, and so
    does a model file that states no world size or parallel layout at all, a job that freezes
    parameters or trains adapters (LoRA/PEFT) parallint cannot size, a multimodal or
    non-transformer (Mamba, RWKV) model, and a job that offloads states to the CPU. A LoRA whose
    rank and target modules are provable (a literal `LoraConfig`, its fields given on the launch
    line, TRL's `--use_peft --lora_r`) is counted as a frozen base in the dtype it is loaded in
    (`torch_dtype=`; under DeepSpeed, or when no dtype is said, the training precision's; 4-bit
    under `load_in_4bit`) plus the adapters' weights, gradients and optimizer states. A LoRA whose
    rank or target modules are not provable is not sized: under pure data parallelism, when the
    frozen base's weights in fp32 would exceed the headroom, an info gives the base's 16-bit and
    fp32 figures and names what to verify. A gpt-neox config whose
    `model_parallel_size` and `pipe_parallel_size` are left at 1 is not pure data parallelism:
    gpt-neox ships every config that way by convention, to be set for the cluster, so its
    layout is unknown (docs/precision-policy-configs.md).

    ## Why it matters
    Data parallelism replicates the whole model on every GPU. A 130B-parameter model needs
    ~260 GB for its fp16 weights alone and ~2 TB with gradients and Adam states: every rank dies
    with CUDA out-of-memory while building the model or at the first optimizer step, after the
    whole allocation has been queued for and started.

    ## Example

    ## How to fix
    Split the model: tensor parallelism inside a node and pipeline parallelism across nodes
    (`tp: 8, pp: 4` here), or shard parameters with ZeRO-3 / FSDP full shard. `parallint plan
    PATH --gpus N` lists the layouts that fit, best first.
    """
    valid = (
        Example(files={"job.yaml": """
        model: {layers: 72, hidden: 12288, heads: 96, vocab: 50257, seq_len: 2048}
        hardware: {gpu: A100-80GB}
        """}),
        Example(files={"job.yaml": """
        model: {layers: 72, hidden: 12288, heads: 96, vocab: 50257, seq_len: 2048}
        parallel:
          world_size: 32
          tp: 8
          pp: 4
        training: {micro_batch: 1, recompute: selective}
        hardware: {gpu: A100-80GB}
        """}),
        Example(files={"job.yaml": """
        model: {preset: llama-2-7b}
        parallel: {world_size: 8, tp: 1, pp: 1, zero_stage: 2}
        training: {micro_batch: 1}
        hardware: {gpu: A100-80GB}
        """}),
        Example(files={"job.yaml": """
        model: {preset: llama-2-70b}
        parallel: {world_size: 64, zero_stage: 3}
        hardware: {gpu: A100-80GB}
        """}),
        Example(files={"job.yaml": """
        model: {layers: 72, hidden: 12288, heads: 96, vocab: 50257, seq_len: 2048}
        parallel: {world_size: 32, tp: "${TP}", pp: 1}
        hardware: {gpu: A100-80GB}
        """}),
        _MEGATRON_130B_FITS,
        Example(files={"sft.py": """
        import torch
        from transformers import AutoModelForCausalLM, HfArgumentParser, Trainer, TrainingArguments
        from args import ModelArguments

        model_args, training_args = HfArgumentParser((ModelArguments, TrainingArguments)).parse_args_into_dataclasses()
        model = AutoModelForCausalLM.from_pretrained(model_args.model_name_or_path, torch_dtype=torch.bfloat16)
        from peft import LoraConfig, get_peft_model
        model = get_peft_model(model, LoraConfig(r=8, target_modules=["q_proj", "v_proj"]))
        Trainer(model=model, args=training_args).train()
        """, "run.sh": """
        #!/bin/bash
        torchrun --nproc_per_node 8 sft.py --model_name_or_path meta-llama/Llama-2-13b-hf \\
            --bf16 --per_device_train_batch_size 1 --output_dir out
        """}),
    )
    invalid = (
        Example(files={"job.yaml": """
        model: {layers: 72, hidden: 12288, heads: 96, vocab: 50257, seq_len: 2048}
        parallel:
          world_size: 32
          tp: 1
          pp: 1
        training: {micro_batch: 1, precision: bf16}
        hardware: {gpu: A100-80GB}
        """}, line=4),
        Example(files={"job.yaml": """
        model: {preset: llama-2-70b}
        parallel: {world_size: 64, zero_stage: 1}
        """}, line=2),
        Example(files={"train.sbatch": """
        #!/bin/bash
        #SBATCH --nodes=4
        #SBATCH --gres=gpu:a100:8

        srun torchrun --nnodes 4 --nproc_per_node 8 pretrain_gpt.py \\
            --tensor-model-parallel-size 1 --pipeline-model-parallel-size 1 \\
            --num-layers 72 --hidden-size 12288 --num-attention-heads 96 \\
            --seq-length 2048 --max-position-embeddings 2048 \\
            --micro-batch-size 1 --global-batch-size 512 --bf16
        """}, line=6),
        Example(files={"sft.py": """
        import torch
        from transformers import AutoModelForCausalLM, HfArgumentParser, Trainer, TrainingArguments
        from args import ModelArguments

        model_args, training_args = HfArgumentParser((ModelArguments, TrainingArguments)).parse_args_into_dataclasses()
        model = AutoModelForCausalLM.from_pretrained(model_args.model_name_or_path)
        Trainer(model=model, args=training_args).train()
        """, "run.sh": """
        #!/bin/bash
        torchrun --nproc_per_node 8 sft.py --model_name_or_path meta-llama/Llama-2-70b-hf \\
            --bf16 --per_device_train_batch_size 1 --output_dir out
        """}, line=3),
        # a LoRA of unknown size (no target_modules) over a 70B model: an info names what to verify
        Example(files={"sft.py": """
        import torch
        from transformers import AutoModelForCausalLM, HfArgumentParser, Trainer, TrainingArguments
        from args import ModelArguments

        model_args, training_args = HfArgumentParser((ModelArguments, TrainingArguments)).parse_args_into_dataclasses()
        model = AutoModelForCausalLM.from_pretrained(model_args.model_name_or_path)
        from peft import LoraConfig, get_peft_model
        model = get_peft_model(model, LoraConfig(r=8))
        Trainer(model=model, args=training_args).train()
        """, "run.sbatch": """
        #!/bin/bash
        #SBATCH --gres=gpu:a100:8
        torchrun --nproc_per_node 8 sft.py --model_name_or_path meta-llama/Llama-2-70b-hf \\
            --bf16 --per_device_train_batch_size 1 --output_dir out
        """}, line=8),
    )

    def check_job(self, job, ctx) -> Iterable:
        got = _setup(job, ctx)
        if got is None:
            yield from self._unsized_lora(job, ctx)
            return
        spec, est, gpu_name, mem = got
        lay = est.layout
        if not _pure_dp_oversized(est, mem, ctx):
            return
        headroom = _headroom(ctx)
        states = est.model_states
        zero = f" with ZeRO-{lay['zero_stage']}" if lay["zero_stage"] else ""
        span = _anchor(job)
        yield self.report(
            span,
            f"pure data parallelism{zero}: every GPU holds the whole {est.param_count / 1e9:.1f}B-"
            f"parameter model{_adapters(est)}, {_gib(states)} GiB of weights, gradients and optimizer states "
            f"({_parts(est)}), more than {headroom:.0%} of the {gpu_name}'s "
            f"{_gib(mem)} GiB; use tensor/pipeline parallelism or ZeRO-3/FSDP "
            f"(`parallint plan` lists layouts that fit)",
            related=_related(job, span),
        )


    def _unsized_lora(self, job, ctx) -> Iterable:
        """A LoRA whose rank or targets are not provable, under pure data parallelism, over a base
        that could overflow the GPU: say what to verify (partial evidence: an info)."""
        got = _unsized_lora(job, ctx)
        if got is None:
            return
        est, gpu_name, mem, peft = got
        headroom = _headroom(ctx)
        base = est.param_count * 2.0  # the frozen base's weights, at least 16 bits a parameter
        limit = f"more than {headroom:.0%} of the {gpu_name}'s {_gib(mem)} GiB"
        head = f"LoRA of unknown size over the whole {est.param_count / 1e9:.1f}B-parameter model under pure data parallelism"
        if base > headroom * mem:
            what = (f"{head}: its frozen base alone is {_gib(base)} GiB of 16-bit weights on every GPU, {limit}, "
                    f"whatever the adapters (parallint cannot size them: {peft.why}); use tensor/pipeline parallelism or ZeRO-3/FSDP, or pass the "
                    "rank and target modules as literals or on the launch line (--lora_r N --lora_target_modules ...) "
                    "so parallint can size the job")
        else:
            what = (f"{head}: its frozen base takes {_gib(base)} GiB of 16-bit weights on every GPU, "
                    f"{_gib(2 * base)} GiB in fp32, against {headroom:.0%} of the {gpu_name}'s {_gib(mem)} GiB, so "
                    "whether the job fits depends on the dtype it loads the base in and on the adapters, which "
                    f"parallint cannot size ({peft.why}): verify that the base plus the adapters' weights, "
                    "gradients and optimizer states fit; pass the rank and target modules as literals or on the "
                    "launch line (--lora_r N --lora_target_modules ...) so parallint can size them")
        span = peft.span or _anchor(job)
        yield self.report(
            span, what,
            severity=Severity.INFO, related=_related(job, span),
        )


def _adapters(est) -> str:
    """How a LoRA job's states are counted: a frozen base, the adapters trained."""
    if est.trainable_params is None:
        return ""
    return f" (a frozen base, {est.trainable_params / 1e6:.1f}M trainable LoRA parameters)"
