"""LAY — parallel layout: degrees that do not fit the world size or the model shape.

Every rule here works on facts (see ``lint/model/factrule.py``): the same check runs on one config
file (``check_file``) and on a linked job (``check_job``: a Megatron command line + its configs),
and stays silent unless every number it needs is known.
"""

from __future__ import annotations

from parallint.model.diagnostics import Related, Severity
from parallint.model.rule import Example

from parallint.model.facts import FactMap, Value
from parallint.model.factrule import FactRule, Finding, View, src

MEGATRON_LIKE = ("megatron", "nemo", "neox", "deepspeed")


def _nemo(tp=1, pp=1, devices=8, nodes=1, extra: str = "", model_extra: str = "") -> str:
    return f"""\
trainer:
  devices: {devices}
  num_nodes: {nodes}
  precision: bf16
{extra}model:
  micro_batch_size: 1
  global_batch_size: 32
  tensor_model_parallel_size: {tp}
  pipeline_model_parallel_size: {pp}
{model_extra}"""


def _meg(args: str) -> str:
    return "ENV_VARS:\n  CUDA_DEVICE_MAX_CONNECTIONS: 1\nMODEL_ARGS:\n" + "".join(
        f"  {line.strip()}\n" for line in args.strip().splitlines())


def _toml(par: str, training: str = "local_batch_size = 8\nseq_len = 2048") -> str:
    return f"[job]\ndescription = \"example\"\n\n[model]\nname = \"llama3\"\nflavor = \"8B\"\n\n[training]\n{training}\n\n[parallelism]\n{par}\n"


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
    parallel); torchtitan needs `dp_replicate·dp_shard·cp·tp·pp == world` exactly
    (`data_parallel_shard_degree = -1` is inferred, so the others must divide the world);
    nanotron needs `dp·tp·pp == world`; accelerate's `parallelism_config` needs
    `dp_replicate·dp_shard·tp·cp == num_processes`; torchtune's `ParallelDims` has torchtitan's
    rule (`data_parallel_shard_dim: -1` inferred); Lightning's `ModelParallelStrategy` needs
    `data_parallel_size × tensor_parallel_size == world`. The world comes from whichever launcher
    starts the job: torchrun, `tune run`, `torchx run dist.ddp -j NxM` (or a TorchX component
    calling `dist.ddp(..., j="NxM")`), `fabric run`, a SkyPilot
    task, a RayJob running a Ray Train `ScalingConfig`, submitit or NeMo-Run executors.

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
        if prod > w:
            msg = (f"{desc} = {prod} GPUs per model replica, but the world size is {w}; start a multiple of {prod} "
                   f"processes or lower the degrees to divide {w}")
        else:
            msg = (f"world size {w} is not divisible by {desc} = {prod}: no integer data-parallel size fits; start a "
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


class TensorParallelAcrossNodes(FactRule):
    code = "LAY002"
    facts = frozenset({"parallel.nodes", "parallel.tp"})
    name = "tensor-parallel-across-nodes"
    severity = Severity.WARNING
    summary = "Tensor parallelism spans more GPUs than one node has"
    doc = """
    ## What it does
    Warns when the tensor-parallel degree is larger than the number of GPUs per node while the
    job has more than one node.

    ## Why it matters
    Tensor parallelism all-reduces activations in every layer, forward and backward. Inside a
    node that traffic runs over NVLink; across nodes it runs over the network and the step slows
    down several times.

    ## Example

    ## How to fix
    Keep TP within a node (TP ≤ GPUs per node) and use pipeline or data parallelism across nodes.
    """
    valid = (Example(_nemo(tp=8, pp=2, devices=8, nodes=2), filename="conf/gpt.yaml"),)
    invalid = (Example(_nemo(tp=16, pp=1, devices=8, nodes=2), filename="conf/gpt.yaml", line=8),)

    def findings(self, view: View):
        tp, gpn = view.i("parallel.tp"), view.gpus_per_node
        nodes = view.i("parallel.nodes")
        g = gpn.value if gpn is not None and isinstance(gpn.value, int) else None
        if tp is None or g is None or nodes is None or nodes < 2:
            return
        tp_v = view.v("parallel.tp")
        assert tp_v is not None  # view.i gave an int for the same key
        if tp > g:
            yield Finding(tp_v, f"tensor-parallel degree {tp} is larger than the {g} GPUs "
                                                 f"per node: tensor-parallel all-reduces leave NVLink; lower TP to {g} or less "
                                                 f"and use pipeline or data parallelism across nodes",
                          [(gpn, f"{g} GPUs per node")])


class HeadsNotDivisibleByTp(FactRule):
    code = "LAY003"
    facts = frozenset({"model.heads", "parallel.tp"})
    name = "heads-not-divisible-by-tp"
    severity = Severity.ERROR
    summary = "The number of attention heads is not divisible by the tensor-parallel degree"
    doc = """
    ## What it does
    Checks `num_attention_heads % TP == 0`, with the heads from the model config (Megatron
    arguments, a NeMo model section, a HF `config.json`) and TP from wherever the job sets it.

    ## Why it matters
    Each tensor-parallel rank holds `heads / TP` whole heads; Megatron, torchtitan, vLLM and
    DeepSpeed inference all stop at start-up ("number of attention heads (52) must be divisible by
    tensor parallel size (8)").

    ## Example

    ## How to fix
    Pick a TP degree that divides the head count (52 heads: TP 2 or 4).
    """
    valid = (Example(_meg("--num-attention-heads: 32\n--tensor-model-parallel-size: 8"), filename="model_config.yaml"),)
    invalid = (
        Example(_meg("--num-attention-heads: 52\n--tensor-model-parallel-size: 8"), filename="model_config.yaml", line=5),
        Example(files={
            "run.sh": "torchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size 8 \\\n"
                      "    --num-layers 60 --hidden-size 6656 --num-attention-heads 52\n",
            "pretrain_gpt.py": "import sys\nprint(sys.argv)\n",
        }, line=1),
    )

    def findings(self, view: View):
        heads, tp = view.i("model.heads"), view.i("parallel.tp")
        if heads is None or tp is None or tp <= 1 or heads <= 0:
            return
        tp_v = view.v("parallel.tp")
        assert tp_v is not None  # view.i gave an int for the same key
        if heads % tp:
            yield Finding(tp_v, f"{heads} attention heads are not divisible by "
                                                 f"tensor-parallel degree {tp}; set TP to {_divisors(heads, tp)}",
                          [(view.v("model.heads"), f"{heads} attention heads")])


class LayersNotDivisibleByPp(FactRule):
    code = "LAY004"
    facts = frozenset({"model.layers", "parallel.pp", "parallel.pp_layout", "parallel.vpp"})
    name = "layers-not-divisible-by-pp"
    severity = Severity.ERROR
    summary = "The layers do not split evenly over the pipeline (× virtual) stages"
    doc = """
    ## What it does
    For Megatron and NeMo, checks `num_layers % (PP × VPP) == 0` when the pipeline is split
    evenly, i.e. no uneven layout (`--decoder-first-pipeline-num-layers`,
    `--pipeline-model-parallel-layout`, `account_for_*_in_pipeline_split`, a hybrid pattern, an
    encoder-decoder split rank) is given.

    Silent on configs that do not run as written (a tool's base config, a conversion config, a
    model restored from a checkpoint; docs/precision-policy-configs.md).

    ## Why it matters
    Megatron's argument validation stops with "num_layers should be divisible by
    pipeline_model_parallel_size" once every GPU of the job has started.

    ## Example

    ## How to fix
    Choose a PP (and VPP) that divides the layer count, or give an explicit uneven layout.
    """
    valid = (
        Example(_meg("--num-layers: 32\n--pipeline-model-parallel-size: 4\n--num-attention-heads: 32"), filename="model_config.yaml"),
        Example(_meg("--num-layers: 30\n--pipeline-model-parallel-size: 4\n--decoder-first-pipeline-num-layers: 6\n--num-attention-heads: 32"), filename="model_config.yaml"),
    )
    invalid = (
        Example(_meg("--num-layers: 30\n--pipeline-model-parallel-size: 4\n--num-attention-heads: 32"), filename="model_config.yaml", line=5),
        Example(_nemo(pp=4, model_extra="  num_layers: 32\n  virtual_pipeline_model_parallel_size: 3\n"), filename="conf/gpt.yaml", line=9),
    )

    def findings(self, view: View):
        if not view.fw("megatron", "nemo") or view.fw("deepspeed", "neox"):
            return
        if view.stated("parallel.pp_layout") or view.launch_flags & _uneven() or "deepspeed" in view.launch_flags:
            return
        layers, pp = view.i("model.layers"), view.i("parallel.pp")
        if layers is None or pp is None or pp <= 1:
            return
        pp_v = view.v("parallel.pp")
        assert pp_v is not None  # view.i gave an int for the same key
        vpp_v = view.v("parallel.vpp")
        vpp = view.i("parallel.vpp")
        if vpp is not None and vpp > 1:
            stages = pp * vpp
            if layers % stages:
                yield Finding(pp_v, f"{layers} layers do not split evenly into "
                                                     f"PP {pp} × VPP {vpp} = {stages} stages; make the layers a multiple of {stages} "
                                                     f"or pick PP × VPP dividing {layers}",
                              [(view.v("model.layers"), f"{layers} layers"), (vpp_v, f"VPP {vpp}")])
            return
        if layers % pp:
            yield Finding(pp_v, f"{layers} layers do not split evenly into {pp} pipeline stages; set PP to "
                                                 f"{_divisors(layers, pp)}, or give an uneven layout",
                          [(view.v("model.layers"), f"{layers} layers")])


def _uneven() -> frozenset[str]:
    from parallint.model.factrule import UNEVEN_FLAGS

    return UNEVEN_FLAGS


class SequenceParallelWithoutTp(FactRule):
    code = "LAY005"
    facts = frozenset({"parallel.sequence_parallel", "parallel.tp"})
    name = "sequence-parallel-without-tp"
    severity = Severity.WARNING
    summary = "Sequence parallelism is enabled with tensor-parallel degree 1"
    doc = """
    ## What it does
    Warns when Megatron-style sequence parallelism (`--sequence-parallel`,
    `sequence_parallel: true`) is on while TP is 1.

    TP must be 1 as launched: a config whose TP a tool rewrites (NeMo `auto_configurator` base
    configs), a conversion config and gpt-neox's parallelism left at 1 by convention are silent;
    a test case or training config that runs as written with TP 1 is reported
    (docs/precision-policy-configs.md).

    ## Why it matters
    Megatron's sequence parallelism splits the activations of the tensor-parallel group; with TP 1
    there is nothing to split, and Megatron silently turns it off (Megatron-Core raises "Cannot use
    sequence parallelism without tensor parallelism"). The config does not do what it says.

    ## Example

    ## How to fix
    Remove the flag, or raise TP. For splitting long sequences across GPUs use context
    parallelism (or DeepSpeed-Ulysses `sequence_parallel_size`, which is a different feature).
    """
    valid = (Example(_nemo(tp=2, model_extra="  sequence_parallel: true\n"), filename="conf/gpt.yaml"),)
    invalid = (Example(_nemo(tp=1, model_extra="  sequence_parallel: true\n"), filename="conf/gpt.yaml", line=10),)

    def findings(self, view: View):
        if not view.fw("megatron", "nemo", "neox"):
            return
        sp = view.v("parallel.sequence_parallel")
        if sp is None or sp.value is not True:
            return
        tp = view.i("parallel.tp")
        if tp == 1:
            yield Finding(sp, "sequence parallelism needs tensor parallelism; with TP 1 Megatron turns it off; "
                              "remove sequence parallelism or raise TP above 1",
                          [(view.v("parallel.tp"), "TP 1")])


class ZeroWithPipeline(FactRule):
    code = "LAY006"
    facts = frozenset({"parallel.pp", "parallel.zero_stage"})
    name = "zero-with-pipeline"
    severity = Severity.ERROR
    summary = "DeepSpeed ZeRO stage 2 or 3 combined with pipeline parallelism"
    doc = """
    ## What it does
    Flags a DeepSpeed (or gpt-neox) job that uses ZeRO stage ≥ 2 together with more than one
    pipeline stage.

    ## Why it matters
    DeepSpeed's pipeline engine refuses it at start-up: "ZeRO-2 and ZeRO-3 are incompatible with
    pipeline parallelism". The job fails after the GPUs are allocated.

    gpt-neox uses the pipeline engine for every `pipe_parallel_size` of 1 or more, so a neox
    config with `pipe_parallel_size: 1` and ZeRO stage 2 or 3 fails the same way (its README:
    "set pipe-parallel-size to 0 if you want to use ZeRO stage 2 or more").

    ## Example

    ## How to fix
    Use ZeRO stage 0 or 1 with pipeline parallelism, or drop the pipeline (gpt-neox:
    `pipe_parallel_size: 0`).
    """
    valid = (Example('{\n  "pipe_parallel_size": 2,\n  "model_parallel_size": 1,\n  "num_layers": 24,\n'
                     '  "zero_optimization": {"stage": 1}\n}\n', filename="neox.yml"),
             Example('{\n  "pipe_parallel_size": 0,\n  "model_parallel_size": 1,\n  "num_layers": 24,\n'
                     '  "zero_optimization": {"stage": 2}\n}\n', filename="neox.yml"))
    invalid = (
        Example('{\n  "pipe_parallel_size": 2,\n  "model_parallel_size": 1,\n  "num_layers": 24,\n'
                '  "zero_optimization": {"stage": 2}\n}\n', filename="neox.yml", line=5),
        Example('{\n  "pipe_parallel_size": 1,\n  "model_parallel_size": 1,\n  "num_layers": 24,\n'
                '  "zero_optimization": {"stage": 2}\n}\n', filename="neox.yml", line=5),
        Example(files={
            "run.sh": "deepspeed --num_gpus 8 pretrain_gpt.py --tensor-model-parallel-size 2 \\\n"
                      "    --pipeline-model-parallel-size 2 --num-layers 24 --micro-batch-size 2 \\\n"
                      "    --global-batch-size 64 --deepspeed --deepspeed_config ds_config.json\n",
            "pretrain_gpt.py": "import deepspeed\nprint(deepspeed.__version__)\n",
            "ds_config.json": '{\n  "train_batch_size": 64,\n  "train_micro_batch_size_per_gpu": 2,\n'
                              '  "zero_optimization": {"stage": 2}\n}\n',
        }, line=4),
    )

    def check_file(self, f, ctx):
        yield from super().check_file(f, ctx)
        if f.kind == "neox":
            yield from self._neox_single_stage(f)

    def _neox_single_stage(self, f):
        """gpt-neox runs DeepSpeed's pipeline engine for every ``pipe_parallel_size`` ≥ 1, one
        stage included (``is_pipe_parallel``); only 0 gives the plain engine ZeRO-2/3 need. PP > 1
        is the fact check's; this is the ``pipe_parallel_size: 1`` case, stated in this file."""
        tree = getattr(getattr(f, "data", None), "tree", None)
        if tree is None or not tree.is_map:
            return
        key = next((k for k in ("pipe_parallel_size", "pipe-parallel-size") if tree.get(k) is not None), None)
        z = f.facts.get("parallel.zero_stage")
        if key is None or z is None or z.span is None:
            return
        pipe = Value(tree.get(key).value).as_int()
        stage = z.as_int()
        if not (pipe.known and stage.known):
            return
        pipe, stage = pipe.value, stage.value
        if pipe == 1 and stage >= 2:
            yield self.report(z.span, f"ZeRO stage {stage} with pipe_parallel_size 1: gpt-neox still runs "
                                      f"DeepSpeed's pipeline engine for one stage, which refuses ZeRO-2/3; "
                                      f"set pipe_parallel_size to 0",
                              [Related.at(tree.key_spans.get(key, tree.get(key).span), "pipe_parallel_size 1")])

    def findings(self, view: View):
        if not view.fw("deepspeed", "neox"):
            return
        z, pp = view.i("parallel.zero_stage"), view.i("parallel.pp")
        if z is None or pp is None:
            return
        z_v = view.v("parallel.zero_stage")
        assert z_v is not None  # view.i gave an int for the same key
        if z >= 2 and pp > 1:
            yield Finding(z_v, f"ZeRO stage {z} is incompatible with DeepSpeed "
                                                        f"pipeline parallelism (PP {pp}); set the ZeRO stage to 0 or 1, or PP to 1",
                          [(view.v("parallel.pp"), f"PP {pp}")])


class ExpertsNotDivisible(FactRule):
    code = "LAY008"
    facts = frozenset({"model.num_experts", "parallel.ep", "parallel.etp", "parallel.pp", "parallel.tp"})
    name = "experts-not-divisible"
    severity = Severity.ERROR
    summary = "Experts do not divide over expert parallelism, or the expert grid does not fit the world"
    doc = """
    ## What it does
    Checks `num_experts % EP == 0`, that EP > 1 comes with experts (an explicit `null` expert
    count), and, for Megatron/NeMo, that the world size is divisible by ETP×EP×PP (ETP defaults
    to TP).

    ## Why it matters
    Each expert-parallel rank holds `num_experts / EP` experts. Megatron stops with "decoder
    world_size (4) is not divisible by expert_tensor_model_pipeline_parallel size (8)".

    ## Example

    ## How to fix
    Choose EP dividing the expert count, and ETP×EP×PP dividing the world size.
    """
    valid = (Example(_meg("--num-experts: 8\n--expert-model-parallel-size: 4\n--num-attention-heads: 32"), filename="model_config.yaml"),)
    invalid = (
        Example(_meg("--num-experts: 6\n--expert-model-parallel-size: 4\n--num-attention-heads: 32"), filename="model_config.yaml", line=5),
        Example(_nemo(model_extra="  num_moe_experts: null\n  expert_model_parallel_size: 2\n"), filename="conf/gpt.yaml", line=11),
        Example(_nemo(tp=2, devices=4, model_extra="  num_moe_experts: 8\n  expert_model_parallel_size: 4\n"),
                filename="conf/moe.yaml", line=11),
    )

    def findings(self, view: View):
        ep_v = view.v("parallel.ep")
        ep = view.i("parallel.ep")
        if ep is None or ep <= 1:
            return
        assert ep_v is not None  # view.i gave an int for the same key
        ne = view.i("model.num_experts")
        stated = view.facts.all("model.num_experts")
        if stated and all((not v.known) and v.why == "null" for v in stated):
            yield Finding(ep_v, f"expert-parallel degree {ep} but the model has no experts (num_experts is null); set "
                                f"the expert-parallel degree to 1 or num_experts to a multiple of {ep}",
                          [(stated[0], "num_experts: null")])
            return
        if ne is not None and ne > 0 and ne % ep:
            yield Finding(ep_v, f"{ne} experts are not divisible by expert-parallel degree {ep}; set EP to "
                                f"{_divisors(ne, ep)}",
                          [(view.v("model.num_experts"), f"{ne} experts")])
        w = view.world_int
        if w is None or not view.fw("megatron", "nemo"):
            return
        tp = view.i("parallel.tp")
        etp = view.i("parallel.etp")
        if etp is None:
            if view.stated("parallel.etp"):
                return
            etp = tp if tp is not None else (None if view.stated("parallel.tp") else 1)
        pp = view.i("parallel.pp")
        if pp is None:
            pp = None if view.stated("parallel.pp") else 1
        if etp is None or pp is None:
            return
        grid = etp * ep * pp
        if w % grid:
            yield Finding(ep_v, f"world size {w} is not divisible by expert grid ETP {etp} × EP {ep} × PP {pp} = {grid}; "
                                f"start a multiple of {grid} processes or lower the degrees to divide {w}",
                          [(view.world, f"world size {w}")])


class ContextParallelSeqLen(FactRule):
    code = "LAY009"
    facts = frozenset({"model.seq_len", "parallel.cp"})
    name = "context-parallel-seq-len"
    severity = Severity.ERROR
    summary = "The sequence length is not divisible by 2 × the context-parallel degree"
    doc = """
    ## What it does
    With context parallelism CP > 1, checks `seq_len % (2·CP) == 0`.

    ## Why it matters
    Context parallelism splits each sequence into 2·CP chunks for load balancing; Megatron,
    Megatron-Bridge and torchtitan stop at start-up when the length does not split.

    ## Example

    ## How to fix
    Use a sequence length divisible by 2·CP.
    """
    valid = (Example(_meg("--seq-length: 4096\n--context-parallel-size: 2\n--num-attention-heads: 32"), filename="model_config.yaml"),)
    invalid = (Example(_meg("--seq-length: 4098\n--context-parallel-size: 2\n--num-attention-heads: 32"), filename="model_config.yaml", line=4),)

    def findings(self, view: View):
        cp, seq = view.i("parallel.cp"), view.i("model.seq_len")
        if cp is None or cp <= 1 or seq is None or seq <= 0:
            return
        seq_v = view.v("model.seq_len")
        assert seq_v is not None  # view.i gave an int for the same key
        if not view.fw("megatron", "nemo", "torchtitan"):
            return
        if seq % (2 * cp):
            yield Finding(seq_v, f"sequence length {seq} is not divisible by 2×CP = {2 * cp}; set it to a multiple of "
                                                   f"{2 * cp} ({_near_multiples(seq, 2 * cp)})",
                          [(view.v("parallel.cp"), f"CP {cp}")])


class KvGroupsVsTp(FactRule):
    code = "LAY010"
    facts = frozenset({"model.kv_heads", "parallel.tp"})
    name = "kv-groups-vs-tp"
    severity = Severity.ERROR
    summary = "GQA query groups are neither a multiple nor a divisor of TP"
    doc = """
    ## What it does
    With grouped-query attention, checks that the number of KV heads (query groups) is a multiple
    of the tensor-parallel degree or divides it.

    ## Why it matters
    Each tensor-parallel rank needs whole KV groups (or an equal share of replicated ones);
    Megatron's TransformerConfig rejects any other combination at start-up.

    ## Example

    ## How to fix
    Use a TP that divides the number of KV heads (or that the KV heads divide).
    """
    valid = (Example(_meg("--group-query-attention: true\n--num-query-groups: 8\n--tensor-model-parallel-size: 4\n--num-attention-heads: 32"), filename="model_config.yaml"),)
    invalid = (Example(_meg("--group-query-attention: true\n--num-query-groups: 6\n--tensor-model-parallel-size: 4\n--num-attention-heads: 24"), filename="model_config.yaml", line=6),)

    def findings(self, view: View):
        kv, tp = view.i("model.kv_heads"), view.i("parallel.tp")
        if kv is None or tp is None or kv <= 0 or tp <= 1:
            return
        tp_v = view.v("parallel.tp")
        assert tp_v is not None  # view.i gave an int for the same key
        if kv % tp and tp % kv:
            yield Finding(tp_v, f"{kv} KV heads (query groups) are neither a multiple nor a "
                                                 f"divisor of tensor-parallel degree {tp}; set TP to {_divisors(kv, tp)}, or a "
                                                 f"multiple of {kv}",
                          [(view.v("model.kv_heads"), f"{kv} KV heads")])


class VirtualPipelineWithoutPp(FactRule):
    code = "LAY011"
    facts = frozenset({"parallel.pp", "parallel.vpp"})
    name = "virtual-pipeline-without-pp"
    severity = Severity.ERROR
    summary = "A virtual (interleaved) pipeline is requested with PP 1"
    doc = """
    ## What it does
    Flags a virtual pipeline size > 1 (`virtual_pipeline_model_parallel_size`,
    `--num-virtual-stages-per-pipeline-rank`) when the pipeline-parallel degree is 1.

    ## Why it matters
    The interleaved schedule needs several pipeline ranks; Megatron stops with
    "pipeline-model-parallel size should be greater than 1 with interleaved schedule".

    ## Example

    ## How to fix
    Remove the virtual pipeline setting or use PP > 1.
    """
    valid = (Example(_nemo(pp=2, model_extra="  num_layers: 24\n  virtual_pipeline_model_parallel_size: 2\n"), filename="conf/gpt.yaml"),)
    invalid = (Example(_nemo(pp=1, model_extra="  num_layers: 24\n  virtual_pipeline_model_parallel_size: 2\n"), filename="conf/gpt.yaml", line=11),)

    def findings(self, view: View):
        vpp, pp = view.i("parallel.vpp"), view.i("parallel.pp")
        if vpp is None or vpp <= 1 or pp != 1:
            return
        vpp_v = view.v("parallel.vpp")
        assert vpp_v is not None  # view.i gave an int for the same key
        yield Finding(vpp_v, f"virtual pipeline size {vpp} needs pipeline parallelism, but PP is 1; remove the "
                                              f"virtual pipeline size or raise PP",
                      [(view.v("parallel.pp"), "PP 1")])


class HiddenNotDivisibleByHeads(FactRule):
    code = "LAY012"
    facts = frozenset({"model.head_dim", "model.heads", "model.hidden"})
    name = "hidden-not-divisible-by-heads"
    severity = Severity.ERROR
    summary = "hidden_size is not divisible by num_attention_heads and no head dimension is given"
    doc = """
    ## What it does
    Checks `hidden_size % num_attention_heads == 0` when no explicit head dimension
    (`kv_channels`, `head_dim`) is set.

    ## Why it matters
    Without an explicit head dimension the frameworks compute it as hidden / heads; Megatron's
    argument validation stops when that is not an integer.

    ## Example

    ## How to fix
    Use a hidden size divisible by the head count, or set the head dimension explicitly.
    """
    valid = (Example(_meg("--hidden-size: 4096\n--num-attention-heads: 32"), filename="model_config.yaml"),)
    invalid = (Example(_meg("--hidden-size: 1000\n--num-attention-heads: 16"), filename="model_config.yaml", line=4),)

    def findings(self, view: View):
        h, a = view.i("model.hidden"), view.i("model.heads")
        if h is None or a is None or a <= 0:
            return
        hidden_v = view.v("model.hidden")
        assert hidden_v is not None  # view.i gave an int for the same key
        if any(v.known or not v.why.startswith(("null", "unset")) for v in view.facts.all("model.head_dim")):
            return  # an explicit (or unresolvable) head dimension
        if h % a:
            yield Finding(hidden_v, f"hidden size {h} is not divisible by {a} attention heads; set the heads to "
                                                  f"{_divisors(h, a)}, or give the head dimension (kv_channels)",
                          [(view.v("model.heads"), f"{a} heads")])


def _flag_on(node) -> bool:
    """A MODEL_ARGS switch that is passed: ``--flag: true`` (or a value); ``false`` = not passed."""
    return node is not None and node.value is not False and node.value is not None and not node.is_map


class TpCommOverlapWithoutSequenceParallel(FactRule):
    code = "LAY013"
    name = "tp-comm-overlap-without-sequence-parallel"
    severity = Severity.ERROR
    summary = "Tensor-parallel communication overlap without sequence parallelism (or with TP 1)"
    facts = frozenset({"parallel.sequence_parallel", "parallel.tp"})
    doc = """
    ## What it does
    Flags Megatron's `--tp-comm-overlap` (Transformer Engine userbuffers) when sequence
    parallelism is not on as launched: `--sequence-parallel` missing, or TP 1 (Megatron then
    turns sequence parallelism off first). For NeMo, `ub_tp_comm_overlap: true` without
    `sequence_parallel: true` is reported as a warning. Command lines with words parallint
    cannot resolve (`$EXTRA_ARGS`) keep it silent.

    ## Why it matters
    Megatron-LM stops at start-up with "Tensor parallel communication/GEMM overlap can happen
    only when sequence parallelism is enabled": the overlap kernels replace the all-gather and
    reduce-scatter that only sequence parallelism uses. NeMo instead switches the overlap off
    silently, so the speed-up the config asks for never happens.

    ## Example

    ## How to fix
    Add `--sequence-parallel` (`sequence_parallel: true`) with TP > 1, or drop the overlap flag.
    """
    valid = (
        Example(_meg("--tensor-model-parallel-size: 4\n--sequence-parallel: true\n--tp-comm-overlap: true\n"
                     "--num-attention-heads: 32"), filename="model_config.yaml"),
        Example(_nemo(tp=4, model_extra="  sequence_parallel: true\n  ub_tp_comm_overlap: true\n"),
                filename="conf/gpt.yaml"),
    )
    invalid = (
        Example(_meg("--tensor-model-parallel-size: 4\n--tp-comm-overlap: true\n--num-attention-heads: 32"),
                filename="model_config.yaml", line=5),
        Example(_meg("--tensor-model-parallel-size: 1\n--sequence-parallel: true\n--tp-comm-overlap: true\n"
                     "--num-attention-heads: 32"), filename="model_config.yaml", line=6),
        Example(files={
            "run.sh": "torchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size 8 \\\n"
                      "    --num-layers 32 --hidden-size 4096 --num-attention-heads 32 --tp-comm-overlap\n",
            "pretrain_gpt.py": "import sys\nprint(sys.argv)\n",
        }, line=2),
    )

    def _verdict(self, sp: Value | None, tp: int | None, tp_stated: bool) -> str | None:
        """Why sequence parallelism is off as launched, or None when it is (or may be) on."""
        if sp is not None and not sp.known:
            return None
        if sp is None or sp.value is not True:
            return "without --sequence-parallel"
        if tp == 1 or (tp is None and not tp_stated):
            return "with TP 1, where Megatron turns sequence parallelism off first"
        return None

    def check_file(self, f, ctx):
        tree = getattr(getattr(f, "data", None), "tree", None)
        if tree is None or not tree.is_map:
            return
        if f.kind == "megatron_yaml":
            args = tree.get("MODEL_ARGS")
            node = args.get("--tp-comm-overlap") if args is not None and args.is_map else None
            if not _flag_on(node):
                return
            sp = f.facts.all("parallel.sequence_parallel")
            why = self._verdict(sp[0] if sp else None, f.facts.int("parallel.tp"), bool(f.facts.all("parallel.tp")))
            if why:
                yield self.report(args.key_spans.get("--tp-comm-overlap", node.span),
                                  f"--tp-comm-overlap {why}: Megatron stops at start-up (\"Tensor parallel "
                                  f"communication/GEMM overlap can happen only when sequence parallelism is enabled\"); "
                                  f"{_TP_OVERLAP_FIX}")
        elif f.kind == "nemo":
            model = tree.get("model")
            node = model.get("ub_tp_comm_overlap") if model is not None and model.is_map else None
            if node is None or node.value is not True:
                return
            sp = f.facts.all("parallel.sequence_parallel")
            if sp and (not sp[0].known or sp[0].value is True):
                return
            yield self.report(model.key_spans.get("ub_tp_comm_overlap", node.span),
                              "ub_tp_comm_overlap without sequence_parallel: NeMo switches the overlap off "
                              "(it needs sequence parallelism's all-gather/reduce-scatter); set model.sequence_parallel "
                              "to true or remove ub_tp_comm_overlap",
                              severity=Severity.WARNING)

    def check_job(self, job, ctx):
        launch = getattr(job, "launch", None)
        args = list(getattr(launch, "args", None) or [])
        if not args or any(not a.known for a in args):
            return  # an unresolved word may carry --sequence-parallel
        words = [a for a in args if isinstance(a.value, str)]
        flag = next((a for a in words if a.value == "--tp-comm-overlap"), None)
        if flag is None or flag.span is None:
            return
        if any(f.path == flag.span.path and f.kind in self.kinds for f in job.files):
            return  # a config file's own finding
        facts = getattr(launch, "facts", None)
        if not isinstance(facts, FactMap):
            return
        sp_on = any(a.value == "--sequence-parallel" for a in words)
        tp = facts.int("parallel.tp")
        if sp_on and tp is None and facts.all("parallel.tp"):
            return
        why = "without --sequence-parallel" if not sp_on else (
            "with TP 1, where Megatron turns sequence parallelism off first" if (tp or 1) == 1 else None)
        if why:
            yield self.report(flag.span, f"--tp-comm-overlap {why}: Megatron stops at start-up (\"Tensor parallel "
                                         f"communication/GEMM overlap can happen only when sequence parallelism "
                                         f"is enabled\"); {_TP_OVERLAP_FIX}")


def _accelerate_fix(names: tuple, sizes: list, w: int) -> str:
    """Set dp_shard so the parallelism_config product is the process count, when an integer does it."""
    others = 1
    for n, i in zip(names, sizes):
        if n != "dp_shard":
            others *= i
    if w % others == 0:
        return f"set dp_shard to {w // others}"
    return f"make {' × '.join(names)} equal {w}"


_TP_OVERLAP_FIX = "add --sequence-parallel with TP > 1, or remove --tp-comm-overlap"


def _divisors(n: int, near: int) -> str:
    """A fix clause's choice of degrees: the divisors of ``n`` next to ``near`` ('4 or 2')."""
    if n > 1_000_000:  # a hostile value: no search
        return f"a divisor of {n}"
    divs = [d for d in range(2, n + 1) if n % d == 0] or [1]
    below = [d for d in divs if d < near][-2:][::-1]
    above = [d for d in divs if near < d <= 2 * near][:1]
    pick = (below + above)[:2] or [1]
    return " or ".join(map(str, pick)) if len(pick) < 2 or pick[0] != pick[1] else str(pick[0])


def _near_multiples(n: int, k: int) -> str:
    lo = n // k * k
    return " or ".join(str(x) for x in (lo, lo + k) if x > 0)
