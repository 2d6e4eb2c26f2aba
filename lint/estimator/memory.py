"""Per-GPU training memory of the most loaded rank, from a normalized job spec (no torch, no GPU).

Two accountings:

``zero`` (default)
    Model states as in the ZeRO paper (Rajbhandari et al. 2020): mixed-precision Adam keeps
    2 (weights) + 2 (gradients) + 12 (fp32 master, momentum, variance) bytes per parameter;
    ``grad_dtype: fp32`` makes gradients 4 bytes (Megatron's main grads, HF's 18 B/param rule),
    ``grad_accum_dtype: fp32`` adds a separate 4-byte accumulation buffer (the Ultra-Scale
    Playbook's 20 B/param). ZeRO-1 (and Megatron's distributed optimizer) shard the optimizer
    states, ZeRO-2 also the gradients, ZeRO-3 / FSDP full shard also the weights, over the
    data-parallel shard group (DP x CP). TP splits each layer's sharded matrices, PP the layers; the
    first stage carries the input embedding, the last the final norm and the output layer.
    Activations per layer follow Korthikanti et al. 2022, Table 2 (``s*b*h*(34 + 5*a*s/h)`` bytes
    without parallelism and the published TP, sequence-parallel, selective- and full-recompute
    forms); flash attention drops the ``5*a*s/h`` score term as selective recompute does. A 1F1B
    first stage holds ``min(PP, microbatches)`` microbatches in flight (x ``1 + (p-1)/(p*v)``
    interleaved); context parallelism divides the sequence. ``other`` is the CUDA context and
    workspaces (``hardware.reserved_bytes``, default 1 GiB) plus, under ZeRO-3, the gathered
    16-bit copy of the largest layer and its prefetched successor.

``megatron``
    Megatron-LM's ``theoretical_memory_usage.py``: 18 bytes per parameter for bf16 params with fp32
    main grads (6 + 12/d with the distributed optimizer; fp16 20 or 4 + 16/d; fp32 16 or 8 + 8/d),
    the parameter count without linear biases or learned positions, activations
    ``s*b*h*(18 + 4*ffn/h)`` per layer with sequence parallelism + selective recompute, otherwise
    ``s*b*h*(10 + 24/t)`` x 1.05, and no buffers.

The vocabulary is taken as given: pass the padded size if the framework pads it.
"""

from __future__ import annotations

import math

from parallint.estimator.gpus import GIB, Gpu, resolve_gpu
from parallint.estimator.params import MODEL_BOUNDS, TRAINING_BOUNDS, Breakdown, ShapeError, breakdown, shape_of
from parallint.estimator.spec import normalize
from parallint.estimator.terms import QUANT_BYTES, fragmentation, layer_activation, lora_params, loss_bytes, parse_targets
from parallint.util.record import EqRecord

__all__ = ["Estimate", "estimate", "activation_per_layer", "model_state_bytes_per_param"]


class Estimate(EqRecord):
    _fields = ("param_count", "params_on_rank", "weights", "gradients", "optimizer", "activations", "other", "total", "activation_per_layer_bytes", "layers_per_stage", "microbatches_in_flight", "gpu", "gpu_memory_bytes", "fits", "accounting", "stage", "activations_known", "layout", "assumptions", "allocated", "reserved", "range", "uncertainty", "trainable_params")
    param_count: int
    params_on_rank: float  # parameters held by the most loaded rank (before ZeRO sharding)
    weights: float
    gradients: float
    optimizer: float
    activations: float
    other: float
    total: float
    activation_per_layer_bytes: float | None
    layers_per_stage: int | None
    microbatches_in_flight: int
    gpu: str | None
    gpu_memory_bytes: int | None
    fits: bool | None
    accounting: str
    stage: str  # which pipeline stage is the most loaded one
    activations_known: bool
    layout: dict
    assumptions: list[str]
    #: tensors alive at the peak (what torch.cuda.max_memory_allocated reports): total less the
    #: CUDA context
    allocated: float
    #: what the caching allocator holds at the peak (max_memory_reserved): allocated plus the
    #: expected fragmentation
    reserved: float
    #: (low, expected, high) of the per-GPU total; MEM002 judges the low end
    range: tuple[float, float, float]
    #: the term whose uncertainty moves the range most
    uncertainty: str
    trainable_params: float | None

    def __init__(
        self,
        param_count: int,
        params_on_rank: float,
        weights: float,
        gradients: float,
        optimizer: float,
        activations: float,
        other: float,
        total: float,
        activation_per_layer_bytes: float | None,
        layers_per_stage: int | None,
        microbatches_in_flight: int,
        gpu: str | None,
        gpu_memory_bytes: int | None,
        fits: bool | None,
        accounting: str = "zero",
        stage: str = "first",
        activations_known: bool = True,
        layout: dict | None = None,
        assumptions: list[str] | None = None,
        allocated: float | None = None,
        reserved: float | None = None,
        range: tuple[float, float, float] | None = None,
        uncertainty: str = "",
        trainable_params: float | None = None,
    ) -> None:
        self.allocated = total if allocated is None else allocated
        self.reserved = self.allocated if reserved is None else reserved
        self.range = (total, total, total) if range is None else range
        self.uncertainty = uncertainty
        self.trainable_params = trainable_params
        self.param_count = param_count
        self.params_on_rank = params_on_rank
        self.weights = weights
        self.gradients = gradients
        self.optimizer = optimizer
        self.activations = activations
        self.other = other
        self.total = total
        self.activation_per_layer_bytes = activation_per_layer_bytes
        self.layers_per_stage = layers_per_stage
        self.microbatches_in_flight = microbatches_in_flight
        self.gpu = gpu
        self.gpu_memory_bytes = gpu_memory_bytes
        self.fits = fits
        self.accounting = accounting
        self.stage = stage
        self.activations_known = activations_known
        self.layout = {} if layout is None else layout
        self.assumptions = [] if assumptions is None else assumptions

    @property
    def model_states(self) -> float:
        return self.weights + self.gradients + self.optimizer

    @property
    def headroom_bytes(self) -> float | None:
        return None if self.gpu_memory_bytes is None else self.gpu_memory_bytes - self.total

    def per_gpu(self) -> dict:
        return {k: int(round(getattr(self, k))) for k in
                ("weights", "gradients", "optimizer", "activations", "other", "total")}

    def to_json(self) -> dict:
        """The ``parallint estimate --format json`` item (DESIGN.md / issue 5 field names)."""
        return {
            "param_count": self.param_count,
            "gpu": self.gpu,
            "gpu_memory_bytes": self.gpu_memory_bytes,
            "per_gpu": self.per_gpu(),
            "activation_per_layer_bytes": (None if self.activation_per_layer_bytes is None
                                           else int(round(self.activation_per_layer_bytes))),
            "layers_per_stage": self.layers_per_stage,
            "microbatches_in_flight": self.microbatches_in_flight,
            "fits": self.fits,
            "allocated_bytes": int(round(self.allocated)),
            "reserved_bytes": int(round(self.reserved)),
            "range": {"low": int(round(self.range[0])), "expected": int(round(self.range[1])),
                      "high": int(round(self.range[2])), "dominant_uncertainty": self.uncertainty},
        }


# --------------------------------------------------------------------------- model states
def model_state_bytes_per_param(
    precision: str = "bf16",
    optimizer: str = "adam",
    grad_dtype: str = "same",
    grad_accum_dtype: str | None = None,
    zero_stage: int = 0,
    shard: float = 1,
    accounting: str = "zero",
    master_weights: bool = True,
) -> tuple[float, float, float]:
    """(weights, gradients, optimizer) bytes per parameter after sharding over ``shard`` ranks.

    ``master_weights=False`` (zero accounting): pure 16-bit training, no fp32 master copy; Adam's
    moments (SGD's momentum) are kept in the weights' 16-bit dtype."""
    precision = str(precision or "bf16").lower()  # `precision: 16` in a YAML file is an int
    full = precision in ("fp32", "float32", "32", "tf32")
    if accounting == "megatron":
        if full:
            w, g, o = 4.0, 4.0, 8.0
        elif precision in ("fp16", "float16", "16"):
            w, g, o = 2.0, 2.0, 16.0  # fp16 grads; fp32 main grads live with the optimizer
        else:
            w, g, o = 2.0, 4.0, 12.0  # bf16 params, fp32 main grads
        return w, g, (o / shard if zero_stage >= 1 else o)
    w = 4.0 if full else 2.0
    g = 4.0 if (full or str(grad_dtype).lower() == "fp32") else 2.0
    if grad_accum_dtype and str(grad_accum_dtype).lower() == "fp32" and not full:
        g += 4.0
    opt = str(optimizer or "adam").lower()
    if not full and not master_weights:
        o = 2.0 if opt == "sgd" else 4.0  # momentum / m, v in 16 bits, no master copy
    elif opt == "sgd":
        o = 4.0 if full else 8.0  # momentum (+ fp32 master)
    else:
        o = 8.0 if full else 12.0  # m, v (+ fp32 master)
    if zero_stage >= 1:
        o /= shard
    if zero_stage >= 2:
        g /= shard
    if zero_stage >= 3:
        w /= shard
    return w, g, o


# --------------------------------------------------------------------------- activations
def activation_per_layer(
    s: float, b: float, h: int, a: int, tp: int = 1, sp: bool = False,
    recompute: str = "none", flash: bool = False, act_bytes: int = 2, autocast: bool = False,
) -> float:
    """Korthikanti et al. 2022, Table 2: activation bytes one layer keeps for one microbatch.

    ``act_bytes`` is the size of an activation element (2 for 16-bit training, 4 for fp32);
    dropout masks stay 1 byte. With 2 bytes this is exactly the paper's ``34 + 5as/h`` family:
    10 units replicated across TP ranks (LayerNorm inputs 4, QKV and fc1 inputs 4, two dropout
    masks 2), 24 units split by TP, ``5as/h`` for the attention scores (softmax, its dropout mask
    and output).

    ``autocast`` (torch.autocast mixed precision over fp32 weights, as HF Trainer's ``--fp16`` /
    ``--bf16`` and Lightning's ``16-mixed`` run): softmax and layer_norm are on autocast's fp32 list
    (PyTorch docs, "Automatic Mixed Precision package", CUDA ops that autocast to float32), so the
    softmax output is saved in fp32 (4 bytes; the dropout after it keeps its 1-byte mask and the
    next matmul saves its 16-bit cast, 2) and the residual stream that the LayerNorms take and
    return is fp32 (their saved inputs 4 bytes each, and a checkpointed layer's input 4).
    """
    k = act_bytes / 2
    if recompute == "full":
        return (4.0 if autocast else k * 2) * s * b * h / (tp if sp else 1)
    replicated = 8 * k + 2 + (4.0 if autocast else 0.0)
    sharded = 24 * k
    score_bytes = (4 + 1 + 2 * k) if autocast else (4 * k + 1)
    score = 0.0 if (recompute == "selective" or flash) else score_bytes * a * s / h
    if sp:
        return s * b * h * (replicated + sharded + score) / tp
    return s * b * h * (replicated + (sharded + score) / tp)


def _stage_layers(layers: int, pp: int) -> tuple[int, int]:
    """Layers on the first and on the last stage (an uneven remainder goes to the first stages)."""
    base, rem = divmod(layers, pp)
    first = base + (1 if rem else 0)
    last = base + (1 if rem >= pp else 0) if pp > 1 else first
    return first, last


# --------------------------------------------------------------------------- estimate
class _Job(EqRecord):
    """What the estimate's steps share: the normalized spec's degrees and training settings."""

    _fields = ("model", "training", "accounting", "lower_bound", "assumptions", "tp", "pp", "cp", "ep", "vpp", "etp", "dp", "zero", "shard", "sp", "recompute", "flash", "precision", "optimizer", "shape", "bd", "opts")
    model: dict
    training: dict
    accounting: str
    lower_bound: bool
    assumptions: list[str]
    tp: int
    pp: int
    cp: int
    ep: int
    vpp: int
    etp: int
    dp: int | None
    zero: int
    shard: float
    sp: bool
    recompute: str
    flash: bool
    precision: str
    optimizer: str
    shape: object | None
    bd: Breakdown | None
    opts: dict  # issue 25's settings: compile, loss, fp8, peft, offload, framework...

    def __init__(
        self,
        model: dict,
        training: dict,
        accounting: str,
        lower_bound: bool,
        assumptions: list[str],
        tp: int,
        pp: int,
        cp: int,
        ep: int,
        vpp: int,
        etp: int,
        dp: int | None,
        zero: int,
        shard: float,
        sp: bool,
        recompute: str,
        flash: bool,
        precision: str,
        optimizer: str,
        shape: object | None = None,
        bd: Breakdown | None = None,
        opts: dict | None = None,
    ) -> None:
        self.opts = {} if opts is None else opts
        self.model = model
        self.training = training
        self.accounting = accounting
        self.lower_bound = lower_bound
        self.assumptions = assumptions
        self.tp = tp
        self.pp = pp
        self.cp = cp
        self.ep = ep
        self.vpp = vpp
        self.etp = etp
        self.dp = dp
        self.zero = zero
        self.shard = shard
        self.sp = sp
        self.recompute = recompute
        self.flash = flash
        self.precision = precision
        self.optimizer = optimizer
        self.shape = shape
        self.bd = bd


class _Stage(EqRecord):
    """The first or the last pipeline stage: parameters (dense and expert) and layers."""

    _fields = ("params", "experts", "layers")
    params: float
    experts: float
    layers: int | None

    def __init__(self, params: float, experts: float, layers: int | None) -> None:
        self.params = params
        self.experts = experts
        self.layers = layers


def estimate(spec: dict, accounting: str | None = None, lower_bound: bool = False) -> Estimate:
    """Estimate the per-GPU memory of the most loaded rank of ``spec`` (a normalized job spec).

    ``lower_bound=True`` (used by the rules): values the job does not state are not guessed where a
    guess could raise the estimate (unknown DP shards ZeRO states over infinitely many ranks,
    unknown micro batch or sequence length mean no activations).
    Raises :class:`ShapeError` when neither the shape nor ``model.param_count`` is known.
    """
    spec = normalize(spec)
    for section, key, high in (("training", "micro_batch", TRAINING_BOUNDS["micro_batch"]),
                               ("training", "num_microbatches", TRAINING_BOUNDS["num_microbatches"]),
                               ("model", "param_count", MODEL_BOUNDS["param_count"])):
        v = spec[section].get(key)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and not abs(v) <= high:
            raise ShapeError(f"{section}.{key} = {v}: more than {high}, not a real job")
    job = _job(spec, accounting, lower_bound)
    model, hw = spec["model"], spec["hardware"]
    try:
        job.shape = shape_of(model)
        job.bd = breakdown(model, megatron=(job.accounting == "megatron"))
    except ShapeError:
        if not model.get("param_count"):
            raise
    param_count = int(model.get("param_count") or job.bd.total)  # type: ignore[union-attr]
    first, last = _stage_params(job, param_count)
    first_states, last_states = _model_states(job, first, last)
    micro, seq = job.training.get("micro_batch"), model.get("seq_len")
    nmb = job.training.get("num_microbatches")
    in_flight = (min(job.pp, nmb) if nmb else job.pp) if job.pp > 1 else 1
    act_known = job.shape is not None and micro is not None and seq is not None
    per_layer, act_first, act_last = _activations(job, first, last, micro, seq, nmb, in_flight, act_known)
    other, loss_grad_first, loss_grad_last, fw_buf = _buffers(job, hw, micro, seq, act_known)

    first_total = sum(first_states) + act_first + other + loss_grad_first
    last_total = sum(last_states) + act_last + other + loss_grad_last
    if last_total > first_total:
        stage, st, act, total = "last", last_states, act_last, last_total
        other += loss_grad_last
        layers_here = last.layers
        mb_here = 1 if job.pp > 1 else in_flight
    else:
        stage, st, act, total = "first", first_states, act_first, first_total
        other += loss_grad_first
        layers_here = first.layers
        mb_here = in_flight

    context = float(GIB if hw.get("reserved_bytes") is None else hw["reserved_bytes"]) \
        if job.accounting != "megatron" else 0.0
    allocated = total - context
    loss_here = loss_grad_last if stage == "last" else loss_grad_first
    act_fused = act
    # a job that states it runs eager (compile: false) has no fused form to fall to
    if act_known and job.accounting != "megatron" and job.shape is not None and not job.opts.get("compile") \
            and job.training.get("compile") is not False:
        fused = _Job(**{k: getattr(job, k) for k in _Job._fields})
        fused.opts = dict(job.opts, compile=True)
        fused.assumptions = []
        if _modern(fused):
            _, f_first, f_last = _activations(fused, first, last, micro, seq, nmb, in_flight, act_known)
            act_fused = f_last if stage == "last" else f_first
    ddp = 0.0
    if job.zero == 0 and (job.dp or 1) > 1 and job.accounting != "megatron" and \
            job.opts.get("framework", "") not in ("megatron", "nemo", "deepspeed"):
        ddp = st[1]
    v = job.shape.vocab if job.shape is not None else 0  # type: ignore[attr-defined]
    loss_low = (4 * (seq / job.cp) * micro * v / job.tp if act_known and loss_here else 0.0)
    parts = {"act": act, "act_fused": act_fused, "loss": loss_here, "loss_low": min(loss_low, loss_here),
             "fw_buf": fw_buf, "allocated": allocated, "context": context, "ddp": ddp}
    world = job.dp * job.tp * job.pp * job.cp if job.dp else None
    rng, dominant, reserved = _range(job, parts, world)
    if job.accounting == "megatron":
        rng, dominant, reserved = (total, total, total), "", total
    gpu: Gpu | None = resolve_gpu(hw.get("gpu")) if hw.get("gpu") else None
    mem = hw.get("gpu_memory_bytes") or (gpu.memory_bytes if gpu else None)
    gpu_name = gpu.name if gpu else (str(hw["gpu"]) if hw.get("gpu") else None)
    fits = None if mem is None else total <= mem
    here = first if stage == "first" else last
    return Estimate(
        param_count=param_count,
        params_on_rank=here.params + here.experts,
        weights=st[0], gradients=st[1], optimizer=st[2], activations=act, other=other,
        total=total, activation_per_layer_bytes=per_layer, layers_per_stage=layers_here,
        microbatches_in_flight=mb_here, gpu=gpu_name, gpu_memory_bytes=mem, fits=fits,
        accounting=job.accounting, stage=stage, activations_known=act_known,
        layout={"tp": job.tp, "pp": job.pp, "dp": job.dp, "cp": job.cp, "ep": job.ep, "vpp": job.vpp,
                "zero_stage": job.zero, "sequence_parallel": job.sp, "recompute": job.recompute,
                "micro_batch": micro},
        assumptions=job.assumptions, allocated=allocated, reserved=reserved, range=rng,
        uncertainty=dominant, trainable_params=trainable_count(job),
    )


def _job(spec: dict, accounting: str | None, lower_bound: bool) -> _Job:
    """The degrees and settings of a normalized spec; ZeRO stage and shard group as they act."""
    par, tr = spec["parallel"], spec["training"]
    accounting = str(accounting or spec.get("estimator", {}).get("accounting") or "zero").lower()
    assumptions: list[str] = list(spec.get("_assumptions", ()))
    tp, cp = par["tp"], par["cp"]
    dp = par.get("dp")
    zero = par.get("zero_stage") or 0
    if par.get("fsdp") and zero < 3:
        zero = 3
    if bool(par.get("distributed_optimizer")) and zero < 1:
        zero = 1
    shard: float
    if dp is None:
        if lower_bound:
            shard = math.inf
        else:
            shard = cp
            assumptions.append("data-parallel size unknown: assumed 1")
    else:
        shard = dp * cp if accounting == "zero" else dp
    return _Job(
        model=spec["model"], training=tr, accounting=accounting, lower_bound=lower_bound,
        assumptions=assumptions, tp=tp, pp=par["pp"], cp=cp, ep=par.get("ep") or 1, vpp=par.get("vpp") or 1,
        etp=par.get("etp") or tp, dp=dp, zero=zero, shard=shard, sp=bool(par.get("sequence_parallel")) and tp > 1,
        recompute=tr.get("recompute") or "none", flash=tr.get("flash_attention", True),
        precision=tr.get("precision") or "bf16", optimizer=tr.get("optimizer") or "adam",
        opts=_opts(spec),
    )


def _opts(spec: dict) -> dict:
    """The settings of issue 25 with their defaults (what a spec that does not state them means)."""
    tr, hw = spec["training"], spec["hardware"]
    fw = str(spec.get("framework") or "").lower()
    peft = str(tr.get("peft") or "none").lower()
    quant = str(tr.get("base_quant") or ("nf4" if peft == "qlora" else "none")).lower()
    return {
        "framework": fw,
        "compile": bool(tr.get("compile")),
        "loss": str(tr.get("loss") or "standard").lower(),
        "fp8": bool(tr.get("fp8")),
        "peft": peft if peft in ("lora", "qlora") else None,
        "lora_rank": int(tr.get("lora_rank") or 8),
        "lora_targets": parse_targets(tr.get("lora_targets")),
        "lora_dropout": bool(tr.get("lora_dropout")),
        "base_quant": quant if quant in QUANT_BYTES else None,
        "base_dtype": str(tr.get("base_dtype") or "").lower() or None,
        "trainable_params": tr.get("trainable_params"),
        "offload_optimizer": bool(tr.get("offload_optimizer")),
        "offload_params": bool(tr.get("offload_params")),
        "recompute_every": int(tr.get("recompute_every") or 1),
        "autocast": bool(tr.get("autocast")),
        "expandable_segments": hw.get("expandable_segments"),
        # FSDP2 (torchtitan, torchtune, parallel.fsdp): per-unit all-gather and reduce-scatter
        "fsdp2": bool(spec["parallel"].get("fsdp")) or fw.startswith(("torchtitan", "torchtune")),
    }


def _stage_params(job: _Job, param_count: int) -> tuple[_Stage, _Stage]:
    """Parameters on the first and on the last pipeline stage (dense, and experts apart)."""
    bd, shape, tp, pp, etp, ep = job.bd, job.shape, job.tp, job.pp, job.etp, job.ep
    if bd is None:
        return _Stage(param_count / (tp * pp), 0.0, None), _Stage(param_count / (tp * pp), 0.0, None)
    if job.accounting == "megatron":
        sharded = sum(bd.tp_sharded)
        repl = sum(bd.replicated) + bd.final
        params = (sharded / pp + bd.embedding) / tp + repl / pp
        if bd.head and pp == 1:
            params += bd.head / tp
        experts = sum(bd.experts) / pp / (etp * ep)
        layers = shape.layers // pp  # type: ignore[attr-defined]
        return _Stage(params, experts, layers), _Stage(params, experts, layers)
    first_layers, last_layers = _stage_layers(shape.layers, pp)  # type: ignore[attr-defined]
    n = shape.layers  # type: ignore[attr-defined]

    def layer_params(idx: range) -> tuple[float, float]:
        dense = sum(bd.tp_sharded[i] for i in idx) / tp + sum(bd.replicated[i] for i in idx)
        experts = sum(bd.experts[i] for i in idx) / (etp * ep)
        return dense, experts

    f_dense, expert_first = layer_params(range(0, first_layers))
    first_params = f_dense + bd.embedding / tp + bd.position + bd.extra / tp
    l_dense, expert_last = layer_params(range(n - last_layers, n))
    out = bd.head if bd.head else (bd.embedding if pp > 1 else 0)  # tied: a copy on the last stage
    last_params = l_dense + bd.final + out / tp
    if pp == 1:
        first_params = f_dense + (bd.embedding + bd.head + bd.extra) / tp + bd.position + bd.final
        last_params = first_params
    return _Stage(first_params, expert_first, first_layers), _Stage(last_params, expert_last, last_layers)


def _model_states(job: _Job, first: _Stage, last: _Stage) -> tuple[tuple[float, float, float], ...]:
    """(weights, gradients, optimizer) bytes on each stage; experts are sharded over the
    expert-data-parallel group by the distributed optimizer / ZeRO."""
    tp, pp, cp, dp = job.tp, job.pp, job.cp, job.dp
    world = None if dp is None else tp * pp * cp * dp
    if dp is not None and job.accounting == "megatron":
        world = tp * pp * dp
    edp = (world / (job.etp * job.ep * pp)) if world else (math.inf if job.lower_bound else 1)
    tr = job.training

    stage_layers: int | None = None

    def states(dense: float, experts: float) -> tuple[float, float, float]:
        master = tr.get("master_weights") is not False
        w, g, o = model_state_bytes_per_param(job.precision, job.optimizer, tr.get("grad_dtype") or "same",
                                              tr.get("grad_accum_dtype"), job.zero, job.shard, job.accounting,
                                              master)
        we, ge, oe = model_state_bytes_per_param(job.precision, job.optimizer,
                                                 tr.get("grad_dtype") or "same",
                                                 tr.get("grad_accum_dtype"), job.zero, edp, job.accounting,
                                                 master)
        opts = job.opts
        if opts.get("peft"):
            return _peft_states(job, dense + experts, (w, g, o), stage_layers)
        ws = dense * w + experts * we
        gs = dense * g + experts * ge
        os_ = dense * o + experts * oe
        if opts.get("offload_optimizer"):  # ZeRO-Offload: states and fp32 gradients live on the CPU
            gs = os_ = 0.0
        if opts.get("offload_params"):
            ws = 0.0
        return ws, gs, os_

    stage_layers = first.layers
    a = states(first.params, first.experts)
    stage_layers = last.layers
    return a, states(last.params, last.experts)


def trainable_count(job: _Job) -> float | None:
    """Trainable parameters of a PEFT job (all of them), or None for full training."""
    opts = job.opts
    if not opts.get("peft"):
        return None
    if opts.get("trainable_params"):
        return float(opts["trainable_params"])
    if job.shape is None:
        return 0.0
    return float(lora_params(job.shape, opts["lora_rank"], opts["lora_targets"]))


def _peft_states(job: _Job, frozen: float, per_param: tuple[float, float, float],
                 stage_layers: int | None) -> tuple[float, float, float]:
    """LoRA / QLoRA: the frozen base keeps only its weights (in the dtype it is loaded in,
    ``training.base_dtype``, else the training precision's; 4-bit in its linear layers under QLoRA:
    ``QUANT_BYTES``); the adapters keep weights, gradients and optimizer states as
    full training does (Hu et al. 2021; Dettmers et al. 2023, Sec. 3)."""
    opts, bd = job.opts, job.bd
    base = opts.get("base_dtype")  # the dtype the base is loaded in, when the job says it
    if base in ("fp32", "float32"):
        wb = 4.0
    elif base in ("bf16", "fp16"):
        wb = 2.0
    else:  # not said: the training precision's (pure fp32 training keeps fp32 weights)
        wb = 4.0 if job.precision in ("fp32", "float32") else 2.0
    quant = opts.get("base_quant")
    if quant and bd is not None and bd.total:
        linear = (sum(bd.tp_sharded) + sum(bd.experts)) / bd.total
        frozen_bytes = frozen * (linear * QUANT_BYTES[quant] + (1 - linear) * wb)
    else:
        frozen_bytes = frozen * wb
    if job.zero >= 3:
        frozen_bytes /= job.shard
    total = trainable_count(job) or 0.0
    layers = job.shape.layers if job.shape is not None else None  # type: ignore[attr-defined]
    share = (stage_layers / layers) if (stage_layers and layers) else 1 / job.pp
    here = total * share / job.tp
    w, g, o = per_param
    return frozen_bytes + here * w, here * g, here * o


def _activations(job: _Job, first: _Stage, last: _Stage, micro, seq, nmb, in_flight: int,
                 act_known: bool) -> tuple[float | None, float, float]:
    """(bytes per layer, first-stage and last-stage activation bytes)."""
    per_layer = None
    act_first = act_last = 0.0
    shape, tp, pp, cp, vpp, sp = job.shape, job.tp, job.pp, job.cp, job.vpp, job.sp
    recompute, precision = job.recompute, job.precision
    if act_known:
        h, a, v = shape.hidden, shape.heads, shape.vocab  # type: ignore[attr-defined]
        s_loc = seq / cp
        ab = 4 if precision in ("fp32", "float32") else 2
        if job.accounting == "megatron":
            act_first = _megatron_activations(shape, seq, micro, tp, pp, vpp if vpp > 1 else None,
                                              nmb, sp and recompute == "selective")
            per_layer = (s_loc * micro * h * (18 + 4 * shape.ffn / h) / tp  # type: ignore[attr-defined]
                         if sp and recompute == "selective"
                         else s_loc * micro * h * (10 + 24 / tp))
            act_last = act_first
        else:
            interleave = 1 + (pp - 1) / (pp * vpp) if vpp > 1 else 1.0
            n = shape.layers  # type: ignore[attr-defined]
            if _modern(job):
                sum_first, working = _layers_activation(job, range(0, first.layers), s_loc, micro, ab)  # type: ignore[arg-type]
                sum_last, _ = _layers_activation(job, range(n - last.layers, n), s_loc, micro, ab)  # type: ignore[operator]
                per_layer = sum_first / max(first.layers or 1, 1)
                act_first = sum_first * in_flight * interleave
            else:
                amp = bool(job.opts.get("autocast")) and ab == 2
                per_layer = activation_per_layer(s_loc, micro, h, a, tp, sp, recompute, job.flash, ab, amp)
                act_first = per_layer * first.layers * in_flight * interleave  # type: ignore[operator]
                sum_last = per_layer * last.layers  # type: ignore[operator]
                working = (activation_per_layer(s_loc, micro, h, a, tp, sp, "none", job.flash, ab, amp)
                           if recompute == "full" else 0.0)  # the layer being recomputed in backward
                # autocast's 16-bit weight casts (the cast cache of aten/src/ATen/autocast_mode.cpp,
                # saved by each matmul for backward) are the 16-bit copy that mixed-precision
                # accounting already keeps in the model states (2 + 4 master bytes per parameter:
                # HF's model_memory_anatomy, 6 bytes per parameter for mixed precision)
            act_first += s_loc * micro * h * in_flight / tp * ab / 2  # embedding dropout (Sec. 4.3)
            # final norm and output-layer inputs, fp32 logits (Sec. 4.3); a chunked or fused
            # loss keeps no fp32 logits (terms.loss_bytes)
            fp32_logits = v / h if job.opts.get("loss", "standard") == "standard" else 0.0
            logits = 4 * s_loc * micro * h / tp * (ab / 2 + fp32_logits)
            act_first += working
            if pp == 1:
                act_first += logits
                act_last = act_first
            else:
                act_last = sum_last + logits + working
    elif not job.lower_bound:
        job.assumptions.append("activations not estimated: "
                               + ("model shape unknown" if shape is None else
                                  "micro batch unknown" if micro is None else "sequence length unknown"))
    return per_layer, act_first, act_last


def _modern(job: _Job) -> bool:
    """Whether the architecture-aware terms (terms.layer_activation) apply: a SwiGLU or MoE model,
    op-level or per-layer recomputation, torch.compile or PEFT. GPT/BERT-style dense models
    without them keep Korthikanti et al.'s Table 2 exactly."""
    shape, o = job.shape, job.opts
    return bool(shape is not None and (shape.mlp == "swiglu" or shape.num_experts  # type: ignore[attr-defined]
                                       or job.recompute == "op" or o.get("compile") or o.get("peft")
                                       or o.get("recompute_every", 1) > 1))


def _layers_activation(job: _Job, idx: range, s: float, b: float, ab: int) -> tuple[float, float]:
    """(saved activation bytes of the layers ``idx`` for one microbatch, the working layer's bytes
    under recomputation: one layer's full activations while its backward runs)."""
    shape, bd, o = job.shape, job.bd, job.opts
    lora = o["lora_targets"] if o.get("peft") else ()
    every = o.get("recompute_every", 1)
    kw = dict(tp=job.tp, sp=job.sp, flash=job.flash, act_bytes=ab, compiled=o.get("compile", False),
              lora=lora, lora_dropout=o.get("lora_dropout", False),
              gathered_inputs=o.get("framework", "").startswith(("torchtitan", "torchtune")),
              frozen_inputs=bool(o.get("peft") and o.get("base_quant")
                                 and not o.get("framework", "").startswith("torchtune")),
              # Megatron-LM and NeMo run fused (Apex / Transformer Engine) norm kernels that keep the
              # 16-bit input; the eager RMSNorms of HF, LitGPT, torchtune and torchtitan upcast
              norm_upcast=not o.get("framework", "").startswith(("megatron", "nemo")), qkv_view=o.get("framework", "").startswith("litgpt"))
    total = working = 0.0
    for count, i in enumerate(idx):
        moe = bool(bd is not None and i < len(bd.experts) and bd.experts[i])
        rc = job.recompute
        if rc == "full" and every > 1 and (count + 1) % every:
            rc = "none"  # torchtitan selective_ac_option n: every n-th layer is checkpointed
        total += layer_activation(shape, s, b, recompute=rc, moe=moe, **kw)  # type: ignore[arg-type]
        if rc in ("full", "op"):
            working = max(working, layer_activation(shape, s, b, recompute="none", moe=moe, **kw))  # type: ignore[arg-type]
    return total, working


def _buffers(job: _Job, hw: dict, micro, seq, act_known: bool) -> tuple[float, float, float, float]:
    """(CUDA context and workspaces plus framework buffers, first-stage and last-stage loss bytes,
    the framework buffers alone)."""
    fw_buf = 0.0
    if job.accounting == "megatron":
        other = 0.0
    else:
        reserved = hw.get("reserved_bytes")
        other = float(GIB if reserved is None else reserved)
        fw_buf = _framework_buffers(job)
        other += fw_buf
    loss_grad_first = loss_grad_last = 0.0
    if job.accounting != "megatron" and act_known and job.shape is not None:
        v = job.shape.vocab  # type: ignore[attr-defined]
        mode = job.opts.get("loss", "standard")
        if mode == "standard" and not _modern(job):
            # cross entropy: the 16-bit logits and, in backward, their fp32 gradient (last stage)
            lg = ((4 + (0 if job.precision in ("fp32", "float32") else 2)) * (seq / job.cp) * micro
                  * v / job.tp)
        elif mode == "standard":  # 12 bytes per logit in all (terms.loss_bytes); 4 are in the activations
            lg = loss_bytes(mode, seq / job.cp, micro, v, job.tp) - 4 * (seq / job.cp) * micro * v / job.tp
        else:
            ab = 4 if job.precision in ("fp32", "float32") else 2
            lg = loss_bytes(mode, seq / job.cp, micro, v, job.tp, ab, _logits_bytes(job, ab))
        loss_grad_last = lg
        loss_grad_first = lg if job.pp == 1 else 0.0
    return other, loss_grad_first, loss_grad_last, fw_buf


def _logits_bytes(job: _Job, act_bytes: int) -> float:
    """Bytes of one logit as the loss function receives it: torchtune's TransformerDecoder upcasts
    the unchunked output to fp32 in the model (torchtune/modules/transformer.py,
    ``F.linear(h, ...).float()``); elsewhere the output layer's dtype."""
    return 4.0 if job.opts.get("framework", "").startswith("torchtune") else float(act_bytes)


def _framework_buffers(job: _Job) -> float:
    """Communication and staging buffers of the framework that holds the model states.

    ZeRO-3 (DeepSpeed): the gathered 16-bit copy of the largest layer and its prefetched successor
    (DeepSpeed's estimate_zero3_model_states_mem_needs: 4 bytes x largest layer). FSDP2
    (torchtitan, torchtune, ``fsdp``): the all-gathered unit and the prefetched next one in the
    compute dtype (1 byte with float8 all-gather) plus the unsharded gradient of the unit before its
    reduce-scatter in the reduce dtype (fp32 where the gradients are fp32 or under torchtitan's
    default fp32 reduce) (PyTorch FSDP2 docs, fully_shard: reshard_after_forward and MixedPrecisionPolicy).
    DDP without ZeRO: its gradient buckets are a second copy of the gradients unless
    ``gradient_as_bucket_view`` (torch.nn.parallel.DistributedDataParallel docs); counted for the
    expected and high ends only (see :func:`_range`). QLoRA: one dequantized 16-bit weight of the
    largest linear layer (bitsandbytes dequantizes per matmul)."""
    buf = 0.0
    largest = job.model.get("largest_layer_params") or (job.bd.largest_layer if job.bd else None)
    full = job.precision in ("fp32", "float32")
    o = job.opts
    if job.zero >= 3 and largest and not o.get("offload_params"):
        w_full = 4.0 if full else 2.0
        if o.get("fsdp2"):
            gather = 1.0 if o.get("fp8") else w_full
            reduce = 4.0 if (full or o.get("framework", "").startswith("torchtitan")
                             or str(job.training.get("grad_dtype") or "") == "fp32") else 2.0
            if o.get("peft"):
                reduce = 0.0  # a frozen unit has no gradient to reduce
            buf += largest / job.tp * (2 * gather + reduce)
        else:
            buf += 2 * largest / job.tp * w_full  # gathered layer + prefetched next one
    if o.get("base_quant") and job.shape is not None:
        sh = job.shape
        buf += 2.0 * sh.hidden * max(sh.ffn, sh.q_width, sh.moe_ffn or 0) / job.tp  # type: ignore[attr-defined]
    return buf


def _range(job: _Job, est_parts: dict, mem_world: int | None) -> tuple[tuple[float, float, float], str, float]:
    """(low, expected, high) of the per-GPU total, the dominant uncertain term, the reserved bytes.

    Each uncertain term moves within documented bounds: activations between the fused form
    (pointwise ops recomputed, as compiled; terms.layer_activation) and 10 % over the eager count
    (allocator rounding of many small tensors, the autograd graph); the loss between only the fp32
    logits gradient (4 bytes per logit) and its expected value; the framework buffers between one
    gathered unit and the expected prefetch, DDP buckets above the expected; fragmentation as
    terms.fragmentation; NCCL workspaces (up to 0.5 GiB per process, NCCL_BUFFSIZE 4 MiB x
    channels x peers) in the high end of a multi-GPU job."""
    act, act_fused, loss, loss_low = (est_parts[k] for k in ("act", "act_fused", "loss", "loss_low"))
    fw_buf, allocated, context = est_parts["fw_buf"], est_parts["allocated"], est_parts["context"]
    ddp = est_parts["ddp"]
    f_lo, f_ex, f_hi = fragmentation(job.opts.get("expandable_segments"))
    spans = {
        "activations (recompute policy and kernel fusion)": (min(act_fused, act), act * 1.10),
        "logits and loss": (loss_low, loss),
        "framework buffers (all-gather prefetch, buckets)": (fw_buf / 2, fw_buf + ddp),
    }
    reserved = allocated * (1 + f_ex)
    low = allocated - sum(e - lo for lo, e in ((spans[k][0], v) for k, v in (
        ("activations (recompute policy and kernel fusion)", act), ("logits and loss", loss),
        ("framework buffers (all-gather prefetch, buckets)", fw_buf)))) * 1.0
    low = low * (1 + f_lo) + context
    expected = reserved + context
    nccl = 0.5 * GIB if (mem_world or 1) > 1 else 0.0
    high_alloc = allocated + sum(hi - e for (lo, hi), e in zip(spans.values(), (act, loss, fw_buf)))
    high = high_alloc * (1 + f_hi) + context + nccl
    widths = {k: hi - lo for k, (lo, hi) in spans.items()}
    widths["allocator fragmentation"] = allocated * (f_hi - f_lo)
    dominant = max(widths, key=lambda k: widths[k])
    return (low, expected, high), dominant, reserved


def _megatron_activations(shape, s, b, tp, pp, vpp, nmb, sp_selective: bool) -> float:
    """Megatron-LM theoretical_memory_usage.py, first pipeline stage (bytes)."""
    h, v, L = shape.hidden, shape.vocab, shape.layers
    if sp_selective:
        act = s * b * h * (18 + 4 * shape.ffn / h) * L
    else:
        act = s * b * h * (10 + 24 / tp) * L
    act += 8 * s * b * pp + s * b * h * pp
    if vpp is not None:
        act *= 1 + (pp - 1) / (pp * vpp)
    elif pp > 1 and nmb is not None:
        act *= min(1, nmb / pp)
    if sp_selective:
        if pp == 1:
            act += s * b * h * 4 * (1 + v / h)
        return act / tp
    if pp == 1:
        act += (s * b * v / tp + s * b * h) * 2
    return act * 1.05
