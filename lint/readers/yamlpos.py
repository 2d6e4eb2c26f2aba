"""YAML with positions: ``yaml.compose`` (safe, C-accelerated when available) into :class:`PNode` trees.

Every mapping, sequence and scalar keeps its line and column, mappings remember duplicate keys,
and limits stop alias bombs and runaway nesting. Scalars are constructed with PyYAML's *safe*
constructor, so YAML 1.1 quirks apply exactly as the frameworks see them (``1e-5`` is a string,
``NO`` is false).

PyYAML is imported when a document is loaded, not with this module: :class:`PNode` is the tree of
the JSON and TOML readers too, and a run that reads no YAML never imports it.
"""

from __future__ import annotations


from parallint.model.diagnostics import Span
from parallint.util.record import EqRecord

TYPE_CHECKING = False  # typing is not imported at run time (start-up, docs/architecture.md)
if TYPE_CHECKING:  # pragma: no cover
    from typing import Any, Iterator
    import yaml


def _loader() -> "type[yaml.CSafeLoader] | type[yaml.SafeLoader]":
    """PyYAML's safe loader, C-accelerated when the build has it."""
    import yaml

    return getattr(yaml, "CSafeLoader", None) or yaml.SafeLoader

MAX_NODES = 100_000  # after alias expansion: a "billion laughs" bomb stops here, before any work
MAX_DEPTH = 200


class YamlLimitError(ValueError):
    pass


class PNode(EqRecord):
    """A positioned YAML/JSON value. ``value`` is a scalar, a ``dict[str, PNode]`` or a ``list[PNode]``."""

    _fields = ("value", "span", "key_spans", "duplicates")
    value: Any
    span: Span
    #: for mappings: key -> span of the key text
    key_spans: dict[str, Span]
    #: for mappings: (key, first key span, repeated key span)
    duplicates: list[tuple[str, Span, Span]]

    def __init__(
        self,
        value: Any,
        span: Span,
        key_spans: dict[str, Span] | None = None,
        duplicates: list[tuple[str, Span, Span]] | None = None,
    ) -> None:
        self.value = value
        self.span = span
        self.key_spans = {} if key_spans is None else key_spans
        self.duplicates = [] if duplicates is None else duplicates

    @property
    def is_map(self) -> bool:
        return isinstance(self.value, dict)

    @property
    def is_seq(self) -> bool:
        return isinstance(self.value, list)

    def get(self, key: str) -> "PNode | None":
        if isinstance(self.value, dict):
            return self.value.get(key)
        return None

    def path(self, dotted: str) -> "PNode | None":
        """``node.path("model.tensor_model_parallel_size")``; None when any step is missing."""
        node: PNode | None = self
        for part in dotted.split("."):
            if node is None:
                return None
            node = node.get(part)
        return node

    def items(self) -> Iterator[tuple[str, "PNode"]]:
        if isinstance(self.value, dict):
            yield from self.value.items()

    def plain(self) -> Any:
        """The value without positions (plain dicts, lists and scalars)."""
        if isinstance(self.value, dict):
            return {k: v.plain() for k, v in self.value.items()}
        if isinstance(self.value, list):
            return [v.plain() for v in self.value]
        return self.value

    def walk(self, prefix: str = "") -> Iterator[tuple[str, "PNode"]]:
        """Every (dotted path, node) below this one, mappings only descend by key."""
        for k, v in self.items():
            p = f"{prefix}.{k}" if prefix else k
            yield p, v
            yield from v.walk(p)


def _span(path: str, node: yaml.Node) -> Span:
    s, e = node.start_mark, node.end_mark
    return Span(path, s.line + 1, s.column + 1, e.line + 1, e.column + 1)


class _Converter:
    def __init__(self, path: str) -> None:
        self.path = path
        self.count = 0
        import yaml

        self.yaml = yaml
        self.constructor = yaml.constructor.SafeConstructor()

    def convert(self, node: yaml.Node, depth: int = 0) -> PNode:
        yaml = self.yaml
        self.count += 1
        if self.count > MAX_NODES:
            raise YamlLimitError(f"more than {MAX_NODES} YAML nodes (alias expansion?)")
        if depth > MAX_DEPTH:
            raise YamlLimitError(f"YAML nested deeper than {MAX_DEPTH} levels")
        span = _span(self.path, node)
        if isinstance(node, yaml.MappingNode):
            out: dict[str, PNode] = {}
            key_spans: dict[str, Span] = {}
            dups: list[tuple[str, Span, Span]] = []
            merged_keys: set[str] = set()  # keys that came from `<<: *base`: overriding them is no duplicate
            for knode, vnode in node.value:
                if knode.tag == "tag:yaml.org,2002:merge":  # `<<: *base`
                    merged = self.convert(vnode, depth + 1)
                    sources = merged.value if isinstance(merged.value, list) else [merged]
                    for src in sources:
                        for mk, mv in src.items():
                            if mk not in out:
                                out[mk] = mv
                                key_spans[mk] = src.key_spans.get(mk, mv.span)
                                merged_keys.add(mk)
                    continue
                key = self._scalar(knode) if isinstance(knode, yaml.ScalarNode) else None
                key = str(key) if key is not None else yaml.serialize(knode).strip()
                kspan = _span(self.path, knode)
                if key in merged_keys:
                    merged_keys.discard(key)
                elif key in out:
                    dups.append((key, key_spans[key], kspan))
                out[key] = self.convert(vnode, depth + 1)
                key_spans[key] = kspan
            return PNode(out, span, key_spans, dups)
        if isinstance(node, yaml.SequenceNode):
            return PNode([self.convert(n, depth + 1) for n in node.value], span)
        return PNode(self._scalar(node), span)

    def _scalar(self, node: yaml.Node) -> Any:
        try:
            return self.constructor.construct_object(node, deep=True)
        except self.yaml.YAMLError:
            return node.value


def expanded_size(node: yaml.Node, limit: int = MAX_NODES) -> int:
    """How many nodes ``node`` becomes once every alias is expanded (stops counting past
    ``limit``). Aliases share node objects, so sizes are computed once per object: linear in the
    text, whatever the expansion. Iterative: no recursion on deep documents."""
    import yaml

    sizes: dict[int, int] = {}
    stack: list[tuple[yaml.Node, bool]] = [(node, False)]
    while stack:
        n, done = stack.pop()
        key = id(n)
        if key in sizes and not done:
            continue
        kids: list[yaml.Node] = []
        if isinstance(n, yaml.MappingNode):
            for k, v in n.value:
                kids.extend((k, v))
        elif isinstance(n, yaml.SequenceNode):
            kids = list(n.value)
        if not done:
            if len(stack) > limit:
                return limit + 1
            sizes[key] = -1  # in progress (a recursive alias would be a cycle)
            stack.append((n, True))
            stack.extend((k, False) for k in kids if id(k) not in sizes)
            continue
        total = 1
        for k in kids:
            total += max(sizes.get(id(k), 1), 1)
            if total > limit:
                total = limit + 1
                break
        sizes[key] = total
    return sizes.get(id(node), 1)


def load_all(text: str, path: str) -> list[PNode]:
    """Every document of ``text``. Raises ``yaml.YAMLError`` or :class:`YamlLimitError`."""
    from parallint.util.guards import config_guard

    reason = config_guard("yaml", text)  # before the composer, which recurses per level
    if reason:
        raise YamlLimitError(reason)
    import yaml

    conv = _Converter(path)
    docs = []
    total = 0
    for node in yaml.compose_all(text, Loader=_loader()):
        if node is not None:
            total += expanded_size(node, MAX_NODES - total)
            if total > MAX_NODES:
                raise YamlLimitError(f"more than {MAX_NODES} YAML nodes (alias expansion?)")
            docs.append(conv.convert(node))
    return docs


def error_position(exc: Exception) -> tuple[int, int]:
    """1-based (line, column) of a YAML error, (1, 1) when it has none."""
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    if mark is None:
        return 1, 1
    return mark.line + 1, mark.column + 1
