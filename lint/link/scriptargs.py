"""The launch line's script arguments bound to the script's ``argparse`` parser, and the environment
the launch gives the script.

``torchrun ... train.py --tp 4 --pp 4`` sets ``args.tp`` and ``args.pp`` whatever the defaults of
``--tp``/``--pp`` say. :func:`bind` reads the words after the entry point the way ``argparse`` does
(``--flag value``, ``--flag=value``, ``store_true``/``store_false``, a unique prefix where
``allow_abbrev`` leaves it on, ``type=int``/``float``) into ``{dest: Value}``, the Value pointing at
the launch line's word. :func:`rebind` recomputes the script's facts for one job with those values:
the value on the launch line always wins over the default; a word parallint cannot read (``$ARGS``)
after a flag makes that flag's value unknown; a value the script reassigns after parsing stays
unknown (see :mod:`parallint.model.pyeval`). A script checked on its own keeps its defaults.
:func:`launch_env` gives ``os.environ["WORLD_SIZE"]`` (and ``os.getenv``) the world of a torchrun
or deepspeed launch when it is known, and a known ``export`` its value; the read's own default
is never used.
"""

from __future__ import annotations

from parallint.model.facts import FactMap, FileFacts, Value
from parallint.model.origin import Origin

TYPE_CHECKING = False
if TYPE_CHECKING:
    from parallint.model.job import Job
    from parallint.model.launch import Launch
    from parallint.model.script import Script

#: the key of :func:`bind`'s result for every option the launch line may give through a word
#: parallint cannot read (:func:`parallint.readers.pycli.unknown_word` writes it)
ANY = "*"
_TRUE = {"true", "1", "yes"}
_FALSE = {"false", "0", "no"}


def _convert(word: str, typ: object) -> object:
    if typ == "int":
        return int(word)
    if typ == "float":
        return float(word)
    return word


def bind(script: "Script", words: list[Value]) -> dict[str, Value]:
    """``{dest: Value}`` for every option of the script's parser the launch line gives."""
    out: dict[str, Value] = {}
    i, n = 0, len(words)
    while i < n:
        w = words[i]
        text = w.value if w.known and isinstance(w.value, str) else None
        if text is None:
            from parallint.readers.pycli import unknown_word

            unknown_word(out, w)
            i += 1
            continue
        if text == "--":
            break
        if not text.startswith("-") or text == "-" or (text[1:2].isdigit()):
            i += 1  # a positional argument
            continue
        flag, eq, rest = text.partition("=") if text.startswith("--") else (text, "", "")
        opt, uncertain = script.option(flag)
        if opt is None:
            if uncertain:
                break  # a prefix parallint cannot settle: stop reading
            i += 1  # not an option of this parser (CFG009's business); its value may follow
            continue
        dest, action, typ, varargs, opaque = script.argparse_options[opt]
        source = f"{opt} on the launch line"
        span = w.span
        if action in ("store_true", "store_false"):
            if eq:
                break  # argparse rejects a value here
            out[dest] = Value(action == "store_true", span, True, "", source, Origin(via="launcher"))
            i += 1
            continue
        if action not in (None, "store") or varargs:
            out[dest] = Value.unknown(f"{opt} ({action or 'nargs'}) on the launch line", span, source)
            break  # how many words it takes is not followed
        if eq:
            word: Value | None = Value(rest, span, True, "", source)
            i += 1
        else:
            word = words[i + 1] if i + 1 < n else None
            i += 2
        if word is None:
            break
        if not word.known or not isinstance(word.value, str):
            out[dest] = Value.unknown(word.why or f"{opt} value", word.span, source)
            continue
        if opaque:
            out[dest] = Value.unknown(f"{opt} has a type parallint does not apply", word.span, source)
            continue
        try:
            val = _convert(word.value, typ)
        except ValueError:
            out[dest] = Value.unknown(f"{opt} {word.value!r} does not convert", word.span, source)
            continue
        out[dest] = Value(val, word.span, True, "", source, Origin(via="launcher"))
    return out


#: launchers that give every process it starts ``WORLD_SIZE`` (the processes of the launch), and
#: those that also give ``LOCAL_WORLD_SIZE`` (the processes on its node)
SETS_WORLD_SIZE = frozenset({"torchrun", "torch.distributed.run", "torch.distributed.launch", "deepspeed"})
SETS_LOCAL_WORLD_SIZE = frozenset({"torchrun", "torch.distributed.run"})


def _reads_env(text: str) -> bool:
    return "environ" in text or "getenv" in text


def launch_env(launch: "Launch") -> dict[str, Value]:
    """The environment variables the launch provably gives its script: the known values in force
    at the command (exports, ``VAR=x cmd``, a wrapper's), and the launcher's own ``WORLD_SIZE``
    (``LOCAL_WORLD_SIZE``) when the number of processes it starts is known; the launcher's win
    over an export of the same name. A value parallint cannot read is left out (unknown)."""
    from parallint.model.facts import known_int
    from parallint.model.launches import procs_per_node
    from parallint.model.world import launch_world_size

    out: dict[str, Value] = {}
    w: "Launch | None" = launch
    while w is not None:
        for k, v in (w.env or {}).items():
            if k not in out and v.known and isinstance(v.value, (str, int)) and not isinstance(v.value, bool):
                out[k] = v
        w = w.wrapper
    if launch.launcher in SETS_WORLD_SIZE:
        ws = launch_world_size(launch)
        if ws is not None and known_int(ws) is not None:
            out["WORLD_SIZE"] = Value(str(known_int(ws)), ws.span, True, "", f"WORLD_SIZE set by {launch.launcher} "
                                      f"({ws.source})", ws.origin)
        else:
            out.pop("WORLD_SIZE", None)
    if launch.launcher in SETS_LOCAL_WORLD_SIZE:
        ppn = procs_per_node(launch)
        if ppn is not None and ppn.known and known_int(ppn) is not None:
            out["LOCAL_WORLD_SIZE"] = Value(str(known_int(ppn)), ppn.span, True, "",
                                            f"LOCAL_WORLD_SIZE set by {launch.launcher} ({ppn.source})", ppn.origin)
        else:
            out.pop("LOCAL_WORLD_SIZE", None)
    for name in ("RANK", "LOCAL_RANK", "GROUP_RANK", "NODE_RANK"):
        out.pop(name, None)  # differs between the processes: never one value
    return out


def rebind(job: "Job", launch: "Launch", script_file: FileFacts | None) -> None:
    """The job's copy of the script's facts computed with the launch line's arguments."""
    from parallint.model.script import Script

    if script_file is None:
        return
    script = script_file.data
    if not isinstance(script, Script):
        return
    bound: dict[str, Value] = {}
    if not launch.args:
        pass
    elif script.argparse:
        bound = bind(script, launch.args)
    elif script.cli_entry is not None:  # click, fire, Hydra
        from parallint.readers import pycli

        bound = pycli.bind(script.cli_entry, launch.args)
    text = script_file.text or ""
    env = {k: v for k, v in launch_env(launch).items() if k in text} if _reads_env(text) else {}
    if not bound and not env:
        return
    from parallint.readers import python

    before = FileFacts(path=script_file.path, abspath=script_file.abspath, kind="python", text=script_file.text)
    after = FileFacts(path=script_file.path, abspath=script_file.abspath, kind="python", text=script_file.text)
    try:
        python._facts(script, before)
        script.cli_overrides = bound or None
        script.env_overrides = env or None
        try:
            python._facts(script, after)
        finally:
            script.cli_overrides = None
            script.env_overrides = None
    except RecursionError:  # pragma: no cover - pathological nesting
        return
    keys = set(before.facts.keys()) | set(after.facts.keys())
    facts = FactMap()
    for k, vs in script_file.facts.items():
        if k not in keys:
            for v in vs:
                facts.add(k, v)
    facts.extend(after.facts)
    copy = FileFacts(path=script_file.path, abspath=script_file.abspath, kind=script_file.kind,
                     text=script_file.text, facts=facts, launches=script_file.launches, links=script_file.links,
                     data=script_file.data, diagnostics=script_file.diagnostics,
                     standalone_job=script_file.standalone_job)
    job.files = [copy if x is script_file else x for x in job.files]
    rebuilt = FactMap()
    rebuilt.extend(launch.facts)
    for x in job.files:
        rebuilt.extend(x.facts)
    job.facts = rebuilt
