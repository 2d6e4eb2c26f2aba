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
from parallint.util.record import EqRecord

__all__ = ["Estimate", "estimate", "activation_per_layer", "model_state_bytes_per_param"]


class Estimate(EqRecord):
    _fields = ("param_count", "params_on_rank", "weights", "gradients", "optimizer", "activations", "other", "total", "activation_per_layer_bytes", "layers_per_stage", "microbatches_in_flight", "gpu", "gpu_memory_bytes", "fits", "accounting", "stage", "activations_known", "layout", "assumptions")
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
    ) -> None:
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
    recompute: str = "none", flash: bool = False, act_bytes: int = 2,
) -> float:
    """Korthikanti et al. 2022, Table 2: activation bytes one layer keeps for one microbatch.

    ``act_bytes`` is the size of an activation element (2 for 16-bit training, 4 for fp32);
    dropout masks stay 1 byte. With 2 bytes this is exactly the paper's ``34 + 5as/h`` family:
    10 units replicated across TP ranks (LayerNorm inputs 4, QKV and fc1 inputs 4, two dropout
    masks 2), 24 units split by TP, ``5as/h`` for the attention scores (softmax, its dropout mask
    and output).
    """
    k = act_bytes / 2
    if recompute == "full":
        return k * 2 * s * b * h / (tp if sp else 1)
    replicated = 8 * k + 2
    sharded = 24 * k
    score = 0.0 if (recompute == "selective" or flash) else (4 * k + 1) * a * s / h
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

    _fields = ("model", "training", "accounting", "lower_bound", "assumptions", "tp", "pp", "cp", "ep", "vpp", "etp", "dp", "zero", "shard", "sp", "recompute", "flash", "precision", "optimizer", "shape", "bd")
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
    ) -> None:
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
    other, loss_grad_first, loss_grad_last = _buffers(job, hw, micro, seq, act_known)

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
        assumptions=job.assumptions,
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
    )


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

    def states(dense: float, experts: float) -> tuple[float, float, float]:
        master = tr.get("master_weights") is not False
        w, g, o = model_state_bytes_per_param(job.precision, job.optimizer, tr.get("grad_dtype") or "same",
                                              tr.get("grad_accum_dtype"), job.zero, job.shard, job.accounting,
                                              master)
        we, ge, oe = model_state_bytes_per_param(job.precision, job.optimizer,
                                                 tr.get("grad_dtype") or "same",
                                                 tr.get("grad_accum_dtype"), job.zero, edp, job.accounting,
                                                 master)
        return (dense * w + experts * we, dense * g + experts * ge, dense * o + experts * oe)

    return states(first.params, first.experts), states(last.params, last.experts)


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
            per_layer = activation_per_layer(s_loc, micro, h, a, tp, sp, recompute, job.flash, ab)
            interleave = 1 + (pp - 1) / (pp * vpp) if vpp > 1 else 1.0
            stage_layers = first.layers * in_flight * interleave  # type: ignore[operator]
            act_first = per_layer * stage_layers
            act_first += s_loc * micro * h * in_flight / tp * ab / 2  # embedding dropout (Sec. 4.3)
            # final norm and output-layer inputs, fp32 logits (Sec. 4.3)
            logits = 4 * s_loc * micro * h / tp * (ab / 2 + v / h)
            if recompute == "full":  # the layer being recomputed in backward
                working = activation_per_layer(s_loc, micro, h, a, tp, sp, "none", job.flash, ab)
                act_first += working
            else:
                working = 0.0
            if pp == 1:
                act_first += logits
                act_last = act_first
            else:
                act_last = per_layer * last.layers + logits + working  # type: ignore[operator]
    elif not job.lower_bound:
        job.assumptions.append("activations not estimated: "
                               + ("model shape unknown" if shape is None else
                                  "micro batch unknown" if micro is None else "sequence length unknown"))
    return per_layer, act_first, act_last


def _buffers(job: _Job, hw: dict, micro, seq, act_known: bool) -> tuple[float, float, float]:
    """(CUDA context and workspaces plus ZeRO-3 gathers, first-stage and last-stage loss bytes)."""
    if job.accounting == "megatron":
        other = 0.0
    else:
        reserved = hw.get("reserved_bytes")
        other = float(GIB if reserved is None else reserved)
        largest = job.model.get("largest_layer_params") or (job.bd.largest_layer if job.bd else None)
        if job.zero >= 3 and largest:
            w_full = 4.0 if job.precision in ("fp32", "float32") else 2.0
            other += 2 * largest / job.tp * w_full  # gathered layer + prefetched next one
    loss_grad_first = loss_grad_last = 0.0
    if job.accounting != "megatron" and act_known and job.shape is not None:
        # cross entropy: the 16-bit logits and, in backward, their fp32 gradient (last stage)
        lg = ((4 + (0 if job.precision in ("fp32", "float32") else 2)) * (seq / job.cp) * micro
              * job.shape.vocab / job.tp)  # type: ignore[attr-defined]
        loss_grad_last = lg
        loss_grad_first = lg if job.pp == 1 else 0.0
    return other, loss_grad_first, loss_grad_last


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
