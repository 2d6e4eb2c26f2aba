"""LCH014: Ray Train workers (ScalingConfig GPUs per worker) against the GPUs of the RayJob's own
cluster (head + worker groups, autoscaler maxReplicas, numOfHosts, rayStartParams num-gpus)."""

from __future__ import annotations

from parallint.discover.settings import Config
from parallint.rules.lch._common import RAY_MANIFEST, RAY_SCRIPT
from parallint.engine.runner import build_jobs, check_paths

from conftest import write_tree


def _diags(tmp_path, files):
    write_tree(tmp_path, files)
    res = check_paths(["rayjob.yaml"], Config(None, tmp_path, {"select": ["LCH014"]}), cwd=tmp_path)
    assert not res.errors, res.errors
    return [(d.code, d.span.path, d.span.line) for d in res.diagnostics]


def _job(tmp_path, files):
    write_tree(tmp_path, files)
    (job,) = [j for j in build_jobs(["rayjob.yaml"], Config(None, tmp_path, {}), cwd=tmp_path) if j.launch is not None]
    return job


AUTOSCALE = RAY_MANIFEST.format(gpus=4).replace("  rayClusterSpec:\n", "  rayClusterSpec:\n    enableInTreeAutoscaling: true\n") \
    .replace("      - replicas: 2\n", "      - replicas: 1\n        minReplicas: 1\n        maxReplicas: 4\n")


def test_capacity_facts(tmp_path):
    job = _job(tmp_path, {"rayjob.yaml": RAY_MANIFEST.format(gpus=4), "train.py": RAY_SCRIPT.format(workers=8, per=1)})
    assert job.int("hardware.cluster_gpus") == 8 and job.int("hardware.node_gpus_max") == 4
    assert job.int("hardware.gpus_per_process") == 1 and job.int("parallel.world_size") == 8
    job = _job(tmp_path, {"rayjob.yaml": AUTOSCALE, "train.py": RAY_SCRIPT.format(workers=8, per=1)})
    assert job.int("hardware.cluster_gpus") == 16  # maxReplicas with the autoscaler on
    hosts = RAY_MANIFEST.format(gpus=4).replace("        groupName: gpu-group\n", "        groupName: gpu-group\n        numOfHosts: 2\n")
    assert _job(tmp_path, {"rayjob.yaml": hosts, "train.py": RAY_SCRIPT.format(workers=8, per=1)}).int(
        "hardware.cluster_gpus") == 16
    params = RAY_MANIFEST.format(gpus=4).replace("        rayStartParams: {}\n        template:\n          spec:\n"
                                                 "            containers:\n              - name: ray-worker",
                                                 "        rayStartParams: {num-gpus: \"2\"}\n        template:\n          spec:\n"
                                                 "            containers:\n              - name: ray-worker")
    assert _job(tmp_path, {"rayjob.yaml": params, "train.py": RAY_SCRIPT.format(workers=8, per=1)}).int(
        "hardware.node_gpus_max") == 2


def test_lch014_fires_and_stays_silent(tmp_path):
    assert _diags(tmp_path, {"rayjob.yaml": RAY_MANIFEST.format(gpus=4),
                             "train.py": RAY_SCRIPT.format(workers=4, per=8)}) == [("LCH014", "train.py", 10)]
    assert _diags(tmp_path, {"rayjob.yaml": RAY_MANIFEST.format(gpus=4),
                             "train.py": RAY_SCRIPT.format(workers=3, per=4)}) == [("LCH014", "train.py", 9)]
    # fits; the autoscaler's maxReplicas; unknown counts
    assert _diags(tmp_path, {"rayjob.yaml": RAY_MANIFEST.format(gpus=4), "train.py": RAY_SCRIPT.format(workers=2, per=4)}) == []
    assert _diags(tmp_path, {"rayjob.yaml": AUTOSCALE, "train.py": RAY_SCRIPT.format(workers=4, per=4)}) == []
    assert _diags(tmp_path, {"rayjob.yaml": RAY_MANIFEST.format(gpus="$(N)"),
                             "train.py": RAY_SCRIPT.format(workers=64, per=1)}) == []
    assert _diags(tmp_path, {"rayjob.yaml": RAY_MANIFEST.format(gpus=4),
                             "train.py": RAY_SCRIPT.format(workers="args.workers", per=1)}) == []
    assert _diags(tmp_path, {"rayjob.yaml": RAY_MANIFEST.format(gpus=4),
                             "train.py": RAY_SCRIPT.format(workers=64, per=0.5)}) == []
    # an existing cluster (clusterSelector): its size is not in the file
    selector = RAY_MANIFEST.format(gpus=4).split("  rayClusterSpec:")[0] + "  clusterSelector:\n    ray.io/cluster: c\n"
    assert _diags(tmp_path, {"rayjob.yaml": selector, "train.py": RAY_SCRIPT.format(workers=64, per=8)}) == []
    # use_gpu=False and no GPU resources: nothing to place on GPUs
    cpu = RAY_SCRIPT.format(workers=64, per=1).replace('use_gpu=True,', 'use_gpu=False,').replace(
        'resources_per_worker={"GPU": 1}', 'resources_per_worker={"CPU": 2}')
    assert _diags(tmp_path, {"rayjob.yaml": RAY_MANIFEST.format(gpus=4), "train.py": cpu}) == []
