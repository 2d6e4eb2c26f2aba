"""`estimate` reads a tree lean: the Python files no launch or link names keep their facts, not
their syntax trees, and are read through a gate for the facts a job spec reads (and the files a
script links); the estimate is the one the full pipeline gives."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from conftest import ROOT, write_tree
from test_values_model_shapes import TRAIN_MODULE  # the FastChat-style module that parses the HF arguments

TRAIN = """\
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("nccl")
model = DDP(model)
"""


def _tree(tmp_path):
    files = {f"tools/helper_{i}.py": TRAIN for i in range(5)}
    files["train.py"] = TRAIN
    files["ds_config.json"] = json.dumps({"train_micro_batch_size_per_gpu": 4, "zero_optimization": {"stage": 2},
                                          "bf16": {"enabled": True}})
    files["run.sh"] = "deepspeed --num_nodes 2 --num_gpus 8 train.py --deepspeed_config ds_config.json\n"
    write_tree(tmp_path, files)


def test_lean_jobs_keep_the_facts_and_drop_unlinked_trees(tmp_path, monkeypatch):
    from parallint.engine.runner import build_jobs
    from parallint.model.script import script_of

    monkeypatch.setenv("PARALLINT_JOBS", "1")
    _tree(tmp_path)
    full = build_jobs(["."], {}, cwd=tmp_path)
    lean = build_jobs(["."], {}, cwd=tmp_path, lean=True)

    from parallint.estimator.spec import SPEC_INPUTS

    def facts(jobs):  # what a job spec reads (a lean job has no version facts, no DDP switches)
        return sorted((j.name, sorted((k, repr([v.value for v in vs])) for k, vs in j.facts.items()
                                      if k in SPEC_INPUTS)) for j in jobs)

    assert facts(full) == facts(lean) and len(lean) >= 2
    assert any(facts(lean)[i][1] for i in range(len(lean)))  # the DeepSpeed config's facts
    kept = {f.path for j in lean for f in j.files if script_of(f) is not None}
    assert "train.py" in kept  # the launched script keeps its tree
    assert not any(p.startswith("tools/") for p in kept)


# --------------------------------------------------------------------------- the reader's gate
#: one script per group of FACT_GROUPS, each stating what that group can state
GROUP_SCRIPTS = {
    "init_process_group": "import torch.distributed as dist\ndist.init_process_group('nccl', world_size=16)\n",
    "init_device_mesh": "from torch.distributed.device_mesh import init_device_mesh\n"
                        "mesh = init_device_mesh('cuda', (2, 4, 1, 1, 1, 1, 2),\n"
                        "                        mesh_dim_names=('dp', 'tp', 'pp', 'cp', 'ep', 'dp_replicate', 'dp_shard'))\n",
    "initialize_model_parallel": "from megatron.core import parallel_state\n"
                                 "parallel_state.initialize_model_parallel(4, 2, 2, context_parallel_size=2,\n"
                                 "                                       expert_model_parallel_size=2)\n",
    "colossal_hybrid": "from colossalai.booster.plugin import HybridParallelPlugin\n"
                       "p = HybridParallelPlugin(tp_size=2, pp_size=2, zero_stage=1)\n",
    "ds_init_inference": "import deepspeed\nfrom transformers import AutoModelForCausalLM\n"
                         "m = AutoModelForCausalLM.from_pretrained('meta-llama/Llama-2-7b-hf')\n"
                         "m = deepspeed.init_inference(m, mp_size=2, replace_with_kernel_inject=True)\n",
    "ds_pipeline_module": "from deepspeed.pipe import PipelineModule\nnet = PipelineModule(layers, num_stages=4)\n",
    "pl_trainer": "import lightning as L\n"
                  "t = L.Trainer(num_nodes=2, devices=8, strategy='ddp_find_unused_parameters_true')\n",
    "accelerator": "from accelerate import Accelerator\n"
                   "a = Accelerator(gradient_accumulation_steps=4, mixed_precision='bf16')\n",
    "training_args": "from transformers import TrainingArguments\n"
                     "args = TrainingArguments(per_device_train_batch_size=2, gradient_accumulation_steps=8, bf16=True,\n"
                     "                         ddp_find_unused_parameters=False, deepspeed='ds.json')\n",
    "ddp": "from torch.nn.parallel import DistributedDataParallel as DDP\n"
           "model = DDP(model, find_unused_parameters=True)\n",
    "ddp_kwargs": "from accelerate.utils import DistributedDataParallelKwargs\n"
                  "k = DistributedDataParallelKwargs(find_unused_parameters=True)\n",
    "ddp_strategy": "from lightning.pytorch.strategies import DDPStrategy\n"
                    "s = DDPStrategy(find_unused_parameters=True)\n",
    "lightning_deepspeed": "from lightning.pytorch.strategies import DeepSpeedStrategy\n"
                           "s = DeepSpeedStrategy(config='ds.json')\nt = DeepSpeedStrategy(config={'zero': 1})\n",
    "ds_initialize": "import deepspeed\nengine, *_ = deepspeed.initialize(model=m, config='ds.json')\n",
    "fsdp": "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\nmodel = FSDP(model)\n",
    "fully_shard": "from torch.distributed._composable.fsdp import fully_shard\nfully_shard(model)\n",
}


def _read(text: str, gate=None, name: str = "t.py"):
    from parallint.readers import python

    return python.read(name, Path("/nonexistent") / name, text, gate=gate)


def _stated(f, keys) -> list:
    """The facts of ``f`` among ``keys`` (with LINKS: its links), as comparable values."""
    from parallint.readers.python import LINKS

    out = sorted((k, repr([(v.value, v.known, v.source, v.span) for v in vs]))
                 for k, vs in f.facts.items() if k in keys)
    if LINKS in keys:
        out.append((LINKS, repr([(v.value, v.source, v.span) for v in f.links])))
    return out


def test_the_table_says_what_each_group_states():
    """Every group's script states facts of its row only, and its row is all stated: the table
    :meth:`CallGate.for_facts` reads is in step with the reader."""
    from parallint.readers.python import FACT_GROUPS, LINKS

    assert set(GROUP_SCRIPTS) == set(FACT_GROUPS)
    for group, text in GROUP_SCRIPTS.items():
        f = _read(text)
        stated = set(f.facts.keys()) | ({LINKS} if f.links else set())
        assert stated == FACT_GROUPS[group], (group, stated)


def _python_fixtures() -> list[Path]:
    out = [p for p in sorted((ROOT / "examples").rglob("*.py"))]
    out += [p for p in sorted((ROOT / "tests" / "data").rglob("*.py")) if p.stat().st_size < 200_000]
    return out


@pytest.mark.parametrize("wanted", ["estimate"] + sorted({k for ks in __import__(
    "parallint.readers.python", fromlist=["FACT_GROUPS"]).FACT_GROUPS.values() for k in ks}))
def test_a_gated_read_states_every_wanted_fact_a_full_read_states(wanted):
    """Over the fixtures and the group scripts, for the estimate's facts and for each fact alone:
    what a read through ``CallGate.for_facts(wanted)`` states of ``wanted`` is what a full read
    states; only the other facts (and the Script) may be missing."""
    from parallint.estimator.spec import SPEC_INPUTS
    from parallint.readers.python import LINKS, CallGate

    keys = frozenset(SPEC_INPUTS | {LINKS}) if wanted == "estimate" else frozenset({wanted})
    gate = CallGate.for_facts(keys)
    texts = [(p.name, p.read_text("utf-8", errors="replace")) for p in _python_fixtures()]
    texts += [(f"{g}.py", t) for g, t in GROUP_SCRIPTS.items()]
    skipped = 0
    for name, text in texts:
        full, lean = _read(text, name=name), _read(text, gate, name=name)
        assert _stated(lean, keys) == _stated(full, keys), name
        skipped += lean.data is None and full.data is not None
    assert skipped  # the gate does keep some files from the walk


def test_the_estimate_gate_skips_a_file_whose_calls_state_nothing_it_reads():
    from parallint.estimator.spec import SPEC_INPUTS
    from parallint.readers.python import LINKS, CallGate

    text = GROUP_SCRIPTS["ddp"]
    assert _read(text, CallGate()).data is not None  # check's gate: DDP001 reads it
    lean = _read(text, CallGate.for_facts(SPEC_INPUTS | {LINKS}))
    assert lean.data is None and not lean.facts.keys()
    # a partition needs no call for PIP001, and states no fact
    parts = "stages = [layers[0:4], layers[4:8]]\n"
    assert _read(parts, CallGate()).data is not None
    assert _read(parts, CallGate.for_facts(SPEC_INPUTS)).data is None
    # Megatron's parallel state is matched by its name's suffix
    mp = "from megatron import mpu\nmpu.initialize_model_parallel(8)\n"
    assert _read(mp, CallGate.for_facts({"parallel.tp"})).facts.get("parallel.tp") is not None


def test_a_file_without_a_word_of_the_gate_is_not_even_parsed():
    from parallint.estimator.spec import SPEC_INPUTS
    from parallint.readers.python import LINKS, CallGate

    gate = CallGate.for_facts(SPEC_INPUTS | {LINKS})
    broken = "import torch.distributed as dist\ndist.all_reduce(x\n"
    assert [d.code for d in _read(broken, CallGate()).diagnostics] == ["SYN001"]  # check parses it
    assert _read(broken, gate).diagnostics == []  # estimate: no word of a wanted call, not parsed
    assert [d.code for d in _read(broken + "dist.init_process_group()\n", gate).diagnostics] == ["SYN001"]
    # Python folds identifiers (NFKC): a non-ASCII text may call what it does not spell
    folded = "import torch.distributed as dist\ndist.\uff49nit_process_group('nccl', world_size=4)\n"
    assert "init_process_group" not in folded
    assert _read(folded, gate).facts.get("parallel.world_size").value == 4


# --------------------------------------------------------------------------- lean == full
TRAIN_MEM = """\
from fastchat.train.train import train

if __name__ == "__main__":
    train()
"""

PLANTED = {
    "fastchat": {  # the launch line's TrainingArguments reach the module the script imports
        "fastchat/__init__.py": "", "fastchat/train/__init__.py": "",
        "fastchat/train/train_mem.py": TRAIN_MEM, "fastchat/train/train.py": TRAIN_MODULE,
        "fastchat/train/helpers.py": "from fastchat.train.train import train\ntrain()\n",
        "run.sh": "#!/bin/bash\ntorchrun --nproc_per_node=8 fastchat/train/train_mem.py \\\n"
                  "    --model_name_or_path meta-llama/Llama-2-70b-hf --bf16 True \\\n"
                  "    --per_device_train_batch_size 1 --output_dir out\n"},
    "unlinked": {  # scripts no launch names: their own jobs, a DeepSpeed config one of them links
        "ds.json": json.dumps({"train_micro_batch_size_per_gpu": 2, "zero_optimization": {"stage": 3},
                               "bf16": {"enabled": True}}),
        "hf.py": GROUP_SCRIPTS["training_args"] +
                 "from transformers import AutoModelForCausalLM\n"
                 "m = AutoModelForCausalLM.from_pretrained('meta-llama/Llama-2-7b-hf')\n",
        "ddp_only.py": GROUP_SCRIPTS["ddp"], "mesh.py": GROUP_SCRIPTS["init_device_mesh"],
        "pl.py": GROUP_SCRIPTS["pl_trainer"], "mp.py": GROUP_SCRIPTS["initialize_model_parallel"],
        "infer.py": GROUP_SCRIPTS["ds_init_inference"],
        "model/config.json": json.dumps({"model_type": "llama", "architectures": ["LlamaForCausalLM"],
                                         "num_hidden_layers": 32, "hidden_size": 4096,
                                         "num_attention_heads": 32, "intermediate_size": 11008,
                                         "vocab_size": 32000, "max_position_embeddings": 4096})},
    "megatron": {  # a Megatron launch with the model on the line, and helpers beside it
        "pretrain_gpt.py": "import torch.distributed as dist\nfrom megatron.training import pretrain\n"
                           "dist.init_process_group('nccl')\npretrain()\n",
        "tools/util.py": TRAIN, "tools/colossal.py": GROUP_SCRIPTS["colossal_hybrid"],
        "requirements.txt": "torch==2.1.0\ntransformer-engine==1.2\n",  # version facts: only rules read them
        "run.sh": "#!/bin/bash\ntorchrun --nproc_per_node 8 --nnodes 2 pretrain_gpt.py --num-layers 32 "
                  "--hidden-size 4096 --num-attention-heads 32 --seq-length 4096 --max-position-embeddings 4096 "
                  "--micro-batch-size 1 --global-batch-size 256 --tensor-model-parallel-size 2 "
                  "--pipeline-model-parallel-size 2 --bf16 --use-distributed-optimizer\n"},
}


def _estimate(paths: list[str], monkeypatch, capsys, lean: bool, fmt: str) -> tuple[int, str, str]:
    from parallint.cli import estimate as est
    from parallint.engine import runner

    real = runner.build_jobs
    monkeypatch.setattr(runner, "build_jobs", lambda p, c, cwd=None, lean=False, _l=lean: real(p, c, cwd, lean=_l))
    out = io.StringIO()
    try:
        rc = est.estimate_main(paths, {}, fmt, {"gpu": "H100-80GB"}, out=out)
    finally:
        monkeypatch.setattr(runner, "build_jobs", real)
    return rc, out.getvalue(), capsys.readouterr().err


def _same(paths, monkeypatch, capsys) -> str:
    got = ""
    for fmt in ("text", "json"):
        full = _estimate(paths, monkeypatch, capsys, False, fmt)
        lean = _estimate(paths, monkeypatch, capsys, True, fmt)
        assert lean == full, (paths, fmt)
        got += full[1]
    return got


@pytest.mark.parametrize("name", sorted(PLANTED))
def test_a_lean_estimate_of_a_planted_tree_is_the_full_one(tmp_path, monkeypatch, capsys, name):
    monkeypatch.setenv("PARALLINT_JOBS", "1")
    monkeypatch.setenv("PARALLINT_CACHE_DIR", str(tmp_path / "cache"))
    root = tmp_path / name
    root.mkdir()
    (root / ".git").mkdir()
    write_tree(root, PLANTED[name])
    monkeypatch.chdir(root)
    got = _same(["."], monkeypatch, capsys)
    assert "job: " in got  # something was estimated (the trees are made to give a model shape)


def test_a_lean_estimate_of_the_examples_is_the_full_one(monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("PARALLINT_JOBS", "1")
    monkeypatch.setenv("PARALLINT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(ROOT)
    seen = 0
    for d in sorted(p for p in (ROOT / "examples").iterdir() if p.is_dir()):
        seen += "job: " in _same([str(d.relative_to(ROOT))], monkeypatch, capsys)
    assert seen >= 3
    _same(["examples"], monkeypatch, capsys)
