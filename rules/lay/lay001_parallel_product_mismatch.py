"""LAY001 parallel-product-mismatch: The product of the parallel degrees does not fit the world size"""

from __future__ import annotations

from parallint.model.diagnostics import Severity
from parallint.model.factrule import FactRule, Finding, View, src
from parallint.model.rule import Example
from parallint.rules.lay._common import _nemo


#: frameworks that assert TP × PP (× CP) divides the world size (ColossalAI's HybridParallelPlugin too)
MEGATRON_LIKE = ("megatron", "nemo", "neox", "deepspeed", "colossalai")


_COLOSSAL = """import colossalai
from colossalai.booster import Booster
from colossalai.booster.plugin import HybridParallelPlugin

colossalai.launch_from_torch()
plugin = HybridParallelPlugin(tp_size={tp}, pp_size={pp}, zero_stage=1, precision="bf16", microbatch_size=1)
booster = Booster(plugin=plugin)
"""


def _toml(par: str, training: str = "local_batch_size = 8\nseq_len = 2048") -> str:
    return f"[job]\ndescription = \"example\"\n\n[model]\nname = \"llama3\"\nflavor = \"8B\"\n\n[training]\n{training}\n\n[parallelism]\n{par}\n"


def _accelerate_fix(names: tuple, sizes: list, w: int) -> str:
    """Set dp_shard so the parallelism_config product is the process count, when an integer does it."""
    others = 1
    for n, i in zip(names, sizes):
        if n != "dp_shard":
            others *= i
    if w % others == 0:
        return f"set dp_shard to {w // others}"
    return f"make {' × '.join(names)} equal {w}"


class ParallelProductMismatch(FactRule):
    code = "LAY001"
    facts = frozenset({
        "parallel.cp", "parallel.dp", "parallel.dp_replicate", "parallel.dp_shard", "parallel.pp", "parallel.sp",
        "parallel.tp",
    })
    name = "parallel-product-mismatch"
    severity = Severity.ERROR
    summary = "The product of the parallel degrees does not fit the world size"
    doc = """
    ## What it does
    Compares the model-parallel degrees with the job's world size, using the framework's own
    rule: Megatron, NeMo and DeepSpeed need `world % (TP×PP×CP) == 0` (the rest is data
    parallel), and so does ColossalAI's `HybridParallelPlugin(tp_size=, pp_size=)`; torchtitan needs `dp_replicate·dp_shard·cp·tp·pp == world` exactly
    (`data_parallel_shard_degree = -1` is inferred, so the others must divide the world);
    nanotron needs `dp·tp·pp == world`; accelerate's `parallelism_config` needs
    `dp_replicate·dp_shard·tp·cp == num_processes`; torchtune's `ParallelDims` has torchtitan's
    rule (`data_parallel_shard_dim: -1` inferred); Lightning's `ModelParallelStrategy` needs
    `data_parallel_size × tensor_parallel_size == world`. The world comes from whichever launcher
    starts the job: torchrun, `tune run`, `torchx run dist.ddp -j NxM` (or a TorchX component
    calling `dist.ddp(..., j="NxM")`), `fabric run`, a SkyPilot
    task, a RayJob running a Ray Train `ScalingConfig`, submitit or NeMo-Run executors.

    Not checked: fairseq's `--model-parallel-size` and `--distributed-world-size`. Under torchrun
    or `torch.distributed.launch` fairseq replaces `--distributed-world-size` with the launcher's
    `WORLD_SIZE`, so the two cannot disagree; `fairseq-train` run directly spawns
    `min(GPUs, --distributed-world-size)` processes on a machine whose GPU count a static check
    does not know; and its model parallelism is a Megatron fork whose division rule (it clamps the
    degree to the world) parallint has not verified.

    Only configs that run as written count: a base config that a tool rewrites (NeMo
    `auto_configurator`), a checkpoint-conversion config, a model restored from
    `pretrained_model_path` and gpt-neox's parallelism left at 1 by convention are silent (see
    docs/precision-policy-configs.md).

    ## Why it matters
    The framework checks this only inside the workers, after the scheduler has allocated every
    GPU: `world_size (12) is not divisible by tensor_model_parallel_size (8)`.

    ## Example

    ## How to fix
    Change the degrees (or the number of nodes/GPUs) so that their product divides the world size
    (torchtitan, nanotron: equals it).
    """
    valid = (
        Example(_nemo(tp=4, pp=2), filename="conf/gpt.yaml"),
        Example(files={
            "run.sh": "torchrun --standalone --nproc_per_node 8 train.py\n",
            "train.py": _COLOSSAL.format(tp=4, pp=2),
        }, paths=("run.sh",)),
        Example(_toml("data_parallel_shard_degree = -1\ntensor_parallel_degree = 4"), filename="train.toml"),
        Example("compute_environment: LOCAL_MACHINE\ndistributed_type: FSDP\nnum_machines: 1\nnum_processes: 8\n"
                "parallelism_config:\n  parallelism_config_dp_replicate_size: 2\n  parallelism_config_dp_shard_size: 2\n"
                "  parallelism_config_tp_size: 2\n  parallelism_config_cp_size: 1\n", filename="accelerate_tp.yaml"),
        Example(files={
            "run.sh": "torchrun --nnodes 1 --nproc_per_node 8 -m torchtitan.train --job.config_file llama.toml\n",
            "llama.toml": _toml("data_parallel_shard_degree = 2\ntensor_parallel_degree = 4"),
        }),
    )
    invalid = (
        Example(_nemo(tp=4, pp=4), filename="conf/gpt.yaml", line=8),
        # ColossalAI: the booster plugin asks for TP 4 × PP 2 = 8 GPUs, torchrun starts 4
        Example(files={
            "run.sh": "torchrun --standalone --nproc_per_node 4 train.py\n",
            "train.py": _COLOSSAL.format(tp=4, pp=2),
        }, paths=("run.sh",)),
        Example(files={
            "run.sh": "torchrun --nnodes 1 --nproc_per_node 8 -m torchtitan.train --job.config_file llama.toml\n",
            "llama.toml": _toml("data_parallel_shard_degree = 4\ntensor_parallel_degree = 4"),
        }),
        Example("compute_environment: LOCAL_MACHINE\ndistributed_type: FSDP\nnum_machines: 1\nnum_processes: 8\n"
                "parallelism_config:\n  parallelism_config_dp_replicate_size: 1\n  parallelism_config_dp_shard_size: 2\n"
                "  parallelism_config_tp_size: 2\n  parallelism_config_cp_size: 1\n", filename="accelerate_tp.yaml", line=7),
        Example(files={
            "run.sh": "torchrun --nnodes 1 --nproc_per_node 6 -m torchtitan.train --job.config_file llama.toml\n",
            "llama.toml": _toml("data_parallel_shard_degree = -1\ntensor_parallel_degree = 4"),
        }),
        # torchtune: `tune run` starts 4 processes, the recipe config asks for 8-way TP
        Example(files={
            "run.sh": "tune run --nproc_per_node 4 full_finetune_distributed --config 70B_full.yaml\n",
            "70B_full.yaml": "model:\n  _component_: torchtune.models.llama3_3.llama3_3_70b\n"
                             "tensor_parallel_dim: 8\ndata_parallel_shard_dim: -1\n",
        }, paths=("run.sh",)),
        # SkyPilot: 2 nodes × A100:8 = 16 GPUs, Megatron asks for TP 8 × PP 4 = 32 per replica
        Example(files={
            "task.yaml": "resources:\n  accelerators: A100:8\nnum_nodes: 2\nrun: |\n"
                         "  torchrun --nnodes=$SKYPILOT_NUM_NODES --nproc_per_node=$SKYPILOT_NUM_GPUS_PER_NODE \\\n"
                         "    --node_rank=$SKYPILOT_NODE_RANK --master_addr=$HEAD pretrain_gpt.py \\\n"
                         "    --tensor-model-parallel-size 8 --pipeline-model-parallel-size 4\n",
        }),
        # submitit: the executor starts 2 nodes × 4 tasks = 8 processes of a TP 4 × PP 4 command
        Example(files={
            "submit.py": "import submitit\n\nexecutor = submitit.AutoExecutor(folder='logs')\n"
                         "executor.update_parameters(nodes=2, tasks_per_node=4, gpus_per_node=4)\n"
                         "job = executor.submit(submitit.helpers.CommandFunction(\n"
                         "    ['python', 'pretrain_gpt.py', '--tensor-model-parallel-size', '4',\n"
                         "     '--pipeline-model-parallel-size', '4']))\n",
        }),
        # a TorchX component: dist.ddp on 1 node × 4 processes, Megatron asks for TP 4 × PP 2
        Example(files={
            "component.py": "from torchx.components.dist import ddp\n\n\ndef trainer(*args: str):\n"
                            "    return ddp(*args, '--tensor-model-parallel-size', '4',\n"
                            "               '--pipeline-model-parallel-size', '2', script='pretrain_gpt.py', j='1x4')\n",
            "pretrain_gpt.py": "import torch.distributed as dist\n\ndist.init_process_group('nccl')\n",
        }, paths=("component.py",)),
    )

    def findings(self, view: View):
        world = view.world
        w = view.world_int
        if view.fw("torchtitan", "torchtune"):  # torchtune's ParallelDims has torchtitan's rule
            yield from self._torchtitan(view, "torchtitan" if view.fw("torchtitan") else "torchtune")
            return
        if view.fw("nanotron"):
            lw = view.launch_world
            dp, tp, pp = view.v("parallel.dp"), view.v("parallel.tp"), view.v("parallel.pp")
            dpi, tpi, ppi = view.i("parallel.dp"), view.i("parallel.tp"), view.i("parallel.pp")
            if lw is not None and dpi and tpi and ppi:
                assert dp is not None  # view.i gave an int for the same key
                prod = dpi * tpi * ppi
                if prod != lw.value:
                    yield Finding(dp, f"nanotron dp×tp×pp = {prod} but the job runs {lw.value} processes "
                                      f"({src(lw)}); nanotron needs them equal; "
                                      + (f"set dp to {lw.value // (prod // dpi)}"
                                         if isinstance(lw.value, int) and lw.value % (prod // dpi) == 0
                                         else f"make dp×tp×pp equal {lw.value}"),
                                  [(lw, "world size"), (tp, "tp"), (pp, "pp")])
            return
        if view.fw("lightning") and view.stated("parallel.tp") and view.stated("parallel.dp"):
            yield from self._lightning(view)
            return
        if view.fw("accelerate") and view.stated("parallel.dp_shard"):
            yield from self._accelerate(view)
            return
        if w is None or not view.fw(*MEGATRON_LIKE):
            return
        parts = [(k, view.v(k), view.i(k)) for k in ("parallel.tp", "parallel.pp", "parallel.cp")]
        known = [(k, v, i) for k, v, i in parts if i is not None and i > 0]
        if not known:
            return
        prod = 1
        for _, _, i in known:
            prod *= i
        if w % prod == 0:
            return
        at = max(known, key=lambda t: t[2])[1]
        assert at is not None  # its degree is a known int
        desc = " × ".join(f"{k.split('.')[1].upper()} {i}" for k, _, i in known if i > 1)
        product = f"{desc} = {prod}" if "×" in desc else desc  # one degree: "TP 3", not "TP 3 = 3"
        if prod > w:
            msg = (f"{product if '×' in desc else desc + ':'}{'' if '×' in desc else f' {prod}'} GPUs per model "
                   f"replica, but the world size is {w}; start a multiple of {prod} processes or lower the degrees "
                   f"to divide {w}")
        else:
            msg = (f"world size {w} is not divisible by {product}: no integer data-parallel size fits; start a "
                   f"multiple of {prod} processes or change the degrees to divide {w}")
        yield Finding(at, msg, [(world, f"world size {w}")] +
                      [(v, f"{k.split('.')[1].upper()} {i}") for k, v, i in known if v is not at and i > 1])

    def _lightning(self, view: View):
        """Lightning ModelParallelStrategy: data_parallel_size × tensor_parallel_size == world size."""
        w, dp, tp = view.world_int, view.i("parallel.dp"), view.i("parallel.tp")
        if w is None or dp is None or tp is None or dp * tp == w:
            return
        tp_v = view.v("parallel.tp")
        assert tp_v is not None  # view.i gave an int for the same key
        yield Finding(tp_v, f"Lightning ModelParallelStrategy needs data_parallel_size × "
                                             f"tensor_parallel_size == world size: {dp} × {tp} = {dp * tp} != {w}; "
                                             + (f"set data_parallel_size to {w // tp}" if w % tp == 0 else
                                                f"make data_parallel_size × tensor_parallel_size equal {w}"),
                      [(view.world, f"world size {w}"), (view.v("parallel.dp"), f"data_parallel_size {dp}")])

    def _accelerate(self, view: View):
        """accelerate ParallelismConfig: dp_replicate·dp_shard·tp·cp·sp == num_processes (unless
        the product is 1, or DeepSpeed-Ulysses SP manages its own groups)."""
        w = view.world_int
        keys = ("parallel.dp_replicate", "parallel.dp_shard", "parallel.tp", "parallel.cp")
        maybe = [view.i(k) for k in keys]
        if w is None or any(i is None or i < 1 for i in maybe):
            return
        sizes = [i for i in maybe if i is not None]  # all of them (checked just above)
        sp = view.i("parallel.sp")
        if view.stated("parallel.sp") and sp is None:
            return
        if sp is not None and sp > 1:
            return
        total = 1
        for i in sizes:
            total *= i
        if total in (1, w):
            return
        names = ("dp_replicate", "dp_shard", "tp", "cp")
        at = max(zip(keys, sizes), key=lambda t: t[1])[0]
        at_v = view.v(at)
        assert at_v is not None  # its size is a known int
        desc = " × ".join(f"{n} {i}" for n, i in zip(names, sizes))
        yield Finding(at_v, f"accelerate parallelism_config {desc} = {total}, but num_processes is {w}; "
                                  f"accelerate needs them equal; " + _accelerate_fix(names, sizes, w),
                      [(view.world, f"{w} processes")] + [(view.v(k), f"{n} {i}") for k, n, i in zip(keys, names, sizes)
                                                         if k != at and i > 1])

    def _torchtitan(self, view: View, who: str = "torchtitan"):
        world = view.world
        w = view.world_int
        if w is None:
            return
        names = {"parallel.dp_replicate": "dp_replicate", "parallel.dp_shard": "dp_shard",
                 "parallel.cp": "cp", "parallel.tp": "tp", "parallel.pp": "pp"}
        vals = {}
        for k in names:
            if k == "parallel.dp_shard":
                continue
            i = view.i(k)
            if view.stated(k) and i is None:
                return  # a degree we cannot read
            vals[k] = i if i is not None else 1
        others = 1
        for i in vals.values():
            others *= i
        shard_v = view.v("parallel.dp_shard")
        stated = view.facts.all("parallel.dp_shard")
        inferred = not stated or any((not v.known) and v.why.startswith("inferred") for v in stated[:1])
        rel = [(view.v(k), f"{names[k]} {vals[k]}") for k in vals if view.v(k) is not None and vals[k] > 1]
        if shard_v is not None and view.i("parallel.dp_shard") is not None:
            shard = view.i("parallel.dp_shard")
            assert shard is not None  # checked just above
            prod = others * shard
            if prod != w:
                yield Finding(shard_v, f"{who} needs dp_replicate·dp_shard·cp·tp·pp == world size: "
                                       f"{prod} != {w}; " + (f"set the dp_shard degree to {w // others} (or -1)" if w % others == 0
                                                          else f"start a multiple of {others} processes or change "
                                                               f"the degrees to divide {w}"),
                              [(world, f"world size {w}")] + rel)
            return
        if not inferred:
            return
        if w % others != 0:
            at = max(((view.v(k), i) for k, i in vals.items() if view.v(k) is not None),
                     key=lambda t: t[1], default=(None, 0))[0]
            if at is None:
                return
            yield Finding(at, f"world size {w} is not divisible by dp_replicate·cp·tp·pp = {others}, so "
                              f"{who} cannot infer {'data_parallel_shard_dim' if who == 'torchtune' else 'data_parallel_shard_degree'} (-1); start a multiple of {others} "
                              f"processes or change the degrees to divide {w}",
                          [(world, f"world size {w}")] + [r for r in rel if r[0] is not at])
