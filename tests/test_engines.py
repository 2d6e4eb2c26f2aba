"""The other engines of distributed training (issue 28), end to end through the CLI: TensorFlow's
tf.distribute (TFD001-TFD004, Kubeflow TFJob), PyTorch RPC (PG006, PG007) and Horovod (LCH021 on
horovodrun / mpirun / MPIJob slots; DAT001, CKP001 and PG005 on Horovod scripts).

Each engine has a clean twin shaped like its own documented recipe (TensorFlow's Keras and
custom-training-loop distribution tutorials, Kubeflow's TFJob and MPIJob examples, Horovod's
PyTorch MNIST example, PyTorch's RPC parameter-server example): written here, silent. The planted
variants differ from the twin by one mistake."""

from __future__ import annotations

import json

import pytest

from conftest import write_tree


def _check(cli, tmp_path, files: dict[str, str], *paths: str):
    (tmp_path / ".git").mkdir(exist_ok=True)
    write_tree(tmp_path, files)
    res = cli("check", "--no-cache", "--format", "json", *(paths or (".",)), cwd=tmp_path)
    found = json.loads(res.stdout)
    found = found["diagnostics"] if isinstance(found, dict) else found
    return sorted((d["code"], d["path"], d["line"], d["severity"]) for d in found), found


# --------------------------------------------------------------------------- TensorFlow
KERAS_MULTI_WORKER = """\
import json
import os

import tensorflow as tf

per_worker_batch = 64
cluster = json.loads(os.environ["TF_CONFIG"])["cluster"]
workers = len(cluster.get("worker", [])) + len(cluster.get("chief", []))
strategy = tf.distribute.{strategy}
global_batch = per_worker_batch * workers


def make_dataset(batch):
    (x, y), _ = tf.keras.datasets.mnist.load_data()
    return tf.data.Dataset.from_tensor_slices((x / 255.0, y)).shuffle(60000).repeat().batch(batch)


def make_model():
    model = tf.keras.Sequential([
        tf.keras.layers.InputLayer(input_shape=(28, 28)),
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(128, activation="relu"),
        tf.keras.layers.Dense(10),
    ])
    model.compile(loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  optimizer=tf.keras.optimizers.SGD(learning_rate=0.001), metrics=["accuracy"])
    return model


dataset = make_dataset(global_batch)
{build}
model.fit(dataset, epochs=3, steps_per_epoch=70)
"""
IN_SCOPE = "with strategy.scope():\n    model = make_model()"

TFJOB = """\
apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: multi-worker
spec:
  runPolicy:
    cleanPodPolicy: None
  tfReplicaSpecs:
    Chief:
      replicas: 1
      restartPolicy: OnFailure
      template:
        spec:
          containers:
            - name: tensorflow
              image: registry.example.com/mnist:latest
              command: ["python", "train.py"]
              resources:
                limits:
                  nvidia.com/gpu: {gpus}
    Worker:
      replicas: {workers}
      restartPolicy: OnFailure
      template:
        spec:
          containers:
            - name: tensorflow
              image: registry.example.com/mnist:latest
              command: ["python", "train.py"]
              resources:
                limits:
                  nvidia.com/gpu: {gpus}
"""


def test_the_keras_multi_worker_recipe_in_a_tfjob_is_clean(cli, tmp_path):
    got, _ = _check(cli, tmp_path, {
        "tfjob.yaml": TFJOB.format(gpus=2, workers=3),
        "train.py": KERAS_MULTI_WORKER.format(strategy="MultiWorkerMirroredStrategy()", build=IN_SCOPE),
    })
    assert got == []


def test_the_tfjob_is_read_with_its_replicas_and_linked_to_its_script(cli, tmp_path):
    (tmp_path / ".git").mkdir()
    write_tree(tmp_path, {"tfjob.yaml": TFJOB.format(gpus=2, workers=3),
                          "train.py": KERAS_MULTI_WORKER.format(strategy="MirroredStrategy()", build=IN_SCOPE)})
    shown = cli("show", "tfjob.yaml", cwd=tmp_path).stdout
    assert "# files: tfjob.yaml, train.py" in shown
    assert "gpus_per_node_requested: 2  # tfjob.yaml:20 TFJob Chief resources.limits.nvidia.com/gpu" in shown
    assert "world_size" not in shown and "nodes:" not in shown  # TensorFlow processes, not torch ranks


def test_a_mirrored_strategy_in_a_multi_worker_tfjob(cli, tmp_path):
    got, found = _check(cli, tmp_path, {
        "tfjob.yaml": TFJOB.format(gpus=2, workers=3),
        "train.py": KERAS_MULTI_WORKER.format(strategy="MirroredStrategy()", build=IN_SCOPE),
    })
    assert got == [("TFD003", "train.py", 9, "error")]
    assert "the TFJob starts 4 training pods (Chief 1 + Worker 3)" in found[0]["message"]
    assert {r["path"] for r in found[0]["related"]} == {"tfjob.yaml"}


def test_a_mirrored_strategy_in_a_one_pod_tfjob_is_the_recipe(cli, tmp_path):
    one = TFJOB.format(gpus=2, workers=0).replace("      replicas: 0\n", "      replicas: 0\n")
    got, _ = _check(cli, tmp_path, {
        "tfjob.yaml": one,
        "train.py": KERAS_MULTI_WORKER.format(strategy="MirroredStrategy()", build=IN_SCOPE),
    })
    assert got == []


@pytest.mark.parametrize("devices,gpus,expected", [
    ('["/gpu:0", "/gpu:1"]', 2, []),
    ('["/gpu:0", "/gpu:1", "/gpu:2", "/gpu:3"]', 2, [("TFD004", "train.py", 9, "error")]),
    ('["GPU:1", "GPU:2"]', 2, [("TFD004", "train.py", 9, "error")]),  # index 2 of 2 GPUs
    ('["/job:localhost/replica:0/task:0/device:GPU:0", "/cpu:0"]', 1, []),
    ("gpu_list", 1, []),  # not a literal: unknown
])
def test_mirrored_devices_against_the_pods_gpus(cli, tmp_path, devices, gpus, expected):
    got, _ = _check(cli, tmp_path, {
        "tfjob.yaml": TFJOB.format(gpus=gpus, workers=0),
        "train.py": KERAS_MULTI_WORKER.format(strategy=f"MirroredStrategy(devices={devices})", build=IN_SCOPE),
    })
    assert got == expected


@pytest.mark.parametrize("build,expected", [
    (IN_SCOPE, []),
    ("model = make_model()", [("TFD001", "train.py", 31, "warning")]),  # the scope never entered
    ("with strategy.scope():\n    pass\nmodel = make_model()", [("TFD001", "train.py", 33, "warning")]),
    ("if os.environ.get('EVAL'):\n    model = make_model()\nelse:\n    with strategy.scope():\n"
     "        model = make_model()", []),  # built under a condition the strategy is not: unknown
])
def test_a_model_built_outside_the_strategy_scope(cli, tmp_path, build, expected):
    got, found = _check(cli, tmp_path, {
        "train.py": KERAS_MULTI_WORKER.format(strategy="MultiWorkerMirroredStrategy()", build=build)}, "train.py")
    assert got == expected
    if expected:
        assert found[0]["message"].startswith("make_model(...) builds the model")


CUSTOM_LOOP = """\
import tensorflow as tf

strategy = tf.distribute.MirroredStrategy()
BATCH_PER_REPLICA = 64
GLOBAL_BATCH_SIZE = BATCH_PER_REPLICA * strategy.num_replicas_in_sync

with strategy.scope():
    model = tf.keras.Sequential([tf.keras.layers.Flatten(), tf.keras.layers.Dense(10)])
    optimizer = tf.keras.optimizers.Adam()
    loss_object = tf.keras.losses.SparseCategoricalCrossentropy(
        from_logits=True, reduction=tf.keras.losses.Reduction.NONE)


def compute_loss(labels, predictions):
    per_example_loss = loss_object(labels, predictions)
    {reduce}


def train_step(inputs):
    images, labels = inputs
    with tf.GradientTape() as tape:
        predictions = model(images, training=True)
        loss = compute_loss(labels, predictions)
    gradients = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(gradients, model.trainable_variables))
    return loss


@tf.function
def distributed_train_step(dist_inputs):
    per_replica_losses = strategy.run(train_step, args=(dist_inputs,))
    return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica_losses, axis=None)


dist_dataset = strategy.experimental_distribute_dataset(dataset)
for epoch in range(10):
    for batch in dist_dataset:
        distributed_train_step(batch)
"""


@pytest.mark.parametrize("reduce,expected", [
    ("return tf.nn.compute_average_loss(per_example_loss, global_batch_size=GLOBAL_BATCH_SIZE)", []),
    ("return tf.reduce_sum(per_example_loss) * (1.0 / GLOBAL_BATCH_SIZE)", []),
    ("return tf.reduce_mean(per_example_loss)", [("TFD002", "train.py", 16, "warning")]),
])
def test_the_custom_training_loop_loss(cli, tmp_path, reduce, expected):
    got, _ = _check(cli, tmp_path, {"train.py": CUSTOM_LOOP.format(reduce=reduce)}, "train.py")
    assert got == expected


# --------------------------------------------------------------------------- PyTorch RPC
RPC_PS = """\
import os

import torch.distributed.rpc as rpc


def run_parameter_server():
    print("parameter server waiting for trainers")


def run_trainer(rank):
    print(f"trainer {{rank}}")


def main():
    rank = int(os.environ["RANK"])
    world_size = {world}
    if rank == 0:
        rpc.init_rpc("parameter_server", rank=0, world_size=world_size)
        run_parameter_server()
    else:
        rpc.init_rpc(f"trainer_{{rank}}", rank=rank, world_size=world_size)
        run_trainer(rank)
    rpc.shutdown()


if __name__ == "__main__":
    main()
"""


@pytest.mark.parametrize("world,expected", [
    ('int(os.environ["WORLD_SIZE"])', []),
    ("3", []),
    ("4", [("PG006", "rpc_ps.py", 18, "error"), ("PG006", "rpc_ps.py", 21, "error")]),
])
def test_rpc_world_size_against_torchrun(cli, tmp_path, world, expected):
    got, found = _check(cli, tmp_path, {"run.sh": "#!/bin/bash\ntorchrun --nnodes 1 --nproc_per_node 3 rpc_ps.py\n",
                                        "rpc_ps.py": RPC_PS.format(world=world)})
    assert got == expected
    if expected:
        assert "the RPC rendezvous waits for 4 workers" in found[0]["message"]


def test_rpc_and_a_process_group_of_another_size_on_one_rendezvous(cli, tmp_path):
    script = ("import os\nimport torch.distributed as dist\nimport torch.distributed.rpc as rpc\n\n"
              "rank = int(os.environ['RANK'])\n"
              "dist.init_process_group('gloo', rank=rank, world_size={pg})\n"
              "rpc.init_rpc(f'worker{{rank}}', rank=rank, world_size=4{opts})\n")
    got, _ = _check(cli, tmp_path, {"a.py": script.format(pg=2, opts="")}, "a.py")
    assert got == [("PG007", "a.py", 7, "error")]
    got, _ = _check(cli, tmp_path, {"a.py": script.format(pg=4, opts="")}, "a.py")
    assert got == []
    own = ", rpc_backend_options=rpc.TensorPipeRpcBackendOptions(init_method='tcp://localhost:29501')"
    got, _ = _check(cli, tmp_path, {"a.py": script.format(pg=2, opts=own)}, "a.py")
    assert got == []


# --------------------------------------------------------------------------- Horovod
HVD_MNIST = """\
import torch
import torch.nn.functional as F
import torch.utils.data.distributed
from torchvision import datasets, transforms

import horovod.torch as hvd

hvd.init()
torch.cuda.set_device(hvd.local_rank())
torch.set_num_threads(1)

train_dataset = datasets.MNIST("data-%d" % hvd.rank(), train=True, download=True,
                               transform=transforms.ToTensor())
{loader}

model = Net().cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01 * hvd.size(), momentum=0.5)
hvd.broadcast_parameters(model.state_dict(), root_rank=0)
hvd.broadcast_optimizer_state(optimizer, root_rank=0)
optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters(),
                                     compression=hvd.Compression.none)


def metric_average(val, name):
    return hvd.allreduce(torch.tensor(val), name=name).item()


for epoch in range(1, 11):
    {set_epoch}
    for data, target in train_loader:
        optimizer.zero_grad()
        F.nll_loss(model(data.cuda()), target.cuda()).backward()
        optimizer.step()
    {average}
    {save}
"""
SAMPLED = ("train_sampler = torch.utils.data.distributed.DistributedSampler(\n"
           "    train_dataset, num_replicas=hvd.size(), rank=hvd.rank())\n"
           "train_loader = torch.utils.data.DataLoader(train_dataset, batch_size=64, sampler=train_sampler)")
GOOD = dict(loader=SAMPLED, set_epoch="train_sampler.set_epoch(epoch)", average="acc = metric_average(0.9, 'acc')",
            save="if hvd.rank() == 0:\n        torch.save(model.state_dict(), f'checkpoint-{epoch}.pt')")


def _hvd(**change):
    return HVD_MNIST.format(**{**GOOD, **change})


@pytest.mark.parametrize("change,expected", [
    ({}, []),
    # (the recipe's per-rank download folder, "data-%d" % hvd.rank(), reads as a per-rank split: a
    # loader of another dataset here)
    ({"loader": "train_loader = torch.utils.data.DataLoader(datasets.MNIST('data', train=True), batch_size=64,\n"
                "                                           shuffle=True)",
      "set_epoch": "pass"}, [("DAT001", "train.py", 14, "warning")]),
    ({"save": "torch.save(model.state_dict(), f'checkpoint-{epoch}.pt')"}, [("CKP001", "train.py", 37, "warning")]),
    ({"average": "if hvd.rank() == 0:\n        print(hvd.allreduce(torch.tensor(0.9), name='acc'))"},
     [("PG005", "train.py", 37, "error")]),
])
def test_the_existing_rules_on_a_horovod_script(cli, tmp_path, change, expected):
    got, found = _check(cli, tmp_path, {"run.sh": "#!/bin/bash\nhorovodrun -np 8 -H server1:4,server2:4 python train.py\n",
                                        "train.py": _hvd(**change)})
    assert got == expected
    if expected and expected[0][0] == "CKP001":
        assert "guard it with `if hvd.rank() == 0:`" in found[0]["message"]


@pytest.mark.parametrize("line,hostfile,expected", [
    ("horovodrun -np 8 -H server1:4,server2:4 python train.py", None, []),
    ("horovodrun -np 16 -H server1:4,server2:4 python train.py", None, [("LCH021", "run.sh", 2, "error")]),
    ("horovodrun -np 3 -H server1,server2 python train.py", None, [("LCH021", "run.sh", 2, "error")]),
    ("horovodrun -np 8 --hostfile hosts python train.py", "server1 slots=4\nserver2 slots=4\n", []),
    ("horovodrun -np 12 --hostfile hosts python train.py", "server1 slots=4\nserver2 slots=4\n",
     [("LCH021", "run.sh", 2, "error")]),
    ("horovodrun -np 12 --hostfile hosts python train.py", "server1\nserver2 slots=4\n", []),  # a slot count unknown
    ("horovodrun -np 12 --hostfile /etc/hosts.txt python train.py", None, []),  # not in the repository
    ("horovodrun -np $NP -H server1:4 python train.py", None, []),
])
def test_horovodrun_processes_against_the_slots(cli, tmp_path, line, hostfile, expected):
    files = {"run.sh": f"#!/bin/bash\n{line}\n", "train.py": _hvd()}
    if hostfile is not None:
        files["hosts"] = hostfile
    got, _ = _check(cli, tmp_path, files)
    assert got == expected


MPIJOB = """\
apiVersion: kubeflow.org/v2beta1
kind: MPIJob
metadata:
  name: pytorch-mnist-horovod
spec:
{slots}  runPolicy:
    cleanPodPolicy: Running
  mpiReplicaSpecs:
    Launcher:
      replicas: 1
      template:
        spec:
          containers:
          - image: registry.example.com/horovod-mnist:latest
            name: mpi-launcher
            command:
            - mpirun
            - -np
            - "{np}"
            - -bind-to
            - none
            - -map-by
            - slot
            - python
            - train.py
    Worker:
      replicas: 2
      template:
        spec:
          containers:
          - image: registry.example.com/horovod-mnist:latest
            name: mpi-worker
            resources:
              limits:
                nvidia.com/gpu: 4
"""


@pytest.mark.parametrize("slots,np_,expected", [
    ("  slotsPerWorker: 4\n", 8, []),
    ("  slotsPerWorker: 4\n", 16, [("LCH021", "mpijob.yaml", 20, "error")]),
    ("", 2, []),
    ("", 4, [("LCH021", "mpijob.yaml", 19, "error")]),  # slotsPerWorker defaults to 1
])
def test_mpijob_slots_against_the_launchers_np(cli, tmp_path, slots, np_, expected):
    got, found = _check(cli, tmp_path, {"mpijob.yaml": MPIJOB.format(slots=slots, np=np_), "train.py": _hvd()})
    assert got == expected
    if expected:
        assert "the MPIJob offers" in found[0]["message"]
