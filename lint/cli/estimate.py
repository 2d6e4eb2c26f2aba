"""``parallint estimate`` and ``parallint plan``: plain functions the typer CLI calls.

``estimate_main`` prints, per job, the per-GPU memory of the most loaded rank (a table, or JSON);
``plan_main`` the layouts of N GPUs that pass the layout rules and fit, best first. Exit codes:
0 = every job fits (estimate) / some layout fits (plan), 1 = some job does not fit / none fits,
2 = nothing to estimate (no job with a known model shape) or bad input.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TextIO

from parallint.estimator.params import MODEL_BOUNDS, TRAINING_BOUNDS

GIB = float(1 << 30)
#: plausible bounds for the numbers of a job: beyond them a value is a typo (or a hostile file),
#: and the estimator's per-layer tables would be huge
MAX_GPUS = 1 << 40
_BOUNDS = {
    "parallel": {k: 1 << 20 for k in ("tp", "pp", "dp", "cp", "ep", "etp", "vpp", "gpus_per_node")}
    | {"world_size": MAX_GPUS, "nodes": 1 << 30},
    "model": MODEL_BOUNDS,
    "training": TRAINING_BOUNDS,
}
_STRINGS = {"training": ("precision", "optimizer", "grad_dtype", "recompute", "loss", "peft", "base_quant",
                         "lora_targets"), "hardware": ("gpu",)}

_OVERRIDE_KEYS = {
    "tp": ("parallel", "tp"), "pp": ("parallel", "pp"), "dp": ("parallel", "dp"),
    "zero_stage": ("parallel", "zero_stage"), "micro_batch": ("training", "micro_batch"),
    "recompute": ("training", "recompute"), "gpu": ("hardware", "gpu"),
} | {k: ("training", k) for k in ("recompute_every", "peft", "lora_rank", "lora_targets", "base_quant", "loss",
                                  "precision", "master_weights", "compile", "autocast", "fp8",
                                  "offload_optimizer", "offload_params")}


def _gib(x: float | None) -> str:
    return "?" if x is None else f"{x / GIB:.1f}"


# --------------------------------------------------------------------------- job specs
def _specs(paths: list[str], config: dict) -> tuple[list[tuple[str, dict | None]], list[str]]:
    """(job name, spec or None) for every job in ``paths``, and one-line errors."""
    from parallint.estimator.spec import spec_for_job

    errors: list[str] = []
    out: list[tuple[str, dict | None]] = []
    covered: set[str] = set()
    jobs = []
    try:
        from parallint.engine.runner import build_jobs

        jobs = build_jobs(paths, config, lean=True)
    except Exception as exc:  # the engine's problem: still try the job-spec files
        errors.append(f"cannot assemble jobs: {exc}")
    for job in jobs:
        for f in job.files:
            covered.add(str(Path(f.abspath).resolve()))
        out.append((job.name, spec_for_job(job, config)))
    for p in paths:  # a job-spec file the classifier did not take (e.g. only a model section)
        path = Path(p)
        if not path.is_file() or str(path.resolve()) in covered:
            continue
        if path.suffix.lower() not in (".yaml", ".yml", ".json"):
            continue
        from parallint.util.guards import config_guard
        from parallint.util.limits import max_file_size

        try:
            size = path.stat().st_size
            if size > max_file_size(config):
                errors.append(f"{p}: not analysed: too large ({size} bytes; limit {max_file_size(config)})")
                continue
            text = path.read_text("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            errors.append(f"{p}: cannot read: {exc}")
            continue
        reason = config_guard("json" if path.suffix.lower() == ".json" else "yaml", text)
        if reason:
            errors.append(f"{p}: not analysed: {reason}")
            continue
        from parallint.readers import jobspec

        ff = jobspec.read(p, path.resolve(), text)
        if ff.diagnostics:
            for d in ff.diagnostics:
                errors.append(f"{d.span.path}:{d.span.line}:{d.span.column}: {d.message}")
            continue
        if isinstance(ff.data.spec.get("model"), dict):
            spec = dict(ff.data.spec)
            if config.get("gpu") and not (spec.get("hardware") or {}).get("gpu"):
                spec.setdefault("hardware", {})["gpu"] = config["gpu"]
            out.append((p, spec))
    return out, errors


def check_spec(spec: dict) -> str | None:
    """What makes ``spec`` unusable for an estimate (a zero or negative degree, an absurd size),
    or None. Text fields stated as numbers (``precision: 16``) are turned into text in place."""
    if not isinstance(spec, dict):
        return "the job spec is not a mapping"
    for section, bounds in _BOUNDS.items():
        sec = spec.get(section)
        if sec is None:
            continue
        if not isinstance(sec, dict):
            return f"{section}: expected a mapping"
        for key, high in bounds.items():
            v = sec.get(key)
            if v is None or (section == "model" and key in ("vocab",) and v == 0):
                continue
            if isinstance(v, str) and v.strip().isdigit():
                v = int(v.strip())
            if isinstance(v, float) and v.is_integer() and abs(v) < 1e18:
                v = int(v)
            if isinstance(v, bool) or not isinstance(v, int):
                continue  # not a number: the estimator leaves it unknown
            if not 1 <= v <= high:
                return f"{section}.{key} = {v}: expected an integer from 1 to {high}"
    for section, keys in _STRINGS.items():
        sec = spec.get(section)
        if isinstance(sec, dict):
            for key in keys:
                v = sec.get(key)
                if v is not None and not isinstance(v, str):
                    sec[key] = str(v).lower() if isinstance(v, (int, float)) and not isinstance(v, bool) else None
    return None


def apply_overrides(spec: dict, overrides: dict) -> dict:
    """A copy of ``spec`` with command-line overrides (``--tp 8`` ...) applied."""
    import copy

    s = copy.deepcopy(spec)
    for key, value in (overrides or {}).items():
        if value is None or key not in _OVERRIDE_KEYS:
            continue
        section, name = _OVERRIDE_KEYS[key]
        s.setdefault(section, {})[name] = value
        if key == "gpu":
            s["hardware"].pop("gpu_memory_bytes", None)
    par = s.setdefault("parallel", {})
    if any(k in overrides for k in ("tp", "pp")) and "dp" not in overrides:
        if par.get("world_size") or (par.get("nodes") and par.get("gpus_per_node")):
            par.pop("dp", None)  # re-derived from the world size
    if "dp" in overrides and not any(k in overrides for k in ("tp", "pp")):
        par.pop("world_size", None)
        par.pop("nodes", None)
    return s


def _report_shapeless(cmd: str, names: list[str], show: int = 5) -> None:
    """One note for the jobs whose model shape is unknown (a directory can hold hundreds)."""
    if not names:
        return
    listed = ", ".join(names[:show]) + (f" and {len(names) - show} more" if len(names) > show else "")
    sys.stderr.write(f"parallint {cmd}: {len(names)} job{'s' if len(names) != 1 else ''} without a "
                     f"known model shape skipped ({listed}); `parallint show` prints what was read\n")


# --------------------------------------------------------------------------- estimate
def _describe_model(spec: dict, est) -> str:
    from parallint.estimator.spec import normalize

    m = normalize(spec)["model"]
    bits = [f"{est.param_count / 1e9:.2f}B parameters"]
    shape = [f"{m['layers']} layers"] if m.get("layers") else []
    shape += [f"hidden {m['hidden']}"] if m.get("hidden") else []
    shape += [f"{m['heads']} heads"] if m.get("heads") else []
    if m.get("num_experts"):
        shape.append(f"{m['num_experts']} experts")
    if shape:
        bits.append("(" + ", ".join(shape) + ")")
    if m.get("preset"):
        bits.insert(0, str(m["preset"]) + ":")
    if m.get("seq_len"):
        bits.append(f"at sequence length {m['seq_len']}")
    return " ".join(bits)


def _describe_layout(est) -> str:
    lay = est.layout
    dp = "?" if lay["dp"] is None else lay["dp"]
    parts = [f"TP={lay['tp']} x PP={lay['pp']} x DP={dp}"]
    if lay["cp"] > 1:
        parts.append(f"CP={lay['cp']}")
    if lay["ep"] > 1:
        parts.append(f"EP={lay['ep']}")
    if lay.get("vpp", 1) > 1:
        parts.append(f"VPP={lay['vpp']}")
    parts.append(f"ZeRO-{lay['zero_stage']}" if lay["zero_stage"] else "no ZeRO")
    parts.append({"none": "no recompute", "selective": "selective recompute",
                  "full": "full recompute", "op": "op-level selective checkpointing"}[lay["recompute"]])
    if lay["sequence_parallel"]:
        parts.append("sequence parallel")
    parts.append(f"micro batch {lay['micro_batch'] if lay['micro_batch'] else '?'}")
    return ", ".join(parts)


def render_estimate(name: str, spec: dict, est, headroom: float = 0.9) -> str:
    rows = [("weights", est.weights, ""), ("gradients", est.gradients, ""),
            ("optimizer", est.optimizer, "")]
    note = ""
    if est.activations_known and est.activation_per_layer_bytes is not None:
        mb = est.microbatches_in_flight
        note = (f"{mb} microbatch{'es' if mb != 1 else ''} in flight x {est.layers_per_stage} "
                f"layers, {est.activation_per_layer_bytes / (1 << 20):.1f} MiB per layer")
    elif not est.activations_known:
        note = "not estimated"
    rows.append(("activations", est.activations, note))
    rows.append(("other", est.other, "CUDA context, buffers, logits" if est.accounting == "zero"
                 else ""))
    rows.append(("total", est.total, "allocated + CUDA context"))
    stage = "" if est.layout["pp"] == 1 else f" ({est.stage} pipeline stage)"
    gpu = (f"{est.gpu}, {_gib(est.gpu_memory_bytes)} GiB" if est.gpu_memory_bytes
           else (f"{est.gpu} (not in the catalogue: memory unknown)" if est.gpu else
                 "unknown (pass --gpu or set gpu in [tool.parallint])"))
    lines = [f"job: {name}",
             f"  model    {_describe_model(spec, est)}",
             f"  layout   {_describe_layout(est)}",
             f"  GPU      {gpu}",
             f"  accounting: {'ZeRO paper' if est.accounting == 'zero' else 'Megatron-LM theoretical'}",
             "",
             f"  {'most loaded rank' + stage:<44}{'GiB':>8}"]
    for label, value, extra in rows:
        lines.append(f"  {label:<44}{_gib(value):>8}" + (f"   {extra}" if extra else ""))
    if est.trainable_params is not None:
        lines.append(f"  {'trainable parameters':<44}{est.trainable_params / 1e6:>7.1f}M   of "
                     f"{est.param_count / 1e6:.0f}M (the frozen base keeps weights only)")
    low, expected, high = est.range
    if est.accounting == "zero":
        lines.append(f"  {'allocated / reserved (peak)':<44}{_gib(est.allocated):>8}   "
                     f"{_gib(est.reserved)} GiB reserved by the caching allocator")
        lines.append(f"  {'range: low / expected / high':<44}{_gib(low):>8}   {_gib(expected)} / "
                     f"{_gib(high)} GiB; the {est.uncertainty} dominates the uncertainty")
    if est.gpu_memory_bytes:
        lines.append(f"  {'GPU memory':<44}{_gib(est.gpu_memory_bytes):>8}")
        head = est.gpu_memory_bytes - est.total
        pct = 100 * head / est.gpu_memory_bytes
        lines.append(f"  {'headroom':<44}{_gib(head):>8}   {pct:.1f}% of the GPU")
        lines.append("")
        used = 100 * est.total / est.gpu_memory_bytes
        if est.fits:
            verdict = f"fits: {_gib(est.total)} of {_gib(est.gpu_memory_bytes)} GiB ({used:.0f}%)"
            if est.total > headroom * est.gpu_memory_bytes:
                verdict += f", above the {headroom:.0%} memory-headroom: tight"
        else:
            verdict = (f"does NOT fit: {_gib(est.total)} GiB needed, {_gib(est.gpu_memory_bytes)} "
                       f"GiB on the GPU ({used:.0f}%); try `parallint plan PATH --gpus N`")
        lines.append("  " + verdict)
    else:
        lines.append("")
        lines.append("  fits: unknown (GPU memory unknown)")
    for a in est.assumptions:
        lines.append(f"  assumed: {a}")
    return "\n".join(lines) + "\n"


def _isatty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def estimate_main(paths: list[str], overrides: dict, fmt: str, config: dict,
                  out: TextIO | None = None, extra: list | tuple = ()) -> int:
    from parallint.estimator.memory import estimate
    from parallint.estimator.params import ShapeError

    out = out or sys.stdout
    config = config or {}
    specs, errors = _specs(paths, config) if paths else ([], [])
    specs = list(extra) + specs  # --preset
    results = []
    shapeless = [name for name, spec in specs if spec is None]
    for name, spec in specs:
        if spec is None:
            continue
        s = apply_overrides(spec, overrides or {})
        problem = check_spec(s)
        if problem:
            errors.append(f"{name}: {problem}")
            continue
        try:
            est = estimate(s)
        except (ShapeError, ValueError, ZeroDivisionError, ArithmeticError, TypeError, AttributeError) as exc:
            errors.append(f"{name}: cannot estimate ({type(exc).__name__}: {exc})")
            continue
        results.append((name, s, est))
    headroom = float(config.get("memory-headroom", 0.9))
    if fmt == "json":
        out.write(json.dumps([est.to_json() for _, _, est in results], indent=2) + "\n")
    elif fmt == "svg":
        from parallint.report.membar import svg

        out.write(svg([(n, e) for n, _, e in results]))
    else:
        from parallint.report.formats import use_color
        from parallint.report.membar import bar

        tty = _isatty(out)
        color = tty and use_color(out)
        out.write("\n".join(render_estimate(n, s, e, headroom) + "".join(f"  {ln}\n" for ln in bar(e, unicode=tty, color=color))
                            for n, s, e in results))
    for e in errors:
        sys.stderr.write(f"parallint estimate: {e}\n")
    _report_shapeless("estimate", shapeless)
    if not results:
        if fmt != "json":
            sys.stderr.write("parallint estimate: no job with a known model shape in "
                             + " ".join(paths) + "\n")
        return 2
    return 1 if any(est.fits is False for _, _, est in results) else 0


# --------------------------------------------------------------------------- plan
def render_plan(name: str, spec: dict, gpus: int, gpu_name: str, mem: int, layouts: list,
                headroom: float, best_unfit=None, limit: int = 15) -> str:
    from parallint.estimator.plan import ORDER_REASON

    lines = [f"job: {name}",
             f"  {gpus} x {gpu_name} ({_gib(mem)} GiB each; a layout must stay under "
             f"{headroom:.0%} = {_gib(headroom * mem)} GiB)"]
    if not layouts:
        lines.append(f"  No layout of {gpus} GPUs fits this model on the {gpu_name}.")
        if best_unfit is not None:
            lines.append(f"  The smallest estimate is {_gib(best_unfit.estimate.total)} GiB per GPU "
                         f"({best_unfit.describe()}): use more GPUs or a larger GPU.")
        from parallint.cli.estimate_ux import smallest_fit

        more = smallest_fit(spec, gpus, gpu_name, headroom)
        if more is not None:
            lines.append(f"  The smallest GPU count that fits is {more[0]} x {gpu_name}: {more[1].describe()} "
                         f"({_gib(more[1].estimate.total)} GiB per GPU).")
        return "\n".join(lines) + "\n"
    lines.append(f"  {len(layouts)} layout{'s' if len(layouts) != 1 else ''} fit; {ORDER_REASON}.")
    lines.append("")
    head = (f"  {'#':>3}  {'TP':>3} {'PP':>3} {'DP':>4}  {'ZeRO':>4}  {'recompute':<10}"
            f"{'weights':>8} {'grads':>7} {'optim':>7} {'activ':>7} {'other':>6} {'total GiB':>10}")
    lines.append(head)
    for i, lay in enumerate(layouts[:limit], 1):
        e = lay.estimate
        lines.append(f"  {i:>3}  {lay.tp:>3} {lay.pp:>3} {lay.dp:>4}  {lay.zero_stage:>4}  "
                     f"{lay.recompute:<10}{_gib(e.weights):>8} {_gib(e.gradients):>7} "
                     f"{_gib(e.optimizer):>7} {_gib(e.activations):>7} {_gib(e.other):>6} "
                     f"{_gib(e.total):>10}")
    if len(layouts) > limit:
        lines.append(f"  ... and {len(layouts) - limit} more (--format json lists all)")
    lines.append("")
    lines.append(f"  best: {layouts[0].describe()}")
    from parallint.estimator.plan import framework_settings

    how = framework_settings(spec.get("framework"), layouts[0])
    if how is not None:
        lines.append(f"  set it ({how[0]}):")
        lines.extend(f"    {ln}" for ln in how[1])
    return "\n".join(lines) + "\n"


def plan_main(paths: list[str], gpus: int, gpu: str | None, fmt: str, config: dict,
              out: TextIO | None = None, extra: list | tuple = ()) -> int:
    from parallint.estimator.gpus import resolve_gpu
    from parallint.estimator.plan import ORDER_REASON
    from parallint.engine.layouts import plan

    out = out or sys.stdout
    config = config or {}
    if gpus is None or not 1 <= gpus <= MAX_GPUS:
        sys.stderr.write(f"parallint plan: --gpus must be an integer from 1 to {MAX_GPUS}\n")
        return 2
    specs, errors = _specs(paths, config) if paths else ([], [])
    specs = list(extra) + specs  # --preset
    headroom = float(config.get("memory-headroom", 0.9))
    results = []
    shapeless = [name for name, spec in specs if spec is None]
    for name, spec in specs:
        if spec is None:
            continue
        spec = dict(spec)
        problem = check_spec(spec)
        if problem:
            errors.append(f"{name}: {problem}")
            continue
        gname = gpu or (spec.get("hardware") or {}).get("gpu") or config.get("gpu")
        g = resolve_gpu(gname) if gname else None
        if g is None:
            errors.append(f"{name}: GPU type {'unknown' if not gname else repr(gname) + ' not in the catalogue'}"
                          " (pass --gpu, e.g. --gpu H100-80GB)")
            continue
        gpn = config.get("gpus-per-node") if isinstance(config.get("gpus-per-node"), int) else None
        try:
            layouts = plan(spec, gpus, g.name, headroom, gpus_per_node=gpn)
            best_unfit = None
            if not layouts:
                every = plan(spec, gpus, g.name, float("inf"), gpus_per_node=gpn, pareto=False)
                best_unfit = min(every, key=lambda l: l.estimate.total) if every else None
        except (ValueError, ArithmeticError, TypeError, AttributeError) as exc:
            errors.append(f"{name}: cannot plan ({type(exc).__name__}: {exc})")
            continue
        results.append((name, spec, g, layouts, best_unfit))
    if fmt == "json":
        out.write(json.dumps([
            {"job": n, "gpus": gpus, "gpu": g.name, "gpu_memory_bytes": g.memory_bytes,
             "memory_headroom": headroom, "order": ORDER_REASON,
             "layouts": [lay.to_json() for lay in layouts]}
            for n, _, g, layouts, _ in results], indent=2) + "\n")
    else:
        out.write("\n".join(render_plan(n, s, gpus, g.name, g.memory_bytes, layouts, headroom, bu)
                            for n, s, g, layouts, bu in results))
    for e in errors:
        sys.stderr.write(f"parallint plan: {e}\n")
    _report_shapeless("plan", shapeless)
    if not results:
        return 2
    return 0 if all(layouts for _, _, _, layouts, _ in results) else 1
