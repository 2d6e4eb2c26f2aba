"""Environment-prefixed wrapper scripts: `CUDA_VISIBLE_DEVICES=2,3 NGPU=2 ./run_train.sh` follows the
variables into the script it runs; loopback rendezvous endpoints are one node."""

from __future__ import annotations

from parallint.discover.settings import Config
from parallint.engine.runner import build_jobs, check_paths

from conftest import write_tree

# shaped like torchtitan's run_train.sh and its debug config
RUN_TRAIN = """\
#!/usr/bin/bash
set -ex
NGPU=${NGPU:-"8"}
export LOG_RANK=${LOG_RANK:-0}
CONFIG_FILE=${CONFIG_FILE:-"./llama3_debug.toml"}
torchrun --nproc_per_node=${NGPU} --rdzv_backend c10d --rdzv_endpoint="localhost:0" \\
  --local-ranks-filter ${LOG_RANK} --role rank --tee 3 \\
  -m torchtitan.train --job.config_file ${CONFIG_FILE} "$@"
"""
TOML = """\
[job]
dump_folder = "./outputs"

[model]
name = "llama3"
flavor = "debugmodel"

[parallelism]
data_parallel_replicate_degree = 1
data_parallel_shard_degree = -1
tensor_parallel_degree = 4
"""


def _diags(tmp_path, files, paths, select=("LAY001", "ENV002", "LCH002")):
    write_tree(tmp_path, files)
    res = check_paths(list(paths), Config(None, tmp_path, {"select": list(select)}), cwd=tmp_path)
    assert not res.errors, res.errors
    return sorted((d.code, d.span.path, d.span.line) for d in res.diagnostics)


def test_default_ngpu_is_silent(tmp_path):
    files = {"run_train.sh": RUN_TRAIN, "llama3_debug.toml": TOML}
    assert _diags(tmp_path, files, ["run_train.sh"]) == []


def test_prefix_variables_reach_the_called_script(tmp_path):
    files = {"run_train.sh": RUN_TRAIN, "llama3_debug.toml": TOML, "launch.sh": "#!/bin/bash\nNGPU=2 ./run_train.sh\n"}
    assert _diags(tmp_path, files, ["launch.sh"]) == [("LAY001", "llama3_debug.toml", 11)]
    files["launch.sh"] = "#!/bin/bash\nexport NGPU=4\nbash run_train.sh --training.steps 10\n"
    assert _diags(tmp_path, files, ["launch.sh"]) == []
    (job,) = [j for j in build_jobs(["launch.sh"], Config(None, tmp_path, {}), cwd=tmp_path) if j.launch is not None]
    assert job.int("parallel.procs_per_node") == 4


def test_visible_devices_bound_the_processes(tmp_path):
    files = {"run_train.sh": RUN_TRAIN, "llama3_debug.toml": TOML,
             "launch.sh": "#!/bin/bash\nCUDA_VISIBLE_DEVICES=2,3 NGPU=4 ./run_train.sh\n"}
    assert _diags(tmp_path, files, ["launch.sh"]) == [("ENV002", "launch.sh", 2)]


def test_cycles_and_schedulers(tmp_path):
    files = {"a.sh": "#!/bin/bash\n# train\n./b.sh\n", "b.sh": "#!/bin/bash\n./a.sh\ntorchrun --nproc_per_node 2 train.py\n"}
    write_tree(tmp_path, files)
    jobs = [j for j in build_jobs(["a.sh"], Config(None, tmp_path, {}), cwd=tmp_path) if j.launch is not None]
    assert len(jobs) == 1 and jobs[0].int("parallel.procs_per_node") == 2
    # under #SBATCH the called script runs with the allocation's variables: not followed
    files = {"run_train.sh": RUN_TRAIN, "llama3_debug.toml": TOML,
             "job.sbatch": "#!/bin/bash\n#SBATCH --nodes=1\nNGPU=2 ./run_train.sh\n"}
    assert _diags(tmp_path, files, ["job.sbatch"]) == []
