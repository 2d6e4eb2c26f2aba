"""The memory pictures (issue 26): the stacked bar under `parallint estimate` (ASCII when piped,
Unicode blocks on a terminal) and `estimate --format svg`."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from conftest import ROOT, run_cli


def test_piped_estimate_draws_an_ascii_bar_in_proportion():
    res = run_cli("estimate", "examples/gpt130b_tp8_pp4/", cwd=ROOT)
    assert res.returncode == 0, res.stderr
    (line,) = [ln.strip() for ln in res.stdout.splitlines() if ln.strip().startswith("[W")]
    body = line[1:-1]
    assert "\u2588" not in body  # plain ASCII when piped
    card_at = body.index("|")
    cells = body.replace("|", "")
    assert len(cells) == 60
    # 7.6 + 15.3 + 45.9 + 0.5 + 1.0 = 70.3 of 80 GiB: the card is the scale, the rest is free
    assert card_at == 60
    assert abs(cells.count("W") - 60 * 7.6 / 80) <= 1 and abs(cells.count("O") - 60 * 45.9 / 80) <= 1
    assert abs(cells.count(".") - 60 * 9.7 / 80) <= 1
    assert "GiB: W=weights 7.6  G=gradients 15.3  O=optimizer 45.9" in res.stdout


def test_a_job_that_does_not_fit_puts_the_card_inside_the_bar():
    res = run_cli("estimate", "examples/gpt130b_pure_dp/", cwd=ROOT)
    (line,) = [ln.strip() for ln in res.stdout.splitlines() if ln.strip().startswith("[W")]
    body = line[1:-1]
    total = 243.1 + 486.1 + 1458.4 + 57.5 + 1.0
    assert abs(body.index("|") - 60 * 80 / total) <= 1 and "." not in body  # no free memory


def test_unicode_blocks_on_a_terminal():
    from parallint.estimator.memory import estimate
    from parallint.report.membar import bar

    spec = {"model": {"layers": 32, "hidden": 4096, "heads": 32, "vocab": 32000, "seq_len": 2048},
            "parallel": {"tp": 1, "pp": 1, "dp": 8}, "training": {"micro_batch": 1, "zero_stage": 3},
            "hardware": {"gpu": "A100-80GB"}}
    lines = bar(estimate(spec), unicode=True, color=False)
    assert set(lines[0][1:-1]) <= {"\u2588", "\u2591", "|"} and "\u2588 weights" in lines[1]
    colored = bar(estimate(spec), unicode=True, color=True)
    assert "\x1b[34m" in colored[0]


def test_svg_report_is_xml_with_a_bar_per_job(tmp_path):
    res = run_cli("estimate", "--format", "svg", "examples/gpt130b_tp8_pp4/", "examples/gpt130b_pure_dp/", cwd=ROOT)
    root = ET.fromstring(res.stdout)
    ns = "{http://www.w3.org/2000/svg}"
    assert root.tag == ns + "svg"
    texts = [t.text or "" for t in root.iter(ns + "text")]
    assert any("does NOT fit" in t for t in texts) and any(re.search(r"70\.3 GiB of 80\.0 GiB.* fits", t) for t in texts)
    titles = [t.text for t in root.iter(ns + "title")]
    assert "optimizer: 45.9 GiB" in titles and titles.count("GPU memory") == 2
    assert run_cli("estimate", "--format", "png", "examples/gpt130b_tp8_pp4/", cwd=ROOT).returncode == 2


def test_plan_prints_the_layout_in_the_jobs_own_framework():
    res = run_cli("plan", "examples/gpt130b_pure_dp/", "--gpus", "32", cwd=ROOT)
    assert "  set it (Megatron flags):\n    --tensor-model-parallel-size 8 --pipeline-model-parallel-size 4 " \
           "--sequence-parallel --recompute-granularity full" in res.stdout
    res = run_cli("plan", "examples/torchtitan/", "--gpus", "8", "--gpu", "H100-80GB", cwd=ROOT)
    best = re.search(r"best: TP=(\d+) x PP=(\d+) x DP=(\d+), (ZeRO-3|no ZeRO)", res.stdout)
    assert best, res.stdout
    tp, pp, dp, zero = best.groups()
    assert f"    tensor_parallel_degree = {tp}\n    pipeline_parallel_degree = {pp}\n" in res.stdout
    shard, replicate = (dp, "1") if zero == "ZeRO-3" else ("1", dp)  # FSDP shards; no ZeRO replicates
    assert f"    data_parallel_replicate_degree = {replicate}\n    data_parallel_shard_degree = {shard}\n" in res.stdout
    res = run_cli("plan", "examples/nemo_tp_pp/", "--gpus", "8", "--gpu", "A100-80GB", cwd=ROOT)
    assert "set it (NeMo overrides):\n    model.tensor_model_parallel_size=" in res.stdout


def test_no_spelling_is_offered_where_the_framework_has_none():
    from parallint.estimator.plan import Layout, framework_settings

    lay = Layout(2, 1, 4, 1, 1, 2, "none", False, None)
    assert framework_settings("megatron", lay) is None  # Megatron shards optimizer states only
    assert framework_settings(None, lay) is None
    assert framework_settings("deepspeed", lay) is None  # TP 2: not plain DeepSpeed
    dp_only = Layout(1, 1, 8, 1, 1, 3, "full", False, None)
    assert framework_settings("hf_trainer", dp_only) == ("TrainingArguments flags",
                                                         ['--fsdp "full_shard auto_wrap" --gradient_checkpointing true'])
