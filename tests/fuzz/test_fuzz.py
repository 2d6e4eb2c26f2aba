"""Fuzzing every reader with Hypothesis (the failure contract: no input crashes or hangs a run).

By default this is the short, derandomised slice CI runs (a fixed set of inputs per reader, a
few seconds each). A long campaign sets the number of inputs and lifts derandomisation::

    PARALLINT_FUZZ_EXAMPLES=100000 PARALLINT_FUZZ_DEADLINE_MS=1000 \\
        python -m pytest -q -p no:cacheprovider tests/fuzz -k shell

or runs ``python benchmarks/fuzz_campaign.py`` (every reader, a time budget, a summary table).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness  # noqa: E402
import seeds  # noqa: E402

EXAMPLES = int(os.environ.get("PARALLINT_FUZZ_EXAMPLES", "40"))
_deadline = os.environ.get("PARALLINT_FUZZ_DEADLINE_MS")
FUZZ = settings(
    max_examples=EXAMPLES,
    derandomize=EXAMPLES <= 1000 and not os.environ.get("PARALLINT_FUZZ_RANDOM"),
    deadline=int(_deadline) if _deadline else None,
    database=None,
    suppress_health_check=list(HealthCheck),
    print_blob=True,
)

# pieces that stress parsers: brackets, quotes, escapes, anchors, expansions, odd characters
FRAGMENTS = [
    "\n", " ", "\t", "\r\n", "\r", ":", ": ", "- ", "-", "[", "]", "{", "}", "(", ")", '"', "'", '"""',
    "#", "//", "/*", "*/", "\\", "$(", "`", "${X}", "$X", "$@", "$((1+", "<<EOF\n", "&a ", "*a", "<<: ",
    "!!python/object:os.system ", "%YAML 1.1\n", "---\n", "...\n", "=", ".", ",", ";", "&&", "||", "|",
    ">", " and ", " or ", "not ", "lambda: ", "0", "-1", "1e309", "nan", "99999999999999999999", "true",
    "null", "~", "\x00", "\ufeff", "\u00e9", "\u2028", "\U0001f600", "\\ud800", "\\u0000", "0x1F",
    "torchrun ", "--nproc_per_node ", "8 ", "python -m torch.distributed.run ", "srun ", "deepspeed ",
    "train.py", "ds.json", "find_unused_parameters=True", "dist.init_process_group(", "DDP(",
    "tensor_model_parallel_size: ", "pipeline_model_parallel_size: ", "micro_batch_size: ",
    '"stage": ', '"offload_optimizer": {}', "activations_checkpoint_granularity: uniform",
    "precision: 16", "tp: 0", "--nodes=0 ", "nvidia.com/gpu: ", "replicas: 0", "[[x]]\n", "a.b.c = ",
]


@st.composite
def mutated(draw, seeds_):
    text = draw(st.sampled_from(seeds_))
    for _ in range(draw(st.integers(0, 6))):
        op = draw(st.integers(0, 5))
        i = draw(st.integers(0, len(text)))
        if op == 0:
            text = text[:i] + draw(st.sampled_from(FRAGMENTS)) + text[i:]
        elif op == 1:
            k = draw(st.integers(1, 40))
            text = text[:i] + text[i + k:]
        elif op == 2:  # a long run: quadratic behaviour shows here
            frag = draw(st.sampled_from(FRAGMENTS))
            text = text[:i] + frag * draw(st.integers(2, 3000)) + text[i:]
        elif op == 3:
            j = draw(st.integers(i, min(len(text), i + 200)))
            text = text[:j] + text[i:j] * draw(st.integers(1, 20)) + text[j:]
        elif op == 4:
            text = text[:i] + draw(st.text(max_size=30)) + text[i:]
        else:
            j = draw(st.integers(0, len(text)))
            text = text[:i] + text[j:j + 60] + text[i:]
    return text


def soup(extra=()):
    return st.lists(st.sampled_from(FRAGMENTS + list(extra)), max_size=80).map("".join)


def file_text(seeds_):
    return st.one_of(mutated(seeds_), soup(), st.text(max_size=200))


@pytest.mark.parametrize("target", sorted(seeds.FILES))
def test_file_readers(target):
    kinds, name, seed_texts = seeds.FILES[target]
    for kind in kinds:  # imports and caches outside the timed inputs (the deadline is per input)
        for seed in seed_texts:
            harness.engine(kind, name, seed)

    @FUZZ
    @given(kind=st.sampled_from(kinds), text=file_text(seed_texts))
    def run(kind, text):
        harness.timed(target)(lambda t: harness.engine(kind, name, t))(text)

    run()


@pytest.fixture(scope="module", autouse=True)
def _warm():
    """Import every reader and rule once before any input is timed."""
    for kinds, name, seed_texts in seeds.FILES.values():
        for kind in kinds:
            harness.engine(kind, name, seed_texts[0])
    harness.command_line(["torchrun", "train.py"])
    harness.megatron(["--use-mcore-models", "--num-layers", "2"])
    harness.numbers({"model": {"preset": "llama-2-7b"}}, 8, {})


@FUZZ
@given(name=st.sampled_from(["a.yaml", "a.yml", "a.json", "a.toml", "a.py", "a.sh", "Makefile", "run",
                             "pyproject.toml"]),
       text=st.one_of(*(mutated(s[2]) for s in seeds.FILES.values()), soup()))
def test_classifier_and_sniffers(name, text):
    harness.timed("classify+sniff")(lambda t: harness.classify_and_read(name, t))(text)


_word = st.one_of(st.sampled_from(seeds.COMMAND_WORDS), st.text(max_size=12),
                  st.integers(-5, 10**12).map(str))


@FUZZ
@given(words=st.lists(_word, max_size=30))
def test_launch_command_lines(words):
    harness.timed("command lines")(harness.command_line)(words)


_mword = st.one_of(st.sampled_from(seeds.MEGATRON_FLAGS), st.sampled_from(seeds.MEGATRON_FLAGS).map(lambda f: f + "="),
                   st.integers(-3, 10**15).map(str), st.sampled_from(["true", "false", "", "auto", "1.5", "x", None]),
                   st.text(max_size=8))


@FUZZ
@given(words=st.lists(_mword, max_size=40).map(lambda ws: ["--use-mcore-models"] + ws))
def test_megatron_arguments(words):
    harness.timed("megatron args")(harness.megatron)(words)


_toml_value = st.recursive(
    st.one_of(st.integers(-2**70, 2**70).map(str), st.booleans().map(lambda b: str(b).lower()),
              st.text(max_size=10).map(lambda s: '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'),
              st.sampled_from(['"4MB"', '"x"', '["DDP"]', '"warning"', "1.5", "-3", "inf"])),
    lambda inner: st.lists(inner, max_size=4).map(lambda xs: "[" + ", ".join(xs) + "]"),
    max_leaves=10)
_toml_key = st.one_of(st.sampled_from(["select", "ignore", "extend-select", "exclude", "extend-exclude",
                                       "per-file-ignores", "respect-gitignore", "fail-level", "gpu",
                                       "gpus-per-node", "memory-headroom", "links", "include-tests",
                                       "max-file-size", "file-timeout"]),
                      st.from_regex(r"[a-z][a-z.-]{0,12}", fullmatch=True))


@FUZZ
@given(text=st.one_of(
    mutated([seeds.TOOL_CONFIG]),
    st.lists(st.tuples(_toml_key, _toml_value), max_size=8).map(
        lambda kv: "[tool.parallint]\n" + "".join(f"{k} = {v}\n" for k, v in kv))),
       name=st.sampled_from(["parallint.toml", "pyproject.toml"]))
def test_tool_parallint_config(text, name):
    harness.timed("[tool.parallint]")(lambda t: harness.tool_config(t, name))(text)


_num = st.one_of(st.integers(-3, 64), st.integers(-2**63, 2**63), st.sampled_from([0, 1, 2**31, 10**9]),
                 st.floats(allow_nan=True, allow_infinity=True), st.sampled_from(["8", "x", "", "auto", None, True]))


@FUZZ
@given(spec=st.fixed_dictionaries({
    "model": st.fixed_dictionaries({}, optional={k: _num for k in (
        "layers", "hidden", "heads", "kv_heads", "vocab", "seq_len", "ffn", "num_experts", "top_k",
        "param_count")} | {"preset": st.sampled_from(["llama-2-7b", "gpt2-xl", "nope"])}),
    "parallel": st.fixed_dictionaries({}, optional={k: _num for k in (
        "tp", "pp", "dp", "cp", "ep", "vpp", "world_size", "nodes", "gpus_per_node", "zero_stage")}),
    "training": st.fixed_dictionaries({}, optional={
        "micro_batch": _num, "global_batch": _num, "grad_accum": _num,
        "precision": st.one_of(st.sampled_from(["bf16", "fp16", "fp32", "16", "weird"]), _num),
        "recompute": st.sampled_from(["none", "selective", "full", 3, None])}),
    "hardware": st.fixed_dictionaries({}, optional={"gpu": st.sampled_from(["H100-80GB", "A100-40GB", "x", 7])}),
}), gpus=st.one_of(st.integers(1, 4096), st.sampled_from([2**31, 720720, 2**40, 999_999_937])),
   overrides=st.fixed_dictionaries({}, optional={"tp": st.integers(1, 1 << 20), "pp": st.integers(1, 64),
                                                 "micro_batch": st.integers(1, 1 << 20)}))
def test_estimate_and_plan_numbers(spec, gpus, overrides):
    harness.timed("estimate/plan")(lambda s: harness.numbers(s, gpus, overrides))(spec)


HYDRA_SEEDS = [
    'from nemo.core.config import hydra_runner\n\n@hydra_runner(config_path="conf", config_name="baseline")\n'
    "def main(cfg) -> None:\n    cfg.model.global_batch_size = cfg.trainer.devices * cfg.model.micro_batch_size\n"
    "    cfg.trainer['devices'] += 1\n    a, cfg.exp_manager = 1, None\n\nmain()\n",
    'import hydra\n\n@hydra.main(version_base=None, config_path="../conf", config_name="gpt.yaml")\n'
    "async def run(c):\n    c.model.tp: int = 2\n    with open_dict(c):\n        c.model.pp = 4\n",
]


@FUZZ
@given(text=st.one_of(mutated(HYDRA_SEEDS), soup(["@hydra_runner(", "config_name=", "cfg.", "def main(cfg):\n"])))
def test_hydra_entry_scripts(text):
    """The entry scripts next to a NeMo config are parsed for the keys they overwrite."""
    from parallint.link import hydrascripts

    harness.timed("hydra scripts")(hydrascripts._entries)(text)
