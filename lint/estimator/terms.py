"""The estimator's architecture-, policy- and framework-dependent terms (issue 25).

Every term is a general formula; where each comes from is said at the term (and in
docs/architecture.md, "The estimator"). Units: bytes, for one rank, one microbatch.

Saved activations of one decoder layer, eager PyTorch, 16-bit tensors (``k = act_bytes / 2``),
``g = kv_heads / heads``, ``f = ffn / hidden``, flash attention (no score matrices)::

    attention  qkv input 2, Q 2, K 2g, V 2g, attention output (o-proj input) 2     = 6 + 4g
    MLP        GELU: fc1 input 2, GELU input 2f, fc2 input 2f                       = 2 + 4f
               SwiGLU: input 2, gate 2f, up 2f, silu(gate) 2f, product 2f          = 2 + 8f
    norms      the two norm inputs                                                   = 4
    dropout    1 per mask (GPT/BERT style models: after attention, after the MLP)

(x ``s*b*h``). This is Korthikanti et al. 2022's count (34 for MHA + GELU + dropout: 11 + 19 + 4)
with the attention and MLP widths of the model; each is the input an op's backward needs
(torch/csrc/autograd derivatives.yaml: mm saves both operands, silu its input, mul both inputs).

``compile`` (Inductor's min-cut partitioner, Ansel et al. 2024, "PyTorch 2", Sec. 5): pointwise
ops are recomputed in the fused backward, so an MLP keeps only the matmul outputs (SwiGLU gate
and up, 4f; GELU fc1 output, 2f) and its input.

Recompute policies: ``full`` keeps the layer input (2, split by TP under sequence parallelism);
``selective`` is Megatron's (Korthikanti Table 2: no score matrices); ``op`` is PyTorch's
op-level selective activation checkpointing as torchtitan's "op" policy applies it
(torchtitan/models/llama3/parallelize: save the outputs of flash attention and of every other
matmul, recompute the rest): the layer input 2, Q 2, V 2g, the attention output 2, the gate (fc1)
output 2f and the down-projection output 2 = ``8 + 2g + 2f``. ``recompute_every: n`` (torchtitan
``selective_ac_option: n``) fully recomputes every n-th layer and keeps everything of the others.
Under any recomputation one layer's activations are live again while its backward runs.

MoE layers (top-k routing, dropless): the router input 2 and fp32 router logits ``4E/h``; each of
the ``k`` routed copies of a token keeps the permuted input 2, the expert MLP (``2f_e + 6f_e`` for
SwiGLU, as above minus its input) and its output before the weighted combine 2; a shared expert
is a dense MLP. The all-to-all dispatch and combine buffers (``2 * 2k`` per token, EP > 1) are
transient: they are in the high end of the range.
"""

from __future__ import annotations

GIB = float(1 << 30)

#: the LoRA target names and the linear layer each one adapts (d_in, d_out from the shape)
LORA_TARGETS = ("q", "k", "v", "o", "gate", "up", "down")
#: bytes per parameter of a frozen base quantized by bitsandbytes (Dettmers et al. 2023, QLoRA,
#: Sec. 3: NF4 in blocks of 64 with an fp32 absmax each, 0.5 + 4/64; double quantization stores
#: the absmax in 8 bits with an fp32 constant per 256 blocks, 0.5 + 1/64 + 4/(64*256); LLM.int8:
#: 1 byte plus an fp32 scale per row, taken as 1)
QUANT_BYTES = {"nf4": 0.5 + 4 / 64, "nf4_dq": 0.5 + 1 / 64 + 4 / (64 * 256), "int8": 1.0}


def lora_params(shape, rank: int, targets: tuple[str, ...]) -> int:
    """Trainable LoRA parameters: ``rank * (d_in + d_out)`` per adapted linear layer (Hu et al.
    2021, Sec. 4), for every layer; experts' MLPs are adapted once per expert."""
    h, q, kv, f = shape.hidden, shape.q_width, shape.kv_width, shape.ffn
    dims = {"q": (h, q), "k": (h, kv), "v": (h, kv), "o": (q, h), "gate": (h, f), "up": (h, f),
            "down": (f, h)}
    if shape.mlp != "swiglu":
        dims.pop("gate")
    per_layer = sum(rank * (a + b) for name, (a, b) in dims.items() if name in targets)
    return per_layer * shape.layers


def parse_targets(value) -> tuple[str, ...]:
    """``"q,v"``, ``"all"`` / ``"all-linear"`` or a list -> target names (default: q and v, the
    LoRA paper's and PEFT's Llama default)."""
    if value is None:
        return ("q", "v")
    items = value if isinstance(value, (list, tuple)) else str(value).replace(";", ",").split(",")
    names = []
    for raw in items:
        n = str(raw).strip().lower().removesuffix("_proj")
        n = {"query": "q", "key": "k", "value": "v", "projection": "o", "w1": "gate", "w3": "up",
             "w2": "down", "gate_up": "gate"}.get(n, n)
        if n in ("all", "all-linear", "all_linear", "mlp"):
            names += list(LORA_TARGETS) if n != "mlp" else ["gate", "up", "down"]
        elif n in LORA_TARGETS:
            names.append(n)
    return tuple(dict.fromkeys(names)) or ("q", "v")


def layer_activation(shape, s: float, b: float, tp: int = 1, sp: bool = False, recompute: str = "none",
                     flash: bool = True, act_bytes: int = 2, compiled: bool = False, moe: bool = False,
                     lora: tuple[str, ...] = (), lora_dropout: bool = False,
                     gathered_inputs: bool = False, frozen_inputs: bool = False,
                     norm_upcast: bool = False, qkv_view: bool = False) -> float:
    """Saved activation bytes of one layer for one microbatch (the module docstring's terms).

    ``gathered_inputs``: PyTorch tensor parallelism with sequence parallelism (torchtitan) saves
    the all-gathered (whole-sequence) inputs of the column-parallel attention and MLP linears
    for backward, where Megatron-LM gathers them again (Korthikanti Sec. 4.2.2): those 4 units
    are not split by TP.

    ``lora`` (a frozen base): a frozen 16-bit linear layer saves no input, since PyTorch's autograd
    saves an operand only for a gradient that will be computed (tools/autograd/gen_variable_type.py,
    ``guard_for``: mm's input is kept for the weight's gradient alone); the attention and MLP inputs
    and the down projection's input are then kept only where an adapted layer without dropout
    reads them (the adapter's A matrix saves its input). ``frozen_inputs``: the base's linear
    layers save their input anyway, as bitsandbytes' 4-bit and 8-bit matmuls do
    (bitsandbytes/autograd/_functions.py, MatMul4Bit.forward: ``ctx.tensors = (A, B)`` whenever A
    needs a gradient); torchao's NF4 linear (torchtune's QLoRA) saves only the weight
    (torchao/dtypes/nf4tensor.py, LinearNF4).

    ``norm_upcast``: an eager RMSNorm that computes in fp32 (HF LlamaRMSNorm, LitGPT, torchtune:
    ``x.float()`` before the mean of squares) saves the fp32 copy of its input (4 bytes, for pow
    and mul) where the count above has the 16-bit input, and with a trainable scale also the
    normalized 16-bit tensor the scale's gradient needs (mul saves its other operand): 4 + 2 per
    norm in full training, 4 with a frozen scale (PEFT). Fused kernels (compile) keep the 16-bit
    input.

    ``qkv_view``: a fused QKV projection whose V reaches attention as a view of the projection's
    output (LitGPT's CausalSelfAttention: ``qkv.view(...).permute(...).split(...)`` and a reshape
    that stays a view) keeps that whole output alive, since a saved view holds its base's storage:
    Q and K are roped copies, so the Q and K parts of the base, ``2 * (1 + g) * q/h``, come on
    top."""
    k = act_bytes / 2
    h = shape.hidden
    sbh = s * b * h
    g = shape.kv_width / shape.q_width if shape.q_width else 1.0
    ratio_q = shape.q_width / h
    dropout = 1.0 if shape.mlp != "swiglu" and shape.norm == "layernorm" else 0.0
    if recompute == "full":
        return k * 2 * sbh / (tp if sp else 1)
    f = (shape.moe_ffn if moe else shape.ffn) / h
    if recompute == "op":
        sharded = k * (2 * ratio_q + 2 * g * ratio_q + 2 * ratio_q + (2 * f if not moe else 2 * f * shape.top_k))
        replicated = k * (2 + 2)  # the layer input, the down-projection (row-parallel) output
        if sp:
            return sbh * (replicated + sharded) / tp
        return sbh * (replicated + sharded / tp)
    # replicated across TP ranks (split under sequence parallelism): norm inputs, the attention
    # and MLP inputs, dropout masks; the rest is split by TP
    norms = k * 4
    if norm_upcast and not compiled and shape.norm == "rmsnorm" and act_bytes == 2:
        norms = 2 * (4.0 if lora else 6.0)
    attn_in = mlp_in = k * 2
    down_in = (2 * f) * k
    if lora and not frozen_inputs:
        reads_x = not lora_dropout  # an adapter without dropout saves the layer input itself
        attn_in = attn_in if reads_x and any(t in lora for t in ("q", "k", "v")) else 0.0
        mlp_in = mlp_in if reads_x and any(t in lora for t in ("gate", "up")) else 0.0
        down_in = down_in if reads_x and "down" in lora else 0.0
    replicated = norms + attn_in + mlp_in + 2 * dropout
    attn = k * (2 * ratio_q + 4 * g * ratio_q + 2 * ratio_q)
    if qkv_view and not compiled:
        attn += k * 2 * (1 + g) * ratio_q
    if shape.mlp == "swiglu":
        mlp = k * 4 * f if compiled else k * 6 * f + down_in
    else:
        mlp = k * 2 * f if compiled else k * 2 * f + down_in
    if moe:
        e = shape.num_experts or 1
        mlp = shape.top_k * (mlp + k * 4) + 4 * e / h  # routed copies: permuted input, output
        if shape.shared_expert_ffn:
            fs = shape.shared_expert_ffn / h
            mlp += k * ((4 if compiled else 8) * fs if shape.mlp == "swiglu" else (2 if compiled else 4) * fs)
    score = 0.0
    if not flash and recompute != "selective":
        score = (4 * k + (1 if dropout else 0)) * shape.heads * s / h
    adapters = 0.0
    if lora and lora_dropout:  # each adapted linear's dropped-out input copy and its mask (PEFT)
        d_in = {"q": 1.0, "k": 1.0, "v": 1.0, "gate": 1.0, "up": 1.0, "o": ratio_q, "down": f}
        adapters = (2 * k + 1) * sum(d_in[t] for t in lora if t in d_in)
    if sp and gathered_inputs:
        gathered = k * 4
        return sbh * (gathered + (replicated - gathered + attn + mlp + score + adapters) / tp)
    if sp:
        return sbh * (replicated + attn + mlp + score + adapters) / tp
    return sbh * (replicated + (attn + mlp + score) / tp + adapters)


def loss_bytes(mode: str, s: float, b: float, vocab: int, tp: int, act_bytes: int = 2,
               logits_bytes: float | None = None) -> float:
    """The logits and cross-entropy on the last stage, beyond the output layer's input.

    ``standard``: in backward, log_softmax's saved fp32 output, the fp32 gradient nll_loss hands
    it and the fp32 gradient it returns are alive at once (aten _log_softmax_backward_data: 12
    bytes per logit; the 16-bit and fp32 logits of the forward, 2 + 4, are freed by then). ``chunked`` (torchtune's
    chunked cross-entropy): the 16-bit logits are kept, fp32 only one chunk at a time (2 bytes per
    logit). ``fused`` (a fused linear-cross-entropy kernel, Liger; Wijmans et al. 2024, "Cut Your
    Losses"): no logits tensor beyond one chunk (0). ``compiled`` (torch.compile of the loss
    function: torchtitan's build_cross_entropy_loss from bbb1b616, April 2025, torchtune's
    compile_loss): Inductor fuses the upcast, log-softmax and NLL into one forward kernel that saves
    its input logits and a per-row logsumexp, and one backward kernel that writes the gradient in
    the input's dtype (the min-cut partitioner keeps the smallest tensors that recompute the rest;
    Ansel et al. 2024, Sec. 5): ``2 * logits_bytes`` per logit, the logits as they enter the
    compiled function (16-bit in torchtitan, whose loss upcasts inside it; fp32 in torchtune,
    whose TransformerDecoder returns ``output(h).float()``)."""
    if mode == "compiled":
        per = 2.0 * (act_bytes if logits_bytes is None else logits_bytes)
    else:
        per = {"standard": 12, "chunked": 2, "fused": 0}.get(mode, 12)
    return per * s * b * vocab / tp


def fragmentation(expandable: bool | None) -> tuple[float, float, float]:
    """(low, expected, high) share the caching allocator reserves beyond what is allocated.
    Measured: 2.5-9 % on the HF bert-large runs (memory_refs 8.1, reserved vs allocated) and
    torchtitan's reserved vs active; ``expandable_segments`` maps pages on demand and leaves less
    (PyTorch CUDA semantics docs, "Optimizing memory usage with PYTORCH_CUDA_ALLOC_CONF")."""
    return (0.0, 0.02, 0.06) if expandable else (0.0, 0.05, 0.15)
