"""Notebooks exported as ``.py`` files (Jupyter, Databricks) hold IPython shell and magic lines
(``!deepspeed ...``, ``%pip install``) that are not Python. databrickslabs/dolly's
``train_dolly.py`` was a false SYN001 error on the first run over set H; such a file is checked
as the Python around those lines, with its own line numbers."""

from __future__ import annotations

from conftest import write_tree

NOTEBOOK = """# Databricks notebook source
# MAGIC %md
# MAGIC ## Train

# COMMAND ----------

%pip install -r requirements.txt

# COMMAND ----------

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

if torch.cuda.is_available():
    !nvidia-smi
dist.init_process_group("nccl")
torch.cuda.set_device(0)
model = DDP(torch.nn.Linear(2, 2).cuda(), find_unused_parameters=True)

!deepspeed --num_gpus 8 \\
    --module training.trainer \\
    --deepspeed {ds_config}
"""


def test_a_notebook_source_is_checked_around_its_magic_lines(tmp_path, cli):
    write_tree(tmp_path, {"train_nb.py": NOTEBOOK})
    (tmp_path / ".git").mkdir()
    r = cli("check", "train_nb.py", "--no-cache", cwd=tmp_path)
    assert "SYN001" not in r.stdout, r.stdout
    assert "train_nb.py:19:" in r.stdout and "DDP001" in r.stdout


def test_a_syntax_error_elsewhere_is_still_reported(tmp_path, cli):
    write_tree(tmp_path, {"train_nb.py": NOTEBOOK + "def broken(:\n    pass\n"})
    (tmp_path / ".git").mkdir()
    r = cli("check", "train_nb.py", "--no-cache", cwd=tmp_path)
    assert "SYN001" in r.stdout and f"train_nb.py:{NOTEBOOK.count(chr(10)) + 1}:" in r.stdout


def test_a_percent_continuation_is_not_a_magic(tmp_path, cli):
    """A line that starts with % inside brackets is Python (string formatting)."""
    text = ('import torch.distributed as dist\nmsg = ("rank %d"\n       % 3)\n'
            'dist.init_process_group("gloo")\nprint(msg)\n')
    write_tree(tmp_path, {"ok.py": text})
    (tmp_path / ".git").mkdir()
    r = cli("check", "ok.py", "--no-cache", cwd=tmp_path)
    assert "SYN001" not in r.stdout
