"""pylaunch.scan parses a script only when its text can state what the scan finds
(pylaunch.may_state); the gate must never hide a launch fact: for every way a script can state
one (aliases, line continuations, comments and parentheses inside an attribute path), the gated
scan equals the ungated one, and texts that state nothing are not parsed."""

from __future__ import annotations

import pytest

from parallint.link import pylaunch

STATES = {
    "ray": "from ray.train import ScalingConfig\nfrom ray.train.torch import TorchTrainer\n"
           "TorchTrainer(f, scaling_config=ScalingConfig(num_workers=4, use_gpu=True))\n",
    "submitit": "import submitit as sb\nex = sb.AutoExecutor(folder='x')\nex.update_parameters(nodes=2, tasks_per_node=8)\n",
    "update_parameters": "ex = make()\nex.update_parameters(slurm_nodes=2)\n",
    "nemo_run": "import nemo_run as run\nrun.SlurmExecutor(nodes=2, ntasks_per_node=8)\n",
    "fabric": "import lightning as L\nL.Fabric(devices=4, num_nodes=2)\n",
    "spawn": "import torch.multiprocessing as mp\nmp.spawn(main, nprocs=4)\n",
    "spawn_alias": "from torch.multiprocessing import spawn as go\ngo(main, (), 4)\n",
    "environ": 'import os\nos.environ["WORLD_SIZE"] = "4"\n',
    "environ_alias": 'from os import environ as E\nE["WORLD_SIZE"] = "4"\n',
    "master": 'import os\nif __name__ == "__main__":\n    os.environ["MASTER_ADDR"] = "localhost"\n',
    "recipe_call": "from nemo.collections import llm\nr = llm.llama3_8b.pretrain_recipe(num_nodes=2, num_gpus_per_node=8)\n",
    "recipe_field": "recipe = make()\nrecipe.trainer.strategy.tensor_model_parallel_size = 4\n",
    "recipe_field_split": "recipe = make()\n(recipe.trainer  # the trainer\n ).strategy \\\n    .tensor_model_parallel_size = 4\n",
    "recipe_data": "pre_recipe = make()\npre_recipe.data.global_batch_size = 64\n",
}
SILENT = {
    "megatron_args": "def add(parser):\n    parser.add_argument('--tensor-model-parallel-size')\n"
                     "    args.tensor_model_parallel_size = 1\n    data = get()\n",
    "pool": "from concurrent.futures import ThreadPoolExecutor\nwith ThreadPoolExecutor() as ex:\n    pass\n",
    "world_read": "import os\nn = int(os.getenv('WORLD_SIZE', 1))\n",
}


@pytest.mark.parametrize("name", sorted(STATES))
def test_a_script_that_states_a_launch_passes_the_gate(name):
    text = STATES[name]
    ungated = pylaunch._scan("s.py", text)
    assert ungated is not None and any(n in text for n in pylaunch.NEEDLES), "fixture must state something"
    assert pylaunch.may_state(text)
    gated = pylaunch.scan("s.py", text)
    assert gated is not None and gated.kinds == ungated.kinds
    assert [(k, [v.value for v in vs]) for k, vs in gated.facts.items()] == \
        [(k, [v.value for v in vs]) for k, vs in ungated.facts.items()]


@pytest.mark.parametrize("name", sorted(SILENT))
def test_a_script_that_states_nothing_is_not_parsed(name, monkeypatch):
    text = SILENT[name]
    assert pylaunch._scan("s.py", text) is None
    assert any(n in text for n in pylaunch.NEEDLES)  # the old needles let it through
    monkeypatch.setattr(pylaunch, "_scan", lambda *a: pytest.fail("parsed"))
    assert pylaunch.scan("q.py", text) is None


def test_the_field_pattern_is_linear_on_comment_runs():
    import time

    text = "x.trainer " + "#" * 20000 + " y\n" + "z.data \\\n" + "#" * 20000
    t = time.perf_counter()
    pylaunch.may_state(text + "\ntrainer devices data global_batch_size")
    assert time.perf_counter() - t < 0.5
