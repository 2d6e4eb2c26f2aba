"""Automatic fixes: what a finding proposes, and the edits that carry it out.

A rule that can fix a finding says so when it reports it: :class:`Fix` (a title, whether it is
safe, and the value the edit needs, such as the new key or number) travels with the
:class:`~parallint.model.diagnostics.Diagnostic`. The edit itself is made later, only when the
user asks (``check --fix`` or ``--diff``, the editor's code action, SARIF's ``fixes``), by the
rule's :meth:`~parallint.model.rule.Rule.apply_fix` on the file's current text. It returns the
whole new text, or None where the text is not what the finding saw (an edit since, a shape the
fix does not handle): a fix that cannot be made exactly is not made.

The helpers here make the edits that rules share:

- :func:`replace_at`: replace the characters a span covers, when they are what was expected
  (shell, YAML, JSON and TOML values and keys: only those bytes change);
- :func:`drop_keyword` and :func:`add_keyword`: a call's keyword argument removed or added,
  through LibCST, which keeps the comments and the formatting around it.

Safe fixes keep what the program does, except the mistake (a flag that only slows it, an
argument that makes it raise). Unsafe ones may change what it does (a batch size, a renamed key
that may have been meant otherwise) and run only with ``--unsafe-fixes``.
"""

from __future__ import annotations

from parallint.model.diagnostics import Edit, Fix

TYPE_CHECKING = False  # typing is not imported at run time (start-up, docs/architecture.md)
if TYPE_CHECKING:  # pragma: no cover
    from typing import Any
    from parallint.model.diagnostics import Span

__all__ = ["Edit", "Fix", "add_keyword", "drop_keyword", "edit_between", "replace_at", "span_range"]


def edit_between(old: str, new: str) -> Edit | None:
    """The one replacement that turns ``old`` into ``new`` (their common start and end kept);
    None when they are equal."""
    if old == new:
        return None
    n = min(len(old), len(new))
    a = 0
    while a < n and old[a] == new[a]:
        a += 1
    b = 0
    while b < n - a and old[len(old) - 1 - b] == new[len(new) - 1 - b]:
        b += 1
    return Edit(a, len(old) - b, new[a:len(new) - b])


def syntax_of(path: str) -> str | None:
    """The syntax of a file, for its comments and line breaks: python, yaml, toml, json (None: no
    comments) or shell (scripts, sbatch files, extensionless launchers, Makefiles)."""
    low = path.lower()
    if low.endswith((".py", ".pyi")):
        return "python"
    if low.endswith(".json"):
        return None
    if low.endswith((".yaml", ".yml")):
        return "yaml"
    if low.endswith(".toml"):
        return "toml"
    return "shell"


def line_starts(text: str, syntax: str | None) -> list[int]:
    """The offset of each line's first character, lines as parallint's spans count them: at LF,
    CRLF and a lone CR (a form feed or U+2028 is inside a line; YAML also breaks at NEL, U+2028
    and U+2029, as its reader does)."""
    import re

    breaks = r"\r\n|\r|\n|\x85|\u2028|\u2029" if syntax == "yaml" else r"\r\n|\r|\n"
    starts = [0]
    starts.extend(m.end() for m in re.finditer(breaks, text))
    return starts


def offset_of(text: str, syntax: str | None, line: int, column: int) -> int | None:
    """The offset of a 1-based (line, column) position, columns in characters; None outside."""
    starts = line_starts(text, syntax)
    if line < 1 or line > len(starts) or column < 1:
        return None
    a = starts[line - 1]
    b = starts[line] if line < len(starts) else len(text)
    off = a + column - 1
    return off if off <= b else None


def span_range(text: str, syntax: str | None, span: "Span") -> tuple[int, int] | None:
    """``(start, end)`` offsets of a span in ``text``; None when it is not inside it."""
    a = offset_of(text, syntax, span.line, span.column)
    b = offset_of(text, syntax, span.end_line, span.end_column) if span.end_column else None
    if a is None:
        return None
    if b is None or b < a:
        b = a
    return a, b


def replace_at(text: str, path: str, span: "Span", expected: str, new: str,
               within_line: bool = False) -> str | None:
    """``text`` with the first ``expected`` at or after the span's start (on the same line when
    ``within_line``, else within the span) replaced by ``new``; None when it is not there."""
    r = span_range(text, syntax_of(path), span)
    if r is None or not expected:
        return None
    a, b = r
    if within_line:
        starts = line_starts(text, syntax_of(path))
        line_end = starts[span.line] if span.line < len(starts) else len(text)
        i = text.find(expected, a, line_end)
    else:
        i = text.find(expected, a, max(b, a + len(expected)))
    if i < 0:
        return None
    return text[:i] + new + text[i + len(expected):]


# --------------------------------------------------------------------------- Python (LibCST)
def _parse(text: str) -> Any:
    """The LibCST module of ``text`` wrapped for positions, or None when it does not parse."""
    try:
        import libcst as cst
        from libcst.metadata import MetadataWrapper

        return MetadataWrapper(cst.parse_module(text), unsafe_skip_copy=True)
    except Exception:  # noqa: BLE001 - LibCST's parser errors, recursion, an odd encoding
        return None


def _calls_at(wrapper: Any, line: int, column: int) -> list[Any]:
    """The calls whose source covers (line, column) (1-based), innermost last."""
    import libcst as cst
    from libcst.metadata import PositionProvider

    try:
        positions = wrapper.resolve(PositionProvider)
    except Exception:  # noqa: BLE001
        return []
    pos = (line, column - 1)
    out = []
    for node, rng in positions.items():
        if isinstance(node, cst.Call) and (rng.start.line, rng.start.column) <= pos <= (rng.end.line, rng.end.column):
            out.append((rng.start.line, rng.start.column, node))
    out.sort(key=lambda t: (t[0], t[1]))
    return [n for _, _, n in out]


def _replace_node(wrapper: Any, text: str, old: Any, new: Any) -> str | None:
    """``text`` with node ``old`` replaced by ``new``, or None when LibCST does not give ``text``
    back unchanged. LibCST renders a node inside an indented block without the block's indentation,
    so the whole module is rendered; it drops the last line break of a file whose lines end in a
    lone CR, so a missing final break is put back."""
    import libcst as cst

    module = wrapper.module
    code = module.code
    tail = ""
    if code != text:
        tail = text[len(code):]
        if not text.startswith(code) or tail not in ("\r", "\n", "\r\n"):
            return None

    class _Swap(cst.CSTTransformer):
        def on_leave(self, original_node: Any, updated_node: Any) -> Any:
            return new if original_node is old else updated_node

    return str(module.visit(_Swap()).code) + tail


def drop_keyword(text: str, span: "Span", keyword: str) -> str | None:
    """``text`` without the ``keyword=`` argument of the innermost call at ``span`` that passes
    it (its comma with it; the comments beside the other arguments kept); None when no call there
    passes it by name."""
    import libcst as cst

    wrapper = _parse(text)
    if wrapper is None:
        return None
    from libcst.metadata import PositionProvider

    positions = wrapper.resolve(PositionProvider)
    pos = (span.line, span.column - 1)
    for call in reversed(_calls_at(wrapper, span.line, span.column)):
        idx = [i for i, a in enumerate(call.args) if a.keyword is not None and a.keyword.value == keyword]
        if len(idx) != 1:
            continue
        rng = positions.get(call.args[idx[0]])
        if rng is None or not ((rng.start.line, rng.start.column) <= pos <= (rng.end.line, rng.end.column)):
            return None  # the finding is not on this argument: the text is not what it saw
        i = idx[0]
        args = list(call.args)
        gone = args.pop(i)
        if args and i == len(args):  # it was the last: the one before it takes its comma
            prev = args[-1]
            comma = prev.comma
            keeps_comment = isinstance(comma, cst.Comma) and _has_comment(comma.whitespace_after)
            if not keeps_comment:
                args[-1] = prev.with_changes(comma=gone.comma)
        return _replace_node(wrapper, text, call, call.with_changes(args=args))
    return None


def _has_comment(node: Any) -> bool:
    import libcst as cst

    found = []

    class _Find(cst.CSTVisitor):
        def visit_Comment(self, node: Any) -> None:
            found.append(node)

    node.visit(_Find())
    return bool(found)


def add_keyword(text: str, span: "Span", keyword: str, value: str) -> str | None:
    """``text`` with ``keyword=value`` added last to the call that starts at ``span`` (or the
    innermost one covering it); None when there is none, or it already passes ``keyword``, or
    passes ``**kwargs`` (which may hold it)."""
    import libcst as cst

    wrapper = _parse(text)
    if wrapper is None:
        return None
    calls = _calls_at(wrapper, span.line, span.column)
    if not calls:
        return None
    call = calls[-1]
    if any((a.keyword is not None and a.keyword.value == keyword) or a.star == "**" for a in call.args):
        return None
    try:
        expr = cst.parse_expression(value)
    except Exception:  # noqa: BLE001
        return None
    new_arg = cst.Arg(value=expr, keyword=cst.Name(keyword),
                      equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""),
                                            whitespace_after=cst.SimpleWhitespace("")))
    args = list(call.args)
    if args:
        last = args[-1]
        if isinstance(last.comma, cst.Comma):  # a trailing comma: the new one goes after it, with one too
            new_arg = new_arg.with_changes(comma=cst.Comma(whitespace_after=last.comma.whitespace_after))
            args[-1] = last.with_changes(comma=last.comma.with_changes(whitespace_after=cst.SimpleWhitespace(" ")))
        else:
            args[-1] = last.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
    args.append(new_arg)
    return _replace_node(wrapper, text, call, call.with_changes(args=args))
