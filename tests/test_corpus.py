"""Every file of ../shared/corpus (397 real config files from public training repositories) goes
through the full engine: no crash, no traceback, and no finding except the real mistakes listed
below, each with the reason it is one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus"

#: (path in the corpus, code, line) -> why the file really has that mistake
EXPECTED: dict[tuple[str, str, int], str] = {
    # --- BAT002: Megatron/NeMo stop at start-up ("global batch size is not divisible by micro batch
    # size times data parallel size"). 48 nodes × 8 GPUs / (TP 8 × PP 2) = DP 24, global batch 1.
    ("NVIDIA__NeMo-Framework-Launcher/launcher_scripts/conf/training/mixtral/mixtral_8x22b.yaml", "BAT002", 50):
        "global_batch_size 1 with micro batch 1 and data-parallel size 24",
    # --- LAY005: Megatron disables sequence parallelism when TP == 1 ("Disabling sequence
    # parallelism because tensor model parallelism is disabled"): the flag has no effect.
    ("NVIDIA__Megatron-LM/tests/functional_tests/test_cases/gpt-nemo/llama3-nemo_8b_mr_mbs4_gbs64_mcore_te_tp1_pp1_cp2_dgx_a100_1N8G/model_config.yaml", "LAY005", 13):
        "trainer.strategy.sequence_parallel True with tensor_model_parallel_size 1",
    ("NVIDIA__Megatron-LM/tests/functional_tests/test_cases/gpt/gpt3_mcore_te_tp1_pp2_cp4_a2a_p2p_nondeterministic/model_config.yaml", "LAY005", 43):
        "--sequence-parallel with --tensor-model-parallel-size 1",
    ("NVIDIA__Megatron-LM/tests/functional_tests/test_cases/gpt/gpt_dynamic_inference_tp1_pp1_dp8_583m_logitsmatch_zmq/model_config.yaml", "LAY005", 26):
        "--sequence-parallel with --tensor-model-parallel-size 1",
    ("NVIDIA__Megatron-LM/tests/functional_tests/test_cases/moe/deepseek_proxy_fsdp_ep2_fsdp2/model_config.yaml", "LAY005", 43):
        "--sequence-parallel with --tensor-model-parallel-size 1",
    ("NVIDIA__NeMo-Framework-Launcher/launcher_scripts/conf/training/mixtral/mixtral_8x7b.yaml", "LAY005", 128):
        "sequence_parallel True with tensor_model_parallel_size 1 (NeMo turns it off)",
    # --- CFG001: accelerate's own fixture for its "had unknown keys" error: accelerate refuses it.
    ("huggingface__accelerate/tests/test_configs/invalid_keys.yaml", "CFG001", 14): "unknown top-level key invalid_key",
    ("huggingface__accelerate/tests/test_configs/invalid_keys.yaml", "CFG001", 15): "unknown top-level key another_invalid_key",
    # --- CFG005: the same key twice in one mapping; the YAML loader silently keeps the last one
    # (a repeat with the same value is a warning, see tests/test_config_precision.py).
    ("huggingface__accelerate/tests/test_configs/0_30_0_sagemaker.yaml", "CFG005", 5): "debug: false written twice",
    ("huggingface__nanotron/examples/config_qwen_with_moe.yaml", "CFG005", 83):
        "model_config.moe_config: null at line 66, then a second moe_config mapping at line 83",
    # --- LCH008: GPUs cannot be overcommitted; the API server rejects a pod whose nvidia.com/gpu
    # request differs from its limit ("must be equal to nvidia.com/gpu limit").
    ("kubeflow__mpi-operator/examples/v2beta1/deepspeed/deepspeed-config.yaml", "LCH008", 93):
        "Worker nvidia.com/gpu limits 2, requests 1",
}

#: findings of rules owned by other parts of parallint (memory estimator, script rules) that were
#: judged real here; allowed, not required, so that those rules can evolve on their own
ALLOWED: dict[tuple[str, str, int], str] = {
    # --- DDP001 (the script rules' config form): the file sets find_unused_parameters: true, which
    # costs an extra autograd traversal every step; the rule reports every explicit True.
    ("NVIDIA__NeMo/examples/speechlm2/conf/salm.yaml", "DDP001", 95): "trainer.strategy.find_unused_parameters: true",
}


#: findings that must NOT come back: the file is not what runs (docs/precision-policy-configs.md)
SILENT: dict[tuple[str, str, int], str] = {
    # a base config the NeMo auto_configurator rewrites (TP, PP, nodes, sequence parallelism)
    ("NVIDIA__NeMo-Framework-Launcher/auto_configurator/base_configs/gpt3.yaml", "LAY005", 93):
        "auto_configurator base config",
    # gpt-neox leaves model_parallel_size / pipe_parallel_size at 1 in every shipped config, by
    # convention (configs/README.md: "dependent on your compute setup"): not a pure-DP layout
    ("EleutherAI__gpt-neox/configs/175B.yml", "MEM001", 6): "neox parallelism left at 1 by convention",
    ("EleutherAI__gpt-neox/configs/175B.yml", "MEM002", 6): "neox parallelism left at 1 by convention",
    ("EleutherAI__gpt-neox/configs/llama2/70B.yml", "MEM001", 3): "neox parallelism left at 1 by convention",
    ("EleutherAI__gpt-neox/configs/llama2/codellama_34B.yml", "MEM001", 3): "neox parallelism left at 1 by convention",
}


def _need_corpus() -> None:
    if not CORPUS.is_dir():
        pytest.skip("../shared/corpus not present (CI-only reference data)")


@pytest.fixture(scope="module")
def cli_run():
    _need_corpus()
    env = dict(os.environ)
    proc = subprocess.run(
        # --include-tests: the corpus is a set of real config files, many from test folders
        [sys.executable, "-m", "parallint", "check", "--format", "json", "--include-tests", "."],
        cwd=CORPUS, capture_output=True, text=True, timeout=600, env=env,
    )
    return proc


def test_no_crash_no_traceback(cli_run):
    assert cli_run.returncode in (0, 1), cli_run.stderr[-2000:]
    assert "Traceback" not in cli_run.stderr, cli_run.stderr[-2000:]
    assert "internal error" not in cli_run.stderr, cli_run.stderr[-2000:]


def test_findings_are_exactly_the_real_mistakes(cli_run):
    found = json.loads(cli_run.stdout)
    got = {(d["path"], d["code"], d["line"]): d["message"] for d in found}
    unexpected = {k: v for k, v in got.items() if k not in EXPECTED and k not in ALLOWED}
    missing = {k: v for k, v in EXPECTED.items() if k not in got}
    back = {k: why for k, why in SILENT.items() if k in got}
    assert not back, f"findings on configs that do not run as written: {back}"
    assert not unexpected, "findings on real files that are not known mistakes:\n" + "\n".join(
        f"{p}:{line}: {c} {m}" for (p, c, line), m in sorted(unexpected.items()))
    assert not missing, "known mistakes not reported:\n" + "\n".join(
        f"{p}:{line}: {c} ({why})" for (p, c, line), why in sorted(missing.items()))


def test_no_parse_errors_on_real_files(cli_run):
    found = json.loads(cli_run.stdout)
    assert not [d for d in found if d["code"] == "SYN001"]


def test_every_config_file_is_read():
    """The corpus files the manifest marks as framework configs are classified and read."""
    _need_corpus()
    from parallint.discover.classify import classify

    rows = [line.split("\t") for line in (CORPUS / "MANIFEST.tsv").read_text().splitlines()[1:] if line.strip()]
    expect = {"deepspeed": "deepspeed", "torchtitan": "torchtitan", "accelerate": "accelerate"}
    for row in rows:
        path, kind = row[0], row[5]
        if kind in expect and not path.endswith(".template"):
            text = (CORPUS / path).read_text(encoding="utf-8", errors="replace")
            assert classify(path, text) == expect[kind], path
