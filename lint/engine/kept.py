"""Per-file facts kept between analyses (the language server, issue 27).

``parallint check`` reads every file once per run; the language server analyses the same workspace
again at each edit, and all but the edited buffer are mostly unchanged. :class:`KeptFacts` keeps
what a reader made of each file (its :class:`~parallint.model.facts.FileFacts`) keyed by what the
reader was given: the path as shown, the kind and the text itself (compared in full: the file's
bytes, or the editor's buffer, are read and decoded again each time, which is cheap; the reader is
not). The repository files the reader read beside it (an imported module's parser, a version
file: :func:`parallint.util.deps.note_side_read`) are kept with their stat signature, or the text of
their buffer; a change to one of them reads the file again.

A file whose reading depends on more than its text is never kept: one read through the rules'
call gate, or a shell buffer with a scheduler context (``parallint preflight``). The kept facts are
the same objects each time: linking (:mod:`parallint.link.jobs`) derives the jobs' facts from them
without changing what a reader set (tests/test_server_kept.py compares an edited session with a
fresh analysis of the same buffers).
"""

from __future__ import annotations

from pathlib import Path

from parallint.util.deps import RACY_NS, stat_signature

TYPE_CHECKING = False  # typing is not imported at run time (start-up, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Any

#: files kept at most, and their text at most (the least recently used entry is dropped first):
#: Megatron-LM's server session keeps about 550 files, 13 MB of text, some 40 MB in all
MAX_FILES = 20_000
MAX_TEXT = 64 * 1024 * 1024


def _unsteady(facts) -> bool:
    """A finding that depends on the machine's load (a time or memory limit), not on the text."""
    from parallint.engine.index import _unsteady as unsteady

    return facts is not None and any(d.code == "SYN002" and unsteady(d.message) for d in facts.diagnostics)


def _racy(sig: "tuple | None", now: int) -> bool:
    return sig is not None and sig[0] >= now - RACY_NS


class KeptFacts:
    """What a reader made of each file, kept while the file and its side reads are unchanged."""

    def __init__(self) -> None:
        #: abspath -> (display, kind, text, side signatures, facts)
        self.files: dict[Path, tuple[str, str, str, tuple, Any]] = {}
        #: the pre-parse guard's verdict per file: (kind, text, reason) (Runner._guarded)
        self.guarded: dict[Path, tuple[str, str, "str | None"]] = {}
        self.text = 0  # characters of text kept
        self.hits = 0
        self.misses = 0

    def clear(self) -> None:
        self.files.clear()
        self.guarded.clear()
        self.text = 0

    def _drop(self, abspath: Path) -> None:
        was = self.files.pop(abspath, None)
        if was is not None:
            self.text -= len(was[2])

    def _side(self, runner, paths: "tuple[str, ...]") -> "tuple | None":
        """The signatures of the side reads (None: one of them is too fresh to be trusted)."""
        import time

        now = time.time_ns()
        out = []
        for p in paths:
            ap = Path(p)
            buf = runner.stdin.get(ap)
            if buf is not None:
                out.append((p, "buffer", buf))
                continue
            sig = stat_signature(p)
            if _racy(sig, now):
                return None
            out.append((p, "stat", sig))
        return tuple(out)

    def _valid(self, runner, side: tuple) -> bool:
        for p, how, was in side:
            if how == "buffer":
                if runner.stdin.get(Path(p)) != was:
                    return False
            elif Path(p) in runner.stdin or stat_signature(p) != was:
                return False
        return True

    def holds(self, runner, abspath: Path, display: str, text: str, kind: str) -> bool:
        """Whether :meth:`parse` of this input would give the kept facts (no reader run)."""
        hit = self.files.get(abspath)
        return hit is not None and hit[0] == display and hit[1] == kind and (hit[2] is text or hit[2] == text) \
            and self._valid(runner, hit[3])

    def parse(self, runner, abspath: Path, display: str, text: str, kind: str):
        """``runner._parse(abspath, display, text, kind)``, or what it gave last time for the same
        input."""
        hit = self.files.get(abspath)
        if hit is not None and self.holds(runner, abspath, display, text, kind):
            self.hits += 1
            del self.files[abspath]  # the most recently used last
            self.files[abspath] = hit
            return hit[4]
        self.misses += 1
        from parallint.util import deps

        outer = deps.side_push()
        try:
            facts = runner._parse(abspath, display, text, kind)
        finally:
            side = deps.side_pop(outer)
        sig = self._side(runner, tuple(p for p in side if Path(p) != abspath))
        self._drop(abspath)
        if sig is None or _unsteady(facts) or len(text) > MAX_TEXT // 4:
            return facts
        while self.files and (len(self.files) >= MAX_FILES or self.text + len(text) > MAX_TEXT):
            self._drop(next(iter(self.files)))
        self.files[abspath] = (display, kind, text, sig, facts)
        self.text += len(text)
        return facts
