"""How close parallint's estimator comes to the published figures of memory_cases.yaml.

    python benchmarks/estimator_accuracy.py [path/to/memory_cases.yaml]

Prints, per category, how many cases are within their own tolerance (the checks of
tests/test_estimator_cases.py), how many are listed as not modelled or as known gaps, and the worst
relative error of the case's headline figure (estimate vs published / measured value).
"""

from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

import test_estimator_cases as T  # noqa: E402  (the test's adapters and checks)

from parallint.estimator.memory import activation_per_layer, estimate, model_state_bytes_per_param  # noqa: E402
from parallint.estimator.params import breakdown, count_params  # noqa: E402


def headline(case: dict) -> tuple[float, float] | None:
    """(estimate, reference) of the case's main figure, or None when there is none to compare."""
    cat, e = case["category"], case["expected"]
    if cat == "param_count":
        got = count_params(T.model_of(case))
        if "param_count" in e:
            return got, e["param_count"]
        if "param_count_published" in e:
            return got, e["param_count_published"]
        return got, e["param_count_published_billions"] * 1e9
    if cat == "model_states":
        if "bytes_per_param_distributed" in e:
            prec = case["precision"]["params"]
            d = case["parallel"]["dp"]
            return (sum(model_state_bytes_per_param(prec, zero_stage=1, shard=d,
                                                    accounting="megatron")),
                    e["bytes_per_param_distributed"])
        if "bytes_per_param_mixed" in e:
            return sum(model_state_bytes_per_param("bf16", grad_dtype="fp32")), e["bytes_per_param_mixed"]
        spec = {"model": {"param_count": case["model"]["param_count"]},
                "parallel": dict(case["parallel"]), "training": T._precision_of(case)}
        return estimate(spec).model_states, e["model_states_gb_published"] * T.GB
    if cat == "max_model_size":
        dp = case["parallel"]["dp"]
        mp = int(case["id"].rsplit("mp", 1)[1])
        per = sum(model_state_bytes_per_param("fp16", zero_stage=1, shard=dp))
        return e["device_memory_gb"] * T.GB * mp / per, e["max_params_billions"]["stage1"] * 1e9
    if cat == "activation":
        m = T.model_of(case)
        b = case.get("micro_batch") or 1
        if "korthikanti_formula_bytes" in e:
            per = activation_per_layer(m["seq_len"], b, m["hidden"], m["heads"])
            return per * m["layers"], e["korthikanti_formula_bytes"]
        if "activation_gib_published" in e:
            per = activation_per_layer(m["seq_len"], b, m["hidden"], m["heads"], 1, False,
                                       T.recompute_of(case))
            return per * m["layers"], e["activation_gib_published"] * T.GIB
        est = estimate(T.spec_of(case, training__flash_attention=False))
        return est.activation_per_layer_bytes, e["activation_bytes_per_layer"]
    if cat == "activation_ratio":
        m = case["model"]
        full = activation_per_layer(m["seq_len"], 1, m["hidden"], m["heads"])
        sel = activation_per_layer(m["seq_len"], 1, m["hidden"], m["heads"], recompute="selective")
        return 100 * (1 - sel / full), e["activation_reduction_percent"]
    if cat == "megatron_theoretical":
        spec = T.spec_of(case)
        spec["training"].setdefault("precision", "bf16")
        est = estimate(spec, accounting="megatron")
        if "weight_and_optimizer_bytes" in e:
            return est.model_states, e["weight_and_optimizer_bytes"]
        return est.total / T.MIB, e["total_MiB"]
    if cat == "deepspeed_estimator":
        m, par = case["model"], case["parallel"]
        if "largest_layer_params" not in m:
            return None
        spec = {"model": {"param_count": m["param_count"], "largest_layer_params": m["largest_layer_params"]},
                "parallel": {"dp": par["dp"], "zero_stage": 3},
                "training": {"grad_dtype": "fp32", "precision": "fp16"},
                "hardware": {"reserved_bytes": 0}}
        return estimate(spec).total, e.get("per_gpu_bytes") or e["per_gpu_bytes_docs_formula"]
    if cat == "accelerate_estimator":
        if case["model"]["name"] != "bert-base-cased":
            return None
        m = {"layers": 12, "hidden": 768, "heads": 12, "ffn": 3072, "vocab": 28996,
             "seq_len": 512, "arch": "encoder"}
        return count_params(m) * 4 / T.MIB, float(e["total_size"].split()[0])
    if cat == "measured":
        if "gpu_memory_MiB_measured" in e:
            over = {"hardware__reserved_bytes": e["cuda_context_MiB_measured"] * T.MIB}
            if str(case["precision"]["scheme"]).startswith("fp32"):
                over["training__precision"] = "fp32"
            else:
                over["training__precision"] = "fp16"
                over["training__grad_dtype"] = "fp32"
            return estimate(T.spec_of(case, **over)).total / T.MIB, e["gpu_memory_MiB_measured"]
        spec = T.spec_of(case)
        if spec["parallel"].get("tp", 1) > 1:  # torchtitan's TP plan always shards the sequence
            spec["parallel"]["sequence_parallel"] = True
        if spec["parallel"].get("pp", 1) > 1:
            spec["training"]["num_microbatches"] = spec["training"]["micro_batch"]
            spec["training"]["micro_batch"] = 1
        return estimate(spec).total / T.GIB, e["max_reserved_gib_measured"]
    if cat == "measured_derived":
        par = case["parallel"]
        if "delta_gib_measured" in e:
            a = estimate(T.spec_of({**case, "parallel": par["a"]}))
            b = estimate(T.spec_of({**case, "parallel": par["b"]}))
            return (a.total - b.total) / T.GIB, e["delta_gib_measured"]
        totals = []
        for cfg, seq in zip(par["configs"], e["seq_len_per_config"]):
            c = {**case, "parallel": {**cfg, "zero_stage": 3}, "model": {**case["model"], "seq_len": seq}}
            totals.append(estimate(T.spec_of(c)).total)
        return max(totals) / min(totals), 1.0
    return None


def main(argv: list[str]) -> int:
    path = Path(argv[1]) if len(argv) > 1 else T.CASES_FILE
    if not path.is_file():
        print(f"no reference cases at {path}")
        return 2
    import yaml

    cases = yaml.safe_load(path.read_text("utf-8"))
    stats: dict[str, dict] = defaultdict(lambda: {"n": 0, "ok": 0, "gap": 0, "skip": 0,
                                                  "worst": 0.0, "worst_id": ""})
    for case in cases:
        st = stats[case["category"]]
        st["n"] += 1
        if case["id"] in T.NOT_MODELLED:
            st["skip"] += 1
            continue
        try:
            T.CHECKS[case["category"]](case)
            st["ok"] += 1
        except AssertionError:
            st["gap"] += 1
        h = headline(case)
        if h is not None and h[1]:
            err = abs(h[0] - h[1]) / abs(h[1])
            if err >= st["worst"]:
                st["worst"], st["worst_id"] = err, case["id"]
    print(f"{'category':<22}{'cases':>6}{'within':>8}{'outside':>9}{'not modelled':>14}"
          f"{'worst rel. error':>18}  worst case")
    for cat, st in stats.items():
        print(f"{cat:<22}{st['n']:>6}{st['ok']:>8}{st['gap']:>9}{st['skip']:>14}"
              f"{100 * st['worst']:>16.2f} %  {st['worst_id']}")
    total = {k: sum(s[k] for s in stats.values()) for k in ("n", "ok", "gap", "skip")}
    print(f"{'all':<22}{total['n']:>6}{total['ok']:>8}{total['gap']:>9}{total['skip']:>14}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
