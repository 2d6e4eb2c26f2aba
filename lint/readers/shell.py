"""Shell and sbatch scripts: tree-sitter-bash plus a small, cautious evaluator.

The evaluator walks the syntax tree in order and keeps the variables it can resolve: assignments,
``export``/``declare``/``local``, ``${X:-d}``, ``${X:=d}``, ``: ${X:=8}``, ``$((A*B))``, arrays and
``"${A[@]}"``, ``A+=(...)``, unquoted multi-line strings split into words, ``source``/``.`` of files
that exist (with a cycle guard). Command substitutions, unset environment variables, positional
parameters and placeholders (``<NUM_NODES>``, ``your_num_nodes``) are unknown. A variable assigned in
a branch, loop or ``&&``/``||`` tail is unknown afterwards unless every path gives the same value.
``#SBATCH`` directives before the first command are the scheduler context (and define
``SLURM_NNODES`` & co.). Every command is handed to :mod:`parallint.readers.cmdline`; what it recognises
becomes a :class:`parallint.model.launch.Launch` in ``FileFacts.launches``.
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path
from typing import Any, Iterable

from parallint.readers import cmdline
from parallint.readers.cmdline import UNKNOWN, Seg, Word
from parallint.model.diagnostics import Diagnostic, Severity, Span
from parallint.model.facts import FactMap, FileFacts, Value
from parallint.util.record import EqRecord

MAX_BYTES = 2_000_000
MAX_SOURCE_DEPTH = 4
MAX_CALL_DEPTH = 8
MAX_STEPS = 200_000
MAX_PIECES = 20_000
MAX_CALLS = 500
MAX_VALUE_CHARS = 1_000_000
MAX_LAUNCHES = 256  # launches recorded per file (a function called in a loop of calls)
MAX_WORDS = 1024  # words of one command: a real launch line has a few hundred; beyond, it is not followed
#: `` `# comment` `` as a word of its own (after a blank, before a blank or a continuation)
BACKTICK_COMMENT = re.compile(rb"(?:^|(?<=[ \t]))(`#[^`\n]*`)(?=[ \t]*(?:\\\n|\n|$))", re.M)
MAX_REPAIRS = 64  # re-parses while replacing placeholders that tree-sitter cannot parse

#: a placeholder a template asks the user to fill in: ``<PATH_OF_VOCAB_FILE>``, ``<Specify path>``
PLACEHOLDER_SPAN = re.compile(rb"<[A-Za-z_][^<>\n]*>")
#: ``NAME=<placeholder> (e.g., /357m)``: the rest of the line is the placeholder's
ASSIGN_PLACEHOLDER = re.compile(rb"^[ \t]*(?:export[ \t]+)?[A-Za-z_][A-Za-z0-9_]*=(<[A-Za-z_][^<>\n]*>[^\n]*)$")
ASSIGN_PLACEHOLDER_ANY = re.compile(rb"^[ \t]*(?:export[ \t]+)?[A-Za-z_][A-Za-z0-9_]*=(<[A-Za-z_][^<>\n]*>[^\n]*)$", re.M)
REPAIR_SECONDS = 0.5  # time re-parsing may take while repairing one file (more for a slow first parse)
#: CPU seconds one tree-sitter parse may take. Its error recovery is superlinear on some broken text
#: (thousands of `[[x]]` lines: 1.8 s for 24 KB), while a real 2 MB script parses in well under
#: this; a parse cancelled here leaves the file not analysed ("too complex"), never half-read
PARSE_CPU_SECONDS = 0.4
#: text that starts a launch: an unparsed statement holding one is reported, not skipped silently
LAUNCH_TEXT = re.compile(rb"(?:^|[\s;&|(`\"'=/])(?:torchrun|deepspeed|torch\.distributed\.(?:run|launch)|"
                         rb"accelerate(?:-launch|\s+launch)|srun|mpirun|mpiexec|python[\d.]*)(?=[\s\"';]|$)", re.M)
ASSIGNED_NAME = re.compile(rb"(?:^|[\s;&|(])(?:export[ \t]+|local[ \t]+|readonly[ \t]+|declare[ \t]+(?:-\w+[ \t]+)*)?"
                           rb"([A-Za-z_][A-Za-z0-9_]*)\+?=", re.M)

PLACEHOLDER_RE = re.compile(
    r"<[^<>\s]+>|\byour[_-]\w+|^(?:x{2,}|X{2,}|\?\?+|TODO|TBD|CHANGEME|CHANGE_ME|REPLACE_ME)$|\{\{.*?\}\}",
    re.I,
)

_PARSER = None
#: the scripts being evaluated because another one runs them (cycle guard, depth limit)
_RUNNING: list[Path] = []

#: variables a scheduler, launcher or operator sets at run time: a `${X:-default}` is not their value
RUNTIME_PREFIXES = ("SLURM_", "PET_", "OMPI_", "PMI_", "PMIX_", "MV2_", "KUBERNETES_", "SM_", "AZ_BATCH",
                    "LSB_", "PBS_", "MLP_", "VC_", "TORCHELASTIC_")
RUNTIME_NAMES = frozenset("""MASTER_ADDR MASTER_PORT RANK WORLD_SIZE LOCAL_RANK NODE_RANK LOCAL_WORLD_SIZE
    GROUP_RANK ROLE_RANK HOSTNAME CUDA_VISIBLE_DEVICES NPROC_PER_NODE NNODES_FROM_ENV""".split())


def is_runtime_var(name: str) -> bool:
    return name in RUNTIME_NAMES or name.startswith(RUNTIME_PREFIXES)


def _parser():
    global _PARSER
    if _PARSER is None:
        import tree_sitter as ts
        import tree_sitter_bash as tsb

        _PARSER = ts.Parser(ts.Language(tsb.language()))
    return _PARSER


# -- sources and pieces -------------------------------------------------------------------------
class Src:
    """A piece of shell text with a position mapping (a file, or a snippet inside a YAML file)."""

    def __init__(self, path: str, data: bytes, line_offset: int = 0, col_offset: int = 0,
                 abspath: Path | None = None) -> None:
        self.path = path
        self.data = data
        self.line_offset = line_offset
        self.col_offset = col_offset
        self.abspath = abspath
        self.line_starts = [0] + [m.end() for m in re.finditer(b"\n", data)]
        #: byte offsets of UTF-8 continuation bytes: a column is bytes minus those (linear setup,
        #: O(log n) per position even on one very long line)
        self._cont: list[int] | None = None
        #: byte ranges that held a placeholder (``<PATH>``) replaced before parsing: unknown
        self.placeholders: list[tuple[int, int, str]] = []

    def pos(self, byte: int) -> tuple[int, int]:
        import bisect

        li = bisect.bisect_right(self.line_starts, byte) - 1
        start = self.line_starts[li]
        if self._cont is None:
            self._cont = [m.start() for m in re.finditer(rb"[\x80-\xbf]", self.data)] if not self.data.isascii() else []
        col = byte - start
        if self._cont:
            col -= bisect.bisect_left(self._cont, byte) - bisect.bisect_left(self._cont, start)
        return li + 1 + self.line_offset, col + 1 + self.col_offset

    def placeholder_at(self, a: int, b: int) -> str | None:
        """The placeholder text replaced in ``[a, b)``, if any."""
        for pa, pb, text in self.placeholders:
            if pa < b and a < pb:
                return text
        return None

    #: every position maps to this span (text that `eval` re-parses)
    fixed: Span | None = None

    def span(self, a: int, b: int) -> Span:
        if self.fixed is not None:
            return self.fixed
        l1, c1 = self.pos(a)
        l2, c2 = self.pos(max(a, b))
        return Span(self.path, l1, c1, l2, c2)


class Piece(EqRecord):
    _fields = ("text", "src", "start", "known", "why", "exact", "splat")
    text: str
    src: Src | None
    start: int  # byte offset of text[0] in src (exact only when `exact`)
    known: bool
    why: str
    exact: bool  # text is the verbatim source bytes from `start`
    splat: bool  # an unknown unquoted expansion (may be several words)

    def __init__(
        self,
        text: str,
        src: Src | None = None,
        start: int = 0,
        known: bool = True,
        why: str = "",
        exact: bool = True,
        splat: bool = False,
    ) -> None:
        self.text = text
        self.src = src
        self.start = start
        self.known = known
        self.why = why
        self.exact = exact
        self.splat = splat

    def span(self, a: int = 0, b: int | None = None) -> Span | None:
        if self.src is None:
            return None
        if b is None:
            b = len(self.text)
        if self.exact:
            ba = self.start + len(self.text[:a].encode())
            bb = self.start + len(self.text[:b].encode())
            return self.src.span(ba, bb)
        return self.src.span(self.start, self.start + 1)


def unknown_piece(why: str, src: Src | None = None, start: int = 0) -> Piece:
    return Piece(UNKNOWN, src, start, False, why, False)


class Var(EqRecord):
    _fields = ("kind", "pieces", "items", "exported", "span", "unknown_why")
    kind: str  # "scalar" | "array"
    pieces: list[Piece]  # scalar
    items: list[list[Piece]]  # array
    exported: bool
    span: Span | None  # the assignment
    unknown_why: str  # the whole variable is unknown (e.g. assigned in a loop)

    def __init__(
        self,
        kind: str,
        pieces: list[Piece] | None = None,
        items: list[list[Piece]] | None = None,
        exported: bool = False,
        span: Span | None = None,
        unknown_why: str = "",
    ) -> None:
        self.kind = kind
        self.pieces = [] if pieces is None else pieces
        self.items = [] if items is None else items
        self.exported = exported
        self.span = span
        self.unknown_why = unknown_why

    def text(self) -> str:
        if self.unknown_why:
            return UNKNOWN
        if self.kind == "array":
            return "\x01".join("".join(p.text for p in it) for it in self.items)
        return "".join(p.text for p in self.pieces)

    def same(self, other: "Var | None") -> bool:
        if other is None:
            return False
        t = self.text()
        return UNKNOWN not in t and self.kind == other.kind and t == other.text()

    def as_value(self, name: str) -> Value:
        t = self.text()
        if UNKNOWN in t:
            why = self.unknown_why or next((p.why for p in self.pieces if not p.known), "unknown")
            return Value.unknown(why, self.span, name)
        return Value(t.replace("\x01", " "), self.span, True, "", name)


def _is_splat(f: list[Piece]) -> bool:
    return len(f) == 1 and not f[0].known and f[0].splat


def _pieces_text(ps: list[Piece]) -> str:
    return "".join(p.text for p in ps)


class ShellData(EqRecord):
    """What the shell reader saw besides the launches (for file-level rules)."""

    _fields = ("exports", "assignments", "sources", "sources_unresolved", "sbatch", "env", "sbatch_ignored")
    exports: dict[str, Value]  # every export/declare -x, in order
    assignments: list[tuple[str, Value]]  # every NAME=value seen
    sources: list[Value]  # `source X` / `. X`
    sources_unresolved: bool
    sbatch: dict[str, Value]
    env: dict[str, Value]  # exported env at the end of the file
    sbatch_ignored: list[Value]  # `#SBATCH` lines after the first command (sbatch ignores them)

    def __init__(
        self,
        exports: dict[str, Value] | None = None,
        assignments: list[tuple[str, Value]] | None = None,
        sources: list[Value] | None = None,
        sources_unresolved: bool = False,
        sbatch: dict[str, Value] | None = None,
        env: dict[str, Value] | None = None,
        sbatch_ignored: list[Value] | None = None,
    ) -> None:
        self.exports = {} if exports is None else exports
        self.assignments = [] if assignments is None else assignments
        self.sources = [] if sources is None else sources
        self.sources_unresolved = sources_unresolved
        self.sbatch = {} if sbatch is None else sbatch
        self.env = {} if env is None else env
        self.sbatch_ignored = [] if sbatch_ignored is None else sbatch_ignored


def _late_sbatch(root, after: int, src: Src) -> list[Value]:
    """``#SBATCH`` lines at the start of a line after the first command: sbatch stops reading
    directives at the first command, so these are ignored (comments only: heredoc bodies and
    strings are not comment nodes)."""
    out: list[Value] = []
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type == "comment":
            if node.start_byte > after and node.start_point[1] == 0:
                text = node.text.decode("utf-8", "replace").rstrip()
                if re.match(r"#SBATCH\s+-", text):
                    out.append(Value(text, src.span(node.start_byte, node.end_byte), True, "", "#SBATCH"))
            continue
        if node.end_byte > after:
            stack.extend(node.children)
    out.sort(key=lambda v: v.span.line if v.span else 0)
    return out


# -- the evaluator ------------------------------------------------------------------------------
class _Abort(Exception):
    pass


class TooComplex(_Abort):
    """tree-sitter-bash ran past PARSE_CPU_SECONDS on one text."""


#: texts up to this size are parsed from bytes, without the read callback that the CPU budget
#: needs: py-tree-sitter 0.26 leaks memory on some texts parsed through a read callback (about
#: ten times the text per parse; the shell fuzz target grew to 2.6 GB over 100,000 inputs), and
#: tree-sitter's worst known error recovery (``[[x]]`` lines, quadratic) takes about 0.4 s at this
#: size, PARSE_CPU_SECONDS. Larger texts (rare for launch scripts) keep the budget and go through
#: small shared chunks, which keep the leak to about the text's own size per parse
SMALL_TEXT = 16 * 1024
_CHUNK = 256  # bytes per read-callback chunk (see _ts_parse)


def _ts_parse(data: bytes):
    """tree-sitter's parse of ``data``, cancelled (TooComplex) once it has used PARSE_CPU_SECONDS
    of CPU time: a progress callback only runs when the text comes through a read callback (a
    text of at most SMALL_TEXT bytes is parsed whole, within the budget anyway)."""
    import time

    if len(data) <= SMALL_TEXT:
        return _parser().parse(data)

    clock = time.process_time
    deadline = clock() + PARSE_CPU_SECONDS

    # the read callback's results leak in py-tree-sitter 0.26: hand out the same small aligned
    # chunks again and again (a leaked reference to a kept object costs nothing), and only the
    # rare unaligned read a fresh slice up to the next boundary (30 times less than 64 KiB slices)
    chunks = [data[i:i + _CHUNK] for i in range(0, len(data), _CHUNK)]

    def read(offset: int, _point) -> bytes:
        q, r = divmod(offset, _CHUNK)
        if q >= len(chunks):
            return b""
        return chunks[q] if r == 0 else chunks[q][r:]

    def progress(_offset: int, _has_error: bool) -> bool:
        return clock() > deadline

    parser = _parser()
    try:
        return parser.parse(read, progress_callback=progress)
    except ValueError:  # "Parsing failed": cancelled by progress()
        # a cancelled parser resumes the cancelled text on its next parse, whatever text it is
        # given (wrong trees, then memory errors): it must start afresh
        parser.reset()
        raise TooComplex(f"too complex (parsing the shell took over {PARSE_CPU_SECONDS:g} s)") from None


class Evaluator:
    def __init__(self, path: str, abspath: Path | None, root: Path | None = None) -> None:
        self.path = path
        self.abspath = abspath
        self.root = root
        self.vars: dict[str, Var] = {}
        self.functions: dict[str, tuple] = {}
        self.called: set[str] = set()
        self.launches: list = []
        self.data = ShellData()
        self.scheduler: dict[str, Value] = {}
        self.sched_facts = FactMap()
        self.allexport = False
        self.steps = 0
        self.call_depth = 0
        self.sourcing: list[Path] = []
        #: set once a `source` names a file that cannot be read: any variable may have changed
        self.opaque_source = ""
        self.record = True  # record launches (off while evaluating sourced files)
        self.seen_command = False
        self.in_function = 0
        self.calls = 0
        self.call_stack: list[str] = []
        #: statements holding a launch that tree-sitter could not parse
        self.unparsed: list[Span] = []
        #: why the text was not analysed (a parse ran past its budget), else ""
        self.too_complex = ""

    # ---- entry points
    def run_file(self, src: Src) -> None:
        src.data, tree, src.placeholders = parse_repaired(src.data)
        self._sbatch(tree.root_node, src)
        self._stmts(tree.root_node.children, src)
        for name, (node, fsrc) in list(self.functions.items()):
            if name not in self.called:
                saved = self._snapshot()
                self.called.add(name)
                self._call(name, node, fsrc)
                self.vars = saved
        self.data.env = self.exported_env()

    # ---- #SBATCH directives
    def _sbatch(self, root, src: Src) -> None:
        first = None
        for node in root.children:
            if node.type != "comment":
                if node.type not in ("\n",):
                    first = node
                    break
                continue
            text = node.text.decode("utf-8", "replace")
            m = re.match(r"#SBATCH\s+(.*)", text)
            if not m:
                continue
            body = m.group(1).split(" #", 1)[0]
            offset = node.start_byte + len(text[: m.start(1)].encode())
            try:
                toks = list(_tokens_with_pos(body))
            except ValueError:
                continue
            i = 0
            while i < len(toks):
                tok, a, b = toks[i]
                if not tok.startswith("-"):
                    i += 1
                    continue
                if tok.startswith("--"):
                    k, eq, v = tok.partition("=")
                    key = cmdline.norm(k)
                    if eq:
                        va, vb = a + len(k) + 1, b
                    elif i + 1 < len(toks) and not toks[i + 1][0].startswith("-"):
                        v, va, vb = toks[i + 1]
                        i += 1
                    else:
                        v, va, vb = "true", a, b
                else:
                    letter = tok[1:2]
                    key = {"N": "nodes", "n": "ntasks", "G": "gpus", "C": "constraint", "c": "cpus_per_task",
                           "p": "partition", "t": "time", "J": "job_name", "o": "output", "e": "error",
                           "A": "account", "q": "qos", "w": "nodelist"}.get(letter, letter)
                    if len(tok) > 2:
                        v, va, vb = tok[2:].lstrip("="), a + 2, b
                    elif i + 1 < len(toks):
                        v, va, vb = toks[i + 1]
                        i += 1
                    else:
                        v, va, vb = "", a, b
                i += 1
                ba = offset + len(body[:va].encode())
                bb = offset + len(body[:vb].encode())
                sp = src.span(ba, bb)
                val = Value(v, sp, True, "", f"#SBATCH --{key.replace('_', '-')}")
                if PLACEHOLDER_RE.search(v) or "$" in v:
                    val = Value.unknown(f"placeholder {v!r}", sp, val.source)
                self.scheduler[key] = val
        if first is not None:
            self.data.sbatch_ignored = _late_sbatch(root, first.start_byte, src)
        s = self.scheduler
        self.data.sbatch = dict(s)
        nodes = cmdline.int_fact(s.get("nodes"), "#SBATCH --nodes")
        if nodes is not None and not nodes.known and s.get("nodes") is not None and s["nodes"].known:
            txt = str(s["nodes"].value)
            m = re.fullmatch(r"(\d+)-\1", txt)
            if m:
                nodes = Value(int(m.group(1)), s["nodes"].span, True, "", "#SBATCH --nodes")
        if nodes is not None:
            self.sched_facts.add("parallel.nodes", nodes)
        n = nodes.value if nodes is not None and nodes.known else None
        tpn = cmdline.sbatch_tasks_per_node(s, n)
        gpn = cmdline.gpus_per_node(s, "#SBATCH", n, tpn)
        if gpn is not None:
            self.sched_facts.add("hardware.gpus_per_node_requested", gpn)
        gpu = cmdline.gpu_type(s, "#SBATCH")
        if gpu is not None:
            self.sched_facts.add("hardware.gpu", gpu)
        # the variables Slurm defines for the batch script
        def define(name: str, v: Value | None) -> None:
            if v is not None and v.known:
                self.vars[name] = Var("scalar", [Piece(str(v.value), None, 0, True, "", False)],
                                      exported=True, span=v.span)
        if nodes is not None and nodes.known:
            define("SLURM_NNODES", nodes)
            define("SLURM_JOB_NUM_NODES", nodes)
        if tpn is not None and tpn.known:
            define("SLURM_NTASKS_PER_NODE", tpn)
            if n:
                define("SLURM_NTASKS", Value(n * tpn.value, tpn.span, True, "", "#SBATCH"))
        if gpn is not None and gpn.known:
            define("SLURM_GPUS_ON_NODE", gpn)
            define("SLURM_GPUS_PER_NODE", gpn)

    # ---- statements
    def _tick(self) -> None:
        self.steps += 1
        if self.steps > MAX_STEPS:
            raise _Abort()

    def _stmts(self, nodes: Iterable, src: Src) -> None:
        for n in nodes:
            self._stmt(n, src)

    def _stmt(self, node, src: Src) -> None:
        self._tick()
        t = node.type
        if t in ("comment", "\n", ";", "&", ";;", "{", "}", "(", ")", "do", "done", "then", "fi", "esac"):
            return
        if node.has_error and t not in ("program", "compound_statement", "if_statement", "for_statement",
                                        "while_statement", "case_statement", "function_definition",
                                        "do_group", "subshell", "list", "redirected_statement",
                                        "else_clause", "elif_clause", "case_item"):
            self._unparsed(node, src)  # a statement tree-sitter could not parse: never guess
            return
        if t in ("program", "compound_statement", "do_group"):
            self._stmts(node.children, src)
        elif t == "variable_assignment":
            self.seen_command = True
            self._assign(node, src, exported=self.allexport)
        elif t == "variable_assignments":
            for c in node.named_children:
                if c.type == "variable_assignment":
                    self._assign(c, src, exported=self.allexport)
        elif t == "declaration_command":
            self._declaration(node, src)
        elif t == "unset_command":
            for c in node.named_children:
                name = c.text.decode("utf-8", "replace")
                if c.type in ("variable_name", "word"):
                    self.vars.pop(name, None)
        elif t == "command":
            self._command(node, src)
        elif t == "redirected_statement":
            body = node.child_by_field_name("body") or (node.named_children[0] if node.named_children else None)
            if body is not None and body.type not in ("heredoc_redirect", "file_redirect", "herestring_redirect"):
                self._stmt(body, src)
        elif t == "pipeline":
            saved = self._snapshot()
            for c in node.named_children:
                self._stmt(c, src)
            self._merge(saved, [self.vars], covered=False, why="assigned inside a pipeline")
        elif t == "subshell":
            saved = self._snapshot()
            self._stmts(node.children, src)
            self.vars = saved
        elif t == "list":
            kids = [c for c in node.children]
            first = True
            for c in kids:
                if c.type in ("&&", "||"):
                    continue
                if first:
                    self._stmt(c, src)
                    first = False
                else:
                    saved = self._snapshot()
                    self._stmt(c, src)
                    self._merge(saved, [self.vars], covered=False, why="assigned after && or ||")
        elif t == "if_statement":
            self._if(node, src)
        elif t == "case_statement":
            self._case(node, src)
        elif t in ("for_statement", "c_style_for_statement", "while_statement"):
            self._loop(node, src)
        elif t == "function_definition":
            name_node = node.child_by_field_name("name")
            body = node.child_by_field_name("body")
            if name_node is not None and body is not None:
                self.functions[name_node.text.decode("utf-8", "replace")] = (body, src)
        elif t == "negated_command":
            for c in node.named_children:
                self._stmt(c, src)
        # test_command, arithmetic (( )), etc.: nothing to learn

    def _unparsed(self, node, src: Src) -> None:
        """A statement tree-sitter could not parse: the variables it may assign become unknown, a
        ``source`` in it may set anything, and a launch in it is noted (reported by the reader)."""
        text = node.text
        line = src.pos(node.start_byte)[0]
        why = f"assigned in shell that parallint cannot parse (line {line})"
        for m in ASSIGNED_NAME.finditer(text):
            name = m.group(1).decode("utf-8", "replace")
            old = self.vars.get(name)
            self.vars[name] = Var("scalar", [], exported=bool(old and old.exported) or b"export" in text,
                                  span=src.span(node.start_byte, node.end_byte), unknown_why=why)
        if re.search(rb"(?:^|[\s;&|])(?:source|\.)\s", text):
            self.data.sources_unresolved = True
            self.opaque_source = why
        if self.record and src.fixed is None and LAUNCH_TEXT.search(text):
            self.unparsed.append(src.span(node.start_byte, node.end_byte))

    def _snapshot(self) -> dict[str, Var]:
        return dict(self.vars)

    def _merge(self, before: dict[str, Var], branches: list[dict[str, Var]], covered: bool, why: str) -> None:
        """After a construct with several paths: keep a variable only if every path agrees."""
        paths = list(branches) + ([] if covered else [before])
        names = set()
        for b in branches:
            for k, v in b.items():
                if before.get(k) is not v:
                    names.add(k)
        for k in before:
            if any(k not in b for b in branches):
                names.add(k)
        result = dict(before)
        for name in names:
            vals = [p.get(name) for p in paths]
            first = vals[0]
            if first is not None and all(v is first or (v is not None and first.same(v)) for v in vals):
                result[name] = first
            elif all(v is None for v in vals):
                result.pop(name, None)
            else:
                exported = any(v is not None and v.exported for v in vals)
                span = next((v.span for v in vals if v is not None and v is not before.get(name)), None)
                result[name] = Var("scalar", [], exported=exported, span=span, unknown_why=f"{name} {why}")
        self.vars = result

    def _if(self, node, src: Src) -> None:
        # condition: everything before the first `then`
        kids = node.children
        idx = 0
        while idx < len(kids) and kids[idx].type != "then":
            if kids[idx].type not in ("if",):
                self._stmt(kids[idx], src)
            idx += 1
        before = self._snapshot()
        branches = []
        body = []
        covered = False
        for c in kids[idx + 1:]:
            if c.type in ("elif_clause", "else_clause", "fi"):
                break
            body.append(c)
        self.vars = dict(before)
        starts = [len(self.launches)]
        self._stmts(body, src)
        branches.append(self.vars)
        for c in kids:
            if c.type in ("elif_clause", "else_clause"):
                starts.append(len(self.launches))
            if c.type == "elif_clause":
                self.vars = dict(before)
                parts = c.children
                j = 0
                while j < len(parts) and parts[j].type != "then":
                    if parts[j].type != "elif":
                        self._stmt(parts[j], src)
                    j += 1
                self._stmts(parts[j + 1:], src)
                branches.append(self.vars)
            elif c.type == "else_clause":
                covered = True
                self.vars = dict(before)
                self._stmts(c.children[1:], src)
                branches.append(self.vars)
        self.vars = before
        self._one_per_branch(starts)
        self._merge(before, branches, covered, f"assigned in an if at line {src.pos(node.start_byte)[0]}")

    def _one_per_branch(self, starts: list[int]) -> None:
        """Only one branch of an if runs: a launch that repeats, word for word, a launch of an
        earlier branch (the same command with and without ``| tee $LOG``, ``$CMD`` run in both
        branches) is the same job, and is kept once, at its first branch."""
        if len(starts) < 2 or len(self.launches) == starts[1]:
            return
        ends = starts[1:] + [len(self.launches)]
        kept: list = self.launches[:starts[0]]
        earlier: set = set()
        for a, b in zip(starts, ends):
            mine = self.launches[a:b]
            sigs = [_launch_signature(la) for la in mine]
            kept.extend(la for la, sig in zip(mine, sigs) if sig is None or sig not in earlier)
            earlier.update(sig for sig in sigs if sig is not None)
        self.launches = kept

    def _case(self, node, src: Src) -> None:
        before = self._snapshot()
        branches = []
        covered = False
        for item in node.named_children:
            if item.type != "case_item":
                continue
            self.vars = dict(before)
            pats = []
            stmts = []
            after_paren = False
            for c in item.children:
                if c.type == ")":
                    after_paren = True
                    continue
                if not after_paren:
                    pats.append(c)
                else:
                    stmts.append(c)
            if any(p.text in (b"*", b"*)") for p in pats):
                covered = True
            self._stmts(stmts, src)
            branches.append(self.vars)
        self.vars = before
        self._merge(before, branches, covered, f"assigned in a case at line {src.pos(node.start_byte)[0]}")

    def _loop(self, node, src: Src) -> None:
        before = self._snapshot()
        var = node.child_by_field_name("variable")
        if var is not None:
            name = var.text.decode("utf-8", "replace")
            self.vars[name] = Var("scalar", [], span=src.span(var.start_byte, var.end_byte),
                                  unknown_why=f"loop variable {name}")
        header_vars: set[str] = set()
        if node.type == "c_style_for_statement":  # `for (( i=1; i<N; i++ ))`: i changes each pass
            for fld in ("initializer", "update"):
                stack = [c for c in node.children_by_field_name(fld)]
                while stack:
                    n = stack.pop()
                    if n.type == "variable_name":
                        header_vars.add(n.text.decode("utf-8", "replace"))
                    stack.extend(n.children)
            for name in header_vars:
                self.vars[name] = Var("scalar", [], span=src.span(node.start_byte, node.end_byte),
                                      unknown_why=f"loop variable {name}")
        body = node.child_by_field_name("body")
        for c in node.children:
            if c is body:
                continue
            if node.type == "while_statement" and c.type not in ("while", "until", "do_group"):
                self._stmt(c, src)
        if body is not None:
            self._stmt(body, src)
        self._merge(before, [self.vars], covered=False,
                    why=f"assigned in a loop at line {src.pos(node.start_byte)[0]}")
        # the loop variable itself stays unknown after the loop
        if var is not None:
            name = var.text.decode("utf-8", "replace")
            self.vars[name] = Var("scalar", [], unknown_why=f"loop variable {name}")
        for name in header_vars:
            self.vars[name] = Var("scalar", [], unknown_why=f"loop variable {name}")

    # ---- assignments
    def _assign(self, node, src: Src, exported: bool = False, array_hint: bool = False,
                local: bool = False) -> None:
        name_node = node.child_by_field_name("name") or (node.named_children[0] if node.named_children else None)
        if name_node is None:
            return
        raw_name = name_node.text.decode("utf-8", "replace")
        if name_node.type == "subscript":
            base = name_node.child_by_field_name("name")
            if base is not None:
                n = base.text.decode("utf-8", "replace")
                old = self.vars.get(n)
                self.vars[n] = Var("array", [], exported=bool(old and old.exported),
                                   span=src.span(node.start_byte, node.end_byte),
                                   unknown_why=f"{n} has an element assigned")
            return
        name = raw_name
        op = None
        for c in node.children:
            if c.type in ("=", "+="):
                op = c.type
        value = node.child_by_field_name("value")
        old = self.vars.get(name)
        keep_export = exported or bool(old and old.exported)
        span = src.span(node.start_byte, node.end_byte)
        if value is None:
            self.vars[name] = Var("scalar", [], exported=keep_export, span=span)
        elif value.type == "array":
            items: list[list[Piece]] = []
            bad = ""
            for c in value.named_children:
                if c.type == "comment":
                    continue
                fields = self._expand(c, src)
                for f in fields:
                    if f is None or _is_splat(f):
                        bad = "unknown array element"
                        continue
                    items.append(f)
            if op == "+=" and old is not None:
                if old.kind == "array" and not old.unknown_why:
                    items = old.items + items
                else:
                    bad = bad or f"{name} appended to an unknown value"
            self.vars[name] = Var("array", [], items, exported=keep_export, span=span, unknown_why=bad)
        else:
            pieces = self._expand_one(value, src)
            if op == "+=":
                if old is None:
                    pass
                elif old.kind == "array" and not old.unknown_why:
                    self.vars[name] = Var("array", [], old.items + [pieces], exported=keep_export, span=span)
                    return
                elif old.unknown_why:
                    pieces = [unknown_piece(old.unknown_why)] + pieces
                else:
                    pieces = old.pieces + pieces
            self.vars[name] = Var("scalar", pieces, exported=keep_export, span=span)
        v = self.vars[name]
        if len(v.pieces) > MAX_PIECES or len(v.items) > MAX_PIECES or \
                sum(len(p.text) for p in v.pieces) > MAX_VALUE_CHARS:
            v = self.vars[name] = Var("scalar", [], exported=v.exported, span=v.span,
                                      unknown_why=f"{name} grows too large to follow")
        if self.record:
            self.data.assignments.append((name, v.as_value(name)))
        if keep_export and self.record and not local:
            self.data.exports[name] = v.as_value(name)

    def _declaration(self, node, src: Src) -> None:
        self.seen_command = True
        kw = node.children[0].type if node.children else ""
        flags = ""
        exported = kw == "export"
        for c in node.children[1:]:
            if c.type == "word" and c.text.startswith(b"-"):
                flags += c.text.decode("utf-8", "replace")[1:]
                if "x" in flags:
                    exported = True
                continue
            if c.type == "variable_assignment":
                self._assign(c, src, exported=exported or self.allexport, local=kw == "local")
            elif c.type == "variable_name" and exported:
                name = c.text.decode("utf-8", "replace")
                v = self.vars.get(name)
                if v is not None:
                    v.exported = True
                    if self.record:
                        self.data.exports[name] = v.as_value(name)
                else:
                    self.vars[name] = Var("scalar", [], exported=True,
                                          span=src.span(c.start_byte, c.end_byte),
                                          unknown_why=f"environment variable {name}")

    # ---- commands
    def _command(self, node, src: Src) -> None:
        self.seen_command = True
        prefix_env: list = []
        name_node = None
        args = []
        for c in node.children:
            if c.type == "variable_assignment" and name_node is None:
                prefix_env.append(c)
            elif c.type == "command_name":
                name_node = c
            elif name_node is not None and c.is_named and c.type not in ("file_redirect", "heredoc_redirect",
                                                                           "herestring_redirect", "comment"):
                args.append(c)
        if name_node is None:
            for c in prefix_env:
                self._assign(c, src, exported=self.allexport)
            return
        # expand the words; nodes that touch (tree-sitter splits some words such as `a_$B.log`)
        # form one shell word, which is then unknown
        words: list[Word] = []
        groups: list[list] = []
        for c in [name_node] + args:
            if groups and c.start_byte == groups[-1][-1].end_byte:
                groups[-1].append(c)
            else:
                groups.append([c])
        for g in groups:
            if len(g) > 1 or (g[0].type == "concatenation" and
                               any(not k.is_named and k.type == "$" for k in g[0].children)):
                words.append(Word.unknown("a word parallint cannot split", src.span(g[0].start_byte, g[-1].end_byte)))
                continue
            words.extend(self._words(g[0], src))
            if len(words) > MAX_WORDS:
                return  # a generated or runaway command (thousands of words): not a launch to follow
        if not words:
            return
        w0 = words[0]
        cmd = w0.text if w0.known else None
        if cmd in (":", "true") :
            return  # `: ${X:=8}` assignments happened during expansion
        if cmd == "eval":
            if len(words) > 1 and self.call_depth < MAX_CALL_DEPTH:
                text = " ".join(self._eval_text(w) for w in words[1:])
                sub = Src(src.path, text.encode("utf-8", "replace"), abspath=src.abspath)
                sub.fixed = src.span(node.start_byte, node.start_byte + 4)
                self.call_depth += 1
                try:
                    tree = _ts_parse(sub.data)
                    self._stmts(tree.root_node.children, sub)
                finally:
                    self.call_depth -= 1
            return
        if cmd in ("source", "."):
            self._source(words[1:], src)
            return
        if cmd == "set":
            for w in words[1:]:
                if w.known and w.text.startswith("-") and "a" in w.text[1:] and not w.text.startswith("--"):
                    self.allexport = True
                if w.known and w.text.startswith("+") and "a" in w.text[1:]:
                    self.allexport = False
                if w.known and w.text in ("-o",):
                    pass
            return
        if cmd in ("read", "mapfile", "readarray", "getopts", "printf") and len(words) > 1:
            for w in words[1:]:
                if w.known and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", w.text):
                    if cmd == "printf" and not any(x.text == "-v" for x in words):
                        break
                    self.vars[w.text] = Var("scalar", [], unknown_why=f"{w.text} read at run time")
            return
        if cmd in ("shift", "cd", "echo", "exit", "return", "mkdir", "rm", "cp", "mv", "ls", "cat", "sleep",
                   "wait", "trap", "ulimit", "module", "ml", "pushd", "popd", "which", "pip", "git", "sed", "awk",
                   "grep", "tee", "chmod", "touch", "wget", "curl", "conda", "nvidia-smi", "hostname"):
            if cmd == "conda" and len(words) > 1 and words[1].text == "run":
                pass
            else:
                return
        if cmd in self.functions:
            self.calls += 1
            if self.call_depth >= MAX_CALL_DEPTH or self.calls > MAX_CALLS or cmd in self.call_stack:
                return  # recursion is not followed: a recursive function's launches are read once
            fnode, fsrc = self.functions[cmd]
            self.called.add(cmd)
            self._call(cmd, fnode, fsrc)
            return
        if not self.record:
            return
        env = self.exported_env()
        for c in prefix_env:
            name_n = c.child_by_field_name("name")
            value_n = c.child_by_field_name("value")
            if name_n is None:
                continue
            pieces = self._expand_one(value_n, src) if value_n is not None else []
            v = Var("scalar", pieces, exported=True, span=src.span(c.start_byte, c.end_byte))
            env[name_n.text.decode("utf-8", "replace")] = v.as_value(name_n.text.decode("utf-8", "replace"))
        ctx = cmdline.Context(env=env, scheduler=dict(self.scheduler), scheduler_facts=self.sched_facts)
        span = src.span(node.start_byte, node.end_byte)
        span = Span(span.path, span.line, span.column, span.line, span.column + len(words[0].text))
        try:
            la = cmdline.parse_command(words, ctx, span)
        except (ValueError, TypeError, IndexError, KeyError):
            la = None
        if la is not None and len(self.launches) < MAX_LAUNCHES:
            self.launches.append(la)
        elif not self.scheduler:
            self._run_script(words, env, src)

    def _run_script(self, words: list[Word], env: dict[str, Value], src: Src) -> None:
        """``NGPU=2 ./run_train.sh`` / ``bash run.sh``: the launches of a script this one runs, evaluated
        with the variables this command hands it (exported ones and the command's own prefix)."""
        i = 0
        if words[0].known and words[0].text.rsplit("/", 1)[-1] in ("bash", "sh"):
            i = 1
            if i < len(words) and words[i].known and words[i].text.startswith("-"):
                return  # `bash -c`, `bash -x script`: handled elsewhere or not worth guessing
        if i >= len(words) or not words[i].known:
            return
        name = words[i].text
        if not (name.endswith((".sh", ".bash")) or (i == 0 and name.startswith("./"))):
            return
        target = self._resolve(words[i], src)
        if target is None or target in _RUNNING or len(_RUNNING) >= MAX_SOURCE_DEPTH:
            return
        if self.abspath is not None and target == _resolved(self.abspath):
            return
        from parallint.util.boundary import read_inside

        got = read_inside(target, self.abspath, 64 * MAX_BYTES)
        if got is None:
            return  # outside the repository (or not a regular file): not read
        data = got[:MAX_BYTES]
        if b"\x00" in data[:8192]:
            return
        _RUNNING.append(target)
        try:
            ev = evaluate(data, _display_path(self.path, self.abspath, target), target, env=env)
        finally:
            _RUNNING.pop()
        self.launches.extend(ev.launches)

    def _eval_text(self, w: Word) -> str:
        """A word given to ``eval`` as shell text; each unknown part becomes a reference to a
        variable that is unknown for the same reason (unquoted: it may be any number of words)."""
        if w.known:
            return w.text
        out = []
        for k, seg in enumerate(w.segs):
            part = w.text[seg.start:seg.end]
            if UNKNOWN not in part:
                out.append(part)
                continue
            name = f"__parallint_unknown_{len(self.vars)}_{k}"
            self.vars[name] = Var("scalar", [], unknown_why=seg.why or "unknown")
            out.append("${" + name + "}")
        text = "".join(out)
        if UNKNOWN in text:  # segments that do not cover the word: give up on it
            name = f"__parallint_unknown_{len(self.vars)}"
            self.vars[name] = Var("scalar", [], unknown_why=w.why())
            return "${" + name + "}"
        return text

    def _call(self, name: str, body, src: Src) -> None:
        self.call_depth += 1
        self.in_function += 1
        self.call_stack.append(name)
        saved_pos = {k: self.vars.get(k) for k in ("@", "*", "#")}
        try:
            self._stmt(body, src)
        finally:
            self.call_stack.pop()
            self.call_depth -= 1
            self.in_function -= 1
            for k, v in saved_pos.items():
                if v is None:
                    self.vars.pop(k, None)
                else:
                    self.vars[k] = v

    def _source(self, words: list[Word], src: Src) -> None:
        if not words:
            return
        w = words[0]
        if self.record:
            self.data.sources.append(w.value(0, "source"))
        target = self._resolve(w, src)
        if target is not None and (target in self.sourcing or
                                   (self.abspath is not None and target == _resolved(self.abspath))):
            return  # a cycle: the file is being read already
        if target is None or len(self.sourcing) >= MAX_SOURCE_DEPTH:
            self._opaque_source(w)
            return
        from parallint.util.boundary import read_inside

        got = read_inside(target, self.abspath, 64 * MAX_BYTES)
        if got is None:  # outside the repository, not a regular file, or unreadable
            self._opaque_source(w)
            return
        data = got[:MAX_BYTES]
        disp = _display_path(self.path, self.abspath, target)
        sub = Src(disp, data, abspath=target)
        self.sourcing.append(target)
        rec = self.record
        self.record = False
        try:
            sub.data, tree, sub.placeholders = parse_repaired(data)
            self._stmts(tree.root_node.children, sub)
        finally:
            self.record = rec
            self.sourcing.pop()

    def _opaque_source(self, w: Word) -> None:
        """A sourced file parallint cannot read may set any variable: every variable known so far,
        and every `${X:-default}` of a variable not assigned since, becomes unknown."""
        self.data.sources_unresolved = True
        why = f"may be set by `source {w.text if w.known else '...'}`, which parallint cannot read"
        self.opaque_source = why
        for name, var in list(self.vars.items()):
            if not name.isdigit() and name not in ("@", "*", "#"):
                self.vars[name] = Var(var.kind, exported=var.exported, span=var.span, unknown_why=why)

    def _resolve(self, w: Word, src: Src) -> Path | None:
        if not w.known or not w.text:
            return None
        p = Path(os.path.expanduser(w.text))  # never raises on an unknown `~user`
        bases = []
        if src.abspath is not None:
            bases.append(src.abspath.parent)
        if self.abspath is not None:
            bases.append(self.abspath.parent)
        if self.root is not None:
            bases.append(self.root)
        cands = [p] if p.is_absolute() else [b / p for b in bases]
        for c in cands:
            try:
                if c.is_file():
                    return c.resolve()
            except OSError:
                continue
        return None

    def exported_env(self) -> dict[str, Value]:
        out = {}
        for k, v in self.vars.items():
            if v.exported and not k.startswith("SLURM_"):
                out[k] = v.as_value(k)
        return out

    # ---- words
    def _words(self, node, src: Src) -> list[Word]:
        """A command word -> the words after expansion and splitting."""
        out = []
        for f in self._expand(node, src, keep_splat=True):
            if f is None or _is_splat(f):
                why = f[0].why if f else "unknown expansion"
                out.append(Word.unknown(why, src.span(node.start_byte, node.end_byte), splat=True))
                continue
            out.append(_to_word(f, src.span(node.start_byte, node.end_byte)))
        return out

    def _expand_one(self, node, src: Src) -> list[Piece]:
        """An assignment value: no word splitting."""
        chunks = self._chunks(node, src, quoted=True)
        ps: list[Piece] = []
        for kind, data in chunks:
            if kind == "array":
                for k, item in enumerate(data):
                    if k:
                        ps.append(Piece(" ", None, 0, True, "", False))
                    ps.extend(item)
            else:
                ps.extend(data)
        return _placeholders(ps)

    def _expand(self, node, src: Src, keep_splat: bool = False) -> list[list[Piece] | None]:
        """A word -> fields (lists of pieces). None is an unknown splat (any number of words)."""
        chunks = self._chunks(node, src, quoted=False)
        fields: list[list[Piece] | None] = []
        cur: list[Piece] = []
        started = False
        for kind, data in chunks:
            if kind == "lit":
                cur.extend(data)
                started = True
            elif kind == "split":
                # unquoted expansion: split on whitespace; an unknown part standing alone may be
                # any number of words (a splat)
                data = [p if p.known else Piece(p.text, p.src, p.start, False, p.why, False, True) for p in data]
                parts = _split_pieces(data)
                if not parts:
                    continue
                lead_ws = _pieces_text(data)[:1].isspace()
                trail_ws = _pieces_text(data)[-1:].isspace()
                if lead_ws and started:
                    fields.append(cur)
                    cur = []
                    started = False
                for k, part in enumerate(parts):
                    if k > 0:
                        fields.append(cur)
                        cur = []
                    cur.extend(part)
                    started = True
                if trail_ws:
                    fields.append(cur)
                    cur = []
                    started = False
            elif kind == "array":
                for k, item in enumerate(data):
                    if k > 0:
                        fields.append(cur)
                        cur = []
                    cur.extend(item)
                    started = True
            elif kind == "splitarray":
                for item in data:
                    for part in _split_pieces(item):
                        if started:
                            fields.append(cur)
                            cur = []
                        cur.extend(part)
                        started = True
                if started:
                    fields.append(cur)
                    cur = []
                    started = False
        if started:
            fields.append(cur)
        if len(fields) > MAX_WORDS:
            # a runaway expansion: no command of this many words is followed (see MAX_WORDS), and a
            # list this long is not iterated word by word; the rest is any number of words
            del fields[MAX_WORDS:]
            fields.append(None)
        out: list[list[Piece] | None] = []
        for f in fields:
            if f is not None and len(f) == 1 and not f[0].known and f[0].splat:
                out.append(f)  # a splat: see _is_splat
            else:
                out.append(_placeholders(f) if f is not None else None)
        return out

    def _chunks(self, node, src: Src, quoted: bool) -> list[tuple[str, list]]:
        """("lit", pieces) | ("split", pieces) | ("array", [pieces...]) | ("splitarray", [...])."""
        t = node.type
        if t in ("word", "number", "extglob_pattern", "special_variable_name", "variable_name",
                 "command_name", "test_operator", "regex"):
            if t == "command_name":
                out = []
                for c in node.children:
                    out.extend(self._chunks(c, src, quoted))
                return out
            return [("lit", _literal(node, src, unquoted=not quoted))]
        if t == "raw_string":
            raw = node.text.decode("utf-8", "replace")
            return [("lit", [Piece(raw[1:-1], src, node.start_byte + 1)])]
        if t == "ansi_c_string":
            raw = node.text.decode("utf-8", "replace")[2:-1]
            try:
                txt = raw.encode().decode("unicode_escape")
            except UnicodeDecodeError:
                txt = raw
            return [("lit", [Piece(txt, src, node.start_byte + 2, exact=txt == raw)])]
        if t in ("string", "translated_string"):
            out: list[tuple[str, list]] = []
            kids = node.children
            pos = node.start_byte + (2 if t == "translated_string" else 1)
            end = node.end_byte - 1
            for c in kids:
                if c.type == '"' or c.type == '$"':
                    continue
                if c.start_byte > pos:
                    out.append(("lit", _dq_literal(src, pos, c.start_byte)))
                if c.type == "string_content":
                    out.append(("lit", _dq_literal(src, c.start_byte, c.end_byte)))
                else:
                    sub = self._chunks(c, src, quoted=True)
                    for kind, data in sub:
                        out.append(("lit" if kind == "split" else kind, data))
                pos = max(pos, c.end_byte)
            if pos < end:
                out.append(("lit", _dq_literal(src, pos, end)))
            if not out:
                out.append(("lit", [Piece("", src, node.start_byte + 1)]))
            return out
        if t == "concatenation":
            out = []
            for c in node.children:
                out.extend(self._chunks(c, src, quoted))
            return out
        if t == "simple_expansion":
            name_node = node.named_children[0] if node.named_children else None
            name = name_node.text.decode("utf-8", "replace") if name_node is not None else ""
            return self._var_chunks(name, src, node, quoted)
        if t == "expansion":
            return self._expansion(node, src, quoted)
        if t == "arithmetic_expansion":
            val = self._arith_node(node.named_children[0] if node.named_children else None, src)
            if val is None:
                return [("lit", [unknown_piece("arithmetic on unknown values", src, node.start_byte)])]
            return [("lit", [Piece(str(val), src, node.start_byte, exact=False)])]
        if t in ("command_substitution", "process_substitution"):
            return [("split" if not quoted else "lit",
                     [unknown_piece("command substitution", src, node.start_byte)])]
        if t == "brace_expression":
            return [("lit", [unknown_piece("brace expansion", src, node.start_byte)])]
        return [("lit", [unknown_piece(f"unsupported shell syntax ({t})", src, node.start_byte)])]

    def _var_chunks(self, name: str, src: Src, node, quoted: bool, index: str | None = None):
        v = self._lookup(name)
        if v is None:
            why = (f"positional parameter ${name}" if name.isdigit() or name in ("@", "*", "#")
                   else f"environment variable {name}")
            return [("split" if not quoted else "lit", [unknown_piece(why, src, node.start_byte)])]
        if v.unknown_why:
            return [("split" if not quoted else "lit", [unknown_piece(v.unknown_why, src, node.start_byte)])]
        if v.kind == "array":
            if index in ("@", "*"):
                if quoted and index == "@":
                    return [("array", [list(i) for i in v.items])]
                if quoted:
                    joined: list[Piece] = []
                    for k, it in enumerate(v.items):
                        if k:
                            joined.append(Piece(" ", None, 0, True, "", False))
                        joined.extend(it)
                    return [("lit", joined)]
                return [("splitarray", [list(i) for i in v.items])]
            idx = 0
            if index is not None:
                if not index.isdigit():
                    return [("lit", [unknown_piece(f"{name}[{index}]", src, node.start_byte)])]
                idx = int(index)
            if idx < len(v.items):
                return [("lit" if quoted else "split", list(v.items[idx]))]
            return [("lit", [])]
        if index is not None and index not in ("0", "@", "*"):
            return [("lit", [])]
        return [("lit" if quoted else "split", list(v.pieces))]

    def _lookup(self, name: str) -> Var | None:
        return self.vars.get(name)

    def _expansion(self, node, src: Src, quoted: bool):
        kids = node.children
        inner = [c for c in kids if c.type not in ("${", "}")]
        if not inner:
            return [("lit", [unknown_piece("empty expansion", src, node.start_byte)])]
        prefix = ""
        if inner[0].type in ("#", "!"):
            prefix = inner[0].type
            inner = inner[1:]
        if not inner:
            return [("lit", [unknown_piece("unsupported expansion", src, node.start_byte)])]
        target = inner[0]
        index = None
        if target.type == "subscript":
            nm = target.child_by_field_name("name")
            ix = target.child_by_field_name("index")
            name = nm.text.decode("utf-8", "replace") if nm is not None else ""
            index = ix.text.decode("utf-8", "replace") if ix is not None else None
        elif target.type in ("variable_name", "special_variable_name", "word", "number"):
            name = target.text.decode("utf-8", "replace")
        else:
            return [("lit", [unknown_piece("unsupported expansion", src, node.start_byte)])]
        rest = inner[1:]
        if prefix == "!":
            return [("lit", [unknown_piece("indirect expansion", src, node.start_byte)])]
        if prefix == "#":
            v = self._lookup(name)
            if v is None or v.unknown_why or any(not p.known for p in v.pieces):
                return [("lit", [unknown_piece(f"length of {name}", src, node.start_byte)])]
            n = len(v.items) if (v.kind == "array" and index in ("@", "*")) else len(_pieces_text(v.pieces))
            return [("lit", [Piece(str(n), src, node.start_byte, exact=False)])]
        if not rest:
            return self._var_chunks(name, src, node, quoted, index)
        op = rest[0].text.decode("utf-8", "replace") if not rest[0].is_named else ""
        operand = [c for c in rest[1:]]
        v = self._lookup(name)
        is_set = v is not None
        is_null = v is None or (not v.unknown_why and v.kind == "scalar" and _pieces_text(v.pieces) == "")
        unknown_state = v is not None and (v.unknown_why or any(not p.known for p in v.pieces))
        if v is None and (name.isdigit() or name in ("@", "*") or is_runtime_var(name) or self.opaque_source):
            unknown_state = True  # positional parameters and scheduler-set variables: a default
            # is only what runs when they are absent, and they are usually present
        if op in (":-", "-", ":=", "=", ":?", "?", ":+", "+"):
            colon = op.startswith(":")
            use_default = (not is_set) or (colon and is_null)
            if op in (":+", "+"):
                if unknown_state:
                    return [("lit", [unknown_piece(f"{name} may or may not be set", src, node.start_byte)])]
                if use_default:
                    return [("lit", [])]
                return self._operand_chunks(operand, src, quoted, node)
            if unknown_state and v is not None:
                return self._var_chunks(name, src, node, quoted, index)
            if unknown_state and v is None:
                if self.opaque_source and not name.isdigit():
                    return [("lit" if quoted else "split",
                             [unknown_piece(self.opaque_source, src, node.start_byte)])]
                if is_runtime_var(name):
                    return [("lit" if quoted else "split",
                             [unknown_piece(f"{name} is set by the scheduler or launcher at run time",
                                            src, node.start_byte)])]
                # a positional parameter with a default: the default is what the script states
            if use_default:
                chunks = self._operand_chunks(operand, src, quoted, node)
                if op in (":=", "="):
                    ps: list[Piece] = []
                    for kind, data in chunks:
                        if kind in ("lit", "split"):
                            ps.extend(data)
                    self.vars[name] = Var("scalar", ps, exported=bool(v and v.exported),
                                          span=src.span(node.start_byte, node.end_byte))
                    if self.record:
                        self.data.assignments.append((name, self.vars[name].as_value(name)))
                if op in (":?", "?"):
                    return [("lit", [unknown_piece(f"{name} required", src, node.start_byte)])]
                return chunks
            return self._var_chunks(name, src, node, quoted, index)
        # substitutions, case changes, substrings: only when everything is known
        if v is None or unknown_state or v.kind == "array":
            return [("lit", [unknown_piece(f"expansion of {name}", src, node.start_byte)])]
        text = _pieces_text(v.pieces)
        ops = "".join(c.text.decode("utf-8", "replace") for c in rest)
        try:
            res = _string_op(text, op, ops[len(op):])
        except Exception:  # noqa: BLE001 - any odd operand: unknown
            res = None
        if res is None:
            return [("lit", [unknown_piece(f"expansion of {name}", src, node.start_byte)])]
        return [("lit" if quoted else "split", [Piece(res, src, node.start_byte, exact=False)])]

    def _operand_chunks(self, operand, src: Src, quoted: bool, node):
        out = []
        for c in operand:
            for kind, data in self._chunks(c, src, quoted=True):
                if kind == "lit" and not quoted and c.type not in ("string", "raw_string"):
                    kind = "split"
                out.append((kind, data))
        if not out:
            out.append(("lit", []))
        return out

    # ---- arithmetic
    def _arith_node(self, node, src: Src, depth: int = 0):
        if node is None or depth > 50:
            return None
        t = node.type
        if t == "number":
            txt = node.text.decode("utf-8", "replace")
            try:
                return int(txt, 0)
            except ValueError:
                return None
        if t in ("variable_name", "word"):
            name = node.text.decode("utf-8", "replace")
            if name.isdigit():
                return int(name)
            return self._int_var(name)
        if t in ("simple_expansion", "expansion"):
            chunks = self._chunks(node, src, quoted=True)
            txt = "".join(_pieces_text(d) if k in ("lit", "split") else "" for k, d in chunks)
            if UNKNOWN in txt:
                return None
            try:
                return int(txt.strip())
            except ValueError:
                return self._int_var(txt.strip()) if txt.strip() else None
        if t == "parenthesized_expression":
            kids = node.named_children
            return self._arith_node(kids[0], src, depth + 1) if kids else None
        if t == "unary_expression":
            kids = node.children
            if len(kids) == 2:
                v = self._arith_node(kids[1], src, depth + 1)
                op = kids[0].type
                if v is None:
                    return None
                return -v if op == "-" else v if op == "+" else None
            return None
        if t == "binary_expression":
            left = node.child_by_field_name("left")
            right = node.child_by_field_name("right")
            opn = node.child_by_field_name("operator")
            op = opn.type if opn is not None else ""
            a = self._arith_node(left, src, depth + 1)
            b = self._arith_node(right, src, depth + 1)
            if a is None or b is None:
                return None
            try:
                if op == "+":
                    return a + b
                if op == "-":
                    return a - b
                if op == "*":
                    return a * b
                if op == "/":
                    return int(a / b) if b else None
                if op == "%":
                    return a - b * int(a / b) if b else None
                if op == "**":
                    return a ** b if 0 <= b < 64 else None
            except (OverflowError, ZeroDivisionError):
                return None
            return None
        return None

    def _int_var(self, name: str):
        v = self._lookup(name)
        if v is None:
            return None
        if v.unknown_why or v.kind != "scalar":
            return None
        txt = _pieces_text(v.pieces).strip()
        if UNKNOWN in txt:
            return None
        if txt == "":
            return 0
        try:
            return int(txt, 0)
        except ValueError:
            return None


# -- helpers ------------------------------------------------------------------------------------
def _first_error(node):
    """The first ERROR or MISSING node under ``node`` in document order (iterative)."""
    stack = [node]
    while stack:
        n = stack.pop()
        if n.type == "ERROR" or n.is_missing:
            return n
        kids = [c for c in n.children if c.has_error or c.is_missing]
        if not kids and n.has_error:
            return n
        stack.extend(reversed(kids))
    return None


#: ``\<`` or ``\>`` as a word of its own inside ``[ ... ]``: test's string comparison
ESCAPED_COMPARE = re.compile(rb"(?<=[ \t])\\[<>](?=[ \t])(?=[^\n]*\])")


def parse_repaired(data: bytes):
    r"""Parse shell text; where tree-sitter cannot, replace what a template leaves for the user to
    fill in and parse again. Every replacement keeps the byte length, so positions stay exact.

    - ``NAME=<placeholder> (e.g., /357m)`` and ``--opt=<placeholder>`` (Megatron's example scripts):
      the placeholder is filled with ``X`` and recorded; its value is unknown when evaluated;
    - a line-continuation backslash at the very end of the file (bash ignores it);
    - an inline comment written as an empty command substitution, `` `# QLoRA options` `` between
      the continued lines of a command: it expands to nothing, so it is blanked;
    - a string comparison in a test, ``[ "$v" \< "3.0.0" ]`` (tree-sitter-bash takes ``\<`` for
      a redirection): written ``==``, which it parses. Conditions are never evaluated (every branch
      of an ``if`` counts), so what the test compares changes nothing.

    Returns (text as parsed, tree, placeholders as ``(start, end, original text)``).
    """
    import time

    t0 = time.perf_counter()
    tree = _ts_parse(data)
    if not tree.root_node.has_error:
        return data, tree, []
    # tree-sitter's error recovery can be superlinear (thousands of unclosed `if`s): re-parse only
    # while the time spent stays within a small multiple of a plain parse
    deadline = t0 + max(REPAIR_SECONDS, 4 * (time.perf_counter() - t0))
    buf = bytearray(data)

    placeholders: list[tuple[int, int, str]] = []
    good = (data, tree, [])  # the last text that parsed, its tree and its placeholders

    def reparse() -> Any:
        nonlocal good
        text = bytes(buf)
        t = _ts_parse(text)  # TooComplex: the repair stops, and the last text that parsed stands
        good = (text, t, list(placeholders))
        return t

    try:
        tail = data.rstrip()
        if tail.endswith(b"\\") and not tail.endswith(b"\\\\"):
            buf[len(tail) - 1] = 32
            tree = reparse()
        compares = list(ESCAPED_COMPARE.finditer(data))
        if compares:
            for m in compares:
                buf[m.start():m.end()] = b"=="
            tree = reparse()
            if not tree.root_node.has_error:
                return good
        comments = list(BACKTICK_COMMENT.finditer(data))
        if comments:
            for m in comments:
                buf[m.start(1):m.end(1)] = b" " * (m.end(1) - m.start(1))
            tree = reparse()
            if not tree.root_node.has_error:
                return good
        # every `NAME=<placeholder>` line at once (Megatron's templates have a dozen), then the
        # lines where errors remain, one re-parse each, within the deadline
        for m in ASSIGN_PLACEHOLDER_ANY.finditer(data):
            a, b = m.start(1), m.start(1) + len(m.group(1).rstrip())
            placeholders.append((a, b, data[a:b].decode("utf-8", "replace").strip()))
            buf[a:b] = b"X" * (b - a)
        _repair_lines(data, buf, tree, placeholders, deadline, reparse)
    except TooComplex:
        pass
    return good


def _repair_lines(data: bytes, buf: bytearray, tree, placeholders: list, deadline: float, reparse) -> None:
    """parse_repaired's placeholder repairs, each followed by ``reparse()``."""
    import time

    if placeholders:
        tree = reparse()
    line_starts = None
    for _ in range(MAX_REPAIRS):
        if not tree.root_node.has_error or time.perf_counter() > deadline:
            break
        err = _first_error(tree.root_node)
        if err is None:
            break
        if line_starts is None:
            line_starts = [0] + [m.end() for m in re.finditer(b"\n", data)] + [len(data) + 1]
        changed = False
        first_row = err.start_point[0]
        for row in range(first_row, min(err.end_point[0], first_row + 50) + 1):
            if row + 1 >= len(line_starts):
                break
            a, b = line_starts[row], line_starts[row + 1] - 1
            line = bytes(buf[a:b])
            if b"<" not in line:
                continue
            m = ASSIGN_PLACEHOLDER.match(line)
            spans = [(m.start(1), len(line.rstrip()))] if m else \
                [(pm.start(), pm.end()) for pm in PLACEHOLDER_SPAN.finditer(line)]
            for pa, pb in spans:
                if pb > pa:
                    placeholders.append((a + pa, a + pb, line[pa:pb].decode("utf-8", "replace").strip()))
                    buf[a + pa:a + pb] = b"X" * (pb - pa)
                    changed = True
            if changed:
                break
        if not changed:
            break
        tree = reparse()


def _tokens_with_pos(text: str):
    """shlex-like tokens of a directive line with their character offsets."""
    lex = shlex.shlex(text, posix=True, punctuation_chars=False)
    lex.whitespace_split = True
    lex.commenters = ""
    pos = 0
    for tok in lex:
        # find the token's start in the text (approximate for quoted tokens)
        idx = text.find(tok.split("=")[0][:3], pos) if tok else pos
        if idx < 0:
            idx = pos
        start = idx
        end = start + len(tok)
        pos = end
        yield tok, start, end


def _with_placeholders(src: Src, a: int, b: int, make) -> list[Piece]:
    """Pieces of the source bytes ``[a, b)`` (``make(a, b)`` gives those of a plain part), where
    the parts that held a replaced placeholder are unknown."""
    out: list[Piece] = []
    pos = a
    for pa, pb, text in sorted(src.placeholders):
        if pb <= pos or pa >= b:
            continue
        if pa > pos:
            out.extend(make(pos, pa))
        out.append(unknown_piece(f"placeholder {text!r}", src, max(pa, pos)))
        pos = min(pb, b)
    if pos < b:
        out.extend(make(pos, b))
    return out


def _literal(node, src: Src, unquoted: bool) -> list[Piece]:
    if src.placeholders and src.placeholder_at(node.start_byte, node.end_byte) is not None:
        return _with_placeholders(src, node.start_byte, node.end_byte,
                                  lambda a, b: _literal_bytes(src, a, b))
    return _literal_bytes(src, node.start_byte, node.end_byte)


def _literal_bytes(src: Src, a: int, b: int) -> list[Piece]:
    raw = src.data[a:b].decode("utf-8", "replace")
    if "\\" not in raw:
        return [Piece(raw, src, a)]
    out: list[Piece] = []
    buf_start = 0
    i = 0
    base = a
    while i < len(raw):
        if raw[i] == "\\" and i + 1 < len(raw):
            if i > buf_start:
                out.append(Piece(raw[buf_start:i], src, base + len(raw[:buf_start].encode())))
            nxt = raw[i + 1]
            if nxt != "\n":
                out.append(Piece(nxt, src, base + len(raw[:i].encode()), exact=False))
            i += 2
            buf_start = i
            continue
        i += 1
    if buf_start < len(raw):
        out.append(Piece(raw[buf_start:], src, base + len(raw[:buf_start].encode())))
    return out


def _dq_literal(src: Src, a: int, b: int) -> list[Piece]:
    if src.placeholders and src.placeholder_at(a, b) is not None:
        return _with_placeholders(src, a, b, lambda x, y: _dq_literal_bytes(src, x, y))
    return _dq_literal_bytes(src, a, b)


def _dq_literal_bytes(src: Src, a: int, b: int) -> list[Piece]:
    raw = src.data[a:b].decode("utf-8", "replace")
    if "\\" not in raw:
        return [Piece(raw, src, a)]
    out: list[Piece] = []
    i = 0
    buf = 0
    while i < len(raw):
        if raw[i] == "\\" and i + 1 < len(raw) and raw[i + 1] in '$`"\\\n':
            if i > buf:
                out.append(Piece(raw[buf:i], src, a + len(raw[:buf].encode())))
            if raw[i + 1] != "\n":
                out.append(Piece(raw[i + 1], src, a + len(raw[:i].encode()), exact=False))
            else:
                out.append(Piece(" ", src, a + len(raw[:i].encode()), exact=False))
            i += 2
            buf = i
            continue
        i += 1
    if buf < len(raw):
        out.append(Piece(raw[buf:], src, a + len(raw[:buf].encode())))
    return out


#: what str.isspace() calls whitespace (the word splitting below has always split on exactly that;
#: a test checks the list against str.isspace over all of Unicode)
_SPACE_CHARS = ("\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005"
                "\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000")
_NONSPACE = re.compile("[^" + re.escape(_SPACE_CHARS) + "]+")


def _split_pieces(ps: list[Piece]) -> list[list[Piece]]:
    """Word splitting of an unquoted expansion, keeping each part's position (linear: the runs of
    non-space found by one regex scan, byte offsets advanced, never recounted)."""
    fields: list[list[Piece]] = []
    cur: list[Piece] = []
    for p in ps:
        if not p.known:
            cur.append(p)
            continue
        text = p.text
        n = len(text)
        ascii_text = text.isascii()
        b_at, b_off = 0, 0  # byte offset b_off of character b_at
        prev = 0
        for m in _NONSPACE.finditer(text):
            i, j = m.span()
            if i > prev and cur:  # whitespace before this word ends the field
                fields.append(cur)
                cur = []
            if p.exact:
                if ascii_text:
                    b_off = i
                else:
                    b_off += len(text[b_at:i].encode())
                    b_at = i
                cur.append(Piece(text[i:j], p.src, p.start + b_off, True, "", True))
            else:
                cur.append(Piece(text[i:j], p.src, p.start, True, "", False))
            if j < n:
                fields.append(cur)
                cur = []
            prev = j
        if prev < n and cur:  # only whitespace (after the last word)
            fields.append(cur)
            cur = []
    if cur:
        fields.append(cur)
    return fields


def _placeholders(ps: list[Piece]) -> list[Piece]:
    """A word that is a placeholder (<NUM_NODES>, your_num_nodes, XXX) becomes unknown."""
    text = "".join(p.text for p in ps if p.known)
    if text and PLACEHOLDER_RE.search(text):
        m = PLACEHOLDER_RE.search(text)
        # keep an option name before '=' known: `--nnodes=<NUM_NODES>`
        if "=" in text and text.index("=") < m.start():
            k = text.index("=") + 1
            head = text[:k]
            first = next((p for p in ps if p.known), None)
            return [Piece(head, first.src if first else None, first.start if first else 0, True, "",
                          bool(first and first.exact)),
                    unknown_piece(f"placeholder {text[k:]!r}", first.src if first else None,
                                  first.start if first else 0)]
        first = ps[0] if ps else None
        return [unknown_piece(f"placeholder {text!r}", first.src if first else None, first.start if first else 0)]
    return ps


def _to_word(f: list[Piece], usage: Span) -> Word:
    text = ""
    segs: list[Seg] = []
    for p in f:
        a = len(text)
        text += p.text if p.known else UNKNOWN
        segs.append(Seg(a, len(text), p.span() if p.src is not None else None, p.known, p.why))
    return Word(text, usage, segs)


def _string_op(text: str, op: str, arg: str) -> str | None:
    import fnmatch

    if op in ("/", "//"):
        pat, _, rep = arg.partition("/")
        if any(ch in pat for ch in "*?["):
            return None
        return text.replace(pat, rep) if op == "//" else text.replace(pat, rep, 1)
    if op in ("%", "%%", "#", "##"):
        pat = arg
        if op in ("#", "##"):
            rng = range(len(text) + 1) if op == "#" else range(len(text), -1, -1)
            for k in rng:
                if fnmatch.fnmatchcase(text[:k], pat):
                    return text[k:]
            return text
        rng = range(len(text), -1, -1) if op == "%" else range(len(text) + 1)
        for k in rng:
            if fnmatch.fnmatchcase(text[k:], pat):
                return text[:k]
        return text
    if op in ("^^",):
        return text.upper()
    if op in (",,",):
        return text.lower()
    if op == ":":
        parts = arg.split(":")
        off = int(parts[0])
        if len(parts) > 1:
            return text[off: off + int(parts[1])]
        return text[off:]
    return None


def _resolved(p: Path) -> Path:
    try:
        return p.resolve()
    except OSError:
        return p


def _display_path(path: str, abspath: Path | None, target: Path) -> str:
    if abspath is None:
        return target.as_posix()
    try:
        rel = os.path.relpath(target, abspath.parent)
    except ValueError:
        return target.as_posix()
    base = os.path.dirname(path)
    return os.path.normpath(os.path.join(base, rel)).replace(os.sep, "/")


def _root_of(abspath: Path | None) -> Path | None:
    if abspath is None:
        return None
    for d in abspath.parents:
        if (d / ".git").exists() or (d / "pyproject.toml").is_file():
            return d
    return None


def syn001(path: str, message: str, line: int = 1, column: int = 1) -> Diagnostic:
    return Diagnostic("SYN001", "parse-error", Severity.ERROR, message, Span(path, line, column))


def evaluate(text: str | bytes, path: str, abspath: Path | None = None, env: dict[str, Value] | None = None,
             line_offset: int = 0, col_offset: int = 0, scheduler_facts: FactMap | None = None) -> Evaluator:
    """Evaluate shell text; used by the shell, Makefile and Kubernetes readers."""
    data = text.encode("utf-8", "replace") if isinstance(text, str) else text
    ev = Evaluator(path, abspath, _root_of(abspath))
    for k, v in (env or {}).items():
        if v.known:
            ev.vars[k] = Var("scalar", [Piece(str(v.value), None, 0, True, "", False)], exported=True, span=v.span)
        else:
            ev.vars[k] = Var("scalar", [], exported=True, span=v.span,
                             unknown_why=v.why or f"environment variable {k}")
    if scheduler_facts is not None:
        ev.sched_facts = scheduler_facts
    src = Src(path, data[:MAX_BYTES], line_offset, col_offset, abspath)
    try:
        ev.run_file(src)
    except TooComplex as exc:
        ev.too_complex = str(exc)
    except (_Abort, RecursionError):
        pass
    return ev


def _hostfile_facts(la, abspath: Path | None) -> None:
    """deepspeed --hostfile: one line per node (``host slots=N``); the node count when --num_nodes
    is not given, and the processes per node when --num_gpus is not given and every host has the
    same slots. Only for a hostfile that exists next to the script or in the repository."""
    hf = la.options.get("hostfile")
    lines = _read_hostfile(la, abspath)
    if lines is None:
        return
    hosts: list[int | None] = []
    for line in lines:
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        m = re.search(r"\bslots\s*=\s*(\d+)", line)
        hosts.append(int(m.group(1)) if m else None)
    if not hosts:
        return
    if "num_nodes" not in la.options:
        la.facts.add("parallel.nodes", Value(len(hosts), hf.span, True, "", f"{la.launcher} --hostfile"))
    if la.launcher == "deepspeed" and not any(k in la.options for k in ("num_gpus", "include", "exclude")):
        if all(h is not None for h in hosts) and len(set(hosts)) == 1:
            la.facts.add("parallel.procs_per_node", Value(hosts[0], hf.span, True, "", "deepspeed --hostfile slots"))


def _read_hostfile(la, abspath: Path | None) -> list[str] | None:
    """Read the launch's ``--hostfile`` (one ``host slots=N`` line per node, as DeepSpeed, Horovod
    and Open MPI write it) into ``la.hostfile``; its lines, or None when it is not read (unknown,
    missing, outside the repository)."""
    hf = la.options.get("hostfile")
    if hf is None or not hf.known or abspath is None:
        return None
    root = _root_of(abspath)
    bases = [abspath.parent] + ([root] if root is not None else [])
    target = None
    for b in bases:
        c = Path(os.path.expanduser(str(hf.value)))
        c = c if c.is_absolute() else b / c
        try:
            if c.is_file() and c.stat().st_size < 1_000_000:
                target = c
                break
        except OSError:
            continue
    if target is None:
        return None
    from parallint.util.boundary import read_inside

    got = read_inside(target, abspath, 1_000_000)
    if got is None:
        return None  # outside the repository (or not a regular file): its hosts are not read
    lines = got.decode("utf-8", errors="replace").splitlines()
    parsed: list[tuple[int, str, str | None, int | None]] = []
    for no, raw in enumerate(lines, 1):  # as deepspeed.launcher.runner._parse_hostfile reads it
        text = raw.strip()
        if not text or text.startswith("#"):
            continue
        dm = re.search(r"^(\S+)\s+slots=(\d+)", text)
        parsed.append((no, text[:200], dm.group(1), int(dm.group(2))) if dm else (no, text[:200], None, None))
    la.hostfile = parsed
    return lines


def read(path: str, abspath: Path, text: str, scheduler_facts: FactMap | None = None) -> FileFacts:
    """``scheduler_facts``: the scheduler context the text runs in, when it is known from outside
    the text (``parallint preflight``: the real environment and host)."""
    ff = FileFacts(path=path, abspath=abspath, kind="shell", text=text)
    if "\x00" in text[:8192]:
        ff.diagnostics.append(syn001(path, "binary content in a shell file"))
        return ff
    try:
        ev = evaluate(text, path, abspath, scheduler_facts=scheduler_facts)
    except Exception as exc:  # noqa: BLE001 - a reader never raises
        ff.diagnostics.append(syn001(path, f"cannot read shell script: {type(exc).__name__}"))
        return ff
    if ev.too_complex:
        ff.diagnostics.append(syn001(path, ev.too_complex))  # the runner reports it as SYN002
        return ff
    for sp in ev.unparsed:
        ff.diagnostics.append(Diagnostic(
            "SYN001", "parse-error", Severity.INFO,
            f"parallint cannot parse the shell at lines {sp.line}-{sp.end_line} (tree-sitter-bash); the "
            f"launch command there is not checked", Span(sp.path, sp.line, sp.column)))
    for la in ev.launches:
        if la.launcher in ("deepspeed", "colossalai"):
            _hostfile_facts(la, abspath)
        w = la
        while w is not None:  # horovodrun's hostfile: its slots only (the hosts -np fills stay unknown)
            if w.launcher == "horovodrun" and w.hostfile is None and "hostfile" in w.options:
                _read_hostfile(w, abspath)
            w = w.wrapper
    ff.launches = ev.launches
    ff.data = ev.data
    if not ev.launches:
        ff.facts.extend(ev.sched_facts)
    for la in ev.launches:
        for link in la.links:
            ff.links.append(link)
    return ff


def _value_key(v) -> tuple:
    return (v.known, repr(v.value), v.why) if v is not None else (None,)


def _launch_signature(la) -> "tuple | None":
    """What makes two launch commands the same job, positions aside (None when not comparable)."""
    try:
        return (la.launcher, _value_key(la.script), la.is_module, tuple(_value_key(a) for a in la.args),
                tuple(sorted((k, _value_key(v)) for k, v in la.options.items())),
                tuple(sorted((k, _value_key(v)) for k, v in la.env.items())),
                tuple(sorted((k, _value_key(v)) for k, v in la.scheduler.items())),
                _launch_signature(la.wrapper) if la.wrapper is not None else None)
    except (AttributeError, TypeError):
        return None
