"""One command's words -> a :class:`parallint.model.launch.Launch`.

Used by the shell, Makefile and Kubernetes readers. The words come in as :class:`Word` objects:
the text after expansion, where parts that could not be resolved (an environment variable, a
command substitution, a placeholder) are the character ``UNKNOWN`` and carry a reason. A word that
is an unquoted unknown expansion (``$DISTRIBUTED_ARGS``) is a *splat*: it may stand for any number
of words, so nothing is concluded from the absence of an option after it.

Recognised: ``torchrun``, ``python -m torch.distributed.run``/``.launch``, ``deepspeed``,
``accelerate launch``, ``composer``, ``srun``, ``mpirun``/``mpiexec`` and plain ``python``; with
wrappers such as ``env``, ``nohup``, ``exec``, ``time``, ``numactl``, ``parallint preflight --``, ``uv run``, ``singularity
exec``. ``srun``/``mpirun`` wrap the command they start: the inner launch is returned with
``wrapper`` set, and its facts include the wrapper's and the scheduler's, each with its own source.
"""

from __future__ import annotations

import re
from typing import Final

from parallint.readers import megatron_args
from parallint.model.diagnostics import Span
from parallint.model.facts import FactMap, Value
from parallint.model.launch import Launch
from parallint.model.launches import is_loopback  # noqa: F401 - one definition, shared with the rules
from parallint.model.origin import How, Origin
from parallint.util.record import EqRecord, FrozenRecord

UNKNOWN = "\x00"


class Seg(EqRecord):
    """A run of a word's text: ``text[start:end]`` came from ``span`` (or is unknown)."""

    _fields = ("start", "end", "span", "known", "why")
    start: int
    end: int
    span: Span | None
    known: bool
    why: str

    def __init__(self, start: int, end: int, span: Span | None, known: bool = True, why: str = "") -> None:
        self.start = start
        self.end = end
        self.span = span
        self.known = known
        self.why = why


class Word(EqRecord):
    _fields = ("text", "span", "segs", "splat")
    text: str
    span: Span | None
    segs: list[Seg]
    splat: bool  # an unquoted unknown expansion: any number of words

    def __init__(
        self,
        text: str,
        span: Span | None,
        segs: list[Seg] | None = None,
        splat: bool = False,
    ) -> None:
        self.text = text
        self.span = span
        self.segs = [] if segs is None else segs
        self.splat = splat

    @classmethod
    def lit(cls, text: str, span: Span | None = None) -> "Word":
        return cls(text, span, [Seg(0, len(text), span)])

    @classmethod
    def unknown(cls, why: str, span: Span | None = None, splat: bool = False) -> "Word":
        return cls(UNKNOWN, span, [Seg(0, 1, span, False, why)], splat)

    @property
    def known(self) -> bool:
        return UNKNOWN not in self.text

    def why(self, start: int = 0) -> str:
        for s in self.segs:
            if not s.known and s.end > start:
                return s.why
        return "unknown"

    def value(self, start: int = 0, source: str = "") -> Value:
        """The text from ``start`` on as a Value (unknown if any part of it is)."""
        sub = self.text[start:]
        span = self.sub_span(start)
        if UNKNOWN in sub:
            return Value.unknown(self.why(start), span, source)
        return Value(sub, span, True, "", source)

    def sub_span(self, start: int = 0) -> Span | None:
        """Where the text from ``start`` on came from: the segment holding it (a variable's
        definition when the value came from one), else the word itself."""
        segs = [s for s in self.segs if s.end > start and s.end > s.start]
        if not segs:
            return self.span
        first, last = segs[0], segs[-1]
        if first.span is None:
            return self.span
        sp = first.span
        if len(segs) == 1 and sp.line == sp.end_line and start > first.start:
            off = start - first.start
            sp = Span(sp.path, sp.line, sp.column + off, sp.end_line, max(sp.end_column, sp.column + off))
        if last is not first and last.span is not None and last.span.path == sp.path and last.span.line >= sp.line:
            sp = Span(sp.path, sp.line, sp.column, last.span.end_line, last.span.end_column)
        return sp


# -- launcher option tables (names normalized: no dashes, '-' -> '_') ---------------------------
TORCHRUN_BOOL = {"standalone", "no_python", "run_path", "use_env", "module", "m", "virtual_local_rank"}
TORCHRUN_VALUE = {
    "nnodes", "nproc_per_node", "node_rank", "master_addr", "master_port", "rdzv_backend",
    "rdzv_endpoint", "rdzv_id", "rdzv_conf", "max_restarts", "monitor_interval", "start_method",
    "role", "log_dir", "redirects", "r", "tee", "t", "local_addr", "logs_specs", "local_ranks_filter",
    "event_log_handler", "numa_binding", "signals_to_handle", "duplicate_stdout_filters",
    "duplicate_stderr_filters", "log_line_prefix_template",
}
DEEPSPEED_BOOL = {
    "module", "no_python", "no_local_rank", "no_ssh_check", "force_multi", "save_pid",
    "elastic_training", "bind_cores_to_rank", "no_ssh", "enable_each_rank_log",
}
DEEPSPEED_VALUE = {
    "num_gpus", "num_nodes", "hostfile", "h", "H", "include", "i", "exclude", "e", "master_addr",
    "master_port", "launcher", "launcher_args", "min_elastic_nodes", "max_elastic_nodes",
    "ssh_port", "node_rank", "comment", "bind_core_list", "autotuning", "venv_script",
}
ACCELERATE_BOOL = {
    "multi_gpu", "use_deepspeed", "use_fsdp", "use_megatron_lm", "cpu", "tpu", "same_network",
    "module", "m", "no_python", "debug", "quiet", "q", "dynamo_use_fullgraph", "dynamo_use_dynamic",
    "use_xpu", "ipex", "enable_cpu_affinity", "downcast_bf16", "use_parallelism_config",
    "tpu_use_cluster", "tpu_use_sudo", "vm", "env",
}
SRUN_BOOL = {
    "l", "label", "u", "unbuffered", "v", "verbose", "Q", "quiet", "overlap", "pty", "O",
    "overcommit", "no_container_mount_home", "container_remap_root", "no_container_remap_root",
    "container_writable", "container_readonly", "k", "no_kill", "X", "disable_status", "s",
    "oversubscribe", "exact", "spread_job", "test_only", "whole", "no_container_entrypoint",
    "container_entrypoint", "container_mount_home",
}
#: options that take their value only as ``--opt=value``
SRUN_OPTIONAL = {"exclusive", "kill_on_bad_exit", "K", "mpi_ignore"}
SRUN_SHORT_VALUE = set("NncoeiJptwxmdqCDWAGSTrFM")
MPIRUN_BOOL = {
    "allow_run_as_root", "oversubscribe", "tag_output", "report_bindings", "display_map",
    "bind_to_core", "bind_to_socket", "noprefix", "v", "verbose", "q", "quiet", "timestamp_output",
    "display_allocation", "nooversubscribe", "merge_stderr_to_stdout", "l", "prepend_rank",
}
MPIRUN_TWO_VALUES = {"mca", "gmca", "genv", "env"}
COMPOSER_BOOL = {"stdout", "stderr", "verbose", "v", "module_mode", "m", "command_mode", "c", "no_python"}
COMPOSER_VALUE = {"nproc", "n", "world_size", "base_rank", "node_rank", "master_addr", "master_port",
                  "run_directory"}

#: script/launcher options whose value names a file the job reads
LINK_OPTIONS = {
    "deepspeed_config", "deepspeed_config_file", "config_file", "config", "config_path",
    "config_name", "job.config_file", "yaml_cfg", "hostfile", "model_config", "ds_config",
    "deepspeed", "train_config", "model_config_file",
}
CONFIG_SUFFIXES = (".json", ".yaml", ".yml", ".toml")

#: scripts that run a model without training it (their --micro-batch-size is an inference batch)
INFERENCE_RE = re.compile(r"(?:^|[/._])(?:inference|infer|generat\w*|text_generation\w*|eval\w*|export\w*|"
                          r"convert\w*|checkpoint_\w*|serve\w*|server)(?:[/._]|$)", re.I)
PYTHON_RE = re.compile(r"^(?:.*/)?python(?:\d+(?:\.\d+)*)?$")

#: plain wrappers: skip the name (and their own leading options)
SIMPLE_WRAPPERS = {"nohup", "exec", "time", "command", "builtin", "stdbuf", "nice", "ionice",
                   "chrt", "unbuffer", "xargs"}
#: program runs a command after its options: the first word not starting with '-'
OPT_WRAPPERS = {"numactl", "taskset", "timeout", "strace", "nsys", "ncu", "dlprof"}


def norm(opt: str) -> str:
    return opt.lstrip("-").replace("-", "_")


class Context(EqRecord):
    """What a command runs in: exported environment, the scheduler directives of the file and
    their facts (``#SBATCH --nodes`` ...)."""

    _fields = ("env", "scheduler", "scheduler_facts", "depth")
    env: dict[str, Value]
    scheduler: dict[str, Value]
    scheduler_facts: FactMap
    depth: int

    def __init__(
        self,
        env: dict[str, Value] | None = None,
        scheduler: dict[str, Value] | None = None,
        scheduler_facts: FactMap | None = None,
        depth: int = 0,
    ) -> None:
        self.env = {} if env is None else env
        self.scheduler = {} if scheduler is None else scheduler
        self.scheduler_facts = FactMap() if scheduler_facts is None else scheduler_facts
        self.depth = depth


def parse_command(words: list[Word], ctx: Context | None = None, span: Span | None = None) -> Launch | None:
    """The launch this command starts, or None when it starts nothing parallint understands."""
    ctx = ctx or Context()
    if not words:
        return None
    span = span or words[0].span
    try:
        return _parse(list(words), ctx, span, dict(ctx.env), None)
    except RecursionError:  # pragma: no cover - defensive
        return None


def _basename(text: str) -> str:
    return text.rsplit("/", 1)[-1]


def _parse(words: list[Word], ctx: Context, span: Span | None, env: dict[str, Value],
           wrapper: Launch | None, depth: int = 0) -> Launch | None:
    if depth > 8:
        return None
    # leading VAR=value assignments (env prefixes or after `env`)
    while words and words[0].known and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0].text):
        name, _, _ = words[0].text.partition("=")
        env[name] = words[0].value(len(name) + 1, name)
        words = words[1:]
    if not words or not words[0].known:
        return None
    name = _basename(words[0].text)
    rest = words[1:]

    if name == "env":
        i = _skip_options(rest, 0, ("-u", "--unset", "-C", "--chdir", "-S"))
        return _parse(rest[i:], ctx, span, env, wrapper, depth + 1)
    if name in SIMPLE_WRAPPERS:
        return _parse(rest[_skip_options(rest, 0):], ctx, span, env, wrapper, depth + 1)
    if name in OPT_WRAPPERS:
        i = 0
        while i < len(rest) and rest[i].known and (rest[i].text.startswith("-") or "=" in rest[i].text):
            i += 1
        if name in ("timeout", "taskset") and i < len(rest):
            i += 1  # the duration / the cpu mask
        if name in ("nsys", "ncu") and i < len(rest) and rest[i].text == "profile":
            i += 1
            while i < len(rest) and rest[i].known and rest[i].text.startswith("-"):
                i += 1 if "=" in rest[i].text else 2
        return _parse(rest[i:], ctx, span, env, wrapper, depth + 1)
    if name == "parallint" and rest and rest[0].text == "preflight":
        # `parallint preflight [--exec] -- CMD`: the pre-launch check in front of the command
        cut = next((i for i, w in enumerate(rest) if w.known and w.text == "--"), None)
        return None if cut is None else _parse(rest[cut + 1:], ctx, span, env, wrapper, depth + 1)
    if name in ("uv", "poetry", "pipenv", "pdm", "hatch", "rye") and rest and rest[0].text == "run":
        return _parse(rest[_skip_options(rest, 1):], ctx, span, env, wrapper, depth + 1)
    if name == "conda" and rest and rest[0].text == "run":
        i = _skip_options(rest, 1, ("-n", "--name", "-p", "--prefix"))
        return _parse(rest[i:], ctx, span, env, wrapper, depth + 1)
    if name in ("singularity", "apptainer") and rest and rest[0].text in ("exec", "run"):
        i = 1
        while i < len(rest) and rest[i].known and rest[i].text.startswith("-"):
            i += 1 if ("=" in rest[i].text or rest[i].text in ("--nv", "--cleanenv", "-e", "--containall",
                                                                "--writable", "--fakeroot", "-c")) else 2
        return _parse(rest[i + 1:], ctx, span, env, wrapper, depth + 1)  # skip the image

    if name in ("sh", "bash", "zsh", "dash") and len(rest) >= 2 and rest[0].known and \
            re.fullmatch(r"-[a-z]*c[a-z]*", rest[0].text):
        return _shell_c(rest[1], ctx, span, env, wrapper, depth)
    if name in ("torchrun", "deepspeed", "composer"):
        return _frontend(name, rest, ctx, span, env, wrapper)
    if name == "accelerate-launch":
        return _frontend("accelerate", rest, ctx, span, env, wrapper)
    if name == "torchx":
        return _torchx(rest[1:], ctx, span, env, wrapper) if rest and rest[0].text == "run" else None
    if name == "tune":
        return _tune(rest[1:], ctx, span, env, wrapper) if rest and rest[0].text == "run" else None
    if name in SWIFT_TRAIN and rest and rest[0].known and rest[0].text in SWIFT_TRAIN[name]:
        return _swift(name, rest[0], rest[1:], ctx, span, env, wrapper)
    if name in ("llamafactory-cli", "lmf") and rest and rest[0].known and rest[0].text == "train":
        return _llamafactory(rest[0], rest[1:], ctx, span, env, wrapper)
    if name == "axolotl" and rest and rest[0].known and rest[0].text == "train":
        return _axolotl(rest[1:], ctx, span, env, wrapper, depth)
    if name in SUBCOMMAND_FRONTENDS:
        if rest and rest[0].text == SUBCOMMAND_FRONTENDS[name]:
            return _frontend(name, rest[1:], ctx, span, env, wrapper)
        return None
    if name == "srun":
        return _srun(rest, ctx, span, env, wrapper, depth)
    if name in ("mpirun", "mpiexec", "orterun"):
        return _mpirun(rest, ctx, span, env, wrapper, depth)
    if name == "horovodrun":
        return _horovodrun(rest, ctx, span, env, wrapper, depth)
    if PYTHON_RE.match(words[0].text):
        return _python(rest, ctx, span, env, wrapper)
    return None


def _skip_options(rest: list[Word], i: int, with_value: tuple[str, ...] = ()) -> int:
    """The index of the first word from ``i`` on that is not a wrapper's option (those in
    ``with_value`` take the next word too)."""
    while i < len(rest) and rest[i].known and rest[i].text.startswith("-"):
        i += 2 if rest[i].text in with_value else 1
    return i


def _shell_c(w: Word, ctx: Context, span, env, wrapper, depth: int) -> Launch | None:
    """`bash -c "torchrun ..."` (typically under srun): the first launch in the string.

    The outer shell has already expanded the string when it was double-quoted; what is left with a
    `$` or a backtick is expanded by the inner shell at run time, so it is unknown here."""
    import shlex

    if not w.known:
        return None
    for part in re.split(r"&&|\|\||;|\n|(?<!\|)\|(?!\|)", w.text):
        part = part.strip()
        if not part:
            continue
        try:
            toks = shlex.split(part, comments=True, posix=True)
        except ValueError:
            continue
        sub = [Word.unknown("expanded by the inner shell", w.span) if ("$" in t or "`" in t)
               else Word.lit(t, w.span) for t in toks]
        la = _parse(sub, ctx, span, dict(env), wrapper, depth + 1)
        if la is not None:
            return la
    return None


def _scan_options(rest: list[Word], step) -> tuple[int, bool]:
    """Walk the leading option words of a launcher: ``step(i, word, text)`` reads the option at
    ``i`` and returns the index after it. Stops at the first non-option word (after ``--``); an
    unexpanded splat among the options is skipped and makes the options opaque. Returns (index of
    the first non-option word, opaque)."""
    i = 0
    opaque = False
    while i < len(rest):
        w = rest[i]
        if w.splat:
            opaque = True
            i += 1
            continue
        t = w.text
        if not t.startswith("-") or t == "-":
            break
        if t == "--":
            i += 1
            break
        i = step(i, w, t)
    return i, opaque


def _options(rest: list[Word], bools: set[str], values: set[str]) -> tuple[dict[str, Value], int, bool]:
    """Parse leading ``--options``. Returns (options, index of the first non-option word, whether
    an unknown splat was among the options)."""
    opts: dict[str, Value] = {}

    def step(i: int, w: Word, t: str) -> int:
        if "=" in t and t.startswith("--"):
            k, _, _ = t.partition("=")
            key = norm(k)
            opts[key] = w.value(len(k) + 1, k)
            return i + 1
        key = norm(t)
        if key in bools:
            opts[key] = Value(True, w.span, True, "", t)
            return i + 1
        nxt = rest[i + 1] if i + 1 < len(rest) else None
        if key in values or (nxt is not None and not _looks_like_program(nxt) and not nxt.text.startswith("-")):
            if nxt is None:
                return i + 1
            opts[key] = nxt.value(0, t)
            return i + 2
        opts[key] = Value(True, w.span, True, "", t)
        return i + 1

    i, opaque = _scan_options(rest, step)
    return opts, i, opaque


def _looks_like_program(w: Word) -> bool:
    t = w.text
    return w.known and (t.endswith(".py") or t.endswith(".sh") or PYTHON_RE.match(t) is not None
                        or _basename(t) in ("torchrun", "deepspeed", "accelerate", "bash", "sh"))


def int_fact(v: Value | None, source: str, allow_range: bool = False) -> Value | None:
    if v is None:
        return None
    if not v.known:
        return Value.unknown(v.why, v.span, source)
    text = str(v.value).strip()
    if re.fullmatch(r"\d+", text) and len(text.lstrip("0")) > 12:
        # no real job has 10**12 nodes or processes; also keeps int() under Python's digit limit
        return Value.unknown(f"{source} {text[:20]}... is not a plausible count", v.span, source)
    if re.fullmatch(r"\d+", text):
        return Value(int(text), v.span, True, "", source)
    if allow_range and re.fullmatch(r"(\d+):\1", text):
        return Value(int(text.split(":")[0]), v.span, True, "", source)
    return Value.unknown(f"{source} {text!r} is not a fixed integer", v.span, source)


def _script_part(launch: Launch, rest: list[Word], i: int, module: bool) -> None:
    """Fill script, args, links and Megatron facts from ``rest[i:]`` (the program and its args)."""
    if i < len(rest):
        sw = rest[i]
        if not sw.splat:
            launch.script = sw.value(0, "script")
            launch.is_module = module
            i += 1
        else:
            launch.script = Value.unknown(sw.why(), sw.span, "script")
    args = rest[i:]
    launch.args = [a.value(0) if not a.splat else Value.unknown(a.why(), a.span, "splat") for a in args]
    _links_from_args(launch, args)
    flags = megatron_args.split_flags(launch.args)
    if megatron_args.is_megatron(flags):
        launch.megatron_flags = flags
    mf = megatron_args.args_facts(launch.args)
    script = launch.script.value if launch.script is not None and launch.script.known else ""
    inference = INFERENCE_RE.search(str(script)) is not None
    for key, vs in mf.items():
        if inference and key.startswith("training."):
            continue  # a generation/inference script: its batch is not a training batch
        for v in vs:
            launch.facts.add(key, v)


def _links_from_args(launch: Launch, args: list[Word]) -> None:
    consumed: set[int] = set()
    for j, a in enumerate(args):
        if not a.known or j in consumed:
            continue
        t = a.text
        if t.startswith("--"):
            k, eq, v = t.partition("=")
            key = norm(k)
            if key in LINK_OPTIONS:
                if eq:
                    val = a.value(len(k) + 1, k)
                elif j + 1 < len(args) and args[j + 1].known and not args[j + 1].text.startswith("-"):
                    val = args[j + 1].value(0, k)
                    consumed.add(j + 1)
                else:
                    continue
                if val.known and val.value:
                    launch.links.append(val)
            elif eq and v.endswith(CONFIG_SUFFIXES):
                launch.links.append(a.value(len(k) + 1, k))
        elif t.endswith(CONFIG_SUFFIXES) and not t.startswith("-") and "=" not in t:
            launch.links.append(a.value(0, "argument"))
        elif "=" in t and t.split("=", 1)[1].endswith(CONFIG_SUFFIXES) and not t.startswith("-"):
            # key=value overrides naming a config file (Hydra/composer style): config=path.yaml
            k = t.split("=", 1)[0]
            if k.replace(".", "_") in LINK_OPTIONS or k.endswith("config"):
                launch.links.append(a.value(len(k) + 1, k))


def _start(launcher: str, span: Span | None, env: dict[str, Value], wrapper: Launch | None, ctx: Context,
           opts: dict[str, Value] | None = None, opaque: bool = False, whose: str = "") -> Launch:
    """A new launch with its options (``opaque`` when an unexpanded variable was among them) and
    the facts it inherits from its scheduler and wrappers."""
    la = Launch(launcher=launcher, span=span or Span("<unknown>", 1), env=dict(env), wrapper=wrapper,
                scheduler=dict(ctx.scheduler), options=opts if opts is not None else {})
    if opaque:
        la.options["opaque"] = Value.unknown(f"unexpanded variable among {whose}", span)
    _inherit(la, ctx)
    return la



def _inherit(launch: Launch, ctx: Context) -> None:
    """The facts a launch carries from its scheduler and wrappers (nodes, GPU type, GPUs per node),
    each with its own source; added before the launch's own."""
    launch.facts.extend(ctx.scheduler_facts)
    w = launch.wrapper
    chain = []
    while w is not None:
        chain.append(w)
        w = w.wrapper
    for w in reversed(chain):
        for key in ("parallel.nodes", "hardware.gpus_per_node_requested", "hardware.gpu",
                    "parallel.world_size"):
            if key == "parallel.world_size" and w.launcher not in ("mpirun", "horovodrun"):
                continue
            have = launch.facts.all(key)
            for v in w.facts.all(key):
                if any(v is h or (v.span == h.span and v.source == h.source) for h in have):
                    continue  # already there from the scheduler
                launch.facts.add(key, v)


class _Frontend(FrozenRecord):
    """A launcher that forks the workers itself: its option tables and what its options state."""

    _fields = ("source", "bools", "values", "facts", "links", "module", "aliases")
    source: Final[str]  # how its options are named in a fact's source ("deepspeed" -> "deepspeed --num_nodes")
    bools: Final[set[str]]
    values: Final[set[str]]
    #: (option names, first present wins; fact key; whether ``N:N`` counts as N)
    facts: Final[tuple[tuple[tuple[str, ...], str, bool], ...]]
    links: Final[tuple[str, ...]]  # options naming a file the job reads
    module: Final[tuple[str, ...]]  # options saying the script is a module
    aliases: Final[tuple[tuple[str, str], ...]]  # (short, long) spellings of one option

    def __init__(
        self,
        source: str,
        bools: set[str],
        values: set[str],
        facts: tuple[tuple[tuple[str, ...], str, bool], ...],
        links: tuple[str, ...] = (),
        module: tuple[str, ...] = ("module", "m"),
        aliases: tuple[tuple[str, str], ...] = (),
    ) -> None:
        self.source = source
        self.bools = bools
        self.values = values
        self.facts = facts
        self.links = links
        self.module = module
        self.aliases = aliases


def _torchrun_like(source: str) -> _Frontend:
    return _Frontend(source, TORCHRUN_BOOL, TORCHRUN_VALUE,
                     ((("nnodes",), "parallel.nodes", True), (("nproc_per_node",), "parallel.procs_per_node", False)))


COLOSSALAI_BOOL = {"m", "module"}
COLOSSALAI_VALUE = {"host", "hostfile", "include", "exclude", "num_nodes", "nproc_per_node", "master_addr",
                    "master_port", "extra_launch_args", "ssh_port"}

FRONTENDS: dict[str, _Frontend] = {
    "torchrun": _torchrun_like("torchrun"),
    "torch.distributed.run": _torchrun_like("python -m torch.distributed.run"),
    "torch.distributed.launch": _torchrun_like("python -m torch.distributed.launch"),
    "accelerate": _Frontend(
        "accelerate launch", ACCELERATE_BOOL, set(),
        ((("num_machines",), "parallel.nodes", False), (("num_processes",), "parallel.world_size", False)),
        links=("config_file", "deepspeed_config_file")),
    "deepspeed": _Frontend(
        "deepspeed", DEEPSPEED_BOOL, DEEPSPEED_VALUE,
        ((("num_nodes",), "parallel.nodes", False), (("num_gpus",), "parallel.procs_per_node", False)),
        links=("hostfile",), module=("module",),
        aliases=(("H", "hostfile"), ("h", "hostfile"), ("i", "include"), ("e", "exclude"))),
    #: ``colossalai run``: a torchrun front end that can also start the nodes of a hostfile over ssh
    "colossalai": _Frontend(
        "colossalai run", COLOSSALAI_BOOL, COLOSSALAI_VALUE,
        ((("num_nodes",), "parallel.nodes", False), (("nproc_per_node",), "parallel.procs_per_node", False)),
        links=("hostfile",)),
    "composer": _Frontend(
        "composer", COMPOSER_BOOL, COMPOSER_VALUE,
        ((("nproc", "n"), "parallel.procs_per_node", False), (("world_size",), "parallel.world_size", False)),
        module=("module_mode", "m")),
}
FRONTENDS["fabric"] = _Frontend(  # ``fabric run``: Lightning Fabric's torchrun front end
    "fabric run", set(), {"accelerator", "strategy", "devices", "num_nodes", "node_rank", "main_address",
                          "main_port", "precision"},
    ((("num_nodes",), "parallel.nodes", False), (("devices",), "parallel.procs_per_node", False)))
#: ``accelerate launch``, ``colossalai run``, ``fabric run``: the subcommand that launches
SUBCOMMAND_FRONTENDS = {"accelerate": "launch", "colossalai": "run", "fabric": "run"}
#: ``python -m <module>`` spellings of the front ends
FRONTEND_MODULES = {
    "torch.distributed.run": "torch.distributed.run", "torch.distributed.launch": "torch.distributed.launch",
    "accelerate.commands.launch": "accelerate", "deepspeed.launcher.runner": "deepspeed",
    "composer.cli.launcher": "composer",
}


def _frontend(launcher: str, rest: list[Word], ctx: Context, span, env, wrapper) -> Launch:
    fe = FRONTENDS[launcher]
    opts, i, opaque = _options(rest, fe.bools, fe.values)
    for short, long in fe.aliases:
        if short in opts:
            opts.setdefault(long, opts.pop(short))
    la = _start(launcher, span, env, wrapper, ctx, opts, opaque, "the launcher's options")
    for names, key, allow_range in fe.facts:
        raw = next((opts[n] for n in names if n in opts), None)
        v = int_fact(raw, f"{fe.source} --{names[0]}", allow_range=allow_range)
        if v is not None:
            la.facts.add(key, v)
    for key in fe.links:
        v = opts.get(key)
        if v is not None and v.known:
            la.links.append(v)
    _script_part(la, rest, i, any(m in opts for m in fe.module))
    return la


#: ``torchx run`` options before the component; those that take a value
TORCHX_RUN_VALUE = {"scheduler", "s", "scheduler_args", "cfg", "workspace", "parent_run_id", "tee"}
#: ``dist.ddp`` component options that take a value
TORCHX_DDP_VALUE = {"j", "script", "m", "image", "name", "h", "cpu", "gpu", "memMB", "mem_mb", "env", "max_retries",
                    "rdzv_port", "rdzv_backend", "mounts", "tee", "c", "mount"}


def _torchx(rest: list[Word], ctx: Context, span, env, wrapper) -> Launch | None:
    """``torchx run [-s SCHEDULER] dist.ddp -j NxM --script train.py -- ARGS`` (also ``-m module``):
    dist.ddp starts torchrun on N nodes with M processes each (``-j M``: one node). Other components
    start nothing parallint can read. A ``-j`` not given on the line may come from ``.torchxconfig``
    (``[component:dist.ddp] j = 2x8``) next to the launch file (see :func:`torchx_config_j`)."""
    i = 0
    while i < len(rest) and rest[i].known and rest[i].text.startswith("-"):
        key = norm(rest[i].text.split("=", 1)[0])
        i += 1 if ("=" in rest[i].text or key not in TORCHX_RUN_VALUE) else 2
    if i >= len(rest) or not rest[i].known or rest[i].text not in ("dist.ddp", "torchx.components.dist.ddp"):
        return None
    comp = rest[i]
    rest = rest[i + 1:]
    opts: dict[str, Value] = {}
    j = 0
    script_args: list[Word] = []
    opaque = False
    while j < len(rest):
        w = rest[j]
        if w.splat or not w.known:
            opaque = True
            j += 1
            continue
        t = w.text
        if t == "--":
            script_args = rest[j + 1:]
            break
        if t.startswith("-"):
            k, eq, _ = t.partition("=")
            key = norm(k)
            if eq:
                opts[key] = w.value(len(k) + 1, k)
                j += 1
            elif key in TORCHX_DDP_VALUE and j + 1 < len(rest):
                opts[key] = rest[j + 1].value(0, t)
                j += 2
            else:
                opts[key] = Value(True, w.span, True, "", t)
                j += 1
            continue
        script_args = rest[j:]  # positional: the script's args
        break
    la = _start("torchrun", span, env, wrapper, ctx, {}, opaque, "torchx dist.ddp options")
    la.options["torchx"] = Value("dist.ddp", comp.span, True, "", "torchx run dist.ddp")
    jv = opts.get("j")
    if jv is not None:
        la.options["torchx_j"] = jv
        torchx_j(la, jv, "torchx dist.ddp -j")
    script = opts.get("script") if "script" in opts else opts.get("m")
    if script is not None and script.known:
        la.script = Value(str(script.value), script.span, True, "", "torchx --script")
        la.is_module = "m" in opts and "script" not in opts
    la.args = [a.value(0) if not a.splat else Value.unknown(a.why(), a.span, "splat") for a in script_args]
    _links_from_args(la, script_args)
    mf = megatron_args.args_facts(la.args)
    for key, vs in mf.items():
        for v in vs:
            la.facts.add(key, v)
    return la


def torchx_j(la: Launch, jv: Value, source: str) -> None:
    """``-j NxM`` -> N nodes × M processes; ``-j M`` -> one node of M; ranges (``1:2x4``) say nothing
    about the nodes."""
    if not jv.known:
        la.facts.add("parallel.procs_per_node", Value.unknown(jv.why, jv.span, source))
        return
    text = str(jv.value).strip()
    m = re.fullmatch(r"(?:(\d+)x)?(\d+)", text)
    if m is None:
        m2 = re.fullmatch(r"\d+:\d+x(\d+)", text)
        if m2:
            la.facts.add("parallel.procs_per_node", Value(int(m2.group(1)), jv.span, True, "", source))
        return
    la.facts.add("parallel.nodes", Value(int(m.group(1) or 1), jv.span, True, "", source))
    la.facts.add("parallel.procs_per_node", Value(int(m.group(2)), jv.span, True, "", source))


#: torchtune config keys a ``key=value`` override of ``tune run`` may set -> fact keys
TUNE_OVERRIDES = {"tensor_parallel_dim": "parallel.tp", "context_parallel_dim": "parallel.cp",
                  "data_parallel_shard_dim": "parallel.dp_shard", "data_parallel_replicate_dim": "parallel.dp_replicate",
                  "batch_size": "training.micro_batch", "gradient_accumulation_steps": "training.grad_accum"}


def _tune(rest: list[Word], ctx: Context, span, env, wrapper) -> Launch | None:
    """``tune run [TORCHRUN-OPTIONS] RECIPE --config CFG [key=value ...]`` (torchtune).

    With any torchrun option the recipe runs under torchrun (its semantics, ``launcher`` torchrun);
    without, torchtune runs it in this one process. A built-in recipe name links
    ``recipes/<name>.py`` and a built-in config name ``recipes/configs/<name>.yaml`` where those
    exist (the torchtune tree); ``key=value`` overrides of the parallel dimensions and batch are
    facts of the launch (they beat the config). An override parallint cannot read, or any unknown
    word after the recipe, unlinks the config: its values may not be the ones that run."""
    opts, i, opaque = _options(rest, TORCHRUN_BOOL, TORCHRUN_VALUE)
    if i >= len(rest) or not rest[i].known:
        return None
    distributed = bool(opts) or opaque
    la = _start("torchrun" if distributed else "python", span, env, wrapper, ctx, opts, opaque,
                "tune run's torchrun options")
    if distributed:
        for key, fact in (("nnodes", "parallel.nodes"), ("nproc_per_node", "parallel.procs_per_node")):
            v = int_fact(opts.get(key), f"tune run --{key}", allow_range=key == "nnodes")
            if v is not None:
                la.facts.add(fact, v)
    elif wrapper is None and not ctx.scheduler:
        la.facts.add("parallel.world_size", Value(1, span, True, "", "tune run without torchrun options (one process)",
                                                  Origin(How.INFERRED)))
    else:
        _procs_from_wrapper(la)
    recipe = rest[i]
    name = recipe.text
    script = name if name.endswith(".py") else f"recipes/{name}.py"
    args = rest[i + 1:]
    la.script = Value(script, recipe.span, True, "", "tune run recipe")
    la.args = [a.value(0) if not a.splat else Value.unknown(a.why(), a.span, "splat") for a in args]
    clean = all(a.known for a in args)
    for a in args:
        if a.known and "=" in a.text and not a.text.startswith("-"):
            k, _, _ = a.text.partition("=")
            fact = TUNE_OVERRIDES.get(k)
            if fact is None:
                continue
            v = a.value(len(k) + 1, f"tune run override {k}=")
            iv = v.as_int() if v.known else v
            if not iv.known:
                clean = False
                continue
            if fact.startswith("parallel.") and iv.value == -1:
                iv = Value.unknown("inferred (-1)", iv.span, iv.source)
            la.facts.add(fact, iv)
        elif not a.known and "=" in a.text:
            clean = False
    if clean:
        for j, a in enumerate(args):
            t = a.text
            cfg = t.partition("=")[2] if t.startswith("--config=") else (
                args[j + 1].text if t == "--config" and j + 1 < len(args) else None)
            if not cfg:
                continue
            sp = a.sub_span(len("--config=")) if t.startswith("--config=") else args[j + 1].span
            la.links.append(Value(cfg, sp, True, "", "tune run --config"))
            if not cfg.endswith((".yaml", ".yml")):
                la.links.append(Value(f"recipes/configs/{cfg}.yaml", sp, True, "", "tune run --config (built-in)"))
    return la


#: ms-swift's console commands -> the subcommands that train. ``swift sft`` and ``megatron sft`` run
#: ``python -m torch.distributed.run --nproc_per_node $NPROC_PER_NODE --nnodes $NNODES ... <entry>
#: ARGS`` when either variable is in their environment, else one process (swift/cli/main.py)
SWIFT_TRAIN = {"swift": ("sft", "pt", "rlhf"), "megatron": ("sft", "pt", "rlhf")}
#: the environment variables ms-swift and LLaMA-Factory hand to torchrun -> torchrun's options
ENV_TORCHRUN = (("NPROC_PER_NODE", "nproc_per_node"), ("NNODES", "nnodes"), ("NODE_RANK", "node_rank"),
                ("MASTER_ADDR", "master_addr"), ("MASTER_PORT", "master_port"))


def _env_torchrun(env: dict[str, Value], ctx: Context, span, wrapper, what: str) -> Launch:
    """The torchrun a framework's console command starts with its options from the environment
    (``NPROC_PER_NODE=8 NNODES=2 megatron sft ...``): each fact points at the variable's value."""
    opts: dict[str, Value] = {}
    for var, opt in ENV_TORCHRUN:
        v = env.get(var)
        if v is not None:
            opts[opt] = Value(v.value, v.span, v.known, v.why, f"{what} {var}")
    la = _start("torchrun", span, env, wrapper, ctx, opts)
    for opt, key in (("nnodes", "parallel.nodes"), ("nproc_per_node", "parallel.procs_per_node")):
        var = opt.upper()
        f = int_fact(opts.get(opt), f"{var} of {what}", allow_range=opt == "nnodes")
        if f is not None:
            la.facts.add(key, f)
    return la


def _swift(prog: str, sub: Word, rest: list[Word], ctx: Context, span, env, wrapper) -> Launch:
    """``[NPROC_PER_NODE=8 NNODES=4] megatron sft --tensor_model_parallel_size 8 ...`` (ms-swift):
    torchrun when either variable is in the command's environment, else one Python process (the
    variable may still come from the caller's environment: no world is stated then). The arguments
    stay the launch's; ``parallint.link.frameworkcli`` reads them (Megatron's degrees and batch for
    ``megatron``, the model it names)."""
    what = f"{prog} {sub.text}"
    if "NPROC_PER_NODE" in env or "NNODES" in env:
        la = _env_torchrun(env, ctx, span, wrapper, what)
    else:
        la = _start("python", span, env, wrapper, ctx)
    la.options["swift"] = Value(what, sub.span, True, "", what)
    la.script = Value(f"swift.cli.{'_megatron.' if prog == 'megatron' else ''}{sub.text}", sub.span, True, "", what)
    la.is_module = True
    la.args = [a.value(0) if not a.splat else Value.unknown(a.why(), a.span, "splat") for a in rest]
    return la


def _llamafactory(sub: Word, rest: list[Word], ctx: Context, span, env, wrapper) -> Launch:
    """``FORCE_TORCHRUN=1 NNODES=2 NPROC_PER_NODE=8 llamafactory-cli train cfg.yaml`` (LLaMA-Factory's
    launcher): torchrun with ``NNODES`` (default 1) and ``NPROC_PER_NODE`` (default: the GPUs it
    sees) when ``FORCE_TORCHRUN`` is on, else torchrun or one process by the GPUs the node has (no
    world stated). The YAML is the job's TrainingArguments file (linked) when it is the only word:
    ``key=value`` words after it override its keys."""
    what = "llamafactory-cli train"
    force = env.get("FORCE_TORCHRUN")
    forced = force is not None and force.known and str(force.value).strip().lower() in ("1", "true", "y", "yes")
    if forced:
        la = _env_torchrun(env, ctx, span, wrapper, what)
        if "nnodes" not in la.options and la.facts.all("parallel.procs_per_node"):
            la.facts.add("parallel.nodes", Value(1, sub.span, True, "", f"no NNODES for {what} (its default 1)",
                                                 Origin(How.DEFAULT)))
    else:
        la = _start("python", span, env, wrapper, ctx)
    la.options["llamafactory"] = Value(what, sub.span, True, "", what)
    la.script = Value("llamafactory.launcher", sub.span, True, "", what)
    la.is_module = True
    la.args = [a.value(0) if not a.splat else Value.unknown(a.why(), a.span, "splat") for a in rest]
    if len(rest) == 1 and rest[0].known and rest[0].text.endswith((".yaml", ".yml", ".json")):
        la.links.append(rest[0].value(0, f"{what} config"))
    return la


def _axolotl(rest: list[Word], ctx: Context, span, env, wrapper, depth: int) -> Launch | None:
    """``axolotl train cfg.yml [--launcher accelerate|torchrun|python] [-- LAUNCHER-ARGS]``: axolotl's
    CLI runs ``accelerate launch LAUNCHER-ARGS -m axolotl.cli.train cfg.yml`` (``torchrun ...``,
    ``python -m ...``). Read as that command; any other option (a config override) leaves it
    unread."""
    cfg: Word | None = None
    launcher = "accelerate"
    extra: list[Word] = []
    i = 0
    while i < len(rest):
        w = rest[i]
        if not w.known:
            return None
        t = w.text
        if t == "--":
            extra = rest[i + 1:]
            break
        if t.startswith("--launcher"):
            val = t.partition("=")[2] if "=" in t else (rest[i + 1].text if i + 1 < len(rest) and rest[i + 1].known else "")
            if val not in ("accelerate", "torchrun", "python"):
                return None
            launcher = val
            i += 1 if "=" in t else 2
            continue
        if t.startswith("-") or cfg is not None:
            return None  # a config override (--micro_batch_size 4 ...) or a second positional
        cfg = w
        i += 1
    if cfg is None:
        return None
    tail = [Word.lit("-m", cfg.span), Word.lit("axolotl.cli.train", cfg.span), cfg]
    head = [Word.lit(launcher if launcher != "accelerate" else "accelerate", span)]
    if launcher == "accelerate":
        head.append(Word.lit("launch", span))
    return _parse(head + extra + tail, ctx, span, env, wrapper, depth + 1)


def _python(rest: list[Word], ctx: Context, span, env, wrapper) -> Launch | None:
    i = 0
    while i < len(rest):
        w = rest[i]
        t = w.text
        if not w.known or not t.startswith("-"):
            break
        if t == "-c":
            return None  # inline code: not a script launch
        if t == "-m" or (t.startswith("-m") and len(t) > 2 and not t.startswith("--")):
            if t == "-m":
                if i + 1 >= len(rest) or not rest[i + 1].known:
                    return None
                mod = rest[i + 1].text
                after = rest[i + 2:]
            else:
                mod, after = t[2:], rest[i + 1:]
            if mod in FRONTEND_MODULES:
                return _frontend(FRONTEND_MODULES[mod], after, ctx, span, env, wrapper)
            if mod in ("pip", "venv", "pytest", "http.server", "ensurepip", "json.tool"):
                return None
            la = _start("python", span, env, wrapper, ctx)
            _procs_from_wrapper(la)
            _script_part(la, [rest[i + 1] if t == "-m" else Word.lit(mod, w.span)] + after, 0, True)
            return la
        i += 2 if t in ("-W", "-X", "-Q") else 1
    if i >= len(rest):
        return None
    sw = rest[i]
    if sw.known and not sw.text.endswith(".py") and "/" not in sw.text and "." in sw.text:
        return None  # `python setup.py`-like words are fine; `python foo.txt`? not a launch
    la = _start("python", span, env, wrapper, ctx)
    _procs_from_wrapper(la)
    _script_part(la, rest, i, False)
    return la


def _procs_from_wrapper(la: Launch) -> None:
    """A process that does not fork workers: srun/mpirun decide how many run per node."""
    w = la.wrapper
    if w is None:
        return
    tpn = w.options.get("ntasks_per_node_effective")
    if tpn is not None:
        la.facts.add("parallel.procs_per_node", tpn)
    if w.launcher in ("mpirun", "horovodrun"):
        np_ = w.facts.get("parallel.world_size")
        if np_ is not None and "parallel.world_size" not in la.facts:
            la.facts.add("parallel.world_size", np_)


def _srun(rest: list[Word], ctx: Context, span, env, wrapper, depth) -> Launch | None:
    opts: dict[str, Value] = {}

    def step(i: int, w: Word, t: str) -> int:
        if t.startswith("--"):
            if "=" in t:
                k, _, _ = t.partition("=")
                opts[norm(k)] = w.value(len(k) + 1, f"srun {k}")
                return i + 1
            key = norm(t)
            if key in SRUN_BOOL or key in SRUN_OPTIONAL:
                opts[key] = Value(True, w.span, True, "", f"srun {t}")
                return i + 1
            if i + 1 < len(rest):
                opts[key] = rest[i + 1].value(0, f"srun {t}")
            return i + 2
        # short option(s)
        letter = t[1:2]
        if letter in SRUN_SHORT_VALUE:
            if len(t) > 2:
                opts[_SRUN_SHORT.get(letter, letter)] = w.value(3 if t[2] == "=" else 2, f"srun -{letter}")
                return i + 1
            opts[_SRUN_SHORT.get(letter, letter)] = (rest[i + 1].value(0, f"srun -{letter}") if i + 1 < len(rest)
                                                     else Value.unknown("missing"))
            return i + 2
        opts[_SRUN_SHORT.get(letter, letter)] = Value(True, w.span, True, "", f"srun {t}")
        return i + 1

    i, opaque = _scan_options(rest, step)
    la = _start("srun", span, env, wrapper, ctx, opts, opaque, "srun's options")
    nodes = int_fact(opts.get("nodes"), "srun --nodes", allow_range=True)
    if nodes is not None:
        la.facts.add("parallel.nodes", nodes)
    sched_nodes = ctx.scheduler_facts.int("parallel.nodes")
    n_nodes = known_or(nodes, sched_nodes)
    # tasks per node this step runs
    tpn: Value | None = None
    if "ntasks_per_node" in opts:
        tpn = int_fact(opts["ntasks_per_node"], "srun --ntasks-per-node")
    elif "ntasks" in opts:
        nt = int_fact(opts["ntasks"], "srun --ntasks")
        if nt is not None and nt.known and n_nodes and nt.value % n_nodes == 0:
            tpn = Value(nt.value // n_nodes, nt.span, True, "", "srun --ntasks / nodes")
        elif nt is not None and nt.known and nodes is None and sched_nodes is None and nt.value == 1:
            tpn = Value(1, nt.span, True, "", "srun --ntasks")
        else:
            tpn = Value.unknown("tasks per node not fixed by srun --ntasks", span, "srun --ntasks")
    elif opaque:
        tpn = None
    else:
        tpn = sbatch_tasks_per_node(ctx.scheduler, sched_nodes)
    if tpn is not None:
        la.options["ntasks_per_node_effective"] = tpn
    gpn = gpus_per_node(opts, "srun", n_nodes, tpn)
    if gpn is not None:
        la.facts.add("hardware.gpus_per_node_requested", gpn)
    gpu = gpu_type(opts, "srun")
    if gpu is not None:
        la.facts.add("hardware.gpu", gpu)
    inner_words = rest[i:]
    inner = _parse(list(inner_words), ctx, span, dict(env), la, depth + 1) if inner_words else None
    if inner is not None:
        return inner
    # srun running something else (a shell script, a binary): the srun itself is the launch
    if len(inner_words) > 1 and inner_words[0].known and _basename(inner_words[0].text) in ("bash", "sh", "zsh"):
        inner_words = inner_words[1:]
    _script_part(la, inner_words, 0, False)
    if tpn is not None:
        la.facts.add("parallel.procs_per_node", tpn)
    return la


def sbatch_tasks_per_node(sbatch: dict[str, Value], nodes: int | None) -> Value | None:
    """Tasks per node the ``#SBATCH`` directives fix: ``--ntasks-per-node``, or ``--ntasks`` split
    evenly over ``nodes``."""
    if "ntasks_per_node" in sbatch:
        return int_fact(sbatch["ntasks_per_node"], "#SBATCH --ntasks-per-node")
    if "ntasks" in sbatch and nodes:
        nt = int_fact(sbatch["ntasks"], "#SBATCH --ntasks")
        if nt is not None and nt.known and nt.value % nodes == 0:
            return Value(nt.value // nodes, nt.span, True, "", "#SBATCH --ntasks / --nodes")
    return None


_SRUN_SHORT = {
    "N": "nodes", "n": "ntasks", "c": "cpus_per_task", "o": "output", "e": "error", "i": "input",
    "J": "job_name", "p": "partition", "t": "time", "w": "nodelist", "x": "exclude",
    "m": "distribution", "d": "dependency", "q": "qos", "C": "constraint", "D": "chdir",
    "W": "wait", "A": "account", "G": "gpus", "l": "label", "u": "unbuffered",
}


def known_or(v: Value | None, fallback: int | None) -> int | None:
    if v is not None and v.known and isinstance(v.value, int):
        return v.value
    if v is not None and not v.known:
        return None
    return fallback


GRES_RE = re.compile(r"^gpu(?::([A-Za-z0-9_.\-]+))?:(\d+)$")
GPU_NAME_RE = re.compile(
    r"^(?:nvidia[-_ ]?)?(?:tesla[-_ ]?)?((?:a100|h100|h200|h800|a800|v100|a10g?|a30|a40|l4|l40s?|b100|b200|gb200|gh200|"
    r"t4|p100|a6000|rtx\d+|mi\d+x?)(?:[-_]?(?:sxm\d?|pcie|nvl|hbm\d?e?)?)*(?:[-_]?\d+gb?)?(?:[-_]?(?:sxm\d?|pcie|nvl))*)$",
    re.I,
)


def gpu_name(text: str) -> str | None:
    """A GPU model named by a gres type, constraint or node label (``a100``, ``h100-80gb``)."""
    t = text.strip().strip("'\"")
    m = GPU_NAME_RE.match(t)
    return m.group(1) if m else None


def gpu_type(opts: dict[str, Value], who: str) -> Value | None:
    g = opts.get("gres")
    if g is not None and g.known:
        for part in str(g.value).split(","):
            m = GRES_RE.match(part.strip())
            if m and m.group(1) and gpu_name(m.group(1)):
                return Value(m.group(1), g.span, True, "", f"{who} --gres")
    for key in ("gpus_per_node", "gpus"):
        g = opts.get(key)
        if g is not None and g.known and ":" in str(g.value):
            typ = str(g.value).split(":")[0]
            if gpu_name(typ):
                return Value(typ, g.span, True, "", f"{who} --{key.replace('_', '-')}")
    c = opts.get("constraint")
    if c is not None and c.known:
        toks = [t for t in re.split(r"[&|,\[\]()*\s]+", str(c.value)) if t]
        names = [gpu_name(t) for t in toks]
        names = [n for n in names if n]
        if len(set(n.lower() for n in names)) == 1 and "|" not in str(c.value):
            return Value(names[0], c.span, True, "", f"{who} --constraint")
    return None


def gpus_per_node(opts: dict[str, Value], who: str, nodes: int | None, tpn: Value | None) -> Value | None:
    """GPUs requested per node from --gpus-per-node, --gres=gpu[:type]:N, --gpus (÷ nodes) or
    --gpus-per-task (× tasks per node). None when nothing is stated; unknown when not fixed."""
    g = opts.get("gpus_per_node")
    if g is not None:
        if not g.known:
            return Value.unknown(g.why, g.span, f"{who} --gpus-per-node")
        t = str(g.value).split(":")[-1]
        if t.isdigit():
            return Value(int(t), g.span, True, "", f"{who} --gpus-per-node")
        return Value.unknown(f"--gpus-per-node {g.value!r}", g.span, f"{who} --gpus-per-node")
    g = opts.get("gres")
    if g is not None:
        if not g.known:
            return Value.unknown(g.why, g.span, f"{who} --gres")
        for part in str(g.value).split(","):
            m = GRES_RE.match(part.strip())
            if m:
                return Value(int(m.group(2)), g.span, True, "", f"{who} --gres")
    g = opts.get("gpus")
    if g is not None and g.known and nodes:
        t = str(g.value).split(":")[-1]
        if t.isdigit() and int(t) % nodes == 0:
            return Value(int(t) // nodes, g.span, True, "", f"{who} --gpus")
    g = opts.get("gpus_per_task")
    if g is not None and g.known and tpn is not None and tpn.known:
        t = str(g.value).split(":")[-1]
        if t.isdigit():
            return Value(int(t) * tpn.value, g.span, True, "", f"{who} --gpus-per-task × tasks per node")
    return None


def _mpirun(rest: list[Word], ctx: Context, span, env, wrapper, depth) -> Launch | None:
    opts: dict[str, Value] = {}
    env = dict(env)

    def step(i: int, w: Word, t: str) -> int:
        name = t.split("=", 1)[0]
        key = norm(name)
        if "=" in t and t.startswith("--"):
            opts[key] = w.value(len(name) + 1, f"mpirun {name}")
            return i + 1
        if key in MPIRUN_TWO_VALUES:
            if key in ("genv", "env") and i + 2 < len(rest) and rest[i + 1].known:
                env[rest[i + 1].text] = rest[i + 2].value(0, rest[i + 1].text)
            return i + 3
        if key == "x":
            if i + 1 < len(rest) and rest[i + 1].known:
                k, eq, _ = rest[i + 1].text.partition("=")
                if eq:
                    env[k] = rest[i + 1].value(len(k) + 1, k)
            return i + 2
        if key in MPIRUN_BOOL:
            opts[key] = Value(True, w.span, True, "", f"mpirun {t}")
            return i + 1
        nxt = rest[i + 1] if i + 1 < len(rest) else None
        if nxt is not None and not nxt.text.startswith("-") and not _looks_like_program(nxt):
            opts[key] = nxt.value(0, f"mpirun {t}")
            return i + 2
        opts[key] = Value(True, w.span, True, "", f"mpirun {t}")
        return i + 1

    i, opaque = _scan_options(rest, step)
    la = _start("mpirun", span, env, wrapper, ctx, opts, opaque, "mpirun's options")
    np_ = int_fact(opts.get("np", opts.get("n", opts.get("c"))), "mpirun -np")
    if np_ is not None:
        la.facts.add("parallel.world_size", np_)
    ppn = int_fact(opts.get("npernode", opts.get("ppn", opts.get("N"))), "mpirun per-node count")
    if ppn is not None:
        la.options["ntasks_per_node_effective"] = ppn
    inner_words = rest[i:]
    inner = _parse(list(inner_words), ctx, span, dict(env), la, depth + 1) if inner_words else None
    if inner is not None:
        return inner
    _script_part(la, inner_words, 0, False)
    return la


#: horovodrun options that take no value
HOROVODRUN_BOOL = frozenset({"gloo", "mpi", "jsrun", "verbose", "v", "disable_cache", "check_build", "cb",
                             "elastic_timeout_disabled", "log_hide_timestamp", "no_stall_check",
                             "autotune", "timeline_mark_cycles", "tcp"})


def _horovod_hosts(v: Value | None) -> "list[int] | None":
    """The slots of each host of ``-H host1:4,host2:4`` (a host without ``:N`` has one slot);
    None when unknown or not of that shape."""
    if v is None or not v.known or not isinstance(v.value, str):
        return None
    out = []
    for part in v.value.strip().strip("'\"").split(","):
        host, _, slots = part.strip().partition(":")
        if not host or (slots and not slots.isdigit()) or (slots and len(slots) > 6):
            return None
        out.append(int(slots) if slots else 1)
    return out or None


def _horovodrun(rest: list[Word], ctx: Context, span, env, wrapper, depth) -> Launch | None:
    """``horovodrun -np 16 -H node1:8,node2:8 python train.py``: Horovod starts ``-np`` copies of
    the command, filling each host's slots in order (so ``-np 4 -H a:4,b:4`` runs on one node).
    States the world size, and the nodes and processes per node where ``-H`` gives them; the
    inner command (the script) is the launch."""
    opts: dict[str, Value] = {}

    def step(i: int, w: Word, t: str) -> int:
        name = t.split("=", 1)[0]
        key = norm(name)
        if "=" in t and t.startswith("--"):
            opts[key] = w.value(len(name) + 1, f"horovodrun {name}")
            return i + 1
        if key in HOROVODRUN_BOOL:
            opts[key] = Value(True, w.span, True, "", f"horovodrun {t}")
            return i + 1
        nxt = rest[i + 1] if i + 1 < len(rest) else None
        if nxt is not None and not nxt.text.startswith("-") and not _looks_like_program(nxt):
            opts[key] = nxt.value(0, f"horovodrun {t}")
            return i + 2
        opts[key] = Value(True, w.span, True, "", f"horovodrun {t}")
        return i + 1

    i, opaque = _scan_options(rest, step)
    la = _start("horovodrun", span, env, wrapper, ctx, opts, opaque, "horovodrun's options")
    np_ = int_fact(opts.get("np", opts.get("num_proc")), "horovodrun -np")
    if np_ is not None:
        la.facts.add("parallel.world_size", np_)
    hosts_v = opts.get("H", opts.get("hosts"))
    slots = _horovod_hosts(hosts_v)
    if hosts_v is not None and np_ is not None and np_.known and slots is not None:
        need, used = np_.value, []
        for n in slots:
            if need <= 0:
                break
            used.append(min(n, need))
            need -= n
        if need <= 0:  # -np fits in the slots -H offers (more than that is another finding)
            la.facts.add("parallel.nodes", Value(len(used), hosts_v.span, True, "", "horovodrun -H"))
            if len(set(used)) == 1:
                ppn = Value(used[0], hosts_v.span, True, "", "horovodrun -H slots")
                la.options["ntasks_per_node_effective"] = ppn
    elif hosts_v is not None or "hostfile" in opts or "host_discovery_script" in opts:
        la.facts.add("parallel.nodes", Value.unknown("the hosts horovodrun runs on are not known here",
                                                     span, "horovodrun -H"))
    inner_words = rest[i:]
    inner = _parse(list(inner_words), ctx, span, dict(env), la, depth + 1) if inner_words else None
    if inner is not None:
        return inner
    _script_part(la, inner_words, 0, False)
    return la
