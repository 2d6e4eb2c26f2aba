"""Ray: KubeRay RayJob/RayCluster manifests and Ray Train ScalingConfig/TorchTrainer in Python."""

from __future__ import annotations

from parallint.discover.settings import Config
from parallint.engine.runner import build_jobs, check_paths

from conftest import write_tree

# shaped like Ray's "Get started with PyTorch" Ray Train example
RAY_TRAIN = """\
import ray.train.torch
from ray.train import ScalingConfig
from ray.train.torch import TorchTrainer

NUM_WORKERS = {workers}


def train_func():
    model = ray.train.torch.prepare_model(None)


scaling_config = ScalingConfig(num_workers=NUM_WORKERS, use_gpu=True)
trainer = TorchTrainer(train_func, scaling_config=scaling_config)
result = trainer.fit()
"""
# shaped like KubeRay's ray-job.pytorch-mnist.yaml sample
RAYJOB = """\
apiVersion: ray.io/v1
kind: RayJob
metadata:
  name: rayjob-pytorch
spec:
  entrypoint: python train.py --tensor-model-parallel-size {tp} --pipeline-model-parallel-size 2 --num-layers 24
  runtimeEnvYAML: |
    env_vars:
      CUDA_DEVICE_MAX_CONNECTIONS: "1"
  rayClusterSpec:
    headGroupSpec:
      rayStartParams: {{}}
      template:
        spec:
          containers:
            - name: ray-head
              image: rayproject/ray:2.9.0
    workerGroupSpecs:
      - replicas: 2
        groupName: gpu-group
        rayStartParams: {{}}
        template:
          spec:
            nodeSelector:
              nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB
            containers:
              - name: ray-worker
                image: rayproject/ray:2.9.0-gpu
                resources:
                  limits:
                    nvidia.com/gpu: 4
"""


def _diags(tmp_path, files, paths):
    write_tree(tmp_path, files)
    res = check_paths(list(paths), Config(None, tmp_path, {}), cwd=tmp_path)
    assert not res.errors, res.errors
    return [(d.code, d.span.path, d.span.line) for d in res.diagnostics]


def test_rayjob_doc_shape_is_silent_and_read(tmp_path):
    files = {"rayjob.yaml": RAYJOB.format(tp=2), "train.py": RAY_TRAIN.format(workers=8)}
    assert _diags(tmp_path, files, ["rayjob.yaml", "train.py"]) == []
    (job,) = [j for j in build_jobs(["rayjob.yaml"], Config(None, tmp_path, {}), cwd=tmp_path)
              if j.launch is not None]
    assert job.launch.launcher == "python" and job.launch.wrapper.launcher == "rayjob"
    assert job.int("parallel.world_size") == 8 and job.int("hardware.gpus_per_node_requested") == 4
    assert str(job.get("hardware.gpu").value).upper().startswith("A100")


def test_planted_tp_pp_mismatch_through_rayjob(tmp_path):
    files = {"rayjob.yaml": RAYJOB.format(tp=4), "train.py": RAY_TRAIN.format(workers=4)}
    assert _diags(tmp_path, files, ["rayjob.yaml", "train.py"]) == [("LAY001", "rayjob.yaml", 6)]


def test_scaling_config_needs_literal_and_a_ray_trainer(tmp_path):
    files = {"rayjob.yaml": RAYJOB.format(tp=4),
             "train.py": RAY_TRAIN.format(workers="int(os.environ['N'])")}
    assert _diags(tmp_path, files, ["rayjob.yaml"]) == []
    no_trainer = RAY_TRAIN.format(workers=4).replace("trainer = TorchTrainer(train_func, scaling_config=scaling_config)\n"
                                                     "result = trainer.fit()\n", "")
    assert _diags(tmp_path, {"train.py": no_trainer}, ["rayjob.yaml"]) == []


def test_unreadable_runtime_env_drops_the_entrypoint(tmp_path):
    text = RAYJOB.format(tp=4).replace('      CUDA_DEVICE_MAX_CONNECTIONS: "1"', "      - [broken")
    files = {"rayjob.yaml": text, "train.py": RAY_TRAIN.format(workers=4)}
    assert _diags(tmp_path, files, ["rayjob.yaml"]) == []


def test_worker_groups_with_different_gpus_state_no_count(tmp_path):
    text = RAYJOB.format(tp=2) + """\
      - replicas: 1
        groupName: small
        template:
          spec:
            containers:
              - name: ray-worker
                image: img
                resources:
                  limits:
                    nvidia.com/gpu: 1
"""
    write_tree(tmp_path, {"rayjob.yaml": text, "train.py": RAY_TRAIN.format(workers=8)})
    (job,) = [j for j in build_jobs(["rayjob.yaml"], Config(None, tmp_path, {}), cwd=tmp_path) if j.launch is not None]
    assert job.int("hardware.gpus_per_node_requested") is None
