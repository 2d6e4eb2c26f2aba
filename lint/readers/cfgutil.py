"""Helpers shared by the framework-config readers (DeepSpeed, NeMo, torchtitan, accelerate, ...).

* :func:`load_tree` parses JSON / YAML / TOML text into a positioned :class:`PNode` tree, or returns
  a SYN001 diagnostic instead of raising.
* :func:`to_value` turns a positioned scalar into a :class:`Value`, keeping placeholders, ``auto``,
  Hydra ``???``, ``${...}`` interpolations, environment references and ``null`` unknown.
* :class:`Emitter` adds facts to a :class:`FileFacts` with their spans and a readable ``source``.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

from parallint.model.diagnostics import Diagnostic, Severity, Span
from parallint.model.facts import FileFacts, Value
from parallint.model.scalars import Placeholder, unknown_reason  # noqa: F401 - re-exported for the config readers
from parallint.readers.yamlpos import PNode

TYPE_CHECKING = False  # typing is not imported at run time (start-up, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Any, Callable, Iterable


def to_value(node: PNode | None, source: str, *, raw: Any = ...) -> Value | None:
    """The Value a positioned scalar stands for; None when the node is absent."""
    if node is None:
        return None
    v = node.value if raw is ... else raw
    if isinstance(v, (dict, list)):
        return Value(node.plain(), node.span, True, "", source)
    why = unknown_reason(v)
    if why:
        return Value.unknown(why, node.span, source)
    return Value(v, node.span, True, "", source)


def syn001(ff: FileFacts, message: str, line: int = 1, column: int = 1) -> None:
    ff.diagnostics.append(
        Diagnostic(
            "SYN001",
            "parse-error",
            Severity.ERROR,
            f"{message} (line {line}, column {column})",
            Span(ff.path, max(1, line), max(1, column)),
        )
    )


def load_tree(ff: FileFacts, fmt: str | None = None) -> PNode | None:
    """Parse ``ff.text`` (format from the suffix unless given); None plus SYN001 on bad input.

    A YAML file with several documents yields the first mapping document.
    """
    fmt = fmt or fmt_of(ff.path)
    try:
        if fmt == "json":
            from parallint.readers import jsonpos

            return jsonpos.load(ff.text, ff.path)
        if fmt == "toml":
            from parallint.readers import tomlpos

            return tomlpos.load(ff.text, ff.path)
        from parallint.readers import yamlpos

        docs = yamlpos.load_all(ff.text, ff.path)
        for d in docs:
            if d.is_map:
                return d
        return docs[0] if docs else PNode({}, Span(ff.path, 1, 1))
    except RecursionError:
        syn001(ff, "cannot parse: nested too deeply")
        return None
    except Exception as exc:  # every parser error becomes SYN001, never a traceback
        line, col = error_pos(exc)
        if template_line(ff.text, line):
            return None  # a template a tool renders (Jinja, Helm, ${..} filled in by a script)
        msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        syn001(ff, f"cannot parse {fmt.upper()}: {msg}", line, col)
        return None


#: template syntax that makes a file unparseable until a tool renders it
@functools.cache  # compiled at the first use, not at import (start-up)
def _template_mark() -> re.Pattern[str]:
    return re.compile(r"\{\{|\{%|<%|\$\{|\$[A-Z_]{2,}\b|<[A-Z][A-Z0-9_]{1,60}>")


def template_line(text: str, line: int) -> bool:
    """True when line ``line`` (or the one before it, where an error is often reported one line
    late) holds template syntax: the parse error is the template's, not the author's."""
    if not text or line < 1:
        return False
    lines = text.split("\n", line)[:line]
    return any(_template_mark().search(ln[:2000]) for ln in lines[-2:])


def error_pos(exc: Exception) -> tuple[int, int]:
    line = getattr(exc, "line", None) or getattr(exc, "lineno", None)
    col = getattr(exc, "column", None) or getattr(exc, "colno", None)
    if line:
        return int(line), int(col or 1)
    from parallint.readers.yamlpos import error_position

    return error_position(exc)


def fmt_of(path: str) -> str:
    p = path.lower()
    if p.endswith(".json"):
        return "json"
    if p.endswith(".toml"):
        return "toml"
    return "yaml"


def new_facts(path: str, abspath: Path, kind: str, text: str) -> FileFacts:
    return FileFacts(path=path, abspath=abspath, kind=kind, text=text)


def open_config(path: str, abspath: Path, text: str, kind: str, fmt: str, framework: str = "",
                parse_as: str | None = None) -> tuple[FileFacts, PNode | None]:
    """A config reader's start: the FileFacts with its :class:`ConfigData` (``fmt``, ``framework``)
    and the parsed tree (format from the suffix unless ``parse_as``) when it is a mapping, else None
    (a parse error is already a SYN001 diagnostic)."""
    ff = new_facts(path, abspath, kind, text)
    root = load_tree(ff, parse_as)
    ff.data = ConfigData(root, fmt, framework)
    return ff, root if root is not None and root.is_map else None


def basename(path: str) -> str:
    return path.replace("\\", "/").rsplit("/", 1)[-1]


class Emitter:
    """Adds facts to ``ff`` from nodes of ``root``; ``source`` reads "<file> <key path>"."""

    def __init__(self, ff: FileFacts, root: PNode | None) -> None:
        self.ff = ff
        self.root = root
        self.name = basename(ff.path)

    def node(self, dotted: str) -> PNode | None:
        if self.root is None:
            return None
        return self.root.path(dotted)

    def value(self, dotted: str, node: PNode | None = None) -> Value | None:
        n = node if node is not None else self.node(dotted)
        return to_value(n, f"{self.name} {dotted}")

    def add(
        self,
        key: str,
        dotted: str | Iterable[str],
        conv: Callable[[Any], Any] | None = None,
        node: PNode | None = None,
    ) -> Value | None:
        """Add fact ``key`` from the first of ``dotted`` present; returns the Value added."""
        paths = [dotted] if isinstance(dotted, str) else list(dotted)
        for p in paths:
            n = node if node is not None else self.node(p)
            if n is None:
                continue
            v = self.value(p, n)
            if v is None:
                continue
            if conv is not None and v.known:
                v = v.map(conv)
            self.ff.facts.add(key, v)
            return v
        return None

    def put(self, key: str, value: Any, span: Span | None, source: str) -> Value:
        v = Value(value, span, True, "", source)
        self.ff.facts.add(key, v)
        return v

    def framework(self, name: str) -> None:
        span = self.root.span if self.root is not None else Span(self.ff.path, 1, 1)
        self.ff.facts.add("framework", Value(name, Span(self.ff.path, span.line, span.column), True, "", self.name))


def as_bool(v: Any) -> bool:
    """YAML/JSON truthiness as frameworks read it: True/False, 'true'/'false', 1/0."""
    if isinstance(v, bool):
        return v
    if isinstance(v, (int, float)) and v in (0, 1):
        return bool(v)
    if isinstance(v, str) and v.strip().lower() in ("true", "false", "yes", "no", "1", "0"):
        return v.strip().lower() in ("true", "yes", "1")
    raise ValueError(v)


def positive_int(v: Any) -> int:
    """A count that must be at least 1 (0 or -1 mean "all visible devices" & co.: unknown statically)."""
    i = as_int(v)
    if i <= 0:
        raise ValueError(v)
    return i


def choice(table: dict[str, str]) -> Callable[[Any], str]:
    """A converter: the normalized name ``table`` gives a value (stripped, lower-cased); ValueError
    for any other value."""
    def conv(v: Any) -> str:
        s = str(v).strip().lower()
        if s not in table:
            raise ValueError(v)
        return table[s]

    return conv


def as_int(v: Any) -> int:
    if isinstance(v, bool):
        raise TypeError(v)
    if isinstance(v, int):
        return v
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, str):
        s = v.strip()
        if re.fullmatch(r"[+-]?\d+", s):
            return int(s)
        if re.fullmatch(r"[+-]?\d+(\.0*)?([eE]\+?\d+)?", s):
            f = float(s)
            if f.is_integer():
                return int(f)
    raise ValueError(v)


# ------------------------------------------------------------------------------------------
# reader payload and in-file interpolation


class ConfigData:
    """``FileFacts.data`` of every config reader.

    ``tree``: the positioned document (PNode). ``partitions``: hand-written pipeline partitions
    (torchtitan ``module_fqns_per_model_part``) as a list of :class:`Partition` (read by the PIP
    rules). ``configs``: for a file holding several named configs (a torchtitan config registry),
    name -> PNode tree shaped like the TOML job config.
    """

    def __init__(self, tree: PNode | None, fmt: str = "", framework: str = "") -> None:
        self.tree = tree
        self.format = fmt
        self.framework = framework
        self.partitions: list[Partition] = []
        self.configs: dict[str, PNode] = {}
        self.extra: dict[str, Any] = {}


class Partition:
    """One hand-written pipeline partition list: ``stages`` = one list of module names per stage."""

    def __init__(self, stages: list[list[str]], span: Span, stage_spans: list[Span], source: str,
                 pp: Value | None = None, layers: Value | None = None, config: str = "") -> None:
        self.stages = stages
        self.span = span
        self.stage_spans = stage_spans
        self.source = source
        self.pp = pp  # the PP degree stated next to it, if any
        self.layers = layers  # the model's layer count, if the same file states it
        self.config = config  # the config's name in a registry file

    def __repr__(self) -> str:  # pragma: no cover
        return f"Partition({self.stages!r}, pp={self.pp!r})"


_INTERP = re.compile(r"^\$\{([^${}:]+)\}$")


def resolve_interpolations(root: PNode, max_hops: int = 20) -> Callable[[str, PNode], PNode]:
    """A function mapping (dotted path, node) to the node an OmegaConf ``${a.b}`` / ``${.x}`` /
    ``${..x}`` points at inside the same file (following chains). Resolvers (``${oc.env:X}``,
    ``${multiply:...}``) and references that leave the file are returned unchanged (unknown)."""

    def target(path: str, ref: str) -> PNode | None:
        if ref.startswith("."):
            dots = len(ref) - len(ref.lstrip("."))
            base = path.split(".")[:-1]
            up = dots - 1
            if up > len(base):
                return None
            base = base[: len(base) - up] if up else base
            full = ".".join(base + [ref.lstrip(".")]) if ref.lstrip(".") else ".".join(base)
        else:
            full = ref
        node: PNode | None = root
        for part in full.split("."):
            if node is None:
                return None
            if node.is_seq and part.isdigit():
                idx = int(part)
                node = node.value[idx] if idx < len(node.value) else None
            else:
                node = node.get(part)
        return node

    def resolve(path: str, node: PNode) -> PNode:
        cur, cur_path = node, path
        for _ in range(max_hops):
            v = cur.value
            if not isinstance(v, str):
                return cur
            m = _INTERP.match(v.strip())
            if not m:
                return cur
            ref = m.group(1).strip()
            t = target(cur_path, ref)
            if t is None:
                return cur
            if ref.startswith("."):
                dots = len(ref) - len(ref.lstrip("."))
                base = cur_path.split(".")[:-1]
                up = dots - 1
                base = base[: len(base) - up] if up else base
                cur_path = ".".join(base + [ref.lstrip(".")])
            else:
                cur_path = ref
            # keep the referencing position: that is the key the framework reads
            cur = PNode(t.value, node.span, t.key_spans, t.duplicates)
        return cur

    return resolve


class ResolvingEmitter(Emitter):
    """An Emitter that follows in-file OmegaConf interpolations (NeMo, llm-foundry)."""

    def __init__(self, ff: FileFacts, root: PNode | None) -> None:
        super().__init__(ff, root)
        self._resolve = resolve_interpolations(root) if root is not None else None

    def node(self, dotted: str) -> PNode | None:
        n = super().node(dotted)
        if n is not None and self._resolve is not None:
            n = self._resolve(dotted, n)
        return n


def precision_of(v: Any) -> str | None:
    """bf16 / fp16 / fp32 from the many spellings (Lightning 'bf16-mixed', 16, 'amp_bf16', ...)."""
    if isinstance(v, bool) or v is None:
        return None
    s = str(v).strip().lower()
    if s in ("bf16", "bf16-mixed", "bf16-true", "bfloat16", "amp_bf16", "bf16_mixed"):
        return "bf16"
    if s in ("16", "fp16", "16-mixed", "16-true", "float16", "half", "amp_fp16", "fp16-mixed"):
        return "fp16"
    if s in ("32", "fp32", "32-true", "float32", "no", "full"):
        return "fp32"
    return None


# ------------------------------------------------------------------------------------------
# configs that are not what runs (docs/precision-policy-configs.md)

#: directories whose configs a tool rewrites before anything runs (NeMo-Framework-Launcher's
#: auto_configurator takes ``base_configs/<model>.yaml`` and writes TP, PP, CP, EP, nodes, batch
#: sizes, sequence parallelism and, without a custom config, the model shape)
_REWRITTEN_DIRS = {"auto_configurator": "the NeMo auto_configurator rewrites it (TP, PP, nodes, batch)",
                   "autoconfigurator": "the NeMo auto_configurator rewrites it (TP, PP, nodes, batch)"}


#: directories of conversion jobs: the model block describes the checkpoint being written, the
#: trainer block the converter (one process); nothing here is trained
@functools.cache  # compiled at the first use, not at import (start-up)
def _conversion_dir() -> re.Pattern[str]:
    return re.compile(r"^(conversion|convert|conversions|checkpoint_conversion|ckpt_conversion)"
                                 r"(_[a-z0-9]+)*$|^(hf2nemo|nemo2hf)$", re.I)


_CONVERSION_FILE = re.compile(r"^(convert|conversion)[_-]", re.I)


def not_launched_reason(path: str) -> str:
    """Why the config at ``path`` (display path) is not a layout that runs as written ('' when it
    may be): a base config a tool rewrites, or a checkpoint-conversion config."""
    parts = [p for p in path.replace("\\", "/").split("/") if p not in ("", ".", "..")]
    dirs, name = parts[:-1], parts[-1] if parts else ""
    for d in dirs:
        why = _REWRITTEN_DIRS.get(d.lower())
        if why:
            return f"base config: {why}"
    if any(_conversion_dir().match(d) for d in dirs) or _CONVERSION_FILE.match(name):
        return "conversion config: its model block describes the checkpoint written, nothing is trained"
    return ""


def mask_facts(ff: FileFacts, why: str, keys: Iterable[str] | None = None,
               keep: tuple[str, ...] = ("framework",),
               reason: Callable[[Value], str | None] | None = None) -> None:
    """Turn the known facts of ``ff`` unknown (``why``): all of them but ``keep``, or only ``keys``;
    or, with ``reason``, each value it gives a reason for (that reason). Spans stay, so the rules
    still know the key was written (and stay silent on it)."""
    from parallint.model.facts import FactMap

    only = None if keys is None else set(keys)
    out = FactMap()
    for key, values in ff.facts.items():
        hit = (key in only) if only is not None else key not in keep
        for v in values:
            if v.known:
                because = reason(v) if reason is not None else why if hit else None
                if because:
                    v = Value.unknown(because, v.span, v.source)
            out.add(key, v)
    ff.facts = out
