"""Cheap, linear-time checks that run before any native parser sees untrusted text.

LibCST's native parser overflows the C stack (SIGSEGV, the whole run lost) on a flat
``a and b and ...`` chain of a few thousand operands, and its Python side raises RecursionError
from about 450; PyYAML, ``tomllib`` and the JSON reader recurse per nesting level; ``tomllib``
keeps every prefix of a dotted key (``a.a.a...``: memory quadratic in the key). Each guard here
looks at the text once, with regexes that cannot backtrack, and returns a reason ("too complex (...)") for a file that must not be parsed, or None.

The limits sit far above real code and configs (training scripts nest < 30 levels; configs < 15)
and below the point where the parsers fail.
"""

from __future__ import annotations

import functools
import re

#: Python: operands of one operator chain (``a and b and ...``, ``a + b + ...``), bracket depth,
#: indentation depth, one line's length. LibCST raises RecursionError from ~450 operands.
PY_MAX_CHAIN = 300
PY_MAX_DEPTH = 100
PY_MAX_INDENT = 100
MAX_LINE = 200_000
#: depth budget: one bracket level costs about as much parser stack as three chain operands
PY_MAX_COST = 400

#: shell and Makefile lines: the longest in 29 training repositories is 1,253 characters, and the
#: shell reader's cost per word grows with the line (a 69 KB line of 3,000 words takes 2 s)
SHELL_MAX_LINE = 20_000
#: structured configs: bracket / indentation depth, TOML dotted-key parts, YAML anchors+aliases
CFG_MAX_DEPTH = 100
TOML_MAX_KEY_PARTS = 100
YAML_MAX_ALIASES = 10_000


# One token per match: comments, strings (a string stops at the end of its line unless it is
# triple-quoted), the operators that build chains, brackets, and the separators that end a chain.
# Every alternative is a fixed word or a run of characters that excludes its own terminator, so a
# match never backtracks over more than its own length.
@functools.cache  # compiled at the first use, not at import (start-up)
def _py_token() -> re.Pattern[str]:
    return re.compile(
        r"#[^\n]*"
        r'|"""(?:[^"\\]|\\.|"(?!""))*(?:"""|\Z)'
        r"|'''(?:[^'\\]|\\.|'(?!''))*(?:'''|\Z)"
        r'|"(?:[^"\\\n]|\\.)*(?:"|$)'
        r"|'(?:[^'\\\n]|\\.)*(?:'|$)"
        r"|\w+"  # names and numbers: one token each (the words among them are looked up)
        r"|\*\*|//|<<|>>|<=|>=|==|!=|->|:="
        r"|[-+*/%@|&^<>]"
        r"|[()\[\]{}]"
        r"|[,;:=\n]",
        re.S | re.M,
    )


_CHAIN_OPS = frozenset(
    ("and", "or", "not", "is", "in", "if", "else", "**", "//", "<<", ">>", "<=", ">=", "==", "!=",
     "+", "-", "*", "/", "%", "@", "|", "&", "^", "<", ">")
)
_RESET = frozenset((",", ";", ":", "=", ":=", "->", "lambda", "for"))
#: token -> 1 operator, 2 separator, 3 opening bracket, 4 closing bracket, 5 newline (0: other)
_CLASS = {**{t: 1 for t in _CHAIN_OPS}, **{t: 2 for t in _RESET}, **{t: 3 for t in "([{"},
          **{t: 4 for t in ")]}"}, "\n": 5}


def _long_line(text: str, limit: int = MAX_LINE) -> int:
    """Length of the first line longer than ``limit`` (0 when none); linear, no regex."""
    if len(text) <= limit:
        return 0
    start = 0
    n = len(text)
    while start < n:
        end = text.find("\n", start)
        if end == -1:
            end = n
        if end - start > limit:
            return end - start
        start = end + 1
    return 0


def python_guard(text: str) -> str | None:
    """Why LibCST must not parse ``text`` (a reason), or None."""
    long = _long_line(text)
    if long:
        return f"too complex (a line of {long} characters; limit {MAX_LINE})"
    if re.search(r"^[ \t]{%d}" % (PY_MAX_INDENT + 1), text, re.M) and _indent_depth(text) > PY_MAX_INDENT:
        return f"too complex (blocks nested more than {PY_MAX_INDENT} levels deep)"
    if not _may_be_complex(text):
        return None
    depth = 0
    chains = [0]  # operators so far in the chain open at each bracket level
    worst_depth = 0
    classes = _CLASS
    for tok in _py_token().findall(text):
        c = classes.get(tok, 0)
        if c == 0:  # string or comment
            continue
        if c == 1:  # operator
            n = chains[-1] + 1
            chains[-1] = n
            if n >= PY_MAX_CHAIN:
                return (f"too complex (an expression chains more than {PY_MAX_CHAIN} operands; "
                        "a parser would exhaust its stack)")
            if n + 3 * depth > PY_MAX_COST:
                return (f"too complex (an expression {depth} brackets deep chains {n + 1} operands; "
                        "a parser would exhaust its stack)")
        elif c == 2:  # a separator ends the chain of this level
            chains[-1] = 0
        elif c == 3:  # opening bracket
            depth += 1
            chains.append(0)
            if depth > worst_depth:
                worst_depth = depth
                if depth > PY_MAX_DEPTH:
                    return f"too complex (brackets nested more than {PY_MAX_DEPTH} levels deep)"
        elif c == 4:  # closing bracket
            if depth:
                depth -= 1
                chains.pop()
        elif depth == 0:  # a newline outside brackets ends the statement
            chains[0] = 0
    return None


# substrings, so they over-count ("random" holds "and"): a file is only ever scanned too often
_OP_MARKS = ("and", "or", "+", "-", "*", "/", "%", "|", "&", "^", "<", ">", "@", "not", "is", "in",
             "if", "else", "==", "!=")


def _may_be_complex(text: str) -> bool:
    """False when the text holds too few operators and brackets in all for any limit to be
    reached (most files: a few C-level counts instead of a scan)."""
    if text.count("(") + text.count("[") + text.count("{") > PY_MAX_DEPTH:
        return True
    ops = 0
    for mark in _OP_MARKS:
        ops += text.count(mark)
        if ops >= PY_MAX_CHAIN - 1:
            return True
    return False


def _indent_depth(text: str) -> int:
    """How many distinct indentation levels are open at once (an upper bound of block nesting)."""
    stack = [0]
    worst = 0
    for m in re.finditer(r"^([ \t]*)\S", text, re.M):
        width = len(m.group(1).expandtabs(8))
        if width > stack[-1]:
            stack.append(width)
            worst = max(worst, len(stack) - 1)
            if worst > PY_MAX_INDENT:
                return worst
        else:
            while len(stack) > 1 and width < stack[-1]:
                stack.pop()
    return worst


# ----------------------------------------------------------------------------- structured configs
# brackets outside strings; a string stops at its line end, so an unmatched quote costs one line
_CFG_TOKEN = re.compile(r'"(?:[^"\\\n]|\\.)*(?:"|$)|\'[^\'\n]*(?:\'|$)|#[^\n]*|[\[\]{}]|\n', re.M)


def _bracket_depth(text: str, comments: bool) -> int:
    """Deepest bracket nesting outside strings (``#`` comments skipped when ``comments``)."""
    depth = worst = 0
    for m in _CFG_TOKEN.finditer(text):
        c = m.group()[0]
        if c == "[" or c == "{":
            depth += 1
            if depth > worst:
                worst = depth
                if worst > CFG_MAX_DEPTH:
                    return worst
        elif c == "]" or c == "}":
            depth = max(0, depth - 1)
        elif c == "#" and not comments:
            # JSON has no comments: '#' only ever starts a token in lenient JSON; count the
            # brackets after it on the line
            rest = m.group()[1:]
            for ch in rest:
                if ch in "[{":
                    depth += 1
                    worst = max(worst, depth)
                elif ch in "]}":
                    depth = max(0, depth - 1)
            if worst > CFG_MAX_DEPTH:
                return worst
    return worst


def _yaml_block_depth(text: str) -> int:
    """An upper bound of YAML block nesting: indentation columns plus compact ``- - -`` items,
    over two (two spaces per level is the common style; one-space files are counted double)."""
    worst = 0
    for m in re.finditer(r"^( *)((?:- +)*)", text, re.M):
        cols = len(m.group(1)) + 2 * m.group(2).count("-")
        if cols > worst:
            worst = cols
    return worst // 2


def config_guard(fmt: str, text: str) -> str | None:
    """Why the JSON/YAML/TOML ``text`` must not be parsed (a reason), or None."""
    long = _long_line(text, 2 * MAX_LINE) if fmt != "json" else 0
    if long:
        return f"too complex (a line of {long} characters; limit {2 * MAX_LINE})"
    depth = _bracket_depth(text, comments=fmt != "json")
    if depth > CFG_MAX_DEPTH:
        return f"too complex (nested more than {CFG_MAX_DEPTH} levels deep)"
    if fmt == "yaml":
        if _yaml_block_depth(text) > CFG_MAX_DEPTH:
            return f"too complex (nested more than {CFG_MAX_DEPTH} levels deep)"
        # anchors and aliases: each alias can copy a whole subtree (a "billion laughs" bomb)
        refs = len(re.findall(r"(?:^|[\s\[{,:])[&*][^\s\[\]{},]", text))
        if refs > YAML_MAX_ALIASES:
            return f"too complex (more than {YAML_MAX_ALIASES} YAML anchors and aliases)"
    elif fmt == "toml":
        parts = _toml_key_parts(text)
        if parts > TOML_MAX_KEY_PARTS:
            return f"too complex (a TOML key of more than {TOML_MAX_KEY_PARTS} dotted parts)"
    return None


def _toml_key_parts(text: str) -> int:
    """The most dots in one key (a ``key = value`` line or a ``[table]`` header), +1."""
    worst = 0
    for line in text.splitlines():
        s = line.lstrip()
        if not s or s[0] == "#":
            continue
        if s[0] == "[":
            end = s.find("]")
            head = s[: end if end != -1 else len(s)]
        else:
            eq = s.find("=")
            if eq == -1:
                continue
            head = s[:eq]
        dots = head.count(".")
        if dots + 1 > worst:
            worst = dots + 1
    return worst


#: file suffix -> structured format
def format_of(path: str) -> str | None:
    p = path.lower()
    if p.endswith(".json"):
        return "json"
    if p.endswith((".yaml", ".yml")):
        return "yaml"
    if p.endswith(".toml"):
        return "toml"
    return None


PYTHON_KINDS = frozenset({"python", "torchtitan_py"})


def guard(kind: str, path: str, text: str) -> str | None:
    """The reason a file of ``kind`` must not be parsed, or None (the dispatcher the runner calls)."""
    if kind in PYTHON_KINDS:
        return python_guard(text)
    fmt = format_of(path)
    if fmt is not None:
        return config_guard(fmt, text)
    limit = SHELL_MAX_LINE if kind in ("shell", "makefile") else 2 * MAX_LINE
    long = _long_line(text, limit)
    if long:
        return f"too complex (a line of {long} characters; limit {limit})"
    return None
