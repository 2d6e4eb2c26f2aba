"""LAY001 parallel-product-mismatch: The product of the parallel degrees does not fit the world size"""

from __future__ import annotations

import re

from parallint.model.diagnostics import Severity
from parallint.model.factrule import FactRule, Finding, View, src
from parallint.model.fixes import Fix, span_range, syntax_of
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


#: the degrees' names in the fix's title
_SHORT = {"parallel.tp": "TP", "parallel.pp": "PP", "parallel.cp": "CP", "parallel.dp_shard": "dp_shard",
          "parallel.dp_replicate": "dp_replicate"}
#: what precedes a degree written as a literal: a flag (``--tensor-model-parallel-size 8``,
#: ``--pipeline-model-parallel-size=4``) or a dotted override (``model.tensor_model_parallel_size=8``)
#: on a launch line; a key in a config (``tensor_model_parallel_size: 8``, ``"tp": 8``,
#: ``tensor_parallel_degree = 4``, ``tp_size=4``). A shell variable (``TP=8``) may be used elsewhere:
#: not a literal the fix changes.
_FLAG_BEFORE = re.compile(r"(?:--[A-Za-z0-9][A-Za-z0-9_.-]*(?:[ \t]+|[ \t]*=[ \t]*)"
                          r"|(?<![\w.$])[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+=)$")
_KEY_BEFORE = re.compile(r"(?:^|[\s{,(])[\"']?[A-Za-z_][A-Za-z0-9_.-]*[\"']?[ \t]*[:=][ \t]*$")
#: candidate values tried per finding (each runs the layout rules once)
_TRIES = 16


def _nearest(view: View, key: str, old: int, others: int, w: int, dp_per: int = 1) -> int | None:
    """The value of the degree ``key`` (now ``old``) nearest to it for which the layout keeps the
    world size ``w`` whole and ``plan`` accepts it (every LAY/BAT rule silent on its choices);
    ``others``: the product of the other degrees. Nearest by ratio, then the lower of two. None
    when no value does, or nothing can say what ``plan`` accepts, or the degree is stated in more
    than one place (editing one of them would not change the job)."""
    if view.accept is None or len(view.facts.all(key)) != 1 or others < 1 or w % others or w > 1 << 20:
        return None
    room = w // others
    choices = [d for d in range(1, min(room, 1 << 12) + 1) if room % d == 0 and d != old]
    choices.sort(key=lambda d: (max(d / old, old / d), d > old))
    from parallint.estimator.spec import spec_fields
    from parallint.model.facts import known_int

    base = spec_fields(view.facts, view.config)
    gpn = known_int(view.gpus_per_node)
    name = key.split(".", 1)[1]
    for d in choices[:_TRIES]:
        spec = {k: dict(v) if isinstance(v, dict) else v for k, v in base.items()}
        par = spec["parallel"]
        if name in ("tp", "pp", "cp"):
            par[name] = d
            par["dp"] = w // (others * d)
        else:  # torchtitan's data-parallel degrees: dp = dp_replicate × dp_shard
            par["dp"] = dp_per * d
        par["world_size"] = w
        par.pop("nodes", None)  # derived again from the world and the GPUs per node
        if view.accept(spec, gpn):
            return d
    return None


def _degree_fix(key: str, old: int, new: int | None, layout: str) -> Fix | None:
    if new is None:
        return None
    return Fix(f"set {_SHORT[key]} to {new} ({layout})", safe=False, data=f"{old} {new}")


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
    fix_safety = "unsafe"
    fix_doc = ("`--unsafe-fixes` (and `--diff`, which shows it) sets the degree the finding is on to the "
               "nearest value whose layout `parallint plan` accepts for the same world size (the product "
               "divides it, or equals it for torchtitan, and every LAY and BAT rule stays silent), where "
               "the degree is written as a literal: a Megatron flag on the launch line, a NeMo, DeepSpeed "
               "or torchtitan key. The layout changes (memory per GPU, speed, the data-parallel size), "
               "the rest of the file does not; a degree in a shell variable is not changed.")
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

    def apply_fix(self, diag, text):
        """The degree's literal replaced where the finding is: after its flag on a launch line, or
        after its key in a config (a value in a shell variable, a YAML anchor or a quoted string is
        not changed: it may be used elsewhere)."""
        old, _, new = diag.fix.data.partition(" ")
        syntax = syntax_of(diag.span.path)
        r = span_range(text, syntax, diag.span)
        if r is None or text[r[0]:r[1]] != old or not new.isdigit():
            return None
        after = text[r[1]:r[1] + 1]
        if after and (after.isalnum() or after in "._$"):
            return None
        start = max(text.rfind("\n", 0, r[0]), text.rfind("\r", 0, r[0])) + 1
        if not (_FLAG_BEFORE if syntax == "shell" else _KEY_BEFORE).search(text[start:r[0]]):
            return None
        return text[:r[0]] + new + text[r[1]:]

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
        at_key, at, at_i = max(known, key=lambda t: t[2])
        assert at is not None and at_i is not None  # its degree is a known int
        desc = " × ".join(f"{k.split('.')[1].upper()} {i}" for k, _, i in known if i > 1)
        product = f"{desc} = {prod}" if "×" in desc else desc  # one degree: "TP 3", not "TP 3 = 3"
        if prod > w:
            msg = (f"{product if '×' in desc else desc + ':'}{'' if '×' in desc else f' {prod}'} GPUs per model "
                   f"replica, but the world size is {w}; start a multiple of {prod} processes or lower the degrees "
                   f"to divide {w}")
        else:
            msg = (f"world size {w} is not divisible by {product}: no integer data-parallel size fits; start a "
                   f"multiple of {prod} processes or change the degrees to divide {w}")
        others = prod // at_i
        new_i = _nearest(view, at_key, at_i, others, w)
        layout = " × ".join(f"{k.split('.')[1].upper()} {new_i if v is at else i}" for k, v, i in known) + \
            f" × DP {w // (others * new_i)} = {w}" if new_i else ""
        yield Finding(at, msg, [(world, f"world size {w}")] +
                      [(v, f"{k.split('.')[1].upper()} {i}") for k, v, i in known if v is not at and i > 1],
                      fix=_degree_fix(at_key, at_i, new_i, layout))

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
                fix = None
                if w % others == 0 and w // others != shard:  # the one dp_shard that makes the product
                    rep = vals.get("parallel.dp_replicate", 1)
                    if _nearest(view, "parallel.dp_shard", shard, others, w, rep) == w // others:
                        fix = _degree_fix("parallel.dp_shard", shard, w // others,
                                          f"dp_shard {w // others} × {others} = {w}")
                yield Finding(shard_v, f"{who} needs dp_replicate·dp_shard·cp·tp·pp == world size: "
                                       f"{prod} != {w}; " + (f"set the dp_shard degree to {w // others} (or -1)" if w % others == 0
                                                          else f"start a multiple of {others} processes or change "
                                                               f"the degrees to divide {w}"),
                              [(world, f"world size {w}")] + rel, fix=fix)
            return
        if not inferred:
            return
        if w % others != 0:
            at_key, at, at_i = max(((k, view.v(k), i) for k, i in vals.items() if view.v(k) is not None),
                                   key=lambda t: t[2], default=("", None, 0))
            if at is None:
                return
            fix = None
            if at_key in ("parallel.tp", "parallel.pp", "parallel.cp") and at_i > 0:
                rest = others // at_i
                new_i = _nearest(view, at_key, at_i, rest, w)
                fix = _degree_fix(at_key, at_i, new_i, f"{names[at_key]} {new_i}, dp_shard -1 = "
                                                       f"{w // (rest * new_i)}" if new_i else "")
            yield Finding(at, f"world size {w} is not divisible by dp_replicate·cp·tp·pp = {others}, so "
                              f"{who} cannot infer {'data_parallel_shard_dim' if who == 'torchtune' else 'data_parallel_shard_degree'} (-1); start a multiple of {others} "
                              f"processes or change the degrees to divide {w}",
                          [(world, f"world size {w}")] + [r for r in rel if r[0] is not at], fix=fix)
