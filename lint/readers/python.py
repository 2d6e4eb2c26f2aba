"""The Python reader: what a training script does, as far as the code shows it statically.

``read(path, abspath, text)`` parses the file once with CPython's ``ast`` and walks the tree once.
The result's ``data`` is a :class:`Script`: every call (matched by qualified name, so ``import
torch.distributed as dist`` or ``from torch.nn.parallel import DistributedDataParallel as DDP``
cannot dodge a rule) with its arguments, position, the enclosing ``if`` conditions classified
(rank-0 guard, rank branch), enclosing loops and function; hand-written layer partitions; device
meshes. ``facts`` holds the normalized facts the script states.

LibCST is not used for checking (only :func:`_newer_python` asks it whether a file CPython here
rejects is valid for a newer Python). Positions come from the ``ast`` nodes, converted to
character columns only when a span is asked for; the text of a node is a slice of the file.

The :class:`Script` it builds, and the data classes in it (calls, guards, loops, frames,
partitions, meshes), are the script event API of the model layer: :mod:`parallint.model.script`
(rules read that module, never this one). This module holds what builds a Script: the collector.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, cast

from parallint.model.diagnostics import Diagnostic, Severity, Span
from parallint.model.facts import FileFacts, Value, known_int
from parallint.model.script import GROUPS, Call, Frame, Guard, Loop, Mesh, Partition, RankList, Script, Slice, _dotted, _tail

#: A Python file is worth parsing only when its text contains one of these (the pre-filter lives
#: with the classifier, which must not import this module).
from parallint.discover.classify import PYTHON_NEEDLES as NEEDLES  # noqa: E402

if TYPE_CHECKING:  # pragma: no cover
    import ast

MAX_BYTES = 2_000_000  # larger "scripts" are generated code: not read
MAX_NESTING = 100  # syntax-tree depth; real training code stays under 30

# ---------------------------------------------------------------------------------------------
_BY_QNAME: dict[str, str] = {q: g for g, qs in GROUPS.items() for q in qs}
_MP_SUFFIXES = ("parallel_state.initialize_model_parallel", "mpu.initialize_model_parallel")

_RANK0_DECORATOR = re.compile(r"rank_zero|rank0|master_only|main_process_only|on_main_process|on_rank0|main_only", re.I)
_EPOCH = re.compile(r"epoch", re.I)


from parallint.model.pyshared import MULTI  # noqa: E402,F401 - one sentinel for the reader and the evaluator


#: fields of ``ast`` nodes that never hold a node (names, numbers, flags), by field name; a
#: Constant's or MatchSingleton's ``value`` and Global's ``names`` are added by type
_SCALAR_FIELDS = frozenset({"id", "attr", "arg", "name", "asname", "module", "level", "kind", "conversion",
                            "is_async", "simple", "type_comment", "tag", "rest", "kwd_attrs"})
#: fields holding leaves of one level (expression contexts, operators)
_LEAF_FIELDS = frozenset({"ctx", "op", "ops"})
_DEPTH_INFO: dict[type, tuple[tuple[str, ...], tuple[str, ...], bool]] = {}


def _depth_info(t: type, node: Any) -> tuple[tuple[str, ...], tuple[str, ...], bool]:
    """(fields holding one node, fields holding a list of nodes, has a leaf child) of a type."""
    info = _DEPTH_INFO.get(t)
    if info is None:
        import ast

        skip = set(_SCALAR_FIELDS)
        if t in (ast.Constant, ast.MatchSingleton):
            skip.add("value")
        if t in (ast.Global, ast.Nonlocal):
            skip.add("names")
        if t.__name__ == "TypeAlias":
            skip.discard("name")
        names = [n for n in t._fields if n not in skip and n not in _LEAF_FIELDS]  # type: ignore[attr-defined]
        # a list field is a list in every node of the type (empty or not): the first node tells
        one = tuple(n for n in names if type(getattr(node, n, None)) is not list)
        many = tuple(n for n in names if type(getattr(node, n, None)) is list)
        info = (one, many, any(n in _LEAF_FIELDS for n in t._fields))  # type: ignore[attr-defined]
        _DEPTH_INFO[t] = info
    return info


def _ast_depth(tree, limit: int, imports: list | None = None, shapes: list | None = None,
               levels: list | None = None) -> int:
    """Depth of a stdlib ``ast`` tree (level by level; stops counting at ``limit``). The same pass
    gathers the Import/ImportFrom nodes into ``imports`` when given, and the nodes the gate of
    :class:`CallGate` looks at (calls, list/tuple displays, ``if`` statements) into ``shapes``.
    Expression contexts and operators count as a level of their own (they are nodes). With
    ``levels``, the nodes of each level are appended to it (every node but those leaves)."""
    import ast

    Import, ImportFrom = ast.Import, ast.ImportFrom
    want = (ast.Call, ast.List, ast.Tuple, ast.If) if shapes is not None else ()
    infos = _DEPTH_INFO
    level, d, best = [tree], 1, 0
    while level:
        best = d
        if d >= limit:
            return d
        if levels is not None:
            levels.append(level)
        nxt: list = []
        push, extend = nxt.append, nxt.extend
        leafy = False
        for node in level:
            t = type(node)
            info = infos.get(t) or _depth_info(t, node)
            if imports is not None and (t is Import or t is ImportFrom):
                imports.append(node)
            elif t in want:
                shapes.append(node)  # type: ignore[union-attr]
            one, many, leaf = info
            if leaf:
                leafy = True
            for name in one:
                v = getattr(node, name, None)
                if v is not None:
                    push(v)
            for name in many:
                v = getattr(node, name, None)
                if v:
                    if None in v:
                        extend([x for x in v if x is not None])
                    else:
                        extend(v)
        if leafy and d + 1 > best:
            best = d + 1
            if best >= limit:
                return best
        level, d = nxt, d + 1
    return best


class CallGate:
    """Which Python files need the concrete syntax tree at all, decided on the ``ast`` pass.

    The rules match calls by qualified name (their declared ``calls``: groups of :data:`GROUPS`
    or qualified names), and the facts this reader states come from those calls too. A file none
    of whose calls resolves, through its imports, to one of those names (nor to Megatron's
    ``initialize_model_parallel``), and that holds no hand-written pipeline partition (a list of
    two or more slices, or slices chosen by ``if rank == k:`` branches: PIP001/PIP003 need no
    call), gives no rule anything to match and states no fact: it is not parsed with LibCST.
    The runner uses the gate only for files that no launch or config links (a linked script's
    job rules look at its device expressions and more) and only when every rule in force
    declares what it matches."""

    __slots__ = ("qnames", "suffixes", "partitions", "needles")

    def __init__(self, extra: Iterable[str] = ()) -> None:
        self.qnames = frozenset(_BY_QNAME) | frozenset(extra)
        self.suffixes: tuple[str, ...] = _MP_SUFFIXES
        self.partitions = True  # a hand-written pipeline partition keeps the file (PIP001/PIP003)
        #: words one of which the text of a file the gate can want holds (None: not tested). A call
        #: resolves to a qualified name whose last part is written in the file (the attribute of
        #: the call, or the name an import statement binds), so an ASCII file without any of them
        #: is not even parsed: no facts, and no syntax finding (so only for_facts sets them)
        self.needles: tuple[str, ...] | None = None

    @classmethod
    def for_facts(cls, wanted: Iterable[str]) -> "CallGate":
        """The gate of a run that needs only the facts ``wanted`` (and, with :data:`LINKS` among
        them, the files a script links), not the Script (``estimate``, ``plan``): a file is parsed
        only when one of its calls belongs to a group of :data:`FACT_GROUPS` that states one of
        them; calls of the other groups, and partitions, state none."""
        keys = frozenset(wanted)
        groups = {g for g, made in FACT_GROUPS.items() if made & keys}
        gate = cls.__new__(cls)
        gate.qnames = frozenset(q for g in groups for q in GROUPS.get(g, ()))
        gate.suffixes = _MP_SUFFIXES if "initialize_model_parallel" in groups else ()
        gate.partitions = False
        words = {q.rsplit(".", 1)[-1] for q in gate.qnames} | {x.rsplit(".", 1)[-1] for x in gate.suffixes}
        # a word that holds another is found with it ("Seq2SeqTrainer" holds "Trainer")
        gate.needles = tuple(sorted(w for w in words if not any(o != w and o in w for o in words)))
        return gate

    def may_want(self, text: str) -> bool:
        """False when :attr:`needles` rule the file out from its text alone (see there)."""
        needles = self.needles
        return needles is None or not text.isascii() or any(n in text for n in needles)

    def wanted(self, shapes: list, import_map: dict[str, set[str]]) -> bool:
        import ast

        qnames, maps, suffixes = self.qnames, import_map, self.suffixes
        partitions = self.partitions
        for node in shapes:
            t = type(node)
            if t is not ast.Call and not partitions:
                continue
            if t is ast.Call:
                func, parts = node.func, []
                while type(func) is ast.Attribute:
                    parts.append(func.attr)
                    func = func.value
                if type(func) is not ast.Name:
                    continue
                bases = maps.get(func.id)
                if not bases:
                    continue
                tail = ".".join(reversed(parts))
                for b in bases:
                    q = f"{b}.{tail}" if tail else b
                    if q in qnames or (suffixes and q.endswith(suffixes)):
                        return True
            elif t is ast.If:
                if node.orelse and any(type(st) is ast.Assign and _slicey(st.value) for st in node.body):
                    return True
            elif len(node.elts) >= 2 and all(_slicey(e) for e in node.elts):
                return True
        return False


#: the pseudo-fact of :data:`FACT_GROUPS` for the files a script links (a DeepSpeed config named
#: in ``deepspeed.initialize(config=...)``: its facts join the script's job)
LINKS = "links"
#: the facts (and :data:`LINKS`) that the calls of each group of :data:`GROUPS` can state in
#: :func:`_facts` (``initialize_model_parallel`` is matched by name suffix); a group missing here
#: states none. :meth:`CallGate.for_facts` reads it: keep it in step with :func:`_facts`
#: (tests/test_estimate_lean.py checks it on the fixtures).
FACT_GROUPS: dict[str, frozenset[str]] = {
    "init_process_group": frozenset({"parallel.world_size"}),
    "init_device_mesh": frozenset({"parallel.dp", "parallel.tp", "parallel.pp", "parallel.cp", "parallel.ep",
                                   "parallel.dp_replicate", "parallel.dp_shard"}),
    "initialize_model_parallel": frozenset({"parallel.tp", "parallel.pp", "parallel.vpp", "parallel.cp",
                                            "parallel.ep", "framework"}),
    "colossal_hybrid": frozenset({"parallel.tp", "parallel.pp", "parallel.zero_stage", "framework"}),
    "ds_init_inference": frozenset({"parallel.tp", "model.heads"}),
    "ds_pipeline_module": frozenset({"parallel.pp"}),
    "pl_trainer": frozenset({"parallel.nodes", "parallel.procs_per_node", "ddp.find_unused_parameters"}),
    "accelerator": frozenset({"training.grad_accum", "training.precision"}),
    "training_args": frozenset({"training.micro_batch", "training.grad_accum", "training.precision",
                                "ddp.find_unused_parameters", LINKS}),
    "ddp": frozenset({"ddp.find_unused_parameters"}),
    "ddp_kwargs": frozenset({"ddp.find_unused_parameters"}),
    "ddp_strategy": frozenset({"ddp.find_unused_parameters"}),
    "lightning_deepspeed": frozenset({"training.lightning_deepspeed_config",
                                      "training.lightning_deepspeed_config_accum", LINKS}),
    "ds_initialize": frozenset({LINKS}),
    "fsdp": frozenset({"parallel.fsdp"}),
    "fully_shard": frozenset({"parallel.fsdp"}),
}


#: what ``_parse`` returns for a file the gate keeps from LibCST (no Script, no facts from calls)
_GATED: Any = object()


def _slicey(node) -> bool:
    """``x[a:b]``, or a call with such an argument (``Sequential(*x[a:b])``): a partition slice,
    as far as the ``ast`` shows (a superset of what the collector takes)."""
    import ast

    t = type(node)
    if t is ast.Call:
        return any(_slicey(a.value if type(a) is ast.Starred else a)
                   for a in list(node.args) + [k.value for k in node.keywords] if type(a) is not ast.Call)
    if t is not ast.Subscript:
        return False
    sl = node.slice
    return type(sl) is ast.Slice or (type(sl) is ast.Tuple and len(sl.elts) == 1 and type(sl.elts[0]) is ast.Slice)


def _collect_imports(nodes, out: dict[str, set[str]]) -> None:
    """Every import in the file (any scope): local name -> qualified names. Read from CPython's
    ``ast`` nodes (gathered while checking the file's depth), much cheaper than a LibCST walk."""
    import ast

    for node in nodes:
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.asname is not None:
                    out.setdefault(a.asname, set()).add(a.name)
                else:
                    top = a.name.split(".")[0]
                    out.setdefault(top, set()).add(top)
        elif isinstance(node, ast.ImportFrom):
            if node.level or node.module is None or any(a.name == "*" for a in node.names):
                continue
            for a in node.names:
                out.setdefault(a.asname or a.name, set()).add(f"{node.module}.{a.name}")


# ---------------------------------------------------------------------------------------------
#: ``args = get_args()``: parsed arguments that may come from a parser in another module
_ENTRY_WORDS = re.compile(r"\b(?:click|typer|fire|hydra|hydra_runner)\b")
_FOREIGN_ARGS = re.compile(r"^\s*(?:args|opt|opts|flags)\s*=\s*\w+\(\s*\)", re.M)


def read(path: str, abspath: Path, text: str, gate: "CallGate | None" = None) -> FileFacts:
    """The facts and the :class:`Script` of one file. With ``gate``, a file that the gate says no
    rule can use (see :class:`CallGate`) is not parsed with LibCST: no Script, and no facts,
    which only those calls state."""
    f = FileFacts(path=path, abspath=abspath, kind="python", text=text)
    if len(text) > MAX_BYTES:
        return f
    if gate is not None and not gate.may_want(text) and "CommandFunction" not in text and "torchx" not in text:
        return f  # no call here can state a fact the gate is for: not parsed (see CallGate.needles)
    try:
        script, tree = _parse(path, text, gate)
    except _SyntaxProblem as e:
        f.diagnostics.append(Diagnostic("SYN001", "parse-error", Severity.ERROR, e.message, e.span))
        return f
    except (RecursionError, MemoryError):
        f.diagnostics.append(
            Diagnostic("SYN001", "parse-error", Severity.ERROR, "file too deeply nested to parse",
                       Span.whole_file(path))
        )
        return f
    if script is None:
        return f
    if script is not _GATED:
        f.data = script
        script.abspath = abspath
        script.module_loader = load_module
        if not script.argparse and tree is not None and _FOREIGN_ARGS.search(text):
            from parallint.readers import pyparser_import  # args = get_args() from a repository module

            try:
                pyparser_import.adopt(script, abspath, tree)
            except RecursionError:  # pragma: no cover - pathological nesting
                pass
        if not script.argparse and tree is not None and _ENTRY_WORDS.search(text):
            from parallint.readers import pycli  # click, typer, fire, Hydra: the entry function's parameters

            try:
                pycli.find(script, tree, abspath)
            except RecursionError:  # pragma: no cover - pathological nesting
                script.cli_entry = None
        if script.argparse and not script.argparse_open and tree is not None:
            try:
                _argparse_closure(script, tree)
            except RecursionError:  # pragma: no cover - pathological nesting
                script.argparse_open = "too deeply nested"
        try:
            _facts(script, f)
        except RecursionError:  # pragma: no cover - pathological nesting
            pass
    # what the text states without the tree (read whether or not the gate let LibCST run)
    if "CommandFunction" in text:  # a submitit command line the script submits
        from parallint.readers.submitit import command_facts

        f.facts.extend(command_facts(path, text, tree))
    if "torchx" in text:  # a TorchX component: the launch it describes
        from parallint.readers.torchx import component_launches

        f.launches.extend(component_launches(path, abspath, text, tree))
    return f


#: the largest repository module read for a name a script imports from it
MODULE_BYTES = 400_000
#: modules loaded in this run: (path, rel, content) -> the result of :func:`load_module`; the
#: linker and the rules ask for the same module once per job and per rule (see reset)
_MODULES: dict = {}
#: the most entries kept (each holds a syntax tree) ...
_MODULES_MAX = 64
#: ... and the most bytes of source they hold together (a Script takes about 30 bytes of memory
#: a source byte): the jobs of Megatron-LM's launches ask for the same 60 modules (1.8 MB) in
#: turn, which the eight entries kept before could not hold (each was parsed again for each job)
MODULES_BYTES = 2_000_000
#: whether a run starts with the modules of earlier runs (the language server: see keep_modules)
_KEEP = False


_RUN_LIMITS = (_MODULES_MAX, MODULES_BYTES)  # a run's own bounds, when nothing is kept


def keep_modules(most: int) -> None:
    """Keep up to ``most`` loaded modules from one run to the next (the language server, where an
    edit re-checks the same jobs). Entries are keyed by the module's path and bytes, so a kept one
    is exactly what loading the file again gives. ``most`` 0: keep nothing again (a run's own
    bounds), and forget what was kept."""
    global _MODULES_MAX, _KEEP, MODULES_BYTES
    if most <= 0:
        (_MODULES_MAX, MODULES_BYTES), _KEEP = _RUN_LIMITS, False
        reset()
        return
    _MODULES_MAX, _KEEP, MODULES_BYTES = max(int(most), 1), True, 1 << 62


def reset() -> None:
    """Forget the modules loaded by an earlier run (unless :func:`keep_modules`)."""
    if _KEEP:
        return
    while _MODULES:
        _forget(_MODULES.popitem()[1])


def load_module(abspath: Path, module: str, level: int, needs: str | None = None) -> "tuple[str, Script] | None":
    """(its path relative to ``abspath``'s folder, its Script) for the repository module that
    ``from <level dots><module> import ...`` in the file ``abspath`` names; None when it is not one
    of the repository's own files (third-party packages are never read), is too large or does not
    parse, or (with ``needs``) its text does not hold that word. Read with ``ast``, never
    imported; what it imports in turn is not followed."""
    import os

    from parallint.readers.pyparser_import import resolve
    from parallint.util.boundary import read_inside

    path = resolve(abspath, module, level)
    if path is None or path == abspath:
        return None
    raw = read_inside(path, abspath, MODULE_BYTES)
    if raw is None or len(raw) > MODULE_BYTES:
        return None
    if needs and needs.encode() not in raw:
        return None
    rel = os.path.relpath(path, os.path.dirname(abspath)).replace(os.sep, "/")
    key = (path, rel, raw)
    if key in _MODULES:
        got = _MODULES.pop(key)
        _MODULES[key] = got  # the most recently used last
        return got
    got = _load(path, rel, raw)
    held = sum(len(k[2]) for k in _MODULES)
    while _MODULES and (len(_MODULES) >= _MODULES_MAX or held + len(raw) > MODULES_BYTES):
        old = next(iter(_MODULES))  # the least recently used
        held -= len(old[2])
        _forget(_MODULES.pop(old))
    _MODULES[key] = got
    return got


def _forget(got: "tuple[str, Script] | None") -> None:
    """Empty a Script that leaves the cache (its calls, guards and frames point at each other):
    its tree is freed at once by reference counting, not at the next scan of the collector."""
    if got is not None:
        got[1].__dict__.clear()


def _load(path: Path, rel: str, raw: bytes) -> "tuple[str, Script] | None":
    try:
        script, _tree = _parse(rel, raw.decode("utf-8", errors="replace"))
    except (_SyntaxProblem, RecursionError, MemoryError):
        return None
    if script is None or script is _GATED:
        return None
    script.abspath = path
    return rel, script


#: argument parsers besides argparse's whose flags parallint does not list
_OTHER_PARSERS = re.compile(r"\b(?:HfArgumentParser|TrlParser|H4ArgumentParser|jsonargparse|tyro|simple_parsing|"
                            r"absl|click|typer|hydra|fire|OmegaConf\.from_cli|LightningCLI|sys\.argv)\b")
_GROUP_MAKERS = ("add_argument_group", "add_mutually_exclusive_group")


def _argparse_closure(script: Script, tree) -> None:
    """Set ``script.argparse_open`` when the options of the script's parser are not all visible:
    another parser library or ``sys.argv`` handling, several parsers, a parser or group handed to a
    function the file does not define, ``add_argument`` on something not made here, a helper that
    adds options passed elsewhere as a callback, ``parse_args(<words>)``, ``fromfile_prefix_chars``."""
    import ast

    from parallint.model.pyshared import walk

    m = _OTHER_PARSERS.search(script.text)
    if m is not None:
        script.argparse_open = m.group(0)
        return
    parsers: set[str] = set()
    groups: set[str] = set()
    made = 0
    nodes = walk(tree)
    for node in nodes:
        if isinstance(node, ast.Call):
            tail = _tail(node.func)
            if tail == "ArgumentParser":
                made += 1
                if any(k.arg in ("fromfile_prefix_chars", "exit_on_error", "argument_default") for k in node.keywords):
                    script.argparse_open = "ArgumentParser options"
            elif tail in ("parse_args", "parse_intermixed_args") and (node.args or node.keywords):
                script.argparse_open = "parse_args(<words>)"
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and isinstance(node.value, ast.Call):
            tail = _tail(node.value.func)
            if tail == "ArgumentParser":
                parsers.add(node.targets[0].id)
            elif tail in _GROUP_MAKERS:
                groups.add(node.targets[0].id)
    if made != 1:
        script.argparse_open = script.argparse_open or ("several parsers" if made else "no ArgumentParser here")
    if script.argparse_open:
        return
    local = set(script.functions)
    takers: set[str] = set()  # local functions whose parameters receive add_argument
    for fn in nodes:
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        params = {a.arg for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs)}
        for node in walk(fn):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr in ("add_argument", *_GROUP_MAKERS) \
                    and isinstance(node.func.value, ast.Name) and node.func.value.id in params:
                takers.add(fn.name)
                groups.add(node.func.value.id)
    if takers & script.refs:
        script.argparse_open = "a function adding options is handed elsewhere"
        return
    handles = parsers | groups
    for node in nodes:
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in ("add_argument", *_GROUP_MAKERS):
            if not (isinstance(func.value, ast.Name) and func.value.id in handles):
                script.argparse_open = "add_argument on a parser made elsewhere"
                return
            continue
        passed = [a for a in (*node.args, *(k.value for k in node.keywords))
                  if isinstance(a, ast.Name) and a.id in handles]
        if passed and not (isinstance(func, ast.Name) and func.id in local):
            script.argparse_open = f"the parser is handed to {_tail(func) or 'a call'}()"
            return


class _SyntaxProblem(Exception):
    def __init__(self, message: str, span: Span) -> None:
        super().__init__(message)
        self.message = message
        self.span = span


#: an f-string prefix (f, rf, fr, any case): PEP 701's newer f-strings are the syntax that CPython
#: before 3.12 rejects and LibCST accepts
_FSTRING_START = re.compile(r"(?<![\w])(?:[rR]?[fF]|[fF][rR])[\"']")
#: PEP 695 type parameters and aliases (3.12): ``class Pipeline[T](Base):``, ``def f[T](x: T)``,
#: ``type Vector = list[float]``
_TYPE_PARAMS = re.compile(r"^\s*(?:(?:async\s+)?def\s+\w+\s*\[|class\s+\w+\s*\[|type\s+\w+\s*(?:\[[^\]]*\]\s*)?=)")


def _newer_python(text: str, error: SyntaxError | None = None) -> bool:
    """True when CPython here rejects ``text`` but LibCST's grammar (which follows newer Pythons)
    accepts it: code for a newer Python than the one running parallint, such as PEP 701 f-strings
    (``f"{d["k"]}"``, 3.12) and PEP 695 type parameters (``class Pipeline[T]:``, 3.12), is not a
    syntax error. Only where CPython's error is at an f-string or a type-parameter header (on its
    line or the two before), and only for mild text: LibCST's native parser must not meet
    the pathological text the CPython parse normally screens out (its error recovery on thousands
    of chained subscripts in an unclosed call runs for minutes)."""
    import sys

    if sys.version_info >= (3, 14) or len(text) > 2_000_000:
        return False
    if error is not None:
        lines = text.splitlines()
        at = (error.lineno or 1) - 1
        near = lines[max(0, at - 2):at + 1]
        if not any(_FSTRING_START.search(ln) or _TYPE_PARAMS.match(ln) for ln in near):
            return False
    depth = top = 0
    for ch in text:  # bracket depth, strings included: an overestimate is only more cautious
        if ch in "([{":
            depth += 1
            top = max(top, depth)
        elif ch in ")]}":
            depth = max(0, depth - 1)
    if top > 60 or len(re.findall(r"\b(?:and|or)\b", text)) > 400 or \
            max((len(ln) for ln in text.splitlines()), default=0) > 5000:
        return False
    import libcst as cst

    try:
        cst.parse_module(text)
    except Exception:
        return False
    return True


_MAGIC = re.compile(r"[ \t]*[!%]")


def _without_magics(text: str, error_line: int | None) -> str | None:
    """A notebook exported as a ``.py`` file (Jupyter, Databricks: ``!deepspeed ...``,
    ``%pip install``) is Python but for its IPython shell and magic lines. When the syntax error is
    on such a line, the text with every such line (and its backslash continuations) replaced by
    ``pass`` at its indentation, so the rest is checked with its own line numbers; else None."""
    lines = text.split("\n")
    if not error_line or error_line > len(lines) or not _MAGIC.match(lines[error_line - 1]):
        return None
    out, i = [], 0
    while i < len(lines):
        ln = lines[i]
        m = _MAGIC.match(ln)
        if m is None:
            out.append(ln)
            i += 1
            continue
        out.append(ln[:m.end() - 1] + "pass" + ("\r" if ln.endswith("\r") else ""))
        while ln.rstrip("\r").endswith("\\") and i + 1 < len(lines):
            i += 1
            ln = lines[i]
            out.append("\r" if ln.endswith("\r") else "")
        i += 1
    return "\n".join(out)


def _parse(path: str, text: str, gate: "CallGate | None" = None, unmasked: bool = True) -> tuple[Any, ast.Module | None]:
    """Parse with CPython's own parser first: it gives the positions editors show, it rejects
    what CPython cannot run, and it is a cheap guard for LibCST's native parser, which crashes
    the process on pathological nesting. Only then LibCST, for the tree the rules walk."""
    import ast
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(text, filename=path)
    except SyntaxError as se:
        if _newer_python(text, se):
            return None, None  # valid for a newer Python than parallint's (PEP 701 f-strings...)
        masked = _without_magics(text, se.lineno)
        if masked is not None:
            return _parse(path, masked, gate, False)
        line, col = se.lineno or 1, max(se.offset or 1, 1)
        raise _SyntaxProblem(f"Python syntax error at {line}:{col}: {se.msg or 'invalid syntax'}",
                             Span(path, line, col)) from None
    except (RecursionError, MemoryError):
        raise _SyntaxProblem("Python syntax error at 1:1: nested too deeply for Python to compile",
                             Span(path, 1, 1)) from None
    except ValueError as exc:  # NUL bytes, lone surrogates
        m = re.search("[\ud800-\udfff\x00]", text)
        i = m.start() if m else 0
        line = text.count("\n", 0, i) + 1
        col = i - (text.rfind("\n", 0, i) + 1) + 1
        raise _SyntaxProblem(f"cannot parse as Python at {line}:{col}: {exc}", Span(path, line, col)) from None
    import_nodes: list = []
    shapes: list | None = [] if gate is not None else None
    levels: list = []
    depth = _ast_depth(tree, MAX_NESTING + 1, import_nodes, shapes, levels)
    if depth > MAX_NESTING:
        raise _SyntaxProblem(
            f"code nested more than {MAX_NESTING} levels deep (limit for checking): file not checked",
            Span(path, 1, 1),
        )
    if unmasked:  # the import statements that parallint.link.imports would parse this text for
        from parallint.model.pyshared import STATED, import_pairs, text_key

        STATED.setdefault(text_key(text), import_pairs(import_nodes))
    import_map: dict[str, set[str]] = {}
    _collect_imports(import_nodes, import_map)
    if gate is not None and not gate.wanted(shapes or [], import_map):
        return _GATED, tree  # nothing here for a rule (see CallGate)
    del shapes
    from parallint.model import pyeval

    script = Script(path, text)
    script._module = tree
    script._ast = tree  # for Script.syntax_index (no second ast parse); dropped once that is built
    script._nodes = levels  # every node, from the depth pass: the syntax index needs no walk of its own
    script.import_map = import_map
    script._evaluator = pyeval.Evaluator(script)
    _Collector(script).run(tree)
    for c in script.calls:
        for g in c.groups:
            script._by_group.setdefault(g, []).append(c)
    _post(script)
    return script, tree


# ---------------------------------------------------------------------------------------------
# The collector: one walk over the file's ``ast`` tree, in source order (as LibCST visited it
# before: the order of calls and bindings is part of what the rules see). ``visit`` handlers
# take the nodes that matter and walk their children themselves; any other node's children are
# walked in the order of its fields. Statement lists inside a compound statement are blocks: a
# guard that `if rank != 0: return` adds holds until the end of its block.
_SKIP_FIELDS = frozenset({"ctx", "op", "ops", "type_comment", "kind", "conversion", "is_async", "level", "simple",
                          "type_ignores", "names", "name", "arg", "attr", "id", "module", "asname", "type_params"})
_BLOCK_FIELDS = frozenset({"body", "orelse", "finalbody"})
_AST_FIELDS: dict[type, tuple[tuple[str, bool], ...]] = {}


def _fields(t: type) -> tuple[tuple[str, bool], ...]:
    """(field, is a statement list) of an ``ast`` node type, in the order they are walked."""
    fs = _AST_FIELDS.get(t)
    if fs is None:
        import ast

        stmt = issubclass(t, (ast.stmt, ast.excepthandler, ast.match_case))
        skip = _SKIP_FIELDS | ({"value"} if t is ast.Constant else set())
        fs = tuple((n, stmt and n in _BLOCK_FIELDS) for n in t._fields if n not in skip)  # type: ignore[attr-defined]
        _AST_FIELDS[t] = fs
    return fs


class _Collector:
    """Builds a :class:`Script` from the file's ``ast`` tree."""

    def __init__(self, script: Script) -> None:
        self.s = script
        self.frame = script.module_frame
        self.guards: list[Guard] = []
        self.loops: list[Loop] = []
        self.block_early: list[int] = [0]
        self.targets: dict[int, str] = {}
        self.elifs: set[int] = set()

    def run(self, module) -> None:
        for st in module.body:  # the module's statements are not a block of their own
            self.walk(st)

    def walk(self, node) -> None:
        t = type(node)
        h = _HANDLERS.get(t)
        if h is not None and not h(self, node):
            return
        fs = _AST_FIELDS.get(t)
        if fs is None:
            fs = _fields(t)
        if fs:
            self._children(node, fs)

    def children(self, node) -> None:
        self._children(node, _fields(type(node)))

    def _children(self, node, fs) -> None:
        AST = _AST
        for name, block in fs:
            v = getattr(node, name, None)
            if type(v) is list:
                if block:
                    self.block(v)
                else:
                    for x in v:
                        if isinstance(x, AST):
                            self.walk(x)
            elif isinstance(v, AST):
                self.walk(v)

    def block(self, stmts) -> None:
        self.block_early.append(0)
        for st in stmts:
            self.walk(st)
        n = self.block_early.pop()
        for _ in range(n):
            self.guards.pop()

    # -------------------------------------------------- bindings
    def _bind(self, name: str, expr) -> None:
        self.frame.bindings.setdefault(name, []).append(expr)

    def _bind_target(self, t, expr) -> None:
        tt = type(t)
        if tt is _ast_mod.Name:
            self._bind(t.id, expr)
        elif tt is _ast_mod.Tuple or tt is _ast_mod.List:
            for el in t.elts:
                self._bind_target(el.value if type(el) is _ast_mod.Starred else el, MULTI)
        elif tt is _ast_mod.Starred:
            self._bind_target(t.value, MULTI)
        elif tt is _ast_mod.Attribute and expr is not MULTI:
            self.s.attr_bindings.setdefault(_dotted(t) or self.s.code(t), []).append((expr, self.frame))

    def v_Assign(self, node) -> bool:
        ast = _ast_mod
        value, targets = node.value, node.targets
        for t in targets:
            self._bind_target(t, value)
        tv = type(value)
        if len(targets) == 1:
            t0 = targets[0]
            if tv is ast.Call:
                self.targets[id(value)] = _dotted(t0) or self.s.code(t0)
                if type(t0) is ast.Name and _tail(value.func) in ("parse_args", "parse_known_args"):
                    self.s.args_names.add(t0.id)
            if tv is ast.Subscript:
                inner = value.value
                if type(inner) is ast.Call and _tail(inner.func) == "parse_known_args" and type(t0) is ast.Name:
                    self.s.args_names.add(t0.id)
            if type(t0) is ast.Tuple and tv is ast.Call and _tail(value.func) == "parse_known_args":
                els = t0.elts
                if els:
                    e0 = els[0].value if type(els[0]) is ast.Starred else els[0]
                    if type(e0) is ast.Name:
                        self.s.args_names.add(e0.id)
        for t in targets:
            self.walk(t)
        self.walk(value)
        self._module_list(node)
        return False

    def v_AnnAssign(self, node) -> bool:
        self._bind_target(node.target, node.value if node.value is not None else MULTI)
        if type(node.value) is _ast_mod.Call:
            self.targets[id(node.value)] = _dotted(node.target) or self.s.code(node.target)
        return True

    def v_AugAssign(self, node) -> bool:
        self._bind_target(node.target, MULTI)
        if type(node.target) is _ast_mod.Attribute:
            self.s.attr_bindings.setdefault(_dotted(node.target) or self.s.code(node.target), []).append((MULTI, self.frame))
        return True

    def v_NamedExpr(self, node) -> bool:
        self._bind_target(node.target, MULTI)
        return True

    def v_Import(self, node) -> bool:
        for a in node.names:
            top = a.name.split(".")[0]
            self.s.imports.add(top)
            if a.asname is None:
                self._bind(top, MULTI)
        for a in node.names:
            if a.asname is not None:
                self._bind(a.asname, MULTI)
        return False

    def v_ImportFrom(self, node) -> bool:
        if node.module is not None and not node.level:
            self.s.imports.add(node.module.split(".")[0])
        names = node.names
        if not (len(names) == 1 and names[0].name == "*"):
            for a in names:
                if a.asname is None:
                    self._bind(a.name, MULTI)
            for a in names:
                if a.asname is not None:
                    self._bind(a.asname, MULTI)
        return False

    def v_Global(self, node) -> bool:
        for n in node.names:
            self._bind(n, MULTI)
        return False

    def v_ExceptHandler(self, node) -> bool:
        if node.name is not None:
            self._bind(node.name, MULTI)
            self._bind(node.name, MULTI)  # as LibCST's walk did (the handler, then its `as` name)
        if node.type is not None:
            self.walk(node.type)
        self.block(node.body)
        return False

    def v_withitem(self, node) -> bool:
        self.walk(node.context_expr)
        if node.optional_vars is not None:
            self._bind_target(node.optional_vars, MULTI)
            self.walk(node.optional_vars)
        return False

    # -------------------------------------------------- scopes
    def _with_frame(self, frame: Frame, body) -> None:
        saved = (self.frame, self.guards, self.loops, self.block_early)
        self.frame, self.guards, self.loops, self.block_early = frame, [], [], [0]
        self.block(body)
        self.frame, self.guards, self.loops, self.block_early = saved

    def v_FunctionDef(self, node) -> bool:
        for d in node.decorator_list:
            self.walk(d)
        self._bind(node.name, MULTI)
        cls = self.frame.name if self.frame.kind == "class" else None
        frame = Frame("function", node.name, self.frame, cls=cls)
        frame.node = node
        a = node.args
        posonly, regular, defaults = a.posonlyargs, a.args, a.defaults
        first = len(posonly) + len(regular) - len(defaults)  # index of the first parameter with a default
        for i, prm in enumerate(regular):
            frame.params.add(prm.arg)
            k = len(posonly) + i - first
            if k >= 0:
                self.walk(defaults[k])
        for prm, dflt in zip(a.kwonlyargs, a.kw_defaults):
            frame.params.add(prm.arg)
            if dflt is not None:
                self.walk(dflt)
        for i, prm in enumerate(posonly):
            frame.params.add(prm.arg)
            if i >= first:
                self.walk(defaults[i - first])
        for prm in (a.vararg, a.kwarg):
            if prm is not None:
                frame.params.add(prm.arg)
        frame.has_params = bool(frame.params)
        base = []
        for d in node.decorator_list:
            if _RANK0_DECORATOR.search(_dotted(d) or self.s.source(d)):  # (the words, not the layout)
                base.append(Guard(self.s, d, True, True, id(d), True))
        frame.base_guards = tuple(base)
        self.s.functions.setdefault(node.name, []).append(frame)
        self._with_frame(frame, node.body)
        return False

    def v_ClassDef(self, node) -> bool:
        for d in node.decorator_list:
            self.walk(d)
        for b in node.bases:
            self.walk(b)
        self._bind(node.name, MULTI)
        frame = Frame("class", node.name, self.frame)
        frame.node = node
        frame.dataclass = any((_tail(d) or "") == "dataclass" for d in node.decorator_list)
        self.s.classes.setdefault(node.name, []).append(frame)
        self._with_frame(frame, node.body)
        return False

    def v_Return(self, node) -> bool:
        if self.frame.kind == "function":
            # a return under a condition or in a loop: the function's value is not one expression
            self.frame.returns.append(node.value if not self.guards and not self.loops else MULTI)
        return True

    def v_Lambda(self, node) -> bool:
        a = node.args
        posonly, regular, defaults = a.posonlyargs, a.args, a.defaults
        first = len(posonly) + len(regular) - len(defaults)
        for i in range(len(posonly) + len(regular)):
            if i >= first:
                self.walk(defaults[i - first])
        for dflt in a.kw_defaults:
            if dflt is not None:
                self.walk(dflt)
        self.walk(node.body)
        return False

    # -------------------------------------------------- control flow
    def _is_elif(self, node) -> bool:
        """``elif`` (not ``else:`` holding an ``if``): the text at the inner If is the keyword."""
        orelse = node.orelse
        if len(orelse) != 1 or type(orelse[0]) is not _ast_mod.If:
            return False
        # `elif` lines up with its `if`; an `if` in an `else:` block is indented deeper
        return cast(bool, orelse[0].col_offset == node.col_offset)

    def _suite(self, stmts) -> bool:
        """Statements written on the line of their header (``if x: y = 1``), not an indented block."""
        st = stmts[0]
        s = self.s
        start = s._line_starts()[st.lineno - 1]
        return s.text[start:s._offset(st.lineno, st.col_offset)].strip() != ""

    def v_If(self, node) -> bool:
        ast = _ast_mod
        if id(node) not in self.elifs:
            self._rank_branch_partition(node)
        elif_ = self._is_elif(node)
        if elif_:
            self.elifs.add(id(node.orelse[0]))
        self.walk(node.test)
        t = node.test
        is_main = type(t) is ast.Compare and type(t.left) is ast.Name and t.left.id == "__name__"
        rank, zero = self.s.classify_test(t, self.frame)
        single = None if rank or is_main else self.s.single_test(t, self.frame)
        g_true = Guard(self.s, t, rank, zero, id(node), True, main=is_main, single=single is True)
        g_false = Guard(self.s, t, rank, (None if zero is None else not zero), id(node), False, main=is_main,
                        single=single is False)
        self.guards.append(g_true)
        self.block(node.body)
        self.guards.pop()
        pending = [g_true, g_false]
        if node.orelse:
            self.guards.append(g_false)
            if elif_:
                self.walk(node.orelse[0])
            else:
                self.block(node.orelse)
            self.guards.pop()
        elif _exits(node.body) and (rank or not is_main):
            # `if rank != 0: return` -> the rest of the block runs on the other ranks only
            early = Guard(self.s, t, rank, g_false.zero, id(node), False, early=True, single=g_false.single)
            pending.append(early)
            self.guards.append(early)
            self.block_early[-1] += 1
        if not rank:  # may read a flag bound later in the file (`args.save_logs = is_master(args)`)
            self.s._pending_guards.append((pending, t, self.frame))
        return False

    def v_IfExp(self, node) -> bool:
        self.walk(node.body)
        self.walk(node.test)
        self.walk(node.orelse)
        return False

    def _loop(self, node, target, iter_node) -> Loop:
        names = _names_in(iter_node) if iter_node is not None else frozenset()
        tnames = _names_in(target) if target is not None else frozenset()
        epoch = any(_EPOCH.search(n) for n in names | tnames)
        return Loop(self.s, node, names, epoch)

    def v_For(self, node) -> bool:
        self.walk(node.iter)
        self._bind_target(node.target, MULTI)
        self._loop_blocks(node, node.target, node.iter)
        return False

    def v_While(self, node) -> bool:
        self.walk(node.test)
        self._loop_blocks(node, None, node.test)
        return False

    def _loop_blocks(self, node, target, head) -> None:
        """A loop's body under its Loop, then its else block (outside it)."""
        loop = self._loop(node, target, head)
        self.s.loops.append((loop, tuple(self.loops), self.frame))
        self.loops.append(loop)
        self.block(node.body)
        self.loops.pop()
        if node.orelse:
            self.block(node.orelse)

    def v_comprehension(self, node) -> bool:
        self._bind_target(node.target, MULTI)
        return True

    def v_Dict(self, node) -> bool:
        for k, v in zip(node.keys, node.values):
            if k is not None:
                self.walk(k)
            self.walk(v)
        return False

    # -------------------------------------------------- calls
    def v_Call(self, node) -> bool:
        ast = _ast_mod
        s = self.s
        func = node.func
        qn = s.qnames(func)
        groups = {_BY_QNAME[q] for q in qn if q in _BY_QNAME}
        if qn and any(q.endswith(_MP_SUFFIXES) for q in qn):
            groups.add("initialize_model_parallel")
        attr = type(func) is ast.Attribute
        method = func.attr if attr else None
        receiver = func.value if attr else None
        call = Call(node, s, qn, frozenset(groups), method, receiver,
                    tuple(self.guards), tuple(self.loops), self.frame, self.targets.get(id(node)))
        call.index = len(s.calls)
        s.calls.append(call)
        # call sites of the script's own functions
        callee = None
        if type(func) is ast.Name and not groups:
            callee = func.id
        elif attr and type(func.value) is ast.Name and func.value.id in ("self", "cls"):
            callee = method
        elif method is not None and not groups:
            callee = method
        if callee is not None:
            s.callsites.setdefault(callee, []).append((call, tuple(self.guards), self.frame))
        args = call_args(node)
        for i, a in enumerate(args):
            if type(a.value) is ast.Name:
                if i == 0 and "spawn" in groups:
                    s.callsites.setdefault(a.value.id, []).append((call, tuple(self.guards), self.frame))
                else:
                    s.refs.add(a.value.id)
            elif type(a.value) is ast.Constant and (a.value.value is None or a.value.value is True
                                                    or a.value.value is False):
                s.refs.add(str(a.value.value))  # names to LibCST (nothing defines a function so named)
        if method == "add_argument":
            self._argparse(call)
        elif method == "set_defaults":
            for k in node.keywords:
                if k.arg is None:
                    self.s.argparse_open = "set_defaults(**...)"
                else:
                    self.s.argparse_set_defaults.setdefault(k.arg, []).append((k.value, self.frame))
        elif method == "parse_known_args":
            self.s.argparse_open = "parse_known_args()"
        elif method in ("add_subparsers", "add_parser") and not self.s.argparse_open:
            self.s.argparse_open = f"{method}()"
        elif method == "ArgumentParser" or (type(func) is _ast_mod.Name and func.id == "ArgumentParser"):
            for k in node.keywords:
                if k.arg == "parents":
                    self.s.argparse_open = "parents=[...]"
                elif k.arg == "allow_abbrev":
                    self.s.argparse_abbrev = False if (type(k.value) is _ast_mod.Constant and k.value.value is False) else None
                elif k.arg is None:
                    self.s.argparse_open = "ArgumentParser(**...)"
        self.walk(func)
        for a in args:
            self.walk(a.value)
        return False

    def _argparse(self, call: Call) -> None:
        s = self.s
        flags = [string_literal(a.value) for a in call.args if a.keyword is None and not a.star]
        if any(f is None for f in flags) or any(a.star for a in call.args) or not flags:
            s.argparse_open = "computed add_argument() names"
        flags = [f for f in flags if f]
        dest = None
        dn = call.arg_node("dest")
        if dn is not None:
            dest = string_literal(dn)
        long = [f for f in flags if f.startswith("--")]
        if dest is None:
            if long:
                dest = long[0][2:].replace("-", "_")
            elif flags and not flags[0].startswith("-"):
                dest = flags[0]
            elif flags:
                dest = flags[0].lstrip("-").replace("-", "_")
        if not dest:
            return
        action = string_literal(call.arg_node("action")) if call.arg_node("action") is not None else None
        tnode = call.arg_node("type")
        typ = tnode.id if type(tnode) is _ast_mod.Name else None
        if call.arg_node("required") is not None or call.has_star() or (action not in (None, "store", "store_true", "store_false")):
            entry = MULTI
        else:
            entry = ((long or flags or [dest])[0], call.arg_node("default"), self.frame, action, typ)
        nargs = call.arg_node("nargs")
        const = call.arg_node("const")
        for fl in flags:
            s.argparse_options[fl] = (dest, action, typ, nargs is not None or const is not None, tnode is not None and typ is None)
        if call.has_star():
            s.argparse_open = "add_argument(**...)"
        if dest in s.argparse:
            s.argparse[dest] = MULTI
        else:
            s.argparse[dest] = entry

    def v_Subscript(self, node) -> bool:
        ast = _ast_mod
        sl = node.slice
        if type(node.value) is ast.Name and type(sl) is not ast.Slice and type(sl) is not ast.Tuple:
            idx = sl
            if self.s.rankish(idx) or self.s.rank_kind(idx, self.frame):
                self.s.rank_subscripts.append((node.value.id, node))
                self.s._rank_index.append((node.value.id, idx, self.frame))
            else:
                base = idx.left if type(idx) is ast.BinOp else idx
                if type(base) in (ast.Name, ast.Attribute) and _PP_RANK_NAME.match(_tail(base) or ""):
                    self.s._rank_index.append((node.value.id, idx, self.frame))
        return True

    def v_JoinedStr(self, node) -> bool:
        parts = node.values
        if len(parts) >= 2 and type(parts[0]) is _ast_mod.Constant and isinstance(parts[0].value, str) \
                and parts[0].value.endswith("cuda:") and type(parts[1]) is _ast_mod.FormattedValue:
            self.s.fstrings.append((parts[1].value, node, self.frame, tuple(self.guards)))
        return True

    # -------------------------------------------------- partitions
    def v_List(self, node) -> bool:
        self._partition(node)
        return True

    def _slice_of(self, el):
        """(base text, lower node, upper node, span) for `base[a:b]` or `Sequential(*base[a:b])`."""
        ast = _ast_mod
        if type(el) is ast.Call:
            args = call_args(el)
            if len(args) == 1 and args[0].star == "*":
                el = args[0].value
            elif len(args) == 1 and not args[0].star and _tail(el.func) in ("ModuleList", "Sequential", "list"):
                el = args[0].value
        if type(el) is not ast.Subscript:
            return None
        sl = el.slice
        if type(sl) is not ast.Slice or sl.step is not None:
            return None
        return _dotted(el.value) or self.s.code(el.value), sl.lower, sl.upper, el

    def _partition(self, node) -> None:
        if len(node.elts) < 2:
            return
        parts = []
        for el in node.elts:
            if type(el) is _ast_mod.Starred:
                return
            p = self._slice_of(el)
            if p is None:
                return
            parts.append(p)
        bases = {p[0] for p in parts}
        if len(bases) != 1:
            return
        self._add_partition(parts, node)

    def _add_partition(self, parts, node) -> None:
        s = self.s
        slices = []
        for _base, lo, hi, el in parts:
            a = s.value(lo, self.frame, with_span=False) if lo is not None else Value(None)
            b = s.value(hi, self.frame, with_span=False) if hi is not None else Value(None)
            if not a.known or not b.known:
                return
            if any(v is not None and (isinstance(v, bool) or not isinstance(v, int)) for v in (a.value, b.value)):
                return
            slices.append(Slice(a.value, b.value, el, s))
        s.partitions.append(Partition(parts[0][0], slices, node, s, frame=self.frame))

    def _rank_branch_partition(self, head) -> None:
        """if rank == 0: stage = layers[:4] / elif rank == 1: stage = layers[4:8] ..."""
        ast = _ast_mod
        branches = []  # (k, target, (base, lo, hi, el))
        node, rank_text, open_ended = head, None, False
        while node is not None:
            t = node.test
            if not (type(t) is ast.Compare and len(t.ops) == 1 and type(t.ops[0]) is ast.Eq):
                return
            left, right = t.left, t.comparators[0]
            if is_int(left):
                left, right = right, left
            if not is_int(right) or not self.s.rankish(left, self.frame):
                return
            text = _dotted(left) or self.s.code(left)
            if rank_text not in (None, text):
                return
            rank_text = text
            got = self._branch_slice(node.body)
            if got is None:
                return
            branches.append((int(right.value), got))
            if self._is_elif(node):
                node = node.orelse[0]
                continue
            if node.orelse:
                got = self._branch_slice(node.orelse)
                if got is None:
                    return
                branches.append((max(k for k, _ in branches) + 1, got))
                open_ended = True
            break
        if len(branches) < 2:
            return
        branches.sort(key=lambda b: b[0])
        if [k for k, _ in branches] != list(range(len(branches))):
            return
        targets = {g[0] for _, g in branches}
        bases = {g[1][0] for _, g in branches}
        if len(targets) != 1 or len(bases) != 1:
            return
        before = len(self.s.partitions)
        self._add_partition([g[1] for _, g in branches], head.test)
        if len(self.s.partitions) > before:
            p = self.s.partitions[-1]
            p.selector, p.open_ended = "rank", open_ended

    def _branch_slice(self, body):
        """(target, slice parts) for a branch body holding one `t = <slice of base>` assignment
        (an indented block: a branch written on its header's line is not read)."""
        if not body or self._suite(body):
            return None
        found = None
        for stmt in body:
            if type(stmt) is _ast_mod.Assign and len(stmt.targets) == 1:
                part = self._slice_of(stmt.value)
                if part is not None:
                    if found is not None:
                        return None
                    found = (_dotted(stmt.targets[0]) or "", part)
        return found

    # -------------------------------------------------- module lists (layer counts)
    def _module_list(self, node) -> None:
        ast = _ast_mod
        v = node.value
        if not (type(v) is ast.Call and _tail(v.func) in ("ModuleList", "Sequential")):
            return
        args = call_args(v)
        if len(args) != 1:
            return
        inner = args[0].value
        if type(inner) is ast.ListComp and len(inner.generators) == 1 and not inner.generators[0].ifs:
            it = inner.generators[0].iter
            if type(it) is ast.Call and _tail(it.func) == "range" and len(it.args) + len(it.keywords) == 1:
                n = self.s.value(call_args(it)[0].value, self.frame, with_span=False)
                for t in node.targets:
                    key = _tail(t)
                    if key:
                        self.s.layer_lists.setdefault(key, []).append(n)


import ast as _ast_mod  # noqa: E402 - the reader parses every file with it anyway

from parallint.model.pyeval import string_literal  # noqa: E402
from parallint.model.script import call_args, is_int  # noqa: E402

_AST = _ast_mod.AST
_HANDLERS: dict[type, Any] = {
    _ast_mod.Assign: _Collector.v_Assign, _ast_mod.AnnAssign: _Collector.v_AnnAssign,
    _ast_mod.AugAssign: _Collector.v_AugAssign, _ast_mod.NamedExpr: _Collector.v_NamedExpr,
    _ast_mod.Import: _Collector.v_Import, _ast_mod.ImportFrom: _Collector.v_ImportFrom,
    _ast_mod.Global: _Collector.v_Global, _ast_mod.Nonlocal: _Collector.v_Global,
    _ast_mod.ExceptHandler: _Collector.v_ExceptHandler, _ast_mod.withitem: _Collector.v_withitem,
    _ast_mod.FunctionDef: _Collector.v_FunctionDef, _ast_mod.AsyncFunctionDef: _Collector.v_FunctionDef,
    _ast_mod.ClassDef: _Collector.v_ClassDef, _ast_mod.Return: _Collector.v_Return,
    _ast_mod.Lambda: _Collector.v_Lambda, _ast_mod.If: _Collector.v_If, _ast_mod.IfExp: _Collector.v_IfExp,
    _ast_mod.For: _Collector.v_For, _ast_mod.AsyncFor: _Collector.v_For, _ast_mod.While: _Collector.v_While,
    _ast_mod.comprehension: _Collector.v_comprehension, _ast_mod.Dict: _Collector.v_Dict,
    _ast_mod.Call: _Collector.v_Call, _ast_mod.Subscript: _Collector.v_Subscript,
    _ast_mod.JoinedStr: _Collector.v_JoinedStr, _ast_mod.List: _Collector.v_List,
    _ast_mod.Tuple: _Collector.v_List,
}


def _exits(body) -> bool:
    return bool(body) and type(body[-1]) in (_ast_mod.Return, _ast_mod.Continue)


def _names_in(node) -> frozenset[str]:
    """The names an expression reads, as LibCST's ``Name`` nodes counted them: names, attribute
    names, keyword names, lambda parameters and True/False/None."""
    ast = _ast_mod
    out = set()
    for n in ast.walk(node):
        t = type(n)
        if t is ast.Name:
            out.add(n.id)
        elif t is ast.Attribute:
            out.add(n.attr)
        elif t is ast.keyword:
            if n.arg is not None:
                out.add(n.arg)
        elif t is ast.arg:
            out.add(n.arg)
        elif t is ast.Constant and (n.value is None or n.value is True or n.value is False):
            out.add(str(n.value))
    return frozenset(out)


# ---------------------------------------------------------------------------------------------
def _post(script: Script) -> None:
    """Things that need the whole file: guards on flags bound further down, layer counts and
    selectors of partitions, meshes."""
    for guards, test, frame in script._pending_guards:
        try:
            rank, zero = script.classify_test(test, frame)
        except RecursionError:  # pragma: no cover
            continue
        if rank:
            for g in guards:
                g.rank = True
                g.zero = zero if g.branch else (None if zero is None else not zero)
                g.single = False
            continue
        if guards and guards[0].main:
            continue
        try:
            single = script.single_test(test, frame)
        except RecursionError:  # pragma: no cover
            continue
        if single is not None:  # a flag bound further down (`ddp = ... != -1` after the function)
            for g in guards:
                g.single = g.branch is single
    script._pending_guards = []
    for p in script.partitions:
        key = p.base.rsplit(".", 1)[-1]
        ns = script.layer_lists.get(key, [])
        known = {known_int(n) for n in ns}
        if len(ns) >= 1 and len(known) == 1 and None not in known:
            p.total = known.pop()
            p.total_source = f"{key} built with range({p.total})"
    # partitions selected by rank: `stages = [...]` then `stages[rank]`, or `[...][rank]`
    rank_subs = {}
    for name, sp in script.rank_subscripts:
        rank_subs.setdefault(name, sp)
    for p in script.partitions:
        node = p.node
        # find the assignment target bound to this list
        for name, bs in _all_bindings(script):
            if any(b is node for b in bs) and name in rank_subs:
                p.selector = "rank"
                p.selector_span = script.span_of(rank_subs[name])
    _rank_lists(script)
    for c in script.by("init_device_mesh"):
        shape_node = c.arg_node("mesh_shape", 1)
        names_node = c.arg_node("mesh_dim_names", 2)
        shape = None
        if shape_node is not None:
            v = script.value(shape_node, c.frame)
            if v.known and isinstance(v.value, (tuple, list)) and v.value and all(
                isinstance(x, int) and not isinstance(x, bool) for x in v.value
            ):
                shape = tuple(v.value)
        names = None
        if names_node is not None:
            v = script.value(names_node, c.frame)
            if v.known and isinstance(v.value, (tuple, list)) and all(isinstance(x, str) for x in v.value):
                names = tuple(v.value)
        script.meshes.append(Mesh(c.span, shape, names, c))
    for c in script.by("device_mesh"):
        mnode = c.arg_node("mesh", 1)
        shape = None
        if mnode is not None and isinstance(mnode, (_ast_mod.List, _ast_mod.Tuple)):
            v = script.value(mnode, c.frame)
            if v.known:
                shape = _nested_shape(v.value)
        script.meshes.append(Mesh(c.span, shape, None, c))


_PARTITION_NAME = re.compile(r"layer|stage|split|partition|part(?:s)?$|boundar|bound|chunk|block|shard", re.I)
_PP_RANK_NAME = re.compile(r"^(?:pp|pipe|pipeline|stage)_?(?:rank|id|idx|index)$|^stage$", re.I)


def _rank_of_index(script: Script, idx, frame) -> tuple[str | None, bool]:
    """("global" | "pipeline" | None, plus_one) for the index of ``x[idx]``."""
    ast = _ast_mod
    plus = False
    if type(idx) is ast.BinOp and type(idx.op) is ast.Add:
        a, b = idx.left, idx.right
        if is_int(a):
            a, b = b, a
        if not (is_int(b) and script.source(b) == "1"):
            return None, False
        idx, plus = a, True
    if isinstance(idx, (ast.Name, ast.Attribute)) and _PP_RANK_NAME.match(_tail(idx) or ""):
        return "pipeline", plus
    if script.rank_kind(idx, frame) == "global":
        return "global", plus
    return None, plus


def _rank_lists(script: Script) -> None:
    ast = _ast_mod
    seen: dict[int, RankList] = {}
    unclear: set[int] = set()
    for name, idx, frame in script._rank_index:
        if not _PARTITION_NAME.search(name):
            continue
        b = script.binding(name, frame)
        if b is None or not isinstance(b[0], (ast.List, ast.Tuple)):
            continue
        node = b[0]
        if len(node.elts) < 2 or any(type(e) is ast.Starred for e in node.elts):
            continue
        if any(id(p.node) == id(node) for p in script.partitions):
            continue  # a partition of module slices: PIP001/PIP002 read it already
        kind, plus = _rank_of_index(script, idx, frame)
        if kind is None or id(node) in unclear:
            continue
        rl = seen.get(id(node))
        if rl is None:
            rl = RankList(name, len(node.elts), node, script, b[1], kind, plus)
            seen[id(node)] = rl
            script.rank_lists.append(rl)
        elif rl.rank != kind:  # indexed by different ranks: unclear
            script.rank_lists.remove(rl)
            unclear.add(id(node))
        else:
            rl.boundaries = rl.boundaries or plus
    script._rank_index = []


def _all_bindings(script: Script):
    seen = set()
    frames = [script.module_frame] + [f for fs in script.functions.values() for f in fs]
    for fr in frames:
        if id(fr) in seen:
            continue
        seen.add(id(fr))
        yield from fr.bindings.items()


def _nested_shape(v) -> tuple[int, ...] | None:
    if isinstance(v, (list, tuple)):
        if not v:
            return None
        subs = [_nested_shape(x) for x in v]
        if all(s == () for s in subs):
            return (len(v),) if all(isinstance(x, int) and not isinstance(x, bool) for x in v) else None
        if None in subs or len(set(subs)) != 1:
            return None
        return (len(v),) + subs[0]
    return ()


# ---------------------------------------------------------------------------------------------
def _fact(f: FileFacts, key: str, v: Value, source: str, conv=None) -> None:
    if v.known and conv is not None:
        v = v.map(conv)
    from parallint.model.facts import Origin  # the call the value is an argument of: rules match on it

    f.facts.add(key, Value(v.value, v.span, v.known, v.why, source if not v.source else f"{source} ({v.source})",
                           Origin(v.origin.how, source.split("(", 1)[0])))


def _init_inference(s: Script, f: FileFacts, c) -> None:
    """``deepspeed.init_inference(model, tensor_parallel={"tp_size": N} or mp_size=N,
    replace_with_kernel_inject=True)``: DeepSpeed's injected kernels split the attention heads
    evenly over the N ranks and assert it. The TP degree, and the heads of the model when it is a
    hub id of parallint's table loaded in this file (``from_pretrained("id")``,
    ``pipeline(model="id")``). AutoTP (no kernel injection) splits uneven heads: nothing stated."""
    inject = s.arg(c, "replace_with_kernel_inject")
    if inject is None or not inject.known or inject.value is not True:
        return
    tp = None
    tpd = s.arg(c, "tensor_parallel", with_span=True)
    if tpd is not None:
        if not tpd.known or not isinstance(tpd.value, dict):
            return
        if "tp_size" in tpd.value:
            tp = Value(tpd.value["tp_size"], tpd.span, True, "", "")
    mp = s.arg(c, "mp_size", with_span=True)
    if mp is not None:
        if tp is not None or not mp.known:
            return  # both given, or not known: not what parallint can say
        tp = mp
    if tp is None:
        return
    _fact(f, "parallel.tp", tp, "init_inference(tensor_parallel tp_size)" if mp is None
          else "init_inference(mp_size=...)", _int)
    hub = _loaded_hub_id(s, c)
    if hub is None:
        return
    from parallint.estimator.spec import hub_models

    shape = hub_models().get(str(hub.value).lower())
    heads = shape.get("heads") if isinstance(shape, dict) else None
    if isinstance(heads, int) and not isinstance(heads, bool) and hub.span is not None:
        f.facts.add("model.heads", Value(heads, hub.span, True, "", f"attention heads of {hub.value}"))


def _loaded_hub_id(s: Script, c) -> "Value | None":
    """The literal hub id the model given to ``c`` was loaded from, in this file: ``m =
    X.from_pretrained("id")`` passed as ``m``, or ``pipe = pipeline(..., model="id")`` passed as
    ``pipe.model``. None when the code does not show one."""
    import ast

    node = c.node.args[0] if c.node.args else next((k.value for k in c.node.keywords if k.arg == "model"), None)
    want_pipeline = False
    if type(node) is ast.Attribute and node.attr == "model":
        node, want_pipeline = node.value, True
    if type(node) is not ast.Name:
        return None
    b = s.binding(node.id, c.frame)
    made = next((x for x in s.calls if x.node is b[0]), None) if b is not None and type(b[0]) is ast.Call else None
    if made is None:
        return None if want_pipeline else _one_loaded_id(s)
    if want_pipeline:
        if "transformers.pipeline" not in made.qnames:
            return None
        v = s.arg(made, "model", with_span=True)
    else:
        if made.method != "from_pretrained":
            return None
        v = s.arg(made, "pretrained_model_name_or_path", 0, with_span=True)
    if v is None or not v.known or not isinstance(v.value, str):
        return None
    return v


def _one_loaded_id(s: Script) -> "Value | None":
    """The one literal hub id every ``from_pretrained`` of the file loads (``model = ...;
    model = deepspeed.init_inference(model, ...)`` rebinds the name, so its binding is not one)."""
    ids = []
    for x in s.methods("from_pretrained"):
        v = s.arg(x, "pretrained_model_name_or_path", 0, with_span=True)
        if v is None or not v.known or not isinstance(v.value, str):
            return None
        ids.append(v)
    if not ids or len({v.value for v in ids}) != 1:
        return None
    return ids[0]


def _int(x):
    if isinstance(x, bool) or not isinstance(x, int):
        raise ValueError(x)
    return x


def _facts(s: Script, f: FileFacts) -> None:
    for c in s.by("init_process_group"):
        ws = s.arg(c, "world_size", with_span=True)
        if ws is not None:
            _fact(f, "parallel.world_size", ws, "init_process_group(world_size=...)", _int)
    for m in s.meshes:
        if m.shape is not None and m.names is not None and len(m.names) == len(m.shape):
            for n, d in zip(m.names, m.shape):
                key = {"dp": "parallel.dp", "tp": "parallel.tp", "pp": "parallel.pp", "cp": "parallel.cp",
                       "ep": "parallel.ep", "dp_replicate": "parallel.dp_replicate",
                       "dp_shard": "parallel.dp_shard"}.get(n)
                if key:
                    f.facts.add(key, Value(d, m.span, True, "", f"init_device_mesh(mesh_dim_names={n!r})"))
    for c in s.by("initialize_model_parallel"):
        for kw, pos, key in (("tensor_model_parallel_size", 0, "parallel.tp"),
                             ("pipeline_model_parallel_size", 1, "parallel.pp"),
                             ("virtual_pipeline_model_parallel_size", 2, "parallel.vpp"),
                             ("context_parallel_size", None, "parallel.cp"),
                             ("expert_model_parallel_size", None, "parallel.ep")):
            v = s.arg(c, kw, pos, with_span=True)
            if v is not None:
                _fact(f, key, v, f"initialize_model_parallel({kw}=...)", _int)
        # Megatron-core's parallel state: its own world-size assertion (TP x PP x CP divides the
        # world) is the Megatron one the layout rules know
        f.facts.add("framework", Value("megatron", c.span, True, "", "initialize_model_parallel()"))
    for c in s.by("colossal_hybrid"):
        # ColossalAI asserts that TP x PP divides the world size when the plugin is built
        for kw, key in (("tp_size", "parallel.tp"), ("pp_size", "parallel.pp")):
            v = s.arg(c, kw, with_span=True)
            if v is not None:
                _fact(f, key, v, f"HybridParallelPlugin({kw}=...)", _int)
        z = s.arg(c, "zero_stage", with_span=True)
        if z is not None:
            _fact(f, "parallel.zero_stage", z, "HybridParallelPlugin(zero_stage=...)", _int)
        f.facts.add("framework", Value("colossalai", c.span, True, "", "HybridParallelPlugin()"))
    for c in s.by("ds_init_inference"):
        _init_inference(s, f, c)
    for c in s.by("ds_pipeline_module"):  # DeepSpeed's pipeline engine: PipelineModule(num_stages=N)
        v = s.arg(c, "num_stages", with_span=True)
        if v is not None:
            _fact(f, "parallel.pp", v, "PipelineModule(num_stages=...)", _int)
    for c in s.by("pl_trainer"):
        nn = s.arg(c, "num_nodes", with_span=True)
        if nn is not None:
            _fact(f, "parallel.nodes", nn, "Trainer(num_nodes=...)", _int)
        dv = s.arg(c, "devices", with_span=True)
        if dv is not None:
            def conv(x):
                if isinstance(x, (list, tuple)):
                    return len(x)
                x = _int(x)
                if x < 1:
                    raise ValueError(x)
                return x
            _fact(f, "parallel.procs_per_node", dv, "Trainer(devices=...)", conv)
        st = s.arg(c, "strategy", with_span=True)
        if st is not None and st.known and isinstance(st.value, str) and st.value.startswith("ddp_find_unused_parameters_"):
            f.facts.add("ddp.find_unused_parameters",
                        Value(st.value.endswith("_true"), st.span, True, "", f"Trainer(strategy={st.value!r})"))
    for c in s.by("accelerator"):
        v = s.arg(c, "gradient_accumulation_steps", with_span=True)
        if v is not None:
            _fact(f, "training.grad_accum", v, "Accelerator(gradient_accumulation_steps=...)", _int)
        v = s.arg(c, "mixed_precision", with_span=True)
        if v is not None and v.known and v.value in ("bf16", "fp16"):
            f.facts.add("training.precision", Value(v.value, v.span, True, "", "Accelerator(mixed_precision=...)"))
    for c in s.by("training_args"):
        for kw, key in (("per_device_train_batch_size", "training.micro_batch"),
                        ("gradient_accumulation_steps", "training.grad_accum")):
            v = s.arg(c, kw, with_span=True)
            if v is not None:
                _fact(f, key, v, f"TrainingArguments({kw}=...)", _int)
        for kw in ("bf16", "fp16"):
            v = s.arg(c, kw, with_span=True)
            if v is not None and v.known and v.value is True:
                f.facts.add("training.precision", Value(kw, v.span, True, "", f"TrainingArguments({kw}=True)"))
        v = s.arg(c, "ddp_find_unused_parameters", with_span=True)
        if v is not None:
            _fact(f, "ddp.find_unused_parameters", v, "TrainingArguments(ddp_find_unused_parameters=...)")
        ds = s.arg(c, "deepspeed", with_span=True)
        if ds is not None and ds.known and isinstance(ds.value, str) and ds.value:
            f.links.append(Value(ds.value, ds.span, True, "", "TrainingArguments(deepspeed=...)"))
    for c in s.by("ddp"):
        v = s.arg(c, "find_unused_parameters", with_span=True)
        if v is not None:
            _fact(f, "ddp.find_unused_parameters", v, "DistributedDataParallel(find_unused_parameters=...)")
    for c in s.by("ddp_kwargs"):
        v = s.arg(c, "find_unused_parameters", with_span=True)
        if v is not None:
            _fact(f, "ddp.find_unused_parameters", v, "DistributedDataParallelKwargs(find_unused_parameters=...)")
    for c in s.by("ddp_strategy"):
        v = s.arg(c, "find_unused_parameters", with_span=True)
        if v is not None:
            _fact(f, "ddp.find_unused_parameters", v, "DDPStrategy(find_unused_parameters=...)")
    for c in s.by("lightning_deepspeed"):
        v = s.arg(c, "config", with_span=True)
        if v is None or not v.known:
            continue
        if isinstance(v.value, str) and v.value:
            f.links.append(Value(v.value, v.span, True, "", "DeepSpeedStrategy(config=...)"))
            f.facts.add("training.lightning_deepspeed_config", Value(v.value, v.span, True, "", "DeepSpeedStrategy(config=...)"))
        elif isinstance(v.value, dict):
            f.facts.add("training.lightning_deepspeed_config_accum",
                        Value("gradient_accumulation_steps" in v.value, v.span, True, "",
                              "DeepSpeedStrategy(config={...})"))
    for c in s.by("ds_initialize"):
        for kw in ("config", "config_params"):
            v = s.arg(c, kw, with_span=True)
            if v is not None and v.known and isinstance(v.value, str) and v.value:
                f.links.append(Value(v.value, v.span, True, "", f"deepspeed.initialize({kw}=...)"))
    if s.has("fsdp", "fully_shard"):
        f.facts.add("parallel.fsdp", Value(True, s.by("fsdp", "fully_shard")[0].span, True, "", "FSDP wrapping"))
