"""The rule base class. A rule is one small class: code, name, severity, doc, examples, and a check.

Copy an existing rule in ``rules/`` to write the next one. A rule implements ``check_file`` (sees one
file's facts; ``kinds`` says which file kinds) and/or ``check_job`` (sees one linked job). It yields
diagnostics made with :meth:`Rule.report`. A rule that needs a fact that is unknown stays silent.

Documentation: ``doc`` is Markdown with exactly these sections, in order::

    ## What it does
    ## Why it matters
    ## Example
    ## How to fix

The ``## Example`` section is not typed: :meth:`Rule.documentation` renders it from the INVALID
example marked ``doc=True`` (else the first), which the test suite runs, so the documented
example always triggers the rule. Leave the section empty (a test checks it for the built-in rules);
text typed there would be replaced by the rendering anyway.

Examples: ``valid`` and ``invalid`` are lists of :class:`Example`. The test suite runs every one:
an INVALID example must produce exactly ``count`` findings of this rule (on ``line`` when given), a
VALID one none. An example is one file (``code`` + ``filename``) or several (``files``).

Declarations: ``kinds`` (file kinds), ``calls`` (call groups or qualified names matched in Python
scripts), ``needles`` (extra pre-filter words) and ``facts`` (fact keys read). Registration refuses
an unknown kind, call group or fact, so a typo fails loudly instead of silencing the rule.
"""

from __future__ import annotations

from parallint.model.diagnostics import Diagnostic, Related, Severity, Span
from parallint.util.record import EqRecord, FrozenRecord

TYPE_CHECKING = False  # typing is not imported at run time (start-up, docs/architecture.md)
if TYPE_CHECKING:  # pragma: no cover
    from typing import ClassVar, Final, Iterable, Sequence
    from parallint.model.diagnostics import Fix
    from parallint.model.facts import FactMap, FileFacts
    from parallint.model.job import Job
    from pathlib import Path
    from typing import Any, Callable

    #: the engine's layout planner: (spec, GPUs, GPU name, headroom) -> layouts, best first
    Planner = Callable[[dict[str, Any], int, str | None, float], list[Any]]

DOC_SECTIONS = ("What it does", "Why it matters", "Example", "How to fix")


class Context(EqRecord):
    """What rules may use besides the file or job they are given: the run's settings (``config``,
    as in ``[tool.parallint]``), the working folder, and three services of the engine that runs
    them, handed in as callables so that rules never import the engine: :meth:`read` another
    file's facts, :meth:`plan` the layouts that pass the layout rules (:meth:`accepts` one
    layout), and :meth:`versions` the version facts of a file's jobs."""

    _fields = ("config", "cwd", "_reader", "_planner", "_versions")
    config: dict[str, Any]
    cwd: Path
    _reader: Callable[[Path], FileFacts | None]
    _planner: Planner
    _versions: Callable[[FileFacts], FactMap] | None

    def __init__(self, config: dict[str, Any], cwd: Path, reader: Callable[[Path], FileFacts | None],
                 planner: Planner, versions: Callable[[FileFacts], FactMap] | None = None,
                 accepter: Callable[[dict[str, Any], int | None], bool] | None = None) -> None:
        self.config = config
        self.cwd = cwd
        self._reader = reader
        self._planner = planner
        self._versions = versions
        self._accepter = accepter  # not a field: a service, like the others

    def accepts(self, spec: dict[str, Any], gpus_per_node: int | None) -> bool:
        """Whether ``parallint plan`` accepts the layout of ``spec`` (a job spec with its
        ``parallel`` section chosen): every LAY and BAT rule stays silent on the values it chose
        (the engine's :func:`parallint.engine.layouts.rules_accept`). False when the engine gives
        no such service."""
        return bool(self._accepter is not None and self._accepter(spec, gpus_per_node))

    def versions(self, f: FileFacts) -> FactMap:
        """The version facts (``version.*``) of the jobs file ``f`` roots: its own images and
        ``module load`` lines, and its repository's version files (the linker's
        :func:`parallint.link.versions.for_file`, which also puts them into each ``Job.facts``).
        Empty when the engine gives none."""
        if self._versions is None:
            from parallint.model.facts import FactMap

            return FactMap()
        return self._versions(f)

    def read(self, path: str | Path) -> FileFacts | None:
        """The facts of the file at ``path`` (relative to :attr:`cwd`), read once per run."""
        import os
        from pathlib import Path

        p = Path(path)
        if not p.is_absolute():
            p = self.cwd / p
        return self._reader(Path(os.path.abspath(p)))

    def plan(self, spec: dict[str, Any], gpus: int, gpu: str | None, headroom: float) -> list[Any]:
        """The layouts of ``gpus`` GPUs that pass the layout rules and fit, best first (the engine's
        :func:`parallint.engine.layouts.plan`: the real LAY/BAT rules filter the candidates)."""
        return self._planner(spec, gpus, gpu, headroom)


class Example(FrozenRecord):
    """A VALID or INVALID example. ``code`` goes into ``filename``; ``files`` adds more files."""

    _fields = ("code", "filename", "files", "count", "line", "paths", "config", "doc")
    code: Final[str]
    filename: Final[str]
    files: Final[dict[str, str]]
    count: Final[int]  # INVALID: how many findings of this rule
    line: Final[int | None]  # INVALID: the line of the (first) finding, when given
    #: the file the check is run on (default: every file of the example); e.g. only the launch file
    paths: Final[Sequence[str]]
    #: configuration for the run, as in [tool.parallint] (e.g. {"gpu": "A100-80GB"})
    config: Final[dict[str, Any]]
    #: INVALID: the example the doc's ``## Example`` shows (default: the first INVALID example)
    doc: Final[bool]

    def __init__(
        self,
        code: str = "",
        filename: str = "train.py",
        files: dict[str, str] | None = None,
        count: int = 1,
        line: int | None = None,
        paths: Sequence[str] = (),
        config: dict[str, Any] | None = None,
        doc: bool = False,
    ) -> None:
        self.code = code
        self.filename = filename
        self.files = {} if files is None else files
        self.count = count
        self.line = line
        self.paths = paths
        self.config = {} if config is None else config
        self.doc = doc

    def all_files(self) -> dict[str, str]:
        import textwrap

        out = {}
        if self.code:
            out[self.filename] = textwrap.dedent(self.code).lstrip("\n")
        for name, text in self.files.items():
            out[name] = textwrap.dedent(text).lstrip("\n")
        return out


class Rule:
    code: ClassVar[str] = ""
    name: ClassVar[str] = ""
    severity: ClassVar[Severity] = Severity.WARNING
    summary: ClassVar[str] = ""  # one line, shown by `parallint rules`
    doc: ClassVar[str] = ""
    #: file kinds check_file is called for (see parallint.discover.classify.KINDS); empty = none
    kinds: ClassVar[frozenset[str]] = frozenset()
    #: calls the rule matches in Python scripts: call groups of the Python reader (``"ddp"``,
    #: ``"collective"``) or qualified names (``"torch.distributed.barrier"``). The engine derives
    #: the reader's call groups and the Python pre-filter from these (parallint.model.calls).
    calls: ClassVar[frozenset[str]] = frozenset()
    #: extra words that make a Python file worth parsing for this rule (aliases such as ``DDP``)
    needles: ClassVar[tuple[str, ...]] = ()
    #: the fact keys the rule reads (parallint.model.vocab)
    facts: ClassVar[frozenset[str]] = frozenset()
    valid: ClassVar[Sequence[Example]] = ()
    invalid: ClassVar[Sequence[Example]] = ()
    #: the rule's automatic fix (:mod:`parallint.model.fixes`): "safe" (``check --fix`` makes
    #: it), "unsafe" (only with ``--unsafe-fixes``), "sometimes" (safe in some findings, unsafe in
    #: others: each finding's :class:`~parallint.model.fixes.Fix` says), or "" (none)
    fix_safety: ClassVar[str] = ""
    #: how the fix reads in ``parallint rule CODE`` and the docs (one sentence)
    fix_doc: ClassVar[str] = ""

    def check_file(self, f: "FileFacts", ctx: "Context") -> Iterable[Diagnostic]:
        return ()

    def check_job(self, job: "Job", ctx: "Context") -> Iterable[Diagnostic]:
        return ()

    def apply_fix(self, diag: Diagnostic, text: str) -> str | None:
        """``text`` (the current contents of ``diag``'s file) with the finding's fix made, or None
        where it cannot be made exactly (see :mod:`parallint.model.fixes`)."""
        return None

    # helpers -------------------------------------------------------------------------------
    def report(
        self,
        span: Span,
        message: str,
        related: Iterable[Related] = (),
        severity: Severity | None = None,
        fix: Fix | None = None,
    ) -> Diagnostic:
        return Diagnostic(
            self.code, self.name, severity or self.severity, message, span, tuple(related), fix
        )

    @classmethod
    def doc_example(cls) -> Example | None:
        """The INVALID example the documentation shows: the one marked ``doc=True``, else the first."""
        return next((e for e in cls.invalid if e.doc), cls.invalid[0] if cls.invalid else None)

    @classmethod
    def render_example(cls, findings: Sequence[str] = ()) -> str:
        """The ``## Example`` section's body: the files of :meth:`doc_example`, then (when given)
        the findings it produces, one ``path:line: CODE message`` each."""
        ex = cls.doc_example()
        if ex is None:
            return ""
        parts = []
        files = ex.all_files()
        for name, text in files.items():
            caption = f"`{name}`:\n\n" if len(files) > 1 or name != "train.py" else ""
            parts.append(f"{caption}```{_fence_language(name)}\n{text.rstrip()}\n```")
        if findings:
            parts.append("parallint reports:\n\n```text\n" + "\n".join(findings) + "\n```")
        return "\n\n".join(parts)

    @classmethod
    def documentation(cls, findings: Sequence[str] = ()) -> str:
        """The rule's Markdown documentation, its ``## Example`` rendered from a tested example
        (with ``findings``, what running that example reports; see parallint.engine.examples)."""
        import textwrap

        head = f"# {cls.code} {cls.name} ({cls.severity})\n\n{cls.summary}\n\n"
        doc = textwrap.dedent(cls.doc).strip()
        example = cls.render_example(findings)
        if example:
            doc = _replace_section(doc, "Example", example)
        if cls.fix_safety:  # the last section is "How to fix"
            doc += f"\n\nAutomatic fix ({FIX_LABELS[cls.fix_safety]}): {cls.fix_doc}"
        return head + doc + "\n"


#: how ``parallint rule`` and the docs name a rule's fix_safety
FIX_LABELS = {"safe": "safe, `check --fix`", "unsafe": "unsafe, `check --fix --unsafe-fixes`",
              "sometimes": "safe or unsafe by finding"}


_FENCE = {".py": "python", ".sh": "bash", ".bash": "bash", ".sbatch": "bash", ".slurm": "bash",
          ".json": "json", ".yaml": "yaml", ".yml": "yaml", ".toml": "toml", ".mk": "make"}


def _fence_language(name: str) -> str:
    base = name.rsplit("/", 1)[-1]
    if base in ("Makefile", "makefile", "GNUmakefile"):
        return "make"
    dot = base.rfind(".")
    return _FENCE.get(base[dot:].lower(), "") if dot > 0 else ""


def _replace_section(doc: str, title: str, body: str) -> str:
    """``doc`` with the body of section ``## title`` replaced by ``body``."""
    import re

    m = re.search(rf"^## {re.escape(title)}[ \t]*$", doc, re.M)
    if m is None:
        return doc
    nxt = re.search(r"^## ", doc[m.end():], re.M)
    end = m.end() + nxt.start() if nxt else len(doc)
    tail = doc[end:]
    return doc[:m.end()] + "\n\n" + body + ("\n\n" + tail if tail else "")
