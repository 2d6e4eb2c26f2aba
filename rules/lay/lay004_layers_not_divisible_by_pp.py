"""LAY004 layers-not-divisible-by-pp: The layers do not split evenly over the pipeline (× virtual) stages"""

from __future__ import annotations

from parallint.model.diagnostics import Severity
from parallint.model.factrule import FactRule, Finding, View
from parallint.model.rule import Example
from parallint.rules.lay._common import _divisors, _meg, _nemo


def _uneven() -> frozenset[str]:
    from parallint.model.factrule import UNEVEN_FLAGS

    return UNEVEN_FLAGS


class LayersNotDivisibleByPp(FactRule):
    code = "LAY004"
    facts = frozenset({"model.layers", "parallel.pp", "parallel.pp_layout", "parallel.vpp", "parallel.vpp_layers"})
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
        Example("torchrun --nproc_per_node 8 pretrain_gpt.py --pipeline-model-parallel-size 4 \\\n"
                "  --num-layers-per-virtual-pipeline-stage 3 --num-layers 24 --hidden-size 1024 \\\n"
                "  --num-attention-heads 16\n", filename="run.sh"),
    )
    invalid = (
        Example(_meg("--num-layers: 30\n--pipeline-model-parallel-size: 4\n--num-attention-heads: 32"), filename="model_config.yaml", line=5),
        Example(_nemo(pp=4, model_extra="  num_layers: 32\n  virtual_pipeline_model_parallel_size: 3\n"), filename="conf/gpt.yaml", line=9),
        # 24 layers over PP 4 leave 6 per rank: 4-layer virtual stages do not cover them
        Example("torchrun --nproc_per_node 8 pretrain_gpt.py --pipeline-model-parallel-size 4 \\\n"
                "  --num-layers-per-virtual-pipeline-stage 4 --num-layers 24 --hidden-size 1024 \\\n"
                "  --num-attention-heads 16\n", filename="run.sh", line=2),
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
        per_v = view.v("parallel.vpp_layers")
        per = view.i("parallel.vpp_layers")
        if per_v is not None and per is not None and per > 0 and layers % pp == 0 and (layers // pp) % per:
            yield Finding(per_v, f"{layers} layers over PP {pp} give {layers // pp} layers per pipeline rank, which "
                                 f"{per}-layer virtual stages do not cover (Megatron-LM's argument check stops every "
                                 f"rank; older forks round the virtual stages down and build fewer layers); set "
                                 f"--num-layers-per-virtual-pipeline-stage to a divisor of {layers // pp}",
                          [(view.v("model.layers"), f"{layers} layers"), (pp_v, f"PP {pp}")])
            return
        if layers % pp:
            yield Finding(pp_v, f"{layers} layers do not split evenly into {pp} pipeline stages; set PP to "
                                                 f"{_divisors(layers, pp)}, or give an uneven layout",
                          [(view.v("model.layers"), f"{layers} layers")])
