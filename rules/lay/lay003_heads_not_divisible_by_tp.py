"""LAY003 heads-not-divisible-by-tp: The number of attention heads is not divisible by the tensor-parallel degree"""

from __future__ import annotations

from parallint.model.diagnostics import Severity
from parallint.model.factrule import FactRule, Finding, View
from parallint.model.rule import Example
from parallint.rules.lay._common import _divisors, _meg


_INFER = ("import deepspeed\nimport torch\nfrom transformers import AutoModelForCausalLM\n\n"
          "model = AutoModelForCausalLM.from_pretrained(\"EleutherAI/gpt-j-6b\", torch_dtype=torch.half)\n"
          "model = deepspeed.init_inference(model, dtype=torch.half, replace_with_kernel_inject=True,\n"
          "                                 tensor_parallel={{\"tp_size\": {tp}}})\n")


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

    DeepSpeed inference: `deepspeed.init_inference(model, tensor_parallel={"tp_size": N})` (or
    `mp_size=N`) with `replace_with_kernel_inject=True`, against the heads of the model when the
    file loads it from a hub id of parallint's table (`from_pretrained("id")`, every
    `from_pretrained` of the file loading that one id, or `pipeline(model="id")` handed in as
    `pipe.model`). N may come from the launch: a launch-line argument, or the environment
    (`mp_size=int(os.getenv("WORLD_SIZE", "1"))` is the world a `deepspeed --num_gpus 6` or
    torchrun launch starts). Without kernel injection (AutoTP) DeepSpeed splits uneven heads: silent.

    The vocabulary is not checked against TP: every framework whose TP degree parallint reads
    either pads the vocabulary to a multiple of TP (Megatron-LM, NeMo, Megatron-DeepSpeed and
    gpt-neox with `--make-vocab-size-divisible-by` × TP, nanotron, ColossalAI's shardformer,
    fairseq's model-parallel models with 8 × `--model-parallel-size`, vLLM) or shards the embedding unevenly (torchtitan's DTensor plans, DeepSpeed AutoTP). The
    frameworks that assert an even vocabulary split (fairscale's `VocabParallelEmbedding` and
    `ColumnParallelLinear`, used by the original LLaMA code) size it from the tokenizer at run
    time, which a static check cannot read.

    ## Why it matters
    Each tensor-parallel rank holds `heads / TP` whole heads; Megatron, torchtitan, vLLM and
    DeepSpeed inference all stop at start-up ("number of attention heads (52) must be divisible by
    tensor parallel size (8)").

    ## Example

    ## How to fix
    Pick a TP degree that divides the head count (52 heads: TP 2 or 4).
    """
    valid = (Example(_meg("--num-attention-heads: 32\n--tensor-model-parallel-size: 8"), filename="model_config.yaml"),
             Example(_INFER.format(tp=4), filename="infer.py"))
    invalid = (
        Example(_meg("--num-attention-heads: 52\n--tensor-model-parallel-size: 8"), filename="model_config.yaml", line=5),
        Example(files={
            "run.sh": "torchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size 8 \\\n"
                      "    --num-layers 60 --hidden-size 6656 --num-attention-heads 52\n",
            "pretrain_gpt.py": "import sys\nprint(sys.argv)\n",
        }, line=1),
        Example(_INFER.format(tp=3), filename="infer.py", line=7),
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
