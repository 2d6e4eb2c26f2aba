"""The model layer: structured provenance (Value.origin) and the one world size."""

from __future__ import annotations

import textwrap
from pathlib import Path

from parallint.model.facts import FactMap, How, Origin, Value
from parallint.model.origin import from_call, launch_layer
from parallint.model.world import job_launch_world_size, launch_world_size, world_size
from parallint.readers import python, shell


def sh(text: str):
    return shell.read("run.sh", Path("/nonexistent/run.sh"), textwrap.dedent(text).lstrip("\n"))


def test_value_origin_defaults_to_literal_and_survives_conversion():
    v = Value("8")
    assert v.origin == Origin() and v.origin.how is How.LITERAL
    d = Value("8", None, True, "", "x", Origin(How.DEFAULT, "Trainer"))
    assert d.as_int().origin == d.origin and d.as_int().value == 8
    assert Value("x", None, True, "", "", d.origin).as_int().origin == d.origin  # unknown keeps it too


def test_launch_layers_come_from_the_origin():
    ff = sh("""
        #!/bin/bash
        #SBATCH --nodes=2
        srun --nodes 2 torchrun --nnodes 2 --nproc_per_node 8 train.py
        """)
    (tr,) = [la for la in ff.launches if la.launcher == "torchrun"]
    layers = sorted({launch_layer(v) for v in tr.facts.all("parallel.nodes")}
                    | {launch_layer(v) for v in tr.wrapper.facts.all("parallel.nodes")})
    assert layers == ["launcher", "scheduler", "srun"]
    # a recorded origin wins over the words of the source
    assert launch_layer(Value(2, None, True, "", "#SBATCH --nodes", Origin(via="kube"))) == "kube"


def test_python_call_arguments_record_their_call(tmp_path):
    text = "import lightning as L\ntrainer = L.Trainer(num_nodes=2, devices=8)\n"
    ff = python.read("train.py", tmp_path / "train.py", text)
    (v,) = ff.facts.known("parallel.nodes")
    assert v.origin.via == "Trainer" and from_call(v, "Trainer") and not from_call(v, "Accelerator")


def test_world_size_stated_derived_and_launcher_default():
    fm = FactMap()
    assert world_size(fm) is None
    fm.add("parallel.nodes", Value(2, None, True, "", "a"))
    fm.add("parallel.procs_per_node", Value(8, None, True, "", "b"))
    ws = world_size(fm)
    assert ws.value == 16 and ws.origin.how is How.DERIVED
    fm.add("parallel.world_size", Value(32))
    assert world_size(fm).value == 32
    (la,) = sh("torchrun --nproc_per_node 4 train.py\n").launches
    v = launch_world_size(la)
    assert v.value == 4 and v.origin.how is How.INFERRED

    class J:
        launch = la

    assert job_launch_world_size(J) == (4, v)
    (la2,) = sh("srun torchrun --nproc_per_node 4 train.py\n").launches[-1:]
    assert launch_world_size(la2) is None  # srun decides the nodes: not the one-node default
