"""Exact parameter counts from a model shape (pure Python, no torch).

The shape is the ``model`` section of the normalized job spec (DESIGN.md). Supported families:

* decoder-only transformers: GPT-2/GPT-3 style (LayerNorm with bias, linear biases, learned
  positions, tied head) and Llama style (RMSNorm, no biases, SwiGLU, rotary, untied head), with
  grouped-query attention (``kv_heads``), an explicit ``head_dim``, and mixture-of-experts MLPs
  (``num_experts`` x ``moe_ffn`` plus an ``h x E`` router, optional ``shared_expert_ffn`` and a
  ``moe_layer_freq`` pattern);
* ``arch: encoder`` (BERT: token-type embeddings, embedding LayerNorm, pooler, optional
  ``num_labels`` classifier);
* ``arch: encoder-decoder`` (T5: ``layers`` split evenly between encoder and decoder, relative
  position buckets in the first layer of each stack, no biases, shared tied embeddings).

Defaults follow the family the norm implies: ``norm: layernorm`` means GPT-2 style (bias, learned
positions, tied head, GELU, ffn = 4h), ``norm: rmsnorm`` means Llama style (no bias, rotary,
untied head, SwiGLU with Megatron's default ffn = 64 * floor(8h/3/64)).

``breakdown(model)`` splits the count into the parts that tensor and pipeline parallelism treat
differently; ``count_params(model)`` is its total. ``megatron=True`` counts the way Megatron-LM's
``theoretical_memory_usage.py`` does (no linear biases, no learned positions, LayerNorm = 2h).
"""

from __future__ import annotations


from parallint.util.record import EqRecord


class ShapeError(ValueError):
    """The model section does not determine a parameter count."""


def _norm_kind(model: dict) -> str:
    n = str(model.get("norm") or "layernorm").lower()
    return "rmsnorm" if "rms" in n else "layernorm"


def _is_llama_style(model: dict) -> bool:
    if model.get("norm") is not None:
        return _norm_kind(model) == "rmsnorm"
    return str(model.get("mlp") or "").lower() == "swiglu"


#: plausible upper bounds of a model's sizes: beyond them a value is a typo (or a hostile file), and
#: the per-layer tables and float arithmetic of the estimate would blow up
MODEL_BOUNDS = {"layers": 100_000, "hidden": 1 << 20, "heads": 1 << 16, "kv_heads": 1 << 16, "head_dim": 1 << 16,
                "ffn": 1 << 24, "moe_ffn": 1 << 24, "shared_expert_ffn": 1 << 24, "vocab": 1 << 28,
                "seq_len": 1 << 27, "max_position_embeddings": 1 << 27, "num_experts": 1 << 16,
                "kv_lora_rank": 1 << 24, "q_lora_rank": 1 << 24, "qk_nope_head_dim": 1 << 16,
                "qk_rope_head_dim": 1 << 16, "v_head_dim": 1 << 16,
                "top_k": 1 << 16, "param_count": 10**16}
#: the same for the training section (the batch sizes multiply into the activation estimate)
TRAINING_BOUNDS = {"micro_batch": 1 << 24, "global_batch": 1 << 34, "grad_accum": 1 << 24,
                   "num_microbatches": 1 << 24}


def _int(model: dict, key: str, default=None) -> int | None:
    v = model.get(key, default)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v != v or v in (float("inf"), float("-inf")) \
            or int(v) != v or v < 0:
        raise ShapeError(f"model.{key} must be a non-negative integer, not {v!r}")
    high = MODEL_BOUNDS.get(key)
    if high is not None and v > high:
        raise ShapeError(f"model.{key} = {int(v)}: more than {high}, not a real model")
    return int(v)


class Shape(EqRecord):
    """A fully defaulted model shape."""

    _fields = ("layers", "hidden", "heads", "kv_heads", "head_dim", "q_width", "kv_width", "ffn", "vocab", "seq_len", "mlp", "norm", "bias", "position_embeddings", "max_positions", "tied_embeddings", "num_experts", "top_k", "moe_ffn", "shared_expert_ffn", "moe_layer_pattern", "arch", "num_labels", "type_vocab", "mla")
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    q_width: int  # heads x head_dim
    kv_width: int  # kv_heads x head_dim
    ffn: int
    vocab: int
    seq_len: int | None
    mlp: str  # gelu | swiglu
    norm: str  # layernorm | rmsnorm
    bias: bool
    position_embeddings: str  # learned | rope
    max_positions: int
    tied_embeddings: bool
    num_experts: int
    top_k: int
    moe_ffn: int
    shared_expert_ffn: int
    moe_layer_pattern: list[int]
    arch: str  # decoder | encoder | encoder-decoder
    num_labels: int
    type_vocab: int
    #: multi-head latent attention (DeepSeek V2/V3): (kv_lora_rank, q_lora_rank, qk_nope_head_dim,
    #: qk_rope_head_dim, v_head_dim), q_lora_rank 0 = queries not compressed; None = plain attention
    mla: tuple[int, int, int, int, int] | None

    def __init__(
        self,
        layers: int,
        hidden: int,
        heads: int,
        kv_heads: int,
        head_dim: int,
        q_width: int,
        kv_width: int,
        ffn: int,
        vocab: int,
        seq_len: int | None,
        mlp: str,
        norm: str,
        bias: bool,
        position_embeddings: str,
        max_positions: int,
        tied_embeddings: bool,
        num_experts: int,
        top_k: int,
        moe_ffn: int,
        shared_expert_ffn: int,
        moe_layer_pattern: list[int],
        arch: str,
        num_labels: int,
        type_vocab: int,
        mla: tuple[int, int, int, int, int] | None = None,
    ) -> None:
        self.layers = layers
        self.hidden = hidden
        self.heads = heads
        self.kv_heads = kv_heads
        self.head_dim = head_dim
        self.q_width = q_width
        self.kv_width = kv_width
        self.ffn = ffn
        self.vocab = vocab
        self.seq_len = seq_len
        self.mlp = mlp
        self.norm = norm
        self.bias = bias
        self.position_embeddings = position_embeddings
        self.max_positions = max_positions
        self.tied_embeddings = tied_embeddings
        self.num_experts = num_experts
        self.top_k = top_k
        self.moe_ffn = moe_ffn
        self.shared_expert_ffn = shared_expert_ffn
        self.moe_layer_pattern = moe_layer_pattern
        self.arch = arch
        self.num_labels = num_labels
        self.type_vocab = type_vocab
        self.mla = mla


def shape_of(model: dict) -> Shape:
    """Fill in the defaults of a model section (raises :class:`ShapeError` when it is incomplete)."""
    missing = [k for k in ("layers", "hidden", "heads", "vocab") if model.get(k) is None]
    if missing:
        raise ShapeError("model shape incomplete: missing " + ", ".join(missing))
    layers = _int(model, "layers")
    hidden = _int(model, "hidden")
    heads = _int(model, "heads")
    if not heads or not hidden or not layers:
        raise ShapeError("model.layers, model.hidden and model.heads must be positive")
    llama = _is_llama_style(model)
    kv_heads = _int(model, "kv_heads") or heads
    head_dim = _int(model, "head_dim")
    if head_dim:
        q_width, kv_width = heads * head_dim, kv_heads * head_dim
    else:  # attention as wide as the model (also when hidden % heads != 0: LAY012's business)
        head_dim = hidden // heads
        q_width = hidden
        kv_width = (hidden * kv_heads) // heads
    arch = str(model.get("arch") or "decoder").lower()
    arch = {"encoder-decoder": "encoder-decoder", "t5": "encoder-decoder", "encoder": "encoder",
            "bert": "encoder"}.get(arch, "decoder")
    mlp = str(model.get("mlp") or ("swiglu" if llama and arch == "decoder" else "gelu")).lower()
    mlp = "swiglu" if mlp in ("swiglu", "silu", "geglu", "glu", "gated") else "gelu"
    ffn = _int(model, "ffn")
    if ffn is None:
        # Megatron's defaults: 4h, or for SwiGLU two thirds of that rounded down to 64
        ffn = int((4 * hidden * 2 / 3) / 64) * 64 if mlp == "swiglu" else 4 * hidden
    norm = _norm_kind(model) if model.get("norm") is not None else ("rmsnorm" if llama else "layernorm")
    bias = model.get("bias")
    bias = (not llama) if bias is None else bool(bias)
    pos = model.get("position_embeddings") or model.get("pos_emb")
    if pos is None:
        pos = "rope" if llama else "learned"
    pos = str(pos).lower()
    max_positions = _int(model, "max_position_embeddings")
    if pos.startswith("learned"):
        if "(" in pos and max_positions is None:  # "learned(1024)" as in memory_cases.yaml
            try:
                max_positions = int(pos.split("(", 1)[1].rstrip(")"))
            except ValueError:
                max_positions = None
        pos = "learned"
    else:
        pos = "rope"
    seq_len = _int(model, "seq_len")
    if pos == "learned" and max_positions is None:
        max_positions = seq_len or 0  # unknown table size: not counted
    tied = model.get("tied_embeddings")
    tied = (not llama) if tied is None else bool(tied)
    num_experts = _int(model, "num_experts") or 0
    top_k = _int(model, "top_k") or (2 if num_experts else 0)
    moe_ffn = _int(model, "moe_ffn") or (ffn if num_experts else 0)
    shared = _int(model, "shared_expert_ffn") or 0
    pattern = model.get("moe_layer_freq")
    if num_experts:
        if pattern is None or pattern == 1:
            pattern = [1] * layers
        elif isinstance(pattern, int) and not isinstance(pattern, bool) and pattern > 0:
            pattern = [1 if i % pattern == 0 else 0 for i in range(layers)]
        elif isinstance(pattern, list) and len(pattern) == layers:
            pattern = [1 if p else 0 for p in pattern]
        else:
            raise ShapeError("model.moe_layer_freq must be an integer or a list with one entry per layer")
    else:
        pattern = [0] * layers
    mla = None
    if _int(model, "kv_lora_rank"):
        dims = [_int(model, k) for k in ("qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim")]
        if any(d is None for d in dims):
            raise ShapeError("model.kv_lora_rank (multi-head latent attention) needs qk_nope_head_dim, "
                             "qk_rope_head_dim and v_head_dim")
        mla = (_int(model, "kv_lora_rank") or 0, _int(model, "q_lora_rank") or 0, dims[0] or 0, dims[1] or 0,
               dims[2] or 0)
    if arch == "encoder-decoder" and layers % 2:
        raise ShapeError("an encoder-decoder model needs an even number of layers (encoder + decoder)")
    return Shape(
        layers=layers, hidden=hidden, heads=heads, kv_heads=kv_heads, head_dim=head_dim,
        q_width=q_width, kv_width=kv_width, ffn=ffn,
        # vocab: not None, `missing` above rules that out
        vocab=_int(model, "vocab") or 0, seq_len=seq_len, mlp=mlp, norm=norm, bias=bias,
        position_embeddings=pos, max_positions=max_positions or 0, tied_embeddings=tied,
        num_experts=num_experts, top_k=top_k, moe_ffn=moe_ffn, shared_expert_ffn=shared,
        moe_layer_pattern=pattern, arch=arch, num_labels=_int(model, "num_labels") or 0,
        type_vocab=_int(model, "type_vocab_size") or 2, mla=mla,
    )


class Breakdown(EqRecord):
    """A parameter count split by how model parallelism treats each part.

    ``tp_sharded`` per layer is split by tensor parallelism, ``replicated`` per layer is copied on
    every TP rank (norms, row-parallel biases, router), ``experts`` per layer is split by expert
    (and expert-tensor) parallelism. ``embedding`` is the vocabulary-parallel input embedding,
    ``head`` the untied output layer (0 when tied), ``position`` learned positions (replicated),
    ``final`` the final norm (replicated), ``extra`` anything else (pooler, classifier, buckets).
    """

    _fields = ("tp_sharded", "replicated", "experts", "active_experts", "embedding", "head", "position", "final", "extra")
    tp_sharded: list[int]
    replicated: list[int]
    experts: list[int]
    active_experts: list[int]
    embedding: int
    head: int
    position: int
    final: int
    extra: int

    def __init__(
        self,
        tp_sharded: list[int] | None = None,
        replicated: list[int] | None = None,
        experts: list[int] | None = None,
        active_experts: list[int] | None = None,
        embedding: int = 0,
        head: int = 0,
        position: int = 0,
        final: int = 0,
        extra: int = 0,
    ) -> None:
        self.tp_sharded = [] if tp_sharded is None else tp_sharded
        self.replicated = [] if replicated is None else replicated
        self.experts = [] if experts is None else experts
        self.active_experts = [] if active_experts is None else active_experts
        self.embedding = embedding
        self.head = head
        self.position = position
        self.final = final
        self.extra = extra

    @property
    def layers_total(self) -> int:
        return sum(self.tp_sharded) + sum(self.replicated) + sum(self.experts)

    @property
    def total(self) -> int:
        return (self.layers_total + self.embedding + self.head + self.position + self.final
                + self.extra)

    @property
    def active(self) -> int:
        return self.total - sum(self.experts) + sum(self.active_experts)

    @property
    def largest_layer(self) -> int:
        per = [a + b + c for a, b, c in zip(self.tp_sharded, self.replicated, self.experts)]
        return max(per + [self.embedding, self.head])


def _mlp(h: int, ffn: int, kind: str, bias: bool) -> tuple[int, int]:
    """(sharded, replicated) parameters of one dense MLP."""
    if kind == "swiglu":
        return 3 * h * ffn + (2 * ffn if bias else 0), (h if bias else 0)
    return 2 * h * ffn + (ffn if bias else 0), (h if bias else 0)


def breakdown(model: dict, megatron: bool = False) -> Breakdown:
    s = shape_of(model)
    h = s.hidden
    bias = s.bias and not megatron
    q = s.q_width
    kv = s.kv_width
    norm = (2 if s.norm == "layernorm" else 1) if megatron else (
        2 if (s.norm == "layernorm" and (s.bias or s.arch != "decoder")) else 1)
    attn_sharded = h * (q + 2 * kv) + q * h + ((q + 2 * kv) if bias else 0)
    attn_repl = h if bias else 0
    if s.mla is not None:  # multi-head latent attention (DeepSeek-V2/V3 modeling), no biases
        kv_rank, q_rank, nope, rope, v = s.mla
        heads = s.heads
        if q_rank:  # q_a_proj + its norm (replicated), q_b_proj (split by head)
            q_down, q_up = h * q_rank + q_rank, q_rank * heads * (nope + rope)
        else:  # q_proj
            q_down, q_up = 0, h * heads * (nope + rope)
        # kv_a_proj_with_mqa (latent + the shared rotary key) + kv_a_layernorm, replicated;
        # kv_b_proj (keys without rotary and values, per head) and o_proj, split by head
        attn_sharded = q_up + kv_rank * heads * (nope + v) + heads * v * h
        attn_repl = q_down + h * (kv_rank + rope) + kv_rank
    b = Breakdown()

    if s.arch == "encoder-decoder":  # T5: no biases, RMS-style norms (weight only), ReLU MLP
        n_enc = n_dec = s.layers // 2
        ffn_sharded, _ = _mlp(h, s.ffn, s.mlp, False)
        self_attn = 2 * h * q + 2 * h * kv
        for _ in range(n_enc):
            b.tp_sharded.append(self_attn + ffn_sharded)
            b.replicated.append(2 * h)
        for _ in range(n_dec):
            b.tp_sharded.append(2 * self_attn + ffn_sharded)
            b.replicated.append(3 * h)
        b.experts = [0] * s.layers
        b.active_experts = [0] * s.layers
        b.extra = 2 * 32 * s.heads  # relative-position buckets, first layer of each stack
        b.embedding = s.vocab * h
        b.head = 0 if s.tied_embeddings else s.vocab * h
        b.final = 2 * h
        return b

    for layer in range(s.layers):
        sharded = attn_sharded
        repl = attn_repl + 2 * h * norm  # two norms per layer
        experts = active = 0
        if s.moe_layer_pattern[layer]:
            e_sh, e_rep = _mlp(h, s.moe_ffn, s.mlp, bias)
            experts = s.num_experts * (e_sh + e_rep)
            active = s.top_k * (e_sh + e_rep)
            repl += h * s.num_experts  # router
            if s.shared_expert_ffn:
                sh, rp = _mlp(h, s.shared_expert_ffn, s.mlp, bias)
                sharded += sh
                repl += rp
        else:
            sh, rp = _mlp(h, s.ffn, s.mlp, bias)
            sharded += sh
            repl += rp
        b.tp_sharded.append(sharded)
        b.replicated.append(repl)
        b.experts.append(experts)
        b.active_experts.append(active)

    b.embedding = s.vocab * h
    b.head = 0 if s.tied_embeddings else s.vocab * h
    if s.position_embeddings == "learned" and not megatron:
        b.position = s.max_positions * h
    if s.arch == "encoder":  # BERT: token types + embedding LayerNorm, no final norm, pooler
        b.extra = s.type_vocab * h + 2 * h + (h * h + h)
        if s.num_labels:
            b.extra += h * s.num_labels + s.num_labels
    else:
        b.final = h * norm
    return b


def count_params(model: dict) -> int:
    """The exact parameter count of ``model`` (``model.param_count``, when given, wins)."""
    pc = model.get("param_count")
    if isinstance(pc, (int, float)) and not isinstance(pc, bool) and pc > 0:
        return int(pc)
    return breakdown(model).total


def count_active_params(model: dict) -> int:
    """Parameters one token passes through (MoE: ``top_k`` experts instead of all)."""
    return breakdown(model).active
