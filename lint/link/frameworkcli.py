"""Frameworks whose command line, not a config file parallint reads, sets the world and the batch.

Three launchers build their job from the launch line's own words, and each asserts a batch
divisibility at start-up that BAT002 (BAT001 for OpenRLHF's DeepSpeed) checks:

* **detectron2** (``python tools/train_net.py --num-gpus 8 --num-machines 1 --config-file c.yaml
  SOLVER.IMS_PER_BATCH 16``): the script calls detectron2's ``default_argument_parser()`` and
  ``launch(main, args.num_gpus, num_machines=args.num_machines, ...)``, so the world is
  ``--num-gpus × --num-machines`` (defaults 1 and 1). ``SOLVER.IMS_PER_BATCH`` is the total batch:
  the last ``SOLVER.IMS_PER_BATCH N`` pair of the trailing options, else the config file's
  (``_BASE_`` files followed, inside the repository). ``build_batch_data_loader`` asserts
  "Total batch size (16) must be divisible by the number of gpus (3)". Stated only when the batch
  provably reaches that assertion: no ``--eval-only``, a script that never names
  ``IMS_PER_BATCH`` itself, and ``SOLVER.REFERENCE_WORLD_SIZE`` 0 (when it is set,
  ``DefaultTrainer.auto_scale_workers`` rescales the batch to the world).
* **verl** (``python3 -m verl.trainer.main_ppo data.train_batch_size=1024 ...
  trainer.n_gpus_per_node=8 trainer.nnodes=1``, Hydra overrides): ``validate_config`` asserts
  that ``data.train_batch_size × actor_rollout_ref.rollout.n`` is divisible by the GPUs
  (``n_gpus_per_node × nnodes``; with the Megatron actor, by its DP × ``ppo_micro_batch_size_per_gpu``).
  Stated only when the line gives ``data.train_batch_size`` and ``trainer.n_gpus_per_node``, sets
  no ``use_dynamic_bsz`` (which skips the check), names no other config (``--config-name``) and
  holds no word parallint cannot read (``$@`` may override any key); verl's packaged defaults
  fill ``trainer.nnodes`` (1), ``rollout.n`` (1) and the strategy (FSDP).

* **OpenRLHF** (``deepspeed --num_gpus 8 --module openrlhf.cli.train_sft --train_batch_size 256
  --micro_train_batch_size 2``): the DeepSpeed config OpenRLHF builds takes both, and DeepSpeed
  asserts its batch identity; stated as the DeepSpeed facts BAT001 checks.

The facts join the job (``framework``, ``parallel.world_size``, ``training.global_batch`` and,
for verl's Megatron actor, ``training.micro_batch`` and its TP/PP/CP) pointing at the words of the
launch line or the config's keys. Nothing is imported or run; configs are read inside the
repository only.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from parallint.model.facts import Value, known_int
from parallint.model.origin import How, Origin

TYPE_CHECKING = False  # typing is not imported at run time (start-up, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Any

    from parallint.model.facts import FileFacts

#: OpenRLHF's DeepSpeed trainers (not the Ray PPO one), whose DeepSpeed config takes its batch sizes
#: from the flags: ``train_batch_size`` and ``train_micro_batch_size_per_gpu``
OPENRLHF_MODULES = frozenset({f"openrlhf.cli.{m}" for m in ("train_sft", "train_rm", "train_dpo", "train_kto",
                                                            "train_kd", "train_prm")})
#: the flag spellings of OpenRLHF releases (older: --train_batch_size; newer: --train.batch_size)
_ORL_FLAGS = {"--train_batch_size": "train", "--train.batch_size": "train",
              "--micro_train_batch_size": "micro", "--train.micro_batch_size": "micro",
              "--ring_attn_size": "ring", "--ds.ring_attn_size": "ring",
              "--ds_tensor_parallel_size": "tp", "--ds.tensor_parallel_size": "tp",
              "--use_dynamic_batch": "dynamic", "--train.dynamic_batch_enable": "dynamic",
              "--ds.use_dynamic_batch": "dynamic"}
#: the verl entry modules whose config is verl's ``ppo_trainer.yaml`` (checked by ``validate_config``)
VERL_MODULES = frozenset({"verl.trainer.main_ppo"})
#: detectron2's ``default_argument_parser`` options: name -> takes a value
_D2_OPTIONS = {"--config-file": True, "--resume": False, "--eval-only": False, "--num-gpus": True,
               "--num-machines": True, "--machine-rank": True, "--dist-url": True}
_D2_NEEDLES = ("default_argument_parser", "launch(", "merge_from_list(args.opts)")
_D2_LAUNCH = re.compile(r"launch\(\s*\w+\s*,\s*args\.num_gpus\s*,\s*num_machines\s*=\s*args\.num_machines\b")
_D2_IMPORT = re.compile(r"from\s+detectron2\.engine\s+import\b")
_HYDRA_KEY = re.compile(r"^\+{0,2}([A-Za-z_][\w.]*)=")
_MAX_BASES = 8


def attach(job: Any, launch: Any, script: FileFacts | None, root: Path | None, resolve: Any = None,
           read: Any = None) -> None:
    """Add what a detectron2, verl, OpenRLHF, ms-swift, axolotl or LLaMA-Factory launch line gives to ``job`` (a
    no-op for anything else); ``resolve`` is the linker's ``resolve_link`` (for a config the line
    names), ``read`` its reader (a model folder's ``config.json``)."""
    if launch is None or launch.script is None or not launch.script.known or "opaque" in (launch.options or {}):
        return
    swift = (launch.options or {}).get("swift")
    if swift is not None:
        if str(swift.value).startswith("megatron "):
            _swift_megatron(job, launch, root, resolve, read)
        else:
            _swift_trainer(job, launch, root, resolve, read)
        return
    if launch.is_module and launch.script.value == "axolotl.cli.train":
        _axolotl(job, launch, root, resolve, read)
        return
    if "llamafactory" in (launch.options or {}):
        _llamafactory(job, launch, root, resolve, read)
        return
    if launch.wrapper is not None:
        return
    if launch.launcher == "deepspeed":
        if launch.is_module and launch.script.value in OPENRLHF_MODULES:
            _openrlhf(job, launch)
        return
    if launch.launcher != "python":
        return
    from parallint.model.world import world_size

    if world_size(launch.facts) is not None:
        return  # the launch states its own world (srun tasks ...): not one these readings describe
    if launch.is_module:
        if launch.script.value in VERL_MODULES:
            _verl(job, launch)
        return
    if script is not None and script.kind == "python" and _is_detectron2(script.text or ""):
        _detectron2(job, launch, script, root, resolve)


# ----------------------------------------------------------------------------- detectron2

def _is_detectron2(text: str) -> bool:
    return all(n in text for n in _D2_NEEDLES) and _D2_IMPORT.search(text) is not None \
        and _D2_LAUNCH.search(text) is not None and "IMS_PER_BATCH" not in text \
        and "add_argument" not in text and "REFERENCE_WORLD_SIZE" not in text


def _detectron2(job: Any, launch: Any, script: FileFacts, root: Path | None, resolve: Any) -> None:
    opts: dict[str, Value] = {}
    pairs: list[tuple[Value, Value]] = []
    args = list(launch.args)
    i = 0
    while i < len(args):
        w = args[i]
        if not w.known or not isinstance(w.value, str):
            return  # a word parallint cannot read may be any option
        word = w.value
        name, eq, inline = word.partition("=")
        if name in _D2_OPTIONS:
            if not _D2_OPTIONS[name]:
                opts[name] = w
                i += 1
                continue
            if eq:
                opts[name] = Value(inline, w.span, True, "", name)
                i += 1
                continue
            if i + 1 >= len(args) or not args[i + 1].known:
                return
            opts[name] = Value(args[i + 1].value, args[i + 1].span, True, "", name)
            i += 2
            continue
        if word.startswith("-"):
            return  # not detectron2's parser
        rest = args[i:]  # argparse.REMAINDER: KEY VALUE pairs
        if len(rest) % 2 or any(not a.known or not isinstance(a.value, str) for a in rest):
            return
        pairs = [(rest[k], rest[k + 1]) for k in range(0, len(rest), 2)]
        break
    if "--eval-only" in opts:
        return
    world = _d2_world(opts)
    if world is None:
        return
    batch = None
    reference = None
    for key, val in pairs:
        if key.value == "SOLVER.IMS_PER_BATCH":
            batch = _int_word(val, "SOLVER.IMS_PER_BATCH")
        elif key.value == "SOLVER.REFERENCE_WORLD_SIZE":
            reference = _int_word(val, "SOLVER.REFERENCE_WORLD_SIZE")
    cfg_word = opts.get("--config-file")
    if cfg_word is not None:
        chain = _d2_config(job, cfg_word, root, resolve)
        if chain is None:
            return  # a config parallint cannot read may set the batch or the reference world
        if batch is None:
            batch = chain.get("IMS_PER_BATCH")
        if reference is None:
            reference = chain.get("REFERENCE_WORLD_SIZE")
    if batch is None:
        return  # detectron2's default (16) may be changed by the project's add_*_config
    if reference is not None and known_int(reference) != 0:
        return  # auto_scale_workers rescales the batch to the world
    fw = Value("detectron2", launch.script.span, True, "", "detectron2 launch", Origin(How.INFERRED))
    job.facts.add("framework", fw)
    job.facts.add("parallel.world_size", world)
    job.facts.add("training.global_batch", batch)


def _int_word(v: Value, source: str) -> Value | None:
    try:
        n = int(str(v.value))
    except ValueError:
        return None
    return Value(n, v.span, True, "", source)


def _d2_world(opts: dict[str, Value]) -> Value | None:
    gpus = opts.get("--num-gpus")
    machines = opts.get("--num-machines")
    g = _int_word(gpus, "--num-gpus") if gpus is not None else None
    m = _int_word(machines, "--num-machines") if machines is not None else None
    if (gpus is not None and g is None) or (machines is not None and m is None):
        return None
    gi = g.value if g is not None else 1
    mi = m.value if m is not None else 1
    if gi <= 0 or mi <= 0:
        return None
    at = g if g is not None else m
    if at is None:
        return None  # one process: nothing to divide
    words = f"--num-gpus {gi} × --num-machines {mi}"
    return Value(gi * mi, at.span, True, "", words, Origin(How.DERIVED))


def _d2_config(job: Any, word: Value, root: Path | None, resolve: Any) -> dict[str, Value] | None:
    """``SOLVER.IMS_PER_BATCH`` and ``SOLVER.REFERENCE_WORLD_SIZE`` of a detectron2 YAML config and
    its ``_BASE_`` files (the file's own value wins); None when a file cannot be read."""
    if root is None or resolve is None or not isinstance(word.value, str) or not word.value.endswith((".yaml", ".yml")):
        return None
    target = resolve(word, job.root.abspath.parent, root)
    out: dict[str, Value] = {}
    seen: set[Path] = set()
    for _ in range(_MAX_BASES):
        if target is None or target in seen:
            return None
        seen.add(target)
        node = _yaml(target, job)
        if node is None or not node.is_map:
            return None
        solver = node.get("SOLVER")
        shown = _shown(target)
        if solver is not None and solver.is_map:
            for key in ("IMS_PER_BATCH", "REFERENCE_WORLD_SIZE"):
                n = solver.get(key)
                if n is None or key in out:
                    continue
                if not isinstance(n.value, int) or isinstance(n.value, bool):
                    return None
                out[key] = Value(n.value, n.span, True, "", f"SOLVER.{key} in {shown}")
        base = node.get("_BASE_")
        if base is None:
            return out
        if not isinstance(base.value, str) or base.value.startswith(("detectron2://", "http")):
            return None
        target = (target.parent / base.value).resolve()
        if not target.is_file():
            return None
    return None


def _shown(target: Path) -> str:
    try:
        return os.path.relpath(target, Path.cwd()).replace(os.sep, "/")
    except ValueError:
        return str(target)


def _yaml(target: Path, job: Any) -> Any:
    from parallint.util.boundary import read_inside

    raw = read_inside(target, job.root.abspath, 1_000_000)
    if raw is None:
        return None
    from parallint.readers import yamlpos

    try:
        docs = yamlpos.load_all(raw.decode("utf-8", errors="replace"), _shown(target))
    except Exception:  # noqa: BLE001 - an unreadable config is an unknown one
        return None
    return docs[0] if len(docs) == 1 else None


# ----------------------------------------------------------------------------- OpenRLHF

def _openrlhf(job: Any, launch: Any) -> None:
    """``deepspeed --module openrlhf.cli.train_sft --train_batch_size 256 --micro_train_batch_size
    2``: OpenRLHF writes both into the DeepSpeed config it builds (``train_batch_size`` × ring
    attention × DeepSpeed TP, ``train_micro_batch_size_per_gpu``), and DeepSpeed asserts
    ``train_batch_size == micro × accumulation × world``. Stated only when every word is read and
    neither ring attention, DeepSpeed TP nor dynamic batching is on the line."""
    got: dict[str, Value] = {}
    for i, w in enumerate(launch.args):
        if not w.known or not isinstance(w.value, str):
            return  # may be any flag
        name, eq, inline = w.value.partition("=")
        what = _ORL_FLAGS.get(name)
        if what is None:
            continue
        if what in ("ring", "tp", "dynamic"):
            return
        if eq:
            v = Value(inline, w.span, True, "", name)
        else:
            nxt = launch.args[i + 1] if i + 1 < len(launch.args) else None
            if nxt is None or not nxt.known:
                return
            v = Value(nxt.value, nxt.span, True, "", name)
        iv = _int_word(v, name)
        if iv is None:
            return
        got[what] = iv
    if "train" not in got or "micro" not in got:
        return  # OpenRLHF's defaults differ between releases
    job.facts.add("framework", Value("deepspeed", launch.script.span, True, "", "OpenRLHF launch",
                                     Origin(How.INFERRED)))
    job.facts.add("training.train_batch_size", got["train"])
    job.facts.add("training.micro_batch", got["micro"])


# ----------------------------------------------------------------------------- verl

def _verl(job: Any, launch: Any) -> None:
    text = job.root.text or ""
    lines = text.splitlines()
    over: dict[str, Value] = {}
    for w in launch.args:
        same_file = w.span is not None and w.span.path == job.root.path
        raw = w.value if w.known and isinstance(w.value, str) else _raw_word(lines, w) if same_file else None
        if raw is None:
            return  # `$@`, `$EXTRA_ARGS`: may override any key
        word: str = raw
        if word.startswith("-"):
            return  # --config-name, --config-path, hydra flags: another config
        m = _HYDRA_KEY.match(word)
        if m is None:
            return
        key = m.group(1)
        if w.known:
            over[key] = Value(word[m.end():], w.span, True, "", key)
        else:
            over[key] = Value.unknown(w.why, w.span, key)
    if any(k.endswith("use_dynamic_bsz") for k in over):
        return
    gpus, batch = _int_of(over, "trainer.n_gpus_per_node"), _int_of(over, "data.train_batch_size")
    if gpus is None or batch is None:
        return
    nodes = _int_of(over, "trainer.nnodes", 1)
    n = _int_of(over, "actor_rollout_ref.rollout.n", 1)
    strategy = over.get("actor_rollout_ref.actor.strategy")
    if nodes is None or n is None or (strategy is not None and not strategy.known):
        return
    megatron = strategy is not None and strategy.value == "megatron"
    if strategy is not None and strategy.value not in ("fsdp", "fsdp2", "megatron"):
        return
    g, nn = known_int(gpus), known_int(nodes)
    assert g is not None and nn is not None
    if g <= 0 or nn <= 0:
        return
    world = Value(g * nn, gpus.span, True, "", f"trainer.n_gpus_per_node {g} × trainer.nnodes {nn}",
                  Origin(How.DERIVED))
    b, k = known_int(batch), known_int(n)
    assert b is not None and k is not None
    real = batch if k == 1 else Value(b * k, batch.span, True, "",
                                      f"data.train_batch_size {b} × actor_rollout_ref.rollout.n {k}", Origin(How.DERIVED))
    facts = [("parallel.world_size", world), ("training.global_batch", real)]
    rtp = _int_of(over, "actor_rollout_ref.rollout.tensor_model_parallel_size")
    if rtp is not None and rtp.span is not None:  # given on the line: verl builds its rollout engine with it
        facts.append(("parallel.rollout_tp", rtp))
    facts.extend(_verl_mini(over, n, megatron))
    if megatron:
        micro = _int_of(over, "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu")
        if micro is None:
            return
        facts.append(("training.micro_batch", micro))
        for key, fact in (("tensor_model_parallel_size", "parallel.tp"), ("pipeline_model_parallel_size", "parallel.pp"),
                          ("context_parallel_size", "parallel.cp")):
            v = _int_of(over, f"actor_rollout_ref.actor.megatron.{key}", 1)
            if v is None:
                return
            if v.span is not None:
                facts.append((fact, v))
    job.facts.add("framework", Value("verl", launch.script.span, True, "", "verl launch", Origin(How.INFERRED)))
    for key, v in facts:
        job.facts.add(key, v)


#: where verl reads the FSDP actor's Ulysses degree (the older key, then the one under fsdp_config)
_VERL_SP = ("actor_rollout_ref.actor.ulysses_sequence_parallel_size",
            "actor_rollout_ref.actor.fsdp_config.ulysses_sequence_parallel_size")


def _verl_mini(over: dict[str, Value], n: Value, megatron: bool) -> list[tuple[str, Value]]:
    """The actor's PPO mini batch the line gives (BAT005): ``ActorConfig.validate`` wants it no
    larger than ``data.train_batch_size``; the FSDP worker (the legacy one, verl's default) divides
    ``ppo_mini_batch_size × rollout.n`` by the GPUs over the Ulysses degree and asserts the result
    above 0 and divisible by ``ppo_micro_batch_size_per_gpu``. The Ulysses degree and the micro
    batch only for that worker, and only where the line says which values they take."""
    mini = _int_of(over, "actor_rollout_ref.actor.ppo_mini_batch_size")
    if mini is None or mini.span is None:
        return []
    out = [("training.ppo_mini_batch", mini), ("training.rollout_n", n)]
    legacy = over.get("trainer.use_legacy_worker_impl")
    if megatron or (legacy is not None and (not legacy.known or str(legacy.value) not in ("auto", "enable"))):
        return out
    given = [k for k in _VERL_SP if k in over]
    if len(given) > 1:
        return out
    sp = _int_of(over, given[0]) if given else _int_of(over, _VERL_SP[1], 1)
    if sp is None:
        return out
    out.append(("parallel.ulysses_sp", sp))
    if "actor_rollout_ref.actor.ppo_micro_batch_size" not in over:  # the older global micro batch: not read
        micro = _int_of(over, "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu")
        if micro is not None and micro.span is not None:
            out.append(("training.ppo_micro_per_gpu", micro))
    return out


def _int_of(over: dict[str, Value], key: str, default: int | None = None) -> Value | None:
    """The override's int, the verl default when not given; None when given but not an int."""
    v = over.get(key)
    if v is None:
        return None if default is None else Value(default, None, True, "", f"{key} (verl's default)",
                                                    Origin(How.DEFAULT))
    if not v.known:
        return None
    try:
        return Value(int(str(v.value)), v.span, True, "", key)
    except ValueError:
        return None


def _raw_word(lines: list[str], w: Value) -> str | None:
    """The text a launch-line word was written as, when it is one ``key=...`` word on one line."""
    sp = w.span
    if sp is None or sp.line < 1 or sp.line > len(lines) or (sp.end_line or sp.line) != sp.line:
        return None
    text = lines[sp.line - 1][sp.column - 1:(sp.end_column - 1) if sp.end_column else None]
    m = _HYDRA_KEY.match(text)
    return text if m is not None else None


# ----------------------------------------------------------------------------- ms-swift

#: ms-swift's Megatron arguments (underscore or dashed spelling) -> fact keys, integers
_SWIFT_INTS = {"tensor-model-parallel-size": "parallel.tp", "pipeline-model-parallel-size": "parallel.pp",
               "context-parallel-size": "parallel.cp", "expert-model-parallel-size": "parallel.ep",
               "expert-tensor-parallel-size": "parallel.etp", "virtual-pipeline-model-parallel-size": "parallel.vpp",
               "micro-batch-size": "training.micro_batch", "global-batch-size": "training.global_batch"}
#: the arguments naming the model: the Hugging Face model first, then the mcore checkpoint
_SWIFT_MODEL = ("model", "mcore-model", "load")
#: the model facts a hub id or config.json gives that Megatron-SWIFT builds the model from (the
#: training sequence is ``--max_length``, not the model's)
_SWIFT_SKIP = frozenset({"model.seq_len", "model.max_position_embeddings"})


def _swift_flags(args: list[Value]) -> dict[str, tuple[Value, Value | None]] | None:
    """``{normalized flag: (flag word, value word or None)}`` of an ms-swift argument list
    (HfArgumentParser: ``--x v``, ``--x=v``, a bare boolean, lists of words after a flag); None when
    a word parallint cannot read stands where a flag could be, or the first word is a config file
    (``megatron sft cfg.yaml``: its keys become flags)."""
    from parallint.readers.megatron_args import normalize_flag

    out: dict[str, tuple[Value, Value | None]] = {}
    if args and args[0].known and str(args[0].value).endswith((".yaml", ".yml", ".json")):
        return None
    last: str | None = None
    for w in args:
        if not w.known or not isinstance(w.value, str):
            if last is None:
                return None  # `$EXTRA_ARGS`: may be any flag
            fw, _ = out[last]
            out[last] = (fw, Value.unknown(w.why, w.span, f"--{last}"))
            last = None
            continue
        text = w.value
        if text.startswith("--") and len(text) > 2:
            flag, eq, rest = text.partition("=")
            name = normalize_flag(flag)
            out[name] = (w, Value(rest, w.span, True, "", flag) if eq else None)
            last = None if eq else name
            continue
        if last is not None:
            fw, _ = out[last]
            out[last] = (fw, Value(text, w.span, True, "", fw.value))
            last = None
    return out


def _swift_megatron(job: Any, launch: Any, root: Path | None, resolve: Any, read: Any) -> None:
    """``megatron sft --tensor_model_parallel_size 8 --pipeline_model_parallel_size 4 --micro_batch_size 2
    --global_batch_size 16 --model Qwen/Qwen3-32B``: Megatron's degrees and batch as the facts of a
    Megatron-LM launch (LAY001, LAY004, BAT002 ... read them), and the model's shape from the
    ``--model`` (else ``--mcore_model``/``--load``) it names: a hub id in parallint's table or a
    folder with a ``config.json`` inside the repository. Only what the line gives; a flag whose
    value is not an integer is unknown; sequence parallel only where TP > 1 (ms-swift turns it off
    otherwise); the distributed optimizer is on unless the line says off (ms-swift's default)."""
    flags = _swift_flags(list(launch.args))
    if flags is None:
        return
    from parallint.readers.megatron_args import flag_facts

    src = str(launch.options["swift"].value)
    out: list[tuple[str, Value]] = []
    for name, key in _SWIFT_INTS.items():
        got = flags.get(name)
        if got is None or got[1] is None:
            continue
        v, said = got[1], f"--{name.replace('-', '_')} of {src}"
        iv = _int_word(v, said) if v.known else None
        out.append((key, iv if iv is not None else Value.unknown(
            v.why if not v.known else f"{said} {v.value!r} is not an integer", v.span, said)))
    tp = next((known_int(v) for k, v in out if k == "parallel.tp"), 1)
    for name in ("sequence-parallel", "use-distributed-optimizer", "bf16", "fp16"):
        got = flags.get(name)
        if got is None:
            continue
        if name == "sequence-parallel" and (tp is None or tp <= 1):
            continue  # ms-swift turns sequence parallel off under TP 1
        fw, val = got
        for key, fv in flag_facts(name, val if val is not None else Value(True, fw.span, True, "", fw.value)):
            span = fv.span if fv.span is not None else fw.span
            out.append((key, Value(fv.value, span, fv.known, fv.why, f"--{name.replace('-', '_')} of {src}")))
    if "expert-tensor-parallel-size" not in flags and "expert-model-parallel-size" in flags:
        # ms-swift's default expert TP is 1 (Megatron-LM's is the TP): LAY008's expert grid
        out.append(("parallel.etp", Value(1, launch.script.span, True, "",
                                          f"ms-swift's default expert_tensor_parallel_size=1 ({src})", Origin(How.DEFAULT))))
    if "use-distributed-optimizer" not in flags and out:
        out.append(("parallel.distributed_optimizer", Value(True, launch.script.span, True, "",
                                                             f"ms-swift's default use_distributed_optimizer=True ({src})",
                                                             Origin(How.DEFAULT))))
    model = _swift_model(job, flags, root, resolve, read)
    if not out and model is None:
        return
    job.facts.add("framework", Value("megatron", launch.script.span, True, "", f"{src} (Megatron-SWIFT)",
                                     Origin(How.INFERRED)))
    for key, v in out:
        job.facts.add(key, v)
    if model is not None:
        for key, v in model:
            job.facts.add(key, v)


def _swift_model(job: Any, flags: dict, root: Path | None, resolve: Any, read: Any) -> list[tuple[str, Value]] | None:
    """The model facts of the model an ms-swift line names (``_named_model``, without the model's
    sequence length, which ms-swift sets from its own flags; a ``-mcore`` folder of
    ``swift export --to_mcore`` is tried as its hub model too)."""
    name = next((n for n in _SWIFT_MODEL if n in flags and flags[n][1] is not None), None)
    if name is None:
        return None
    val = flags[name][1]
    if not val.known or not isinstance(val.value, str) or not val.value.strip():
        return None
    word = val.value.strip().rstrip("/")
    tries = [word]
    if name != "model" and word.endswith("-mcore"):
        tries.append(word[: -len("-mcore")])  # `swift export --to_mcore`'s folder of that hub model
    return _named_model(job, val, f"--{name.replace('-', '_')} {word}", root, resolve, read,
                        skip=_SWIFT_SKIP, tries=tries, renamed=True)


def _swift_trainer(job: Any, launch: Any, root: Path | None, resolve: Any, read: Any) -> None:
    """``swift sft --per_device_train_batch_size 2 --gradient_accumulation_steps 4 --deepspeed ds.json``:
    ms-swift's Trainer takes the HF TrainingArguments from these flags, so they join the job as a
    ``hftrainargs`` view of the launch line (BAT003 compares them with the DeepSpeed JSON the line
    names). ``--deepspeed zero2``/``zero3`` name ms-swift's built-in configs, whose batch keys are
    ``auto``: nothing to compare. Only what the line gives (ms-swift derives an absent accumulation
    from the world)."""
    flags = _swift_flags(list(launch.args))
    if flags is None:
        return
    from parallint.model.facts import FileFacts

    src = str(launch.options["swift"].value)
    line = launch.span.line if launch.span is not None else 0
    ff = FileFacts(path=job.root.path, abspath=Path(f"{job.root.abspath}#L{line}"), kind="hftrainargs", text="")
    for name, key in (("per-device-train-batch-size", "training.micro_batch"),
                      ("gradient-accumulation-steps", "training.grad_accum")):
        got = flags.get(name)
        if got is None or got[1] is None:
            continue
        said = f"--{name.replace('-', '_')} of {src}"
        v = got[1]
        iv = _int_word(v, said) if v.known else None
        ff.facts.add(key, iv if iv is not None else Value.unknown(
            v.why if not v.known else f"{said} {v.value!r} is not an integer", v.span, said))
    for name in ("bf16", "fp16"):
        got = flags.get(name)
        if got is None:
            continue
        fw, val = got
        on = val is None or (val.known and str(val.value).strip().lower() in ("true", "1"))
        if on:
            ff.facts.add("training.precision", Value(name, (val or fw).span, True, "", f"--{name} of {src}"))
    ds = flags.get("deepspeed")
    dsv = ds[1] if ds is not None else None
    if not len(ff.facts):
        return
    ff.facts.add("framework", Value("hf_trainer", launch.script.span, True, "", f"{src} (ms-swift's Trainer)"))
    _join(job, ff)
    if dsv is None or not dsv.known or not str(dsv.value).endswith(".json") or resolve is None or root is None \
            or read is None:
        return
    dpath = resolve(Value(str(dsv.value), dsv.span, True, "", "--deepspeed"), job.root.abspath.parent, root)
    if dpath is None or any(f.abspath == dpath for f in job.files):
        return
    ff.links.append(Value(str(dsv.value), dsv.span, True, "", f"--deepspeed of {src}"))
    _attach_read(job, dpath, read)


def _join(job: Any, ff: Any) -> None:
    """A framework config's view (``ff``) joins the job: the file, and its facts but ``framework``
    (the job's framework stays the launch's)."""
    job.files.append(ff)
    for key, vs in ff.facts.items():
        if key == "framework":
            continue
        for v in vs:
            job.facts.add(key, v)


def _attach_read(job: Any, path: Path, read: Any) -> None:
    """The file at ``path`` (a DeepSpeed JSON the config names), read and joined to the job."""
    linked = read(path)
    if linked is not None:
        job.files.append(linked)
        job.facts.extend(linked.facts)


# ----------------------------------------------------------------------------- axolotl

def _axolotl(job: Any, launch: Any, root: Path | None, resolve: Any, read: Any) -> None:
    """``accelerate launch -m axolotl.cli.train cfg.yml`` (``axolotl train cfg.yml``): the YAML, when
    it is the line's one word, is the job's training config. axolotl hands ``micro_batch_size`` and
    ``gradient_accumulation_steps`` to the HF Trainer as ``per_device_train_batch_size`` and
    ``gradient_accumulation_steps``, ``bf16``/``fp16`` (``true``; ``auto`` follows the GPU: not
    read) and the ``deepspeed`` JSON it names; the facts join the job as a ``hftrainargs`` view of
    the YAML, so BAT003 compares them with that DeepSpeed config. ``batch_size`` (axolotl then
    derives the accumulation) leaves the accumulation unknown."""
    args = launch.args
    if len(args) != 1 or not args[0].known or not str(args[0].value).endswith((".yaml", ".yml")):
        return
    target = next((f for f in job.files if f.kind != "python" and str(f.abspath).endswith(
        "/" + str(args[0].value).lstrip("./"))), None)
    path = target.abspath if target is not None else (
        resolve(args[0], job.root.abspath.parent, root) if resolve is not None and root is not None else None)
    if path is None:
        return
    node = _yaml(path, job)
    if node is None or not node.is_map or node.get("base_model") is None:
        return
    from parallint.model.facts import FileFacts

    shown = _shown(path)
    ff = FileFacts(path=shown, abspath=Path(f"{path}#axolotl"), kind="hftrainargs", text="")
    for key, fact in (("micro_batch_size", "training.micro_batch"), ("gradient_accumulation_steps", "training.grad_accum")):
        n = node.get(key)
        if n is None:
            continue
        if key == "gradient_accumulation_steps" and node.get("batch_size") is not None:
            continue
        if isinstance(n.value, int) and not isinstance(n.value, bool):
            ff.facts.add(fact, Value(n.value, n.span, True, "", f"{key} in {shown}"))
        else:
            ff.facts.add(fact, Value.unknown(f"{key} {n.value!r} is not a fixed integer", n.span, f"{key} in {shown}"))
    for key in ("bf16", "fp16"):
        n = node.get(key)
        if n is not None and n.value is True:
            ff.facts.add("training.precision", Value(key, n.span, True, "", f"{key} in {shown}"))
    ds = node.get("deepspeed")
    if not len(ff.facts) and ds is None:
        return
    ff.facts.add("framework", Value("hf_trainer", None, True, "", f"axolotl config {shown}"))
    _join(job, ff)
    if ds is None or not isinstance(ds.value, str) or resolve is None or root is None or read is None:
        return
    link = Value(ds.value, ds.span, True, "", f"deepspeed in {shown}")
    ff.links.append(link)
    dpath = resolve(link, path.parent, root)
    if dpath is None:
        dpath = resolve(link, job.root.abspath.parent, root)
    if dpath is None or any(f.abspath == dpath for f in job.files):
        return
    _attach_read(job, dpath, read)


# ----------------------------------------------------------------------------- LLaMA-Factory

#: LLaMA-Factory stages whose memory is one trained model (``dpo``/``kto``/``ppo`` add a reference or
#: value model: not sized here)
_LF_STAGES = frozenset({"sft", "pt", "rm"})
#: keys of a LLaMA-Factory config that train, quantize, offload or place part of the model in a way
#: not sized here (any of them present and not off: the model is not stated)
_LF_PARTIAL = ("use_dora", "use_rslora", "pissa_init", "additional_target", "use_galore", "use_apollo",
               "use_badam", "use_adam_mini", "use_muon", "use_llama_pro", "freeze_trainable_layers",
               "freeze_trainable_modules", "freeze_extra_modules", "use_unsloth", "use_unsloth_gc",
               "enable_liger_kernel", "fsdp", "ref_model", "reward_model", "adapter_name_or_path",
               "quantization_device_map", "low_cpu_mem_usage", "disable_gradient_checkpointing",
               "train_mm_proj_only", "freeze_vision_tower", "freeze_multi_modal_projector",
               "freeze_language_model", "use_reentrant_gc", "mixture_of_depths", "moe_aux_loss_coef")


def _llamafactory(job: Any, launch: Any, root: Path | None, resolve: Any, read: Any) -> None:
    """``llamafactory-cli train cfg.yaml``: the model the YAML names (``model_name_or_path``: a hub id
    in parallint's table or a local folder's ``config.json``) and how LLaMA-Factory keeps its states,
    as a ``hftrainargs`` view of the YAML, so the MEM rules size the job. LLaMA-Factory's defaults
    where a key is absent: ``finetuning_type: lora``, ``lora_rank: 8``, ``lora_dropout: 0``,
    ``stage`` required. A LoRA needs its ``lora_target`` (``all`` or q/k/v/o/gate/up/down
    projections); a ``quantization_bit`` of 4 is a QLoRA (bitsandbytes NF4, double quantization by
    default), 8 an int8 base. ``pure_bf16: true`` keeps no fp32 copy. Stated only for the ``sft``,
    ``pt`` and ``rm`` stages, with the YAML as the line's one word, no key that trains or places
    part of the model another way (``_LF_PARTIAL``), no optimizer but Adam and a ``full`` or
    ``lora`` fine-tuning; a LoRA whose targets are not readable is stated with ``training.peft``
    unknown (an ``info`` says what to verify)."""
    args = launch.args
    if len(args) != 1 or not args[0].known or not str(args[0].value).endswith((".yaml", ".yml")):
        return
    target = next((f for f in job.files if f.kind != "python" and str(f.abspath).endswith(
        "/" + str(args[0].value).lstrip("./"))), None)
    path = target.abspath if target is not None else None
    if path is None:
        return
    node = _yaml(path, job)
    if node is None or not node.is_map:
        return
    shown = _shown(path)

    def val(key: str) -> Any:
        n = node.get(key)
        return None if n is None else n.value

    stage, model = node.get("stage"), node.get("model_name_or_path")
    if stage is None or stage.value not in _LF_STAGES or model is None or not isinstance(model.value, str):
        return
    for key in _LF_PARTIAL:
        v = val(key)
        if node.get(key) is not None and v not in (False, None, 0, "", "false", "False"):
            return
    optim = val("optim")
    from parallint.link.hfargs import ADAM

    if optim is not None and str(optim).lower() not in ADAM:
        return
    kind = val("finetuning_type")
    kind = "lora" if kind is None else kind
    if kind not in ("full", "lora"):
        return  # freeze, oft ...: trains part of the model, not sized here
    from parallint.link import peft
    from parallint.model.facts import FileFacts

    ff = FileFacts(path=shown, abspath=Path(f"{path}#llamafactory"), kind="hftrainargs", text="")
    src = f"{shown} (LLaMA-Factory)"
    where = node.get("finetuning_type") or stage
    quant = node.get("quantization_bit")
    if kind == "full":
        if quant is not None and quant.value is not None:
            return
        if val("pure_bf16") is True:
            ff.facts.add("training.master_weights", Value(False, node.get("pure_bf16").span, True, "",
                                                          f"pure_bf16 in {src}"))
    else:
        rank = node.get("lora_rank")
        r = 8 if rank is None else rank.value
        tnode = node.get("lora_target")
        targets = peft._targets("all-linear" if tnode is not None and str(tnode.value).strip() == "all"
                                else tnode.value) if tnode is not None and tnode.value is not None else None
        drop = val("lora_dropout")
        if not isinstance(r, int) or isinstance(r, bool) or r <= 0 or targets is None \
                or not isinstance(drop, (int, float, type(None))):
            ff.facts.add("training.peft", Value.unknown(
                "no lora_target of q/k/v/o/gate/up/down projections (or all) and an integer lora_rank",
                (tnode or where).span, f"LoRA in {src}"))
        else:
            ff.facts.add("training.lora_rank", Value(r, (rank or where).span, True, "",
                                                     f"lora_rank in {src}" if rank is not None
                                                     else f"LLaMA-Factory's lora_rank default 8 ({src})"))
            assert tnode is not None
            ff.facts.add("training.lora_targets", Value(targets, tnode.span, True, "", f"lora_target in {src}"))
            ff.facts.add("training.lora_dropout", Value(bool(drop), (node.get("lora_dropout") or where).span, True,
                                                        "", f"lora_dropout in {src}"))
            peft_kind = "lora"
            if quant is not None and quant.value is not None:
                method = val("quantization_method")
                if method not in (None, "bnb", "bitsandbytes") or quant.value not in (4, 8):
                    return
                if quant.value == 4:
                    qtype = val("quantization_type")
                    if qtype not in (None, "nf4"):
                        return
                    peft_kind = "qlora"
                    dq = val("double_quantization")
                    ff.facts.add("training.base_quant", Value("nf4" if dq is False else "nf4_dq", quant.span, True, "",
                                                              f"quantization_bit 4 in {src}"))
                else:
                    ff.facts.add("training.base_quant", Value("int8", quant.span, True, "",
                                                              f"quantization_bit 8 in {src}"))
            ff.facts.add("training.peft", Value(peft_kind, where.span, True, "", f"finetuning_type in {src}"))
    facts = _named_model(job, Value(model.value, model.span, True, "", f"model_name_or_path in {src}"),
                         f"model_name_or_path {model.value.strip()} in {shown}", root, resolve, read, path.parent)
    if facts is None:
        return
    for key, v in facts:
        ff.facts.add(key, v)
    ff.facts.add("framework", Value("hf_trainer", None, True, "", f"LLaMA-Factory config {shown}"))
    if node.get("deepspeed") is not None and not any(f.kind == "deepspeed" for f in job.files):
        ff.facts.add("parallel.zero_stage", Value.unknown("the deepspeed config is not read",
                                                          node.get("deepspeed").span, f"deepspeed in {src}"))
    _join(job, ff)


def _named_model(job: Any, val: Value, how: str, root: Path | None, resolve: Any, read: Any,
                 base: Path | None = None, *, skip: frozenset[str] = frozenset(),
                 tries: list[str] | None = None, renamed: bool = False) -> list[tuple[str, Value]] | None:
    """The model facts of a model name (``val``): a local folder's ``config.json`` (inside the
    repository; it joins the job as its ``hf_model`` file and its facts come with it: ``[]``), else
    the first of ``tries`` (default: the name) that is a hub id in parallint's table; None when
    neither. Keys in ``skip`` are left out; ``renamed`` notes the hub id the name stands for when
    the two differ."""
    if not val.known or not isinstance(val.value, str) or not val.value.strip():
        return None
    word = val.value.strip().rstrip("/")
    if read is not None and root is not None and resolve is not None:
        cfg = None
        for folder in dict.fromkeys(x for x in (base, job.root.abspath.parent) if x is not None):
            cfg = resolve(Value(f"{word}/config.json", val.span, True, "", ""), folder, root)
            if cfg is not None:
                break
        if cfg is not None:
            from parallint.util.boundary import inside_repository

            if any(f.abspath == cfg for f in job.files) or not inside_repository(cfg, job.root.abspath):
                return None
            linked = read(cfg)
            if linked is None or linked.kind != "hf_model":
                return None
            job.files.append(linked)
            for key, vs in linked.facts.items():
                if key not in skip:
                    for v in vs:
                        job.facts.add(key, v)
            return []
    from parallint.estimator.spec import hub_shape

    for hub in tries or [word]:
        got = hub_shape(hub)
        if got is None:
            continue
        hub_id, shape = got
        shown = how + (f" (the mcore checkpoint of {hub_id})" if renamed and hub_id != word else "")
        src = f"{shown} (its config.json in parallint's hub table)"
        return [(f"model.{k}", Value(v, val.span, True, "", src)) for k, v in shape.items()
                if f"model.{k}" not in skip]
    return None
