"""The fact vocabulary: every fact a reader may state about a job, declared once.

A fact is a normalized key (``parallel.tp``) with a type, a unit, a meaning, the values it may take
(for enumerations) and the readers that produce it. ``spec`` says whether the key is also a field of
the normalized job spec (``schemas/job.schema.json``, what ``parallint show`` prints and
``parallint estimate`` reads); ``fact=False`` marks a job-spec field that no reader states (it is
only written by hand in a job-spec file).

Derived from this table (never typed twice):

* :data:`parallint.model.facts.FACT_KEYS` — the keys :meth:`parallint.model.facts.FactMap.add` accepts;
* ``parallint.estimator.spec._FACT_FIELDS`` — the facts copied into an estimator spec;
* ``schemas/job.schema.json`` — checked against :data:`SPEC_FIELDS` by ``tests/test_vocab.py``.

To add a fact: add a :class:`Fact` here (and, when ``spec``, a property to the schema), then emit
it from a reader. ``tests/test_vocab.py`` says what is missing.
"""

from __future__ import annotations

from parallint.util.record import FrozenRecord

TYPE_CHECKING = False  # typing is not imported at run time (start-up, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Final


#: the job-spec sections, in the order ``show`` prints them
SECTIONS: tuple[str, ...] = ("model", "parallel", "training", "hardware")

#: fact types: the Python type of ``Value.value`` when known
TYPES: frozenset[str] = frozenset({"int", "bool", "str", "enum", "int|list", "str|bool"})


class Fact(FrozenRecord):
    _fields = ("key", "type", "meaning", "unit", "values", "producers", "spec", "fact")
    key: Final[str]
    type: Final[str]
    meaning: Final[str]
    unit: Final[str]
    #: the allowed values of an ``enum`` fact (``None`` = unknown is always allowed)
    values: Final[tuple[str, ...]]
    #: reader modules (``parallint.readers.X`` or ``parallint.X``) that state it; a job-spec file
    #: (``readers/jobspec``) may state every ``spec`` fact and is not listed
    producers: Final[tuple[str, ...]]
    #: a field of the normalized job spec (schemas/job.schema.json)
    spec: Final[bool]
    #: readers may state it (False: a job-spec field only written by hand)
    fact: Final[bool]

    def __init__(
        self,
        key: str,
        type: str,
        meaning: str,
        unit: str = "",
        values: tuple[str, ...] = (),
        producers: tuple[str, ...] = (),
        spec: bool = True,
        fact: bool = True,
    ) -> None:
        self.key = key
        self.type = type
        self.meaning = meaning
        self.unit = unit
        self.values = values
        self.producers = producers
        self.spec = spec
        self.fact = fact

    @property
    def section(self) -> str:
        return self.key.split(".", 1)[0] if "." in self.key else ""

    @property
    def name(self) -> str:
        return self.key.split(".", 1)[-1]


_MEGATRON = ("megatron_args", "nemo")
_ALL_DEGREE = ("megatron_args", "nemo", "torchtitan", "python")
_VERSIONS = ("versions",)

VOCABULARY: tuple[Fact, ...] = (
    # ------------------------------------------------------------------ model
    Fact("model.param_count", "int", "total parameters; overrides the count derived from the shape",
         "parameters"),
    Fact("model.layers", "int", "transformer layers", "layers",
         producers=("foundry", "hf_model", "hftrainargs", "megatron_args", "nemo", "neox")),
    Fact("model.hidden", "int", "hidden size", "features",
         producers=("foundry", "hf_model", "hftrainargs", "megatron_args", "nemo", "neox")),
    Fact("model.heads", "int", "attention heads", "heads",
         producers=("foundry", "hf_model", "hftrainargs", "megatron_args", "nemo", "neox", "python")),
    Fact("model.kv_heads", "int", "key/value heads (GQA query groups)", "heads",
         producers=("hf_model", "hftrainargs", "megatron_args", "nemo", "neox")),
    Fact("model.ffn", "int", "MLP inner size", "features",
         producers=("hf_model", "hftrainargs", "megatron_args", "nemo", "neox")),
    Fact("model.vocab", "int", "vocabulary size (padded as the framework pads it)", "tokens",
         producers=("hf_model", "hftrainargs", "megatron_args", "nemo")),
    Fact("model.seq_len", "int", "training sequence length", "tokens",
         producers=("foundry", "megatron_args", "nanotron", "nemo", "neox", "torchtitan")),
    Fact("model.mlp", "enum", "MLP kind", values=("gelu", "swiglu"),
         producers=("hf_model", "hftrainargs", "megatron_args", "nemo", "neox")),
    Fact("model.tied_embeddings", "bool", "output layer shares the input embedding",
         producers=("hf_model", "hftrainargs", "megatron_args", "nemo", "neox")),
    Fact("model.norm", "enum", "normalization", values=("layernorm", "rmsnorm"),
         producers=("megatron_args", "nemo", "neox")),
    Fact("model.bias", "bool", "linear layers have biases", producers=("megatron_args", "nemo", "neox")),
    Fact("model.position_embeddings", "enum", "position encoding", values=("learned", "rope"),
         producers=("megatron_args", "nemo", "neox")),
    Fact("model.num_experts", "int", "MoE experts per MoE layer (0 or absent = dense)", "experts",
         producers=("hf_model", "hftrainargs", "megatron_args", "nemo", "neox")),
    Fact("model.top_k", "int", "experts per token", "experts", producers=("hf_model", "hftrainargs", "megatron_args", "nemo")),
    Fact("model.moe_ffn", "int", "expert MLP inner size", "features", producers=("hf_model", "hftrainargs", "megatron_args")),
    Fact("model.head_dim", "int", "per-head width (kv_channels)", "features",
         producers=("hf_model", "hftrainargs", "megatron_args", "nemo")),
    Fact("model.preset", "str", "a named shape from parallint's presets (lint/data/presets.yaml)",
         producers=("torchtitan",)),
    Fact("model.moe_layer_freq", "int|list", "every n-th layer is MoE, or a 0/1 pattern per layer",
         producers=("hf_model",)),
    Fact("model.shared_expert_ffn", "int", "shared-expert MLP inner size", "features", producers=("hf_model", "hftrainargs")),
    Fact("model.kv_lora_rank", "int", "MLA: compressed key/value width (DeepSeek kv_lora_rank)", "features",
         producers=("hf_model", "hftrainargs")),
    Fact("model.q_lora_rank", "int", "MLA: compressed query width (0 = queries not compressed)", "features",
         producers=("hf_model", "hftrainargs")),
    Fact("model.qk_nope_head_dim", "int", "MLA: per-head query/key width without rotary", "features",
         producers=("hf_model", "hftrainargs")),
    Fact("model.qk_rope_head_dim", "int", "MLA: per-head query/key rotary width", "features",
         producers=("hf_model", "hftrainargs")),
    Fact("model.v_head_dim", "int", "MLA: per-head value width", "features", producers=("hf_model", "hftrainargs")),
    Fact("model.largest_layer_params", "int", "parameters of the largest layer (ZeRO-3 gather buffer)",
         "parameters", fact=False),
    Fact("model.max_position_embeddings", "int", "learned position table size", "positions", fact=False),
    Fact("model.arch", "enum", "architecture family", values=("decoder", "encoder", "encoder-decoder"),
         fact=False),
    Fact("model.num_labels", "int", "classifier outputs (encoder)", "labels", fact=False),
    Fact("model.type_vocab_size", "int", "token types (encoder)", "types", fact=False),
    # ------------------------------------------------------------------ parallel
    Fact("parallel.world_size", "int", "total processes (one per GPU)", "processes",
         producers=("accelerate", "cmdline", "nanotron", "nemo", "neox", "python")),
    Fact("parallel.nodes", "int", "nodes", "nodes",
         producers=("accelerate", "cmdline", "kube", "lightning_cli", "nemo", "python", "shell", "skypilot")),
    Fact("parallel.gpus_per_node", "int", "GPUs (processes) per node", "GPUs"),
    Fact("parallel.procs_per_node", "int", "processes a launcher starts per node", "processes",
         producers=("accelerate", "cmdline", "kube", "lightning_cli", "nemo", "python", "shell"), spec=False),
    Fact("parallel.dp", "int", "data-parallel degree", "ranks", producers=("lightning_cli", "nanotron", "python")),
    Fact("parallel.dp_replicate", "int", "replicated data-parallel degree (HSDP outer dimension)", "ranks",
         producers=("accelerate", "cmdline", "python", "torchtitan", "torchtune"), spec=False),
    Fact("parallel.dp_shard", "int", "sharded data-parallel degree (FSDP dimension)", "ranks",
         producers=("accelerate", "cmdline", "python", "torchtitan", "torchtune"), spec=False),
    Fact("parallel.tp", "int", "tensor-parallel degree", "ranks",
         producers=("accelerate", "deepspeed", "nanotron", "neox") + _ALL_DEGREE + ("cmdline", "lightning_cli", "torchtune")),
    Fact("parallel.pp", "int", "pipeline-parallel degree", "stages",
         producers=("deepspeed", "nanotron", "neox") + _ALL_DEGREE),
    Fact("parallel.vpp", "int", "virtual pipeline stages per rank (interleaved 1F1B)", "stages",
         producers=_MEGATRON + ("python",)),
    Fact("parallel.vpp_layers", "int", "layers per virtual pipeline stage (--num-layers-per-virtual-pipeline-stage)",
         "layers", producers=_MEGATRON, spec=False),
    Fact("parallel.rollout_tp", "int", "tensor-parallel degree of an RL framework's rollout (inference) engine "
         "(verl actor_rollout_ref.rollout.tensor_model_parallel_size; stated by link.frameworkcli on the job)", spec=False),
    Fact("parallel.ulysses_sp", "int", "Ulysses sequence-parallel degree of an RL framework's FSDP actor "
         "(verl actor_rollout_ref.actor.ulysses_sequence_parallel_size; stated by link.frameworkcli on the job)",
         "ranks", spec=False),
    Fact("parallel.cp", "int", "context-parallel degree", "ranks", producers=("accelerate",) + _ALL_DEGREE + ("cmdline", "torchtune")),
    Fact("parallel.ep", "int", "expert-parallel degree", "ranks", producers=("nanotron",) + _ALL_DEGREE),
    Fact("parallel.etp", "int", "expert tensor-parallel degree", "ranks",
         producers=_MEGATRON + ("torchtitan",)),
    Fact("parallel.sp", "int", "Ulysses sequence-parallel degree (DeepSpeed, accelerate)", "ranks",
         producers=("accelerate", "deepspeed"), spec=False),
    Fact("parallel.zero_stage", "int", "ZeRO stage (0-3); FSDP full shard = 3",
         producers=("accelerate", "deepspeed", "foundry", "hftrainargs", "megatron_args", "nanotron", "neox", "python")),
    Fact("parallel.sequence_parallel", "bool", "Megatron-style sequence parallelism (shards norms by sequence)",
         producers=_MEGATRON + ("nanotron", "neox", "torchtitan") + ("megatron_yaml",)),
    Fact("parallel.distributed_optimizer", "bool", "Megatron distributed optimizer (ZeRO-1)", producers=_MEGATRON),
    Fact("parallel.fsdp", "bool", "FSDP full shard (same as zero_stage 3)",
         producers=("accelerate", "foundry", "hftrainargs", "python")),
    Fact("parallel.pp_layout", "str|bool", "an uneven or explicit pipeline layout is configured",
         producers=("megatron_yaml", "nemo"), spec=False),
    # ------------------------------------------------------------------ training
    Fact("training.micro_batch", "int", "micro-batch size per GPU", "samples",
         producers=("cmdline", "deepspeed", "foundry", "hftrainargs", "megatron_args", "nanotron", "nemo", "neox", "python", "torchtitan", "torchtune")),
    Fact("training.global_batch", "int", "global batch size", "samples",
         producers=("foundry", "megatron_args", "nemo", "torchtitan")),
    Fact("training.ppo_mini_batch", "int", "an RL framework's PPO mini batch, prompts per actor update (verl "
         "actor_rollout_ref.actor.ppo_mini_batch_size; stated by link.frameworkcli on the job)", "samples", spec=False),
    Fact("training.ppo_micro_per_gpu", "int", "an RL framework's FSDP actor micro batch per GPU (verl "
         "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu; stated by link.frameworkcli on the job)", "samples",
         spec=False),
    Fact("training.rollout_n", "int", "responses an RL framework samples per prompt (verl actor_rollout_ref.rollout.n; "
         "stated by link.frameworkcli on the job)", "samples", spec=False),
    Fact("training.train_batch_size", "int", "DeepSpeed train_batch_size (micro x accumulation x DP)",
         "samples", producers=("deepspeed", "neox"), spec=False),
    Fact("training.grad_accum", "int", "gradient-accumulation steps", "steps",
         producers=("accelerate", "cmdline", "deepspeed", "hftrainargs", "lightning_cli", "nanotron", "neox", "python", "torchtune")),
    Fact("training.pp_microbatch", "int", "samples per pipeline microbatch (torchtitan "
         "pipeline_parallel_microbatch_size)", "samples", producers=("torchtitan",), spec=False),
    Fact("training.pp_schedule", "str", "pipeline schedule (torchtitan pipeline_parallel_schedule: 1F1B, "
         "GPipe, Interleaved1F1B...)", producers=("torchtitan",), spec=False),
    Fact("training.num_microbatches", "int", "microbatches per step per data-parallel rank", "microbatches",
         fact=False),
    Fact("training.recompute", "enum", "activation recomputation (op = PyTorch op-level selective checkpointing, "
         "torchtitan's 'op' policy)", values=("none", "selective", "full", "op"),
         producers=("jobspec", "megatron_args", "nanotron", "nemo", "neox", "torchtitan")),
    Fact("training.precision", "enum", "training precision (16-bit = mixed with fp32 master weights)",
         values=("bf16", "fp16", "fp32"),
         producers=("accelerate", "deepspeed", "foundry", "hftrainargs", "lightning_cli", "megatron_args", "nemo", "neox", "python", "torchtune")),
    Fact("training.optimizer", "enum", "optimizer", values=("adam", "adamw", "sgd")),
    Fact("training.grad_dtype", "enum", "gradient dtype (fp32 = Megatron main grads)", values=("same", "fp32")),
    Fact("training.master_weights", "bool",
         "the optimizer keeps an fp32 master copy of 16-bit weights (false: pure 16-bit training, "
         "Adam moments in the weights' dtype)", producers=("hftrainargs",)),
    Fact("training.grad_accum_dtype", "enum", "a separate fp32 gradient-accumulation buffer",
         values=("same", "fp32"), fact=False),
    Fact("training.flash_attention", "bool", "attention without stored score matrices", fact=False),
    Fact("training.recompute_every", "int", "with full recompute: every n-th layer is checkpointed "
         "(torchtitan selective_ac_option n)", "layers", fact=False),
    Fact("training.autocast", "bool", "torch.autocast mixed precision over fp32 weights: fp32 softmax and residual "
         "stream, 16-bit weight casts saved for backward", fact=False),
    Fact("training.compile", "bool", "torch.compile fuses the layers' pointwise ops (they are recomputed in backward)",
         fact=False),
    Fact("training.loss", "enum", "cross-entropy: standard (fp32 logits), chunked (16-bit logits, fp32 per chunk), "
         "fused (no logits tensor), compiled (torch.compile of the loss: its input logits and their gradient)",
         values=("standard", "chunked", "fused", "compiled"), fact=False),
    Fact("training.fp8", "bool", "float8 linear layers with float8 FSDP all-gather", fact=False),
    Fact("training.peft", "enum", "parameter-efficient fine-tuning: a frozen base with LoRA adapters "
         "(qlora: a 4-bit base)", values=("none", "lora", "qlora"), producers=("hftrainargs",)),
    Fact("training.lora_rank", "int", "LoRA rank r", "features", producers=("hftrainargs",)),
    Fact("training.lora_targets", "str", "adapted linear layers: q,k,v,o,gate,up,down or all (default q,v)",
         producers=("hftrainargs",)),
    Fact("training.lora_dropout", "bool", "LoRA dropout on the adapters' inputs (keeps a copy of each)", producers=("hftrainargs",)),
    Fact("training.base_quant", "enum", "the frozen base's weights: none (training precision), nf4, nf4_dq "
         "(double quantization), int8", values=("none", "nf4", "nf4_dq", "int8"), producers=("hftrainargs",)),
    Fact("training.base_dtype", "enum", "the precision a LoRA job's frozen base is kept in (the dtype it is loaded "
         "in; unset: the training precision's)", values=("bf16", "fp16", "fp32"), producers=("hftrainargs",)),
    Fact("training.trainable_params", "int", "trainable parameters of a PEFT job; overrides the LoRA count",
         "parameters", fact=False),
    Fact("training.offload_optimizer", "bool", "optimizer states and fp32 gradients kept on the CPU (ZeRO-Offload, "
         "FSDP CPU offload)", fact=False),
    Fact("training.offload_params", "bool", "parameters kept on the CPU and gathered per layer", fact=False),
    Fact("training.offload", "bool", "optimizer state or parameters offloaded to CPU/NVMe",
         producers=("accelerate", "deepspeed", "foundry", "megatron_args", "nemo", "neox", "torchtitan"),
         spec=False),
    # ------------------------------------------------------------------ hardware
    Fact("hardware.gpu", "str", "GPU type (H100-80GB, a100...)", producers=("cmdline", "kube", "ray", "shell", "skypilot")),
    Fact("hardware.gpu_memory_bytes", "int", "device memory; overrides the GPU catalogue", "bytes"),
    Fact("hardware.reserved_bytes", "int", "CUDA context and workspaces", "bytes", fact=False),
    Fact("hardware.expandable_segments", "bool", "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (less "
         "fragmentation)", fact=False),
    Fact("hardware.cluster_gpus", "int", "GPUs a Ray cluster offers in all (head and worker groups at their largest)",
         "GPUs", producers=("ray",), spec=False),
    Fact("hardware.node_gpus_max", "int", "GPUs of the largest node (pod) of a Ray cluster", "GPUs",
         producers=("ray",), spec=False),
    Fact("hardware.gpus_per_process", "int", "GPUs each process reserves (Ray Train resources_per_worker)", "GPUs",
         producers=("python",), spec=False),
    Fact("hardware.gpus_per_node_requested", "int", "GPUs per node a scheduler is asked for", "GPUs",
         producers=("cmdline", "kube", "ray", "shell", "skypilot", "torchx"), spec=False),
    Fact("hardware.visible_devices", "str", "the devices a launcher makes visible to its processes, comma-separated "
         "(accelerate's gpu_ids, exported as CUDA_VISIBLE_DEVICES)", producers=("accelerate",), spec=False),
    Fact("hardware.infiniband_devices", "int", "InfiniBand (RDMA) devices the node has (/sys/class/infiniband; "
         "parallint preflight)", "devices", spec=False),
    # ------------------------------------------------------------------ versions
    # (parallint.model.versions: a specifier text per statement, origin.via the kind of source;
    # several statements of one package are alternatives)
    Fact("version.torch", "str", "torch versions the job may run (a specifier: ==2.1.0, >=2.1,<2.4, '' = any)",
         "version", producers=_VERSIONS, spec=False),
    Fact("version.cuda", "str", "the CUDA runtime torch runs with (image, +cuXXX wheel, conda pytorch-cuda)",
         "version", producers=_VERSIONS, spec=False),
    Fact("version.cuda_toolkit", "str", "the CUDA toolkit on PATH that compiles extensions (module load, devel image)",
         "version", producers=_VERSIONS, spec=False),
    Fact("version.nccl", "str", "the NCCL library the job runs with (image, nvidia-nccl wheel)", "version",
         producers=_VERSIONS, spec=False),
    Fact("version.transformers", "str", "Hugging Face transformers versions", "version", producers=_VERSIONS,
         spec=False),
    Fact("version.deepspeed", "str", "DeepSpeed versions", "version", producers=_VERSIONS, spec=False),
    Fact("version.accelerate", "str", "Hugging Face accelerate versions", "version", producers=_VERSIONS, spec=False),
    Fact("version.flash_attn", "str", "flash-attn versions", "version", producers=_VERSIONS, spec=False),
    # ------------------------------------------------------------------ other
    Fact("ddp.find_unused_parameters", "bool", "DDP's find_unused_parameters switch",
         producers=("hftrainargs", "lightning_cli", "nemo", "python"), spec=False),
    Fact("training.lightning_deepspeed_config", "str", "the DeepSpeed config path given to Lightning's "
         "DeepSpeedStrategy(config=...)", producers=("python",), spec=False),
    Fact("training.lightning_deepspeed_config_accum", "bool", "a literal DeepSpeed config dict given to Lightning's "
         "DeepSpeedStrategy(config=...) sets gradient_accumulation_steps", producers=("python",), spec=False),
    Fact("framework", "str", "the training framework a file is written for (megatron, nemo, deepspeed, "
         "torchtitan, hf_trainer...)", producers=("cfgutil", "megatron_args", "megatron_yaml", "python", "torchtitan_py")),
    Fact("estimator.accounting", "enum", "memory accounting: the ZeRO paper's or Megatron-LM's",
         values=("zero", "megatron"), fact=False),
)

BY_KEY: dict[str, Fact] = {f.key: f for f in VOCABULARY}

#: every key a reader may state (parallint.model.facts.FACT_KEYS)
FACT_KEYS: frozenset[str] = frozenset(f.key for f in VOCABULARY if f.fact)

#: job-spec fields (schemas/job.schema.json), section -> names; ``framework`` is top level
SPEC_FIELDS: dict[str, tuple[str, ...]] = {
    s: tuple(f.name for f in VOCABULARY if f.spec and f.section == s)
    for s in SECTIONS + ("estimator",)
}

#: the facts copied into an estimator spec, section -> names (parallint.estimator.spec._FACT_FIELDS)
SPEC_FACT_FIELDS: dict[str, list[str]] = {
    s: [f.name for f in VOCABULARY if f.spec and f.fact and f.section == s] for s in SECTIONS
}


def fact(key: str) -> Fact:
    """The declaration of ``key``; KeyError names an undeclared key."""
    try:
        return BY_KEY[key]
    except KeyError:
        raise KeyError(f"not a declared fact: {key!r} (see parallint.model.vocab)") from None


def markdown_table() -> str:
    """The vocabulary as a Markdown table (docs/architecture.md)."""
    rows = ["| fact | type | unit | meaning | in job spec | produced by |", "|---|---|---|---|---|---|"]
    for f in VOCABULARY:
        ty = f.type if not f.values else " / ".join(f.values)
        spec = "yes" if f.spec else "no"
        by = ", ".join(f.producers) if f.fact else "(hand-written job spec only)"
        rows.append(f"| `{f.key}` | {ty} | {f.unit} | {f.meaning} | {spec} | {by} |")
    return "\n".join(rows) + "\n"
