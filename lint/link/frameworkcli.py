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


def attach(job: Any, launch: Any, script: FileFacts | None, root: Path | None, resolve: Any = None) -> None:
    """Add what a detectron2 or verl launch line gives to ``job`` (a no-op for anything else);
    ``resolve`` is the linker's ``resolve_link`` (for a config the line names)."""
    if launch is None or launch.wrapper is not None or launch.script is None \
            or not launch.script.known or "opaque" in (launch.options or {}):
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
