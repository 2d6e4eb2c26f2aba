"""estimate/plan UX: --preset and `parallint presets`, unknown GPU names, the smallest GPU count
that fits when none of the given count does."""

from __future__ import annotations

import json


def test_presets_listing_and_preset_estimate(cli):
    p = cli("presets")
    assert p.returncode == 0
    names = [ln.split()[0] for ln in p.stdout.splitlines()]
    assert "llama-3-8b" in names and "gpt2" in names
    row = next(ln for ln in p.stdout.splitlines() if ln.startswith("llama-3-8b "))
    assert "8.0B" in row
    p = cli("estimate", "--preset", "llama-3-8b", "--gpu", "H100-80GB", "--tp", "8", "--format", "json")
    assert p.returncode in (0, 1), p.stderr
    (est,) = json.loads(p.stdout)
    assert round(est["param_count"] / 1e9, 1) == 8.0 and est["gpu"] == "H100-80GB"


def test_unknown_preset_and_gpu_are_one_line_errors_with_suggestions(cli):
    p = cli("estimate", "--preset", "llama3-8b-typo", "--gpu", "H100-80GB")
    assert p.returncode == 2 and len(p.stderr.splitlines()) == 1 and "did you mean 'llama-3-8b'" in p.stderr
    p = cli("plan", "--preset", "llama-3-8b", "--gpus", "8", "--gpu", "H1OO-8OGB")
    assert p.returncode == 2 and p.stderr.strip() == "parallint: error: unknown GPU 'H1OO-8OGB' (did you mean 'H100-80GB'?)"
    p = cli("check", "--gpu", "nonsense-gpu", ".")
    assert p.returncode == 2 and "unknown GPU 'nonsense-gpu'" in p.stderr and "Traceback" not in p.stderr
    p = cli("estimate")
    assert p.returncode == 2 and "--preset" in p.stderr


def test_plan_says_the_smallest_gpu_count_that_fits(cli):
    p = cli("plan", "--preset", "llama-3-70b", "--gpus", "2", "--gpu", "A100-80GB")
    assert p.returncode == 1, p.stderr
    line = next(ln for ln in p.stdout.splitlines() if "smallest GPU count that fits" in ln)
    n = int(line.split("fits is ")[1].split(" x ")[0])
    assert n > 2 and "TP=" in line
    # and that count really has a layout that fits
    q = cli("plan", "--preset", "llama-3-70b", "--gpus", str(n), "--gpu", "A100-80GB", "--format", "json")
    assert q.returncode == 0 and json.loads(q.stdout)[0]["layouts"]


def test_a_typed_gpu_size_the_catalogue_entry_lacks_is_an_error(cli):
    """A name with a memory size that does not match (a typo like 4OGB, or 41GB) is not silently
    the family's largest card (A100-80GB)."""
    from parallint.cli.estimate_ux import gpu_error

    for bad, hint in (("A100-4OGB", "'A100-40GB'"), ("A100-41GB", "'A100-40GB'")):
        msg = gpu_error(bad)
        assert msg is not None and msg.startswith(f"unknown GPU '{bad}'") and hint in msg, msg
    for good in ("A100-40GB", "A100", "a100", "NVIDIA-A100-SXM4-80GB", "h100-sxm5-80gb", "A10G", "MI300X"):
        assert gpu_error(good) is None, good
    p = cli("plan", "--preset", "llama-3-8b", "--gpus", "8", "--gpu", "A100-4OGB")
    assert p.returncode == 2 and len(p.stderr.splitlines()) == 1 and "did you mean 'A100-40GB'" in p.stderr
