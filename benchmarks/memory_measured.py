"""parallint's memory estimate against the measured public runs of memory_measured.yaml (issue 25).

    python benchmarks/memory_measured.py [--json] [--nearest] [--set NAME] [path/to/memory_measured.yaml]

Per case: the estimate of the same kind as the measurement (``allocated`` against
``Estimate.allocated``, ``reserved`` against ``Estimate.reserved``, ``nvidia-smi`` against the
whole per-GPU total, CUDA context included), its low / high range, the measured number and the
error. An ``oom`` case is *predicted* when the low end of the range exceeds the card.

A case marked ``incomplete`` (the source leaves a setting that moves the figure unstated) is
printed but not scored. A case whose spec the job-spec schema rejects is "not expressible" and is left out of the
accuracy figures; a case marked ``unsupported`` says which of its settings the spec has no field for. ``--nearest`` estimates such a case anyway with the fields the schema does not
know dropped and unknown enumeration values replaced by the nearest older one (``recompute: op``
-> ``selective``), which is how the first-run figures before issue 25 were taken.

``--set NAME`` keeps the cases of one set (``heldout-2``: the held-out cases added before the
formula changes of the second round; ``base``: the cases without a ``set``). Without it, the summary
is printed for all cases and for each set apart.

Summary: cases, expressible, median absolute error, share within +-10 % and +-20 %, the largest
error, the mean signed error, and the OOM reports predicted.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
CASES = HERE / "memory_measured.yaml"
UNITS = {"GiB": float(1 << 30), "MiB": float(1 << 20), "GB": 1e9, "MB": 1e6}
_NEAREST_ENUM = {("training", "recompute"): {"op": "selective", "layer": "selective"},
                 ("training", "loss"): {"compiled": "standard"}}


def load(path: Path = CASES) -> list[dict]:
    import yaml

    return yaml.safe_load(path.read_text("utf-8")) or []


def _nearest(spec: dict) -> dict:
    """``spec`` reduced to what the schema accepts (unknown fields dropped, enum values mapped)."""
    import json as _json
    import importlib.resources

    schema = _json.loads(importlib.resources.files("parallint.schemas").joinpath("job.schema.json")
                         .read_text("utf-8"))
    props = schema["properties"]
    out: dict = {}
    for section, body in spec.items():
        if section not in props:
            continue
        if not isinstance(body, dict):
            out[section] = body
            continue
        known = props[section].get("properties", {})
        sec = {}
        for k, v in body.items():
            if k not in known:
                continue
            enum = known[k].get("enum")
            if enum is not None and v not in enum:
                v = _NEAREST_ENUM.get((section, k), {}).get(v)
                if v is None:
                    continue
            sec[k] = v
        out[section] = sec
    return out


def measured_bytes(case: dict) -> float | None:
    m = case["measured"]
    if m["kind"] == "oom":
        return None
    return float(m["value"]) * UNITS[m["unit"]]


def _of_kind(est, kind: str, which: str = "expected") -> float:
    """The estimate's figure of the measured kind; an estimator without the split gives its total."""
    rng = getattr(est, "range", None)
    if kind == "allocated" and hasattr(est, "allocated"):
        base = est.allocated
    elif kind == "reserved" and hasattr(est, "reserved"):
        base = est.reserved
    elif kind == "nvidia-smi" and rng is not None:
        base = rng[1]
    else:
        base = est.total
    if rng is None or which == "expected":
        return base
    low, expected, high = rng
    return base * (low if which == "low" else high) / expected


def run_case(case: dict, nearest: bool = False) -> dict:
    from parallint.estimator.memory import estimate
    from parallint.estimator.spec import validate

    spec = case["spec"]
    errors = validate(spec)
    row: dict = {"id": case["id"], "kind": case["measured"]["kind"], "expressible": not errors,
                 "set": case.get("set", "base")}
    if case.get("incomplete"):
        row["incomplete"] = case["incomplete"]
    if errors:
        row["why_not"] = errors[0]
        if not nearest:
            return row
        spec = _nearest(spec)
        if validate(spec):
            return row
        row["nearest"] = True
    est = estimate(spec)
    kind = case["measured"]["kind"]
    row["expected"] = _of_kind(est, kind if kind != "oom" else "nvidia-smi")
    row["low"] = _of_kind(est, kind if kind != "oom" else "nvidia-smi", "low")
    row["high"] = _of_kind(est, kind if kind != "oom" else "nvidia-smi", "high")
    row["dominant"] = getattr(est, "uncertainty", None)
    if kind == "oom":
        row["card"] = est.gpu_memory_bytes
        row["predicted"] = est.gpu_memory_bytes is not None and row["low"] > est.gpu_memory_bytes
    else:
        got = measured_bytes(case)
        row["measured"] = got
        row["error"] = row["expected"] / got - 1  # type: ignore[operator]
    return row


def summary(rows: list[dict], nearest: bool = False) -> dict:
    usable = [r for r in rows if "error" in r and (r["expressible"] or nearest) and "incomplete" not in r]
    errs = [r["error"] for r in usable]
    ooms = [r for r in rows if r["kind"] == "oom"]
    out = {"cases": len(rows), "expressible": sum(r["expressible"] for r in rows),
           "incomplete": sum("incomplete" in r for r in rows), "compared": len(usable), "ooms": len(ooms),
           "ooms_predicted": sum(bool(r.get("predicted")) for r in ooms)}
    if errs:
        out |= {"median_abs_error": statistics.median(abs(e) for e in errs),
                "within_10": sum(abs(e) <= 0.10 for e in errs) / len(errs),
                "within_20": sum(abs(e) <= 0.20 for e in errs) / len(errs),
                "max_abs_error": max(abs(e) for e in errs),
                "mean_error": statistics.fmean(errs)}
    return out


def _print_summary(summ: dict, label: str = "") -> None:
    print(f"{label}cases {summ['cases']}, expressible {summ['expressible']}, config incomplete {summ['incomplete']}, "
          f"compared {summ['compared']}, "
          f"OOM reports {summ['ooms']} (predicted by the low end: {summ['ooms_predicted']})")
    if "median_abs_error" in summ:
        print(f"{' ' * len(label)}median |error| {100 * summ['median_abs_error']:.1f}%, within ±10%: "
              f"{100 * summ['within_10']:.0f}%, within ±20%: {100 * summ['within_20']:.0f}%, "
              f"max |error| {100 * summ['max_abs_error']:.1f}%, mean error {100 * summ['mean_error']:+.1f}%")


def main(argv: list[str]) -> int:
    argv = list(argv)
    only = None
    if "--set" in argv:
        i = argv.index("--set")
        only = argv[i + 1]
        del argv[i:i + 2]
    args = [a for a in argv[1:] if not a.startswith("--")]
    as_json, nearest = "--json" in argv, "--nearest" in argv
    path = Path(args[0]) if args else CASES
    cases = [c for c in load(path) if only is None or c.get("set", "base") == only]
    rows = [run_case(c, nearest) for c in cases]
    summ = summary(rows, nearest)
    sets = sorted({r["set"] for r in rows})
    per_set = {s: summary([r for r in rows if r["set"] == s], nearest) for s in sets} if len(sets) > 1 else {}
    if as_json:
        print(json.dumps({"rows": rows, "summary": summ, "sets": per_set}, indent=2))
        return 0
    gib = UNITS["GiB"]
    w = max([52] + [len(r["id"]) + 2 for r in rows])
    print(f"{'case':<{w}}{'kind':<11}{'low':>7}{'expect':>8}{'high':>7}{'measured':>10}{'error':>9}  note")
    for r in rows:
        if "expected" not in r:
            print(f"{r['id']:<{w}}{r['kind']:<11}{'':>32}{'':>9}  not expressible: {r.get('why_not', '')}")
            continue
        if r["kind"] == "oom":
            meas = "OOM"
            err = "pred." if r["predicted"] else "MISSED"
            card = f"card {r['card'] / gib:.1f} GiB" if r.get("card") else "card unknown"
        else:
            meas, err, card = f"{r['measured'] / gib:.2f}", f"{100 * r['error']:+.1f}%", ""
        note = "; ".join(x for x in (card, "nearest spec" if r.get("nearest") else "",
                                      "config incomplete: not scored" if r.get("incomplete") else "",
                                      f"range: {r['dominant']}" if r.get("dominant") else "") if x)
        print(f"{r['id']:<{w}}{r['kind']:<11}{r['low'] / gib:>7.2f}{r['expected'] / gib:>8.2f}"
              f"{r['high'] / gib:>7.2f}{meas:>10}{err:>9}  {note}")
    print()
    _print_summary(summ, "all: " if per_set else "")
    for name, sub in per_set.items():
        _print_summary(sub, f"{name}: ")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
