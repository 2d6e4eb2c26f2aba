"""Issue 23 item 10: absurd integers on launch lines and in JSON must not crash the check."""
import json
import subprocess
import sys
from pathlib import Path

BIG = "7" * 5000


def _check(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "parallint", "check", "--no-cache", "--format", "json", str(root)],
                          capture_output=True, text=True, timeout=120)


def test_huge_nnodes_on_launch_line_is_unknown_not_a_crash(tmp_path):
    (tmp_path / "train.py").write_text("import torch\n")
    (tmp_path / "run.sh").write_text(f"torchrun --nnodes={BIG} --nproc_per_node={BIG} train.py\n")
    r = _check(tmp_path)
    assert r.returncode in (0, 1), r.stderr[-2000:]
    assert "Traceback" not in r.stderr


def test_small_nnodes_twin_still_parses(tmp_path):
    (tmp_path / "train.py").write_text("import torch\n")
    (tmp_path / "run.sh").write_text("torchrun --nnodes=2 --nproc_per_node=8 train.py\n")
    r = _check(tmp_path)
    assert r.returncode in (0, 1), r.stderr[-2000:]


def test_long_json_integer_is_not_a_syntax_error(tmp_path):
    (tmp_path / "ds_config.json").write_text('{"train_batch_size": 8, "steps_per_print": ' + BIG + "}\n")
    r = _check(tmp_path)
    assert r.returncode in (0, 1), r.stderr[-2000:]
    codes = [f.get("code") for f in json.loads(r.stdout or "[]")] if r.stdout.strip().startswith("[") else []
    assert "SYN001" not in r.stdout, codes


def test_product_of_long_counts_does_not_crash_pg003(tmp_path):
    # 2,500 digits each: parses, but the product printed in a message exceeds the 4,300-digit limit (exit 2 on main)
    half = "7" * 2500
    (tmp_path / "train.py").write_text("import torch\n")
    (tmp_path / "ds.json").write_text('{"train_batch_size": 7, "train_micro_batch_size_per_gpu": 3, '
                                      '"gradient_accumulation_steps": 1}\n')
    (tmp_path / "run.sh").write_text(f"torchrun --nnodes={half} --nproc_per_node={half} train.py --deepspeed ds.json\n")
    r = _check(tmp_path)
    assert r.returncode in (0, 1), r.stderr[-2000:]
