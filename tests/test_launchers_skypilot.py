"""SkyPilot task YAML: num_nodes, resources.accelerators, envs and the run script as one launch."""

from __future__ import annotations

from parallint.discover.settings import Config
from parallint.engine.runner import build_jobs, check_paths

from conftest import write_tree

# shaped like SkyPilot's docs "Distributed jobs" torchrun example
TASK = """\
name: minGPT-ddp

resources:
  accelerators: {acc}

num_nodes: {nodes}

envs:
  TP: {tp}
  PP: 2

setup: |
  pip install -r requirements.txt

run: |
  cd examples
  MASTER_ADDR=$(echo "$SKYPILOT_NODE_IPS" | head -n1)
  torchrun \\
    --nnodes={nnodes} \\
    --nproc_per_node=$SKYPILOT_NUM_GPUS_PER_NODE \\
    --master_addr=$MASTER_ADDR \\
    --master_port=8008 \\
    --node_rank=${{SKYPILOT_NODE_RANK}} \\
    pretrain_gpt.py --tensor-model-parallel-size $TP --pipeline-model-parallel-size $PP \\
    --num-layers 32 --micro-batch-size 1 --global-batch-size 64
"""


def _task(acc="A100:8", nodes=2, tp=4, nnodes="$SKYPILOT_NUM_NODES"):
    return TASK.format(acc=acc, nodes=nodes, tp=tp, nnodes=nnodes)


def _diags(tmp_path, text, select=("LAY001", "LCH001", "LCH002", "LCH006")):
    write_tree(tmp_path, {"sky.yaml": text})
    res = check_paths(["sky.yaml"], Config(None, tmp_path, {"select": list(select)}), cwd=tmp_path)
    assert not res.errors, res.errors
    return [(d.code, d.span.line) for d in res.diagnostics]


def _job(tmp_path, text):
    write_tree(tmp_path, {"sky.yaml": text})
    (job,) = build_jobs(["sky.yaml"], Config(None, tmp_path, {}), cwd=tmp_path)
    return job


def test_doc_example_is_silent_and_read(tmp_path):
    assert _diags(tmp_path, _task()) == []
    job = _job(tmp_path, _task())
    assert job.launch.launcher == "torchrun" and job.launch.wrapper.launcher == "skypilot"
    assert job.int("parallel.nodes") == 2 and job.int("parallel.procs_per_node") == 8
    assert job.get("hardware.gpu").value == "A100" and job.int("parallel.tp") == 4


def test_planted_tp_pp_mismatch_reported(tmp_path):
    # TP 16 × PP 2 = 32 GPUs per replica on 2 nodes × 8
    assert [c for c, _ in _diags(tmp_path, _task(tp=16))] == ["LAY001"]


def test_num_nodes_against_launcher_and_gpus(tmp_path):
    assert [c for c, _ in _diags(tmp_path, _task(nnodes="4"))] == ["LCH001"]
    text = _task(acc="A100:4").replace("$SKYPILOT_NUM_GPUS_PER_NODE", "8")
    assert [c for c, _ in _diags(tmp_path, text)] == ["LCH002"]


def test_accelerator_choices(tmp_path):
    same = _job(tmp_path, _task(acc="{A100:8, H100:8}"))
    assert same.int("hardware.gpus_per_node_requested") == 8 and same.get("hardware.gpu") is None
    listed = _job(tmp_path, _task(acc="[A100:8, H100:8]"))
    assert listed.int("parallel.procs_per_node") == 8
    mixed = _job(tmp_path, _task(acc="{A100: 8, V100: 4}"))
    assert mixed.int("parallel.procs_per_node") is None and mixed.int("hardware.gpus_per_node_requested") is None
    assert _diags(tmp_path, _task(acc="{A100: 8, V100: 4}", tp=16)) == []


def test_unknown_num_nodes_and_env_stay_silent(tmp_path):
    text = _task(tp=16).replace("num_nodes: 2", "num_nodes: ${NODES}")
    assert _diags(tmp_path, text) == []
    text = _task(tp=16).replace("  TP: 16", "  TP:")  # passed with `sky launch --env TP=...`
    assert _diags(tmp_path, text) == []


def test_loopback_master_on_two_nodes(tmp_path):
    text = _task().replace("--master_addr=$MASTER_ADDR", "--master_addr=127.0.0.1")
    assert [c for c, _ in _diags(tmp_path, text)] == ["LCH006"]


def test_not_a_task(tmp_path):
    write_tree(tmp_path, {"conf.yaml": "run:\n  name: x\n  results_dir: /tmp\nresources:\n  gpus: 8\n"})
    res = check_paths(["conf.yaml"], Config(None, tmp_path, {}), cwd=tmp_path)
    assert res.files_checked == 0 or all(j.launch is None for j in res.jobs)


def test_cli_end_to_end(tmp_path, cli):
    write_tree(tmp_path, {"sky.yaml": _task(tp=16)})
    p = cli("check", "--select", "LAY001", "sky.yaml", cwd=tmp_path)
    assert "Traceback" not in p.stderr and p.returncode == 1
    assert p.stdout.splitlines()[0].startswith("sky.yaml:") and " LAY001 " in p.stdout
    show = cli("show", "sky.yaml", cwd=tmp_path)
    assert show.returncode == 0 and "SkyPilot num_nodes" in show.stdout
