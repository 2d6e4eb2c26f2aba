"""The other engines (issue 28), the rules added last, end to end through the CLI: TF_CONFIG
(TFD005), the global batch of tf.distribute (TFD006), Horovod's backward_passes_per_step (DDP006),
an optimizer wrapped twice (DDP007) and a learning rate scaled twice (DDP008).

Each planted mistake has a clean twin shaped like the engine's documented recipe (TensorFlow's
multi-worker and custom-training-loop tutorials, a Kubeflow TFJob, Horovod's PyTorch ImageNet
and Keras examples), written here: the twin is silent, the variant differs by the one mistake."""

from __future__ import annotations

import json

from conftest import write_tree


def _check(cli, tmp_path, files: dict[str, str]):
    (tmp_path / ".git").mkdir(exist_ok=True)
    write_tree(tmp_path, files)
    res = cli("check", "--no-cache", "--format", "json", ".", cwd=tmp_path)
    found = json.loads(res.stdout)
    found = found["diagnostics"] if isinstance(found, dict) else found
    return sorted((d["code"], d["path"], d["line"], d["severity"]) for d in found), found


NEW = ("TFD005", "TFD006", "DDP006", "DDP007", "DDP008")


def _new(got):
    return [g for g in got if g[0] in NEW]


# --------------------------------------------------------------------------- TF_CONFIG
MWMS_SCRIPT = """\
import tensorflow as tf

strategy = tf.distribute.MultiWorkerMirroredStrategy()
per_worker_batch_size = 64
global_batch_size = per_worker_batch_size * strategy.num_replicas_in_sync
with strategy.scope():
    model = tf.keras.Sequential([tf.keras.layers.Flatten(input_shape=(28, 28)), tf.keras.layers.Dense(10)])
    model.compile(loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  optimizer=tf.keras.optimizers.SGD(learning_rate=0.001), metrics=["accuracy"])
(x, y), _ = tf.keras.datasets.mnist.load_data()
dataset = tf.data.Dataset.from_tensor_slices((x / 255.0, y)).shuffle(60000).repeat().batch(global_batch_size)
model.fit(dataset, epochs=3, steps_per_epoch=70)
"""


def _worker_scripts(index_of_last: int) -> dict[str, str]:
    """One launch script per machine, as TensorFlow's multi-worker tutorial starts two workers."""
    files = {"train.py": MWMS_SCRIPT}
    for i, idx in enumerate((0, index_of_last)):
        files[f"launch/worker{i}.sh"] = (
            "#!/bin/bash\nset -e\n"
            f"export TF_CONFIG='{{\"cluster\": {{\"worker\": [\"10.0.0.1:12345\", \"10.0.0.2:12345\"]}}, "
            f"\"task\": {{\"type\": \"worker\", \"index\": {idx}}}}}'\n"
            "python train.py\n")
    return files


def test_tf_config_index_past_the_workers(cli, tmp_path):
    got, found = _check(cli, tmp_path, _worker_scripts(2))
    assert _new(got) == [("TFD005", "launch/worker1.sh", 3, "error")]
    msg = next(d["message"] for d in found if d["code"] == "TFD005")
    assert "worker 2" in msg and "2 worker tasks" in msg


def test_tf_config_twin_each_worker_its_index(cli, tmp_path):
    got, _ = _check(cli, tmp_path, _worker_scripts(1))
    assert _new(got) == []


def _tfjob_writing_tf_config(workers_in_script: int, index: str = "0") -> dict[str, str]:
    hosts = ", ".join(f'"mnist-worker-{i}:2222"' for i in range(workers_in_script))
    return {
        "k8s/tfjob.yaml": """\
apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: mnist
spec:
  tfReplicaSpecs:
    Worker:
      replicas: 3
      restartPolicy: OnFailure
      template:
        spec:
          containers:
            - name: tensorflow
              image: registry.example.com/mnist:1.0
              command: ["python", "train.py"]
""",
        "train.py": ("import json\nimport os\n\n"
                     'os.environ["TF_CONFIG"] = json.dumps({\n'
                     f'    "cluster": {{"worker": [{hosts}]}},\n'
                     f'    "task": {{"type": "worker", "index": {index}}},\n'
                     "})\n\n" + MWMS_SCRIPT),
    }


def test_script_tf_config_other_cluster_than_the_tfjob(cli, tmp_path):
    got, found = _check(cli, tmp_path, _tfjob_writing_tf_config(2, 'int(os.environ.get("WORKER_INDEX", 0))'))
    assert _new(got) == [("TFD005", "train.py", 4, "error")]
    msg = next(d["message"] for d in found if d["code"] == "TFD005")
    assert "2 chief + worker tasks" in msg and "3 training pods" in msg


def test_script_tf_config_twin_same_cluster(cli, tmp_path):
    got, _ = _check(cli, tmp_path, _tfjob_writing_tf_config(3, 'int(os.environ.get("WORKER_INDEX", 0))'))
    assert _new(got) == []


def test_tf_config_two_chiefs_in_a_manifest(cli, tmp_path):
    job = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: tf-chief
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: tensorflow
          image: registry.example.com/mnist:1.0
          command: ["python", "train.py"]
          env:
            - name: TF_CONFIG
              value: '{"cluster": {"chief": ["tf-chief:2222", "tf-chief-b:2222"], "worker": ["tf-worker-0:2222"]}, "task": {"type": "chief", "index": 0}}'
"""
    got, _ = _check(cli, tmp_path, {"job.yaml": job, "train.py": MWMS_SCRIPT})
    assert [g[:2] for g in _new(got)] == [("TFD005", "job.yaml")]
    twin = job.replace('"tf-chief:2222", "tf-chief-b:2222"', '"tf-chief:2222"')
    got, _ = _check(cli, tmp_path, {"job.yaml": twin, "train.py": MWMS_SCRIPT})
    assert _new(got) == []


def test_tf_config_built_at_run_time_is_silent(cli, tmp_path):
    script = ("import json\nimport os\nimport sys\n\n"
              'os.environ["TF_CONFIG"] = json.dumps({"cluster": {"worker": sys.argv[1].split(",")},\n'
              '                                      "task": {"type": "worker", "index": int(sys.argv[2])}})\n\n'
              + MWMS_SCRIPT)
    got, _ = _check(cli, tmp_path, {"train.py": script})
    assert _new(got) == []


# --------------------------------------------------------------------------- the global batch
CTL = """\
import tensorflow as tf

strategy = tf.distribute.MirroredStrategy()
BUFFER_SIZE = 60000
BATCH_SIZE_PER_REPLICA = 64
GLOBAL_BATCH_SIZE = BATCH_SIZE_PER_REPLICA * strategy.num_replicas_in_sync
EPOCHS = 10

(train_images, train_labels), _ = tf.keras.datasets.fashion_mnist.load_data()
train_dataset = tf.data.Dataset.from_tensor_slices((train_images, train_labels)).shuffle(BUFFER_SIZE).batch({batch})
train_dist_dataset = strategy.experimental_distribute_dataset(train_dataset)

with strategy.scope():
    loss_object = tf.keras.losses.SparseCategoricalCrossentropy(
        from_logits=True, reduction=tf.keras.losses.Reduction.NONE)

    def compute_loss(labels, predictions):
        per_example_loss = loss_object(labels, predictions)
        return tf.nn.compute_average_loss(per_example_loss, global_batch_size={loss_batch})

    model = tf.keras.Sequential([tf.keras.layers.Flatten(), tf.keras.layers.Dense(10)])
    optimizer = tf.keras.optimizers.Adam()


def train_step(inputs):
    images, labels = inputs
    with tf.GradientTape() as tape:
        loss = compute_loss(labels, model(images, training=True))
    gradients = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(gradients, model.trainable_variables))
    return loss


@tf.function
def distributed_train_step(dataset_inputs):
    per_replica_losses = strategy.run(train_step, args=(dataset_inputs,))
    return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica_losses, axis=None)


for epoch in range(EPOCHS):
    for x in train_dist_dataset:
        distributed_train_step(x)
"""


def test_dataset_batched_per_replica(cli, tmp_path):
    got, found = _check(cli, tmp_path, {"train.py": CTL.format(batch="BATCH_SIZE_PER_REPLICA",
                                                                 loss_batch="GLOBAL_BATCH_SIZE")})
    assert _new(got) == [("TFD006", "train.py", 10, "warning")]
    msg = next(d["message"] for d in found if d["code"] == "TFD006")
    assert msg.endswith("use .batch(BATCH_SIZE_PER_REPLICA * strategy.num_replicas_in_sync)")


def test_loss_averaged_over_the_per_replica_batch(cli, tmp_path):
    got, _ = _check(cli, tmp_path, {"train.py": CTL.format(batch="GLOBAL_BATCH_SIZE",
                                                             loss_batch="BATCH_SIZE_PER_REPLICA")})
    assert _new(got) == [("TFD006", "train.py", 19, "warning")]


def test_global_batch_twin_of_the_tutorial(cli, tmp_path):
    got, _ = _check(cli, tmp_path, {"train.py": CTL.format(batch="GLOBAL_BATCH_SIZE", loss_batch="GLOBAL_BATCH_SIZE")})
    assert _new(got) == []


def test_batch_name_without_evidence_is_silent(cli, tmp_path):
    # `batch_size` says neither per replica nor global: nothing to prove
    got, _ = _check(cli, tmp_path, {"train.py": CTL.format(batch="args.batch_size", loss_batch="args.batch_size")})
    assert _new(got) == []


# --------------------------------------------------------------------------- Horovod
HVD_IMAGENET = """\
import argparse

import torch
import torch.nn.functional as F
import torch.utils.data.distributed
import horovod.torch as hvd
from torchvision import datasets, models, transforms

parser = argparse.ArgumentParser()
parser.add_argument("--batches-per-allreduce", type=int, default=4)
parser.add_argument("--base-lr", type=float, default=0.0125)
args = parser.parse_args()
allreduce_batch_size = 32 * args.batches_per_allreduce

hvd.init()
torch.cuda.set_device(hvd.local_rank())
train_dataset = datasets.ImageFolder("/data/train", transform=transforms.ToTensor())
train_sampler = torch.utils.data.distributed.DistributedSampler(train_dataset, num_replicas=hvd.size(), rank=hvd.rank())
train_loader = torch.utils.data.DataLoader(train_dataset, batch_size=allreduce_batch_size, sampler=train_sampler)
model = models.resnet50().cuda()
lr_scaler = args.batches_per_allreduce * hvd.size()
optimizer = torch.optim.SGD(model.parameters(), lr={lr}, momentum=0.9)
optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters(){bpps})
hvd.broadcast_parameters(model.state_dict(), root_rank=0)
hvd.broadcast_optimizer_state(optimizer, root_rank=0)


def train(epoch):
    model.train()
    train_sampler.set_epoch(epoch)
    for batch_idx, (data, target) in enumerate(train_loader):
        data, target = data.cuda(), target.cuda()
        loss = F.cross_entropy(model(data), target) / {accum}
        loss.backward()
        if (batch_idx + 1) % {accum} == 0:
            optimizer.step()
            optimizer.zero_grad()


for epoch in range(90):
    train(epoch)
"""


def _hvd(lr="args.base_lr * lr_scaler", bpps=", backward_passes_per_step=args.batches_per_allreduce",
         accum="args.batches_per_allreduce"):
    return {"train.py": HVD_IMAGENET.format(lr=lr, bpps=bpps, accum=accum),
            "run.sh": "#!/bin/bash\nhorovodrun -np 16 -H node1:8,node2:8 python train.py --batches-per-allreduce 4\n"}


def test_horovod_twin_of_the_imagenet_example(cli, tmp_path):
    got, _ = _check(cli, tmp_path, _hvd())
    assert _new(got) == []


def test_accumulation_above_backward_passes_per_step(cli, tmp_path):
    got, found = _check(cli, tmp_path, _hvd(bpps=", backward_passes_per_step=2", accum="4"))
    assert _new(got) == [("DDP006", "train.py", 36, "error")]
    msg = next(d["message"] for d in found if d["code"] == "DDP006")
    assert "backward_passes_per_step=2" in msg and msg.endswith("pass backward_passes_per_step=4 to hvd.DistributedOptimizer")


def test_accumulation_by_the_launch_flag_without_backward_passes(cli, tmp_path):
    # --batches-per-allreduce 4 on the horovodrun line: four backward passes a step, the wrapper expects 1
    got, found = _check(cli, tmp_path, _hvd(bpps=""))
    assert _new(got) == [("DDP006", "train.py", 36, "error")]
    assert "= 4 backward passes" in next(d["message"] for d in found if d["code"] == "DDP006")


def test_accumulation_count_unknown_is_a_hint(cli, tmp_path):
    files = _hvd(bpps="", accum='int(os.environ["ACCUM_STEPS"])')
    files["train.py"] = "import os\n" + files["train.py"]
    got, _ = _check(cli, tmp_path, files)
    assert _new(got) == [("DDP006", "train.py", 37, "info")]


def test_lr_scaled_by_the_workers_twice(cli, tmp_path):
    got, found = _check(cli, tmp_path, _hvd(lr="args.base_lr * lr_scaler * hvd.size()"))
    assert _new(got) == [("DDP008", "train.py", 22, "warning")]
    msg = next(d["message"] for d in found if d["code"] == "DDP008")
    assert "lines 21 and 22" in msg


def test_optimizer_wrapped_twice(cli, tmp_path):
    files = _hvd()
    files["train.py"] = files["train.py"].replace(
        "hvd.broadcast_parameters(model.state_dict(), root_rank=0)\n",
        "hvd.broadcast_parameters(model.state_dict(), root_rank=0)\n"
        "optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())\n", 1)
    got, _ = _check(cli, tmp_path, files)
    assert ("DDP007", "train.py", 25, "error") in _new(got)


def test_keras_twin_scaled_once_with_warmup(cli, tmp_path):
    script = """\
import tensorflow as tf
import horovod.tensorflow.keras as hvd

hvd.init()
gpus = tf.config.experimental.list_physical_devices("GPU")
if gpus:
    tf.config.experimental.set_visible_devices(gpus[hvd.local_rank()], "GPU")
scaled_lr = 0.001 * hvd.size()
opt = hvd.DistributedOptimizer(tf.optimizers.Adam({lr}))
model = tf.keras.Sequential([tf.keras.layers.Flatten(), tf.keras.layers.Dense(10)])
model.compile(loss=tf.losses.SparseCategoricalCrossentropy(), optimizer=opt, experimental_run_tf_function=False)
callbacks = [hvd.callbacks.BroadcastGlobalVariablesCallback(0),
             hvd.callbacks.LearningRateWarmupCallback(initial_lr=scaled_lr, warmup_epochs=3, verbose=1)]
model.fit(dataset, steps_per_epoch=500 // hvd.size(), callbacks=callbacks, epochs=24)
"""
    got, _ = _check(cli, tmp_path, {"train.py": script.format(lr="scaled_lr")})
    assert _new(got) == []
    got, _ = _check(cli, tmp_path, {"train.py": script.format(lr="scaled_lr * hvd.size()")})
    assert _new(got) == [("DDP008", "train.py", 9, "warning")]


def test_share_of_a_global_batch_given_to_the_distributed_dataset(cli, tmp_path):
    # BATCH_SIZE_PER_REPLICA = GLOBAL // num_replicas_in_sync, then batched and distributed: each
    # replica gets a share of the share
    script = CTL.format(batch="BATCH_SIZE_PER_REPLICA", loss_batch="GLOBAL_BATCH_SIZE").replace(
        "BATCH_SIZE_PER_REPLICA = 64\nGLOBAL_BATCH_SIZE = BATCH_SIZE_PER_REPLICA * strategy.num_replicas_in_sync\n",
        "GLOBAL_BATCH_SIZE = 64\nBATCH_SIZE_PER_REPLICA = GLOBAL_BATCH_SIZE // strategy.num_replicas_in_sync\n")
    got, _ = _check(cli, tmp_path, {"train.py": script})
    assert _new(got) == [("TFD006", "train.py", 10, "warning")]


def test_name_says_per_replica_but_value_is_global(cli, tmp_path):
    # a name that lies: computed as per-replica × replicas, it is the global batch
    script = CTL.format(batch="batch_size_per_replica", loss_batch="GLOBAL_BATCH_SIZE").replace(
        "EPOCHS = 10\n", "EPOCHS = 10\nbatch_size_per_replica = BATCH_SIZE_PER_REPLICA * strategy.num_replicas_in_sync\n")
    got, _ = _check(cli, tmp_path, {"train.py": script})
    assert _new(got) == []


def test_script_tf_config_fallback_for_local_runs_is_silent(cli, tmp_path):
    # the script writes TF_CONFIG only when none is set: the TFJob operator's value skips it
    files = _tfjob_writing_tf_config(2)
    files["train.py"] = files["train.py"].replace(
        'os.environ["TF_CONFIG"] = json.dumps({\n', 'if "TF_CONFIG" not in os.environ:\n  os.environ["TF_CONFIG"] = json.dumps({\n', 1)
    got, _ = _check(cli, tmp_path, files)
    assert _new(got) == [] and not [g for g in got if g[0] == "SYN001"]


def test_lr_scaled_twice_through_a_world_name(cli, tmp_path):
    files = _hvd(lr="args.base_lr * lr_scaler * world")
    files["train.py"] = files["train.py"].replace("lr_scaler = ", "world = hvd.size()\nlr_scaler = ", 1)
    got, _ = _check(cli, tmp_path, files)
    assert _new(got) == [("DDP008", "train.py", 23, "warning")]


HELPERS = """\
import tensorflow as tf

strategy = tf.distribute.MirroredStrategy()
BATCH_SIZE_PER_REPLICA = 64
GLOBAL_BATCH_SIZE = BATCH_SIZE_PER_REPLICA * strategy.num_replicas_in_sync


def format_image(image, label):
    return tf.image.resize(image, (224, 224)) / 255.0, label


def distribute_datasets(strategy, train_batches, validation_batches):
    train_dist = strategy.experimental_distribute_dataset(train_batches)
    val_dist = strategy.experimental_distribute_dataset(validation_batches)
    return train_dist, val_dist


def make_batches(examples, batch_size):
    return examples.map(format_image).batch(batch_size).prefetch(1)


train_batches = train_examples.shuffle(1024).map(format_image).batch({train}).prefetch(1)
validation_batches = make_batches(validation_examples, {val})
train_dist, val_dist = distribute_datasets(strategy, train_batches, validation_batches)
"""


def test_per_replica_batch_through_helper_functions(cli, tmp_path):
    # the datasets reach experimental_distribute_dataset through a helper's parameters, and one
    # is batched by a helper whose parameter names nothing: what its caller passes decides
    got, _ = _check(cli, tmp_path, {"train.py": HELPERS.format(train="BATCH_SIZE_PER_REPLICA",
                                                                 val="BATCH_SIZE_PER_REPLICA")})
    assert _new(got) == [("TFD006", "train.py", 19, "warning"), ("TFD006", "train.py", 22, "warning")]
    got, _ = _check(cli, tmp_path, {"train.py": HELPERS.format(train="GLOBAL_BATCH_SIZE", val="GLOBAL_BATCH_SIZE")})
    assert _new(got) == []
