"""``parallint server``: a Language Server over standard input/output (its own JSON-RPC:
:mod:`parallint.cli.lsp_io`; no pygls, so it answers ``initialize`` in about the time Python
takes to start).

Diagnostics are published on open, change and save, from the editor's buffers (unsaved text
stands for the file everywhere, also as the other side of a cross-file finding). A document is
checked in every job that includes it, as ``parallint check FILE`` does; the other files of those
jobs are re-published too, so editing ``ds_config.json`` updates the launch file and the script,
and the reverse. Code actions add ``# noqa: CODE`` to a finding's line.

Edits are debounced: a change (or save) schedules the document's analysis
``PARALLINT_LSP_DEBOUNCE_MS`` (default 250) milliseconds later, and a newer change of the same
document within that time replaces it, so a burst of keystrokes gives one analysis of the last
text. An analysis still running when a newer change is scheduled (its other files' re-check
too) stops before its next file read or rule (``Runner.stop``), and one that finishes after a newer change publishes nothing (the
newer one will). Between analyses the linter keeps each file's facts and the tables a run builds
(:mod:`parallint.engine.kept`): an edit reads only the edited buffer again. Each analysis is logged (``window/logMessage``, type Log: ``parallint: analysed PATH``).
"""

from __future__ import annotations

import asyncio
import bisect
import os
import re
import threading
from pathlib import Path

SOURCE = "parallint"
TEXT_CAP = 8 * 1024 * 1024
#: repository modules kept parsed between analyses (a check keeps 8 and forgets them at its end)
MODULES_KEPT = 256  # a file read back to place its diagnostics in the editor's units


def debounce_seconds() -> float:
    try:
        ms = float(os.environ.get("PARALLINT_LSP_DEBOUNCE_MS", "250"))
    except ValueError:
        ms = 250.0
    return min(max(ms, 0.0), 10_000.0) / 1000.0


def _path_of(uri) -> Path | None:
    """The file a ``file:`` URI names (None for another scheme or no path)."""
    from urllib.parse import unquote, urlsplit

    if not isinstance(uri, str):
        return None
    u = urlsplit(uri)
    if u.scheme.lower() != "file":
        return None
    p = unquote(u.path)
    if u.netloc and u.netloc != "localhost":
        p = "//" + u.netloc + p  # a UNC path
    if os.name == "nt" and re.match(r"/[A-Za-z]:", p):
        p = p[1:]
    return Path(os.path.abspath(p)) if p else None


def _uri_of(path: Path) -> str:
    return Path(os.path.abspath(path)).as_uri()


def _pos(line: int, character: int) -> dict:
    return {"line": line, "character": character}


class Codec:
    """Columns in the negotiated position encoding: UTF-16 code units (the default), UTF-8 bytes
    or UTF-32 code points."""

    def __init__(self, encoding: str = "utf-16") -> None:
        self.encoding = encoding

    def client_num_units(self, s: str) -> int:
        if self.encoding == "utf-32":
            return len(s)
        if self.encoding == "utf-8":
            return len(s.encode("utf-8", "surrogatepass"))
        return len(s) + sum(1 for c in s if ord(c) > 0xFFFF)

    def offset_in(self, line: str, units: int) -> int:
        """The code-point offset in ``line`` of a column of ``units`` (clipped to the line)."""
        if self.encoding == "utf-32":
            return min(max(units, 0), len(line))
        at = n = 0
        while at < len(line) and n < units:
            c = line[at]
            n += (len(c.encode("utf-8", "surrogatepass")) if self.encoding == "utf-8"
                  else 2 if ord(c) > 0xFFFF else 1)
            at += 1
        return at


def negotiate(params: dict) -> str:
    """The position encoding of the session: UTF-16 unless the client offers only others."""
    general = (params.get("capabilities") or {}).get("general") or {}
    offered = general.get("positionEncodings") if isinstance(general, dict) else None
    if isinstance(offered, list) and offered and "utf-16" not in offered:
        for enc in ("utf-32", "utf-8"):
            if enc in offered:
                return enc
    return "utf-16"


_BREAK = re.compile("\r\n|[\n\r]")


def apply_change(text: str, change: dict, codec: Codec) -> str:
    """``text`` after one ``contentChanges`` entry (the whole text, or a range replaced)."""
    new = change.get("text")
    if not isinstance(new, str):
        return text
    rng = change.get("range")
    if not isinstance(rng, dict):
        return new
    starts = [0] + [m.end() for m in _BREAK.finditer(text)]

    def offset(p) -> int:
        line = min(max(int(p.get("line", 0)), 0), len(starts))
        if line == len(starts):
            return len(text)
        begin = starts[line]
        end = starts[line + 1] if line + 1 < len(starts) else len(text)
        body = _BREAK.sub("", text[begin:end])
        return begin + codec.offset_in(body, int(p.get("character", 0)))

    a, b = offset(rng.get("start") or {}), offset(rng.get("end") or {})
    return text[:a] + new + text[max(a, b):]


class Linter:
    """The checking part, free of LSP types (testable without a client)."""

    def __init__(self, cwd: Path, keep: bool = True) -> None:
        self.cwd = cwd
        #: keep each file's facts and the tables a run builds between analyses (False: every
        #: analysis reads everything again, as ``parallint check FILE`` does)
        self.keep = keep
        self.buffers: dict[Path, str] = {}
        self.job_files: dict[Path, set[Path]] = {}  # file -> files of its jobs (last run)
        self.trees: dict = {}  # repository root -> its link index, kept in memory between edits
        from parallint.engine.kept import KeptFacts

        self.kept = KeptFacts() if keep else None  # each file's facts, kept while its text (and side reads) are unchanged
        self.lock = threading.Lock()

    def _rules(self, config):
        from parallint.engine.registry import get_registry

        reg = get_registry()
        s = config.settings
        try:
            return reg.enabled(s.get("select"), s.get("extend-select", []), s.get("ignore", []))
        except Exception:
            return reg.enabled(None, [], [])

    def lint(self, changed: Path) -> dict[Path, list]:
        """Findings per file for ``changed`` and every file of the jobs that include it (an empty
        list clears a file)."""
        got = self.lint_buffer(changed)
        assert got is not None  # (nothing stops it)
        out, others = got
        done = self.lint_others(changed, out, others)
        assert done is not None
        return done

    def _setup(self, changed: Path):
        from parallint.discover.settings import ConfigError, configs_for
        from parallint.readers.python import keep_modules

        keep_modules(MODULES_KEPT)  # the modules a job's scripts import, parsed once per content
        from parallint.link import imports, megatron_table
        from parallint.readers import pyparser_import

        # tables that a run rebuilds, kept while what they were read from is unchanged
        for mod in (megatron_table, pyparser_import, imports):
            mod.keep(self.keep)

        try:
            ((config, _, _),) = configs_for([str(changed)], cwd=self.cwd)
        except (ConfigError, ValueError):
            from parallint.discover.settings import Config

            config = Config(None, self.cwd, {})
        return config, self._rules(config)

    def lint_buffer(self, changed: Path, stop=None) -> "tuple[dict[Path, list], list[Path]] | None":
        """The first half of :meth:`lint`: ``changed`` checked in every job that includes it, as
        ``parallint check FILE`` does (its findings are final); and the other files of those jobs
        (and of its jobs before), which :meth:`lint_others` checks in their own jobs. None when
        ``stop()`` said, while it ran, that the analysis is no longer wanted (a newer edit)."""
        from parallint.engine.index import check_files
        from parallint.engine.runner import Stopped

        with self.lock:
            if stop is not None and stop():
                return None
            config, rules = self._setup(changed)
            try:
                first = check_files([str(changed)], config, rules, cwd=self.cwd, buffers=dict(self.buffers),
                                    trees=self.trees, kept=self.kept, stop=stop)
            except Stopped:
                return None
            affected = {changed}
            for job in first.jobs:
                members = {f.abspath for f in job.files}
                if changed in members:
                    affected |= members
            previous = self.job_files.get(changed, set())
            out: dict[Path, list] = {p: [] for p in affected | previous}
            for d in first.diagnostics:
                out.setdefault(self._abs(d.span.path), []).append(d)
            for p in affected:
                self.job_files[p] = affected
            return out, sorted((affected | previous) - {changed})

    def lint_others(self, changed: Path, out: dict[Path, list], targets: list[Path],
                    stop=None) -> "dict[Path, list] | None":
        """The second half of :meth:`lint`: each other file checked in all of its own jobs, as
        ``check FILE`` would; added to ``out``. None when ``stop()`` said it is no longer wanted."""
        from parallint.engine.index import check_files
        from parallint.engine.runner import Stopped

        with self.lock:
            existing = [p for p in targets if p.is_file() or p in self.buffers]
            if existing:
                if stop is not None and stop():
                    return None
                config, rules = self._setup(changed)
                try:
                    second = check_files([str(p) for p in existing], config, rules, cwd=self.cwd,
                                         buffers=dict(self.buffers), trees=self.trees, kept=self.kept, stop=stop)
                except Stopped:
                    return None
                for d in second.diagnostics:
                    p = self._abs(d.span.path)
                    if p != changed:
                        out.setdefault(p, []).append(d)
            return out

    def text_of(self, path: Path) -> str | None:
        """The text a file was checked with: its editor buffer, else the file (None if unread)."""
        if path in self.buffers:
            return self.buffers[path]
        from parallint.util.safeio import read_regular

        data = read_regular(path, TEXT_CAP)
        return None if data is None else data.decode("utf-8", errors="replace")

    def _abs(self, display: str) -> Path:
        p = Path(display)
        return Path(os.path.abspath(p if p.is_absolute() else self.cwd / p))


class Positions:
    """Maps parallint's positions (1-based line and column, lines as the file's syntax counts
    them, columns in code points) to LSP positions (0-based, lines broken only at ``\\n``,
    ``\\r\\n`` and ``\\r``, columns in the negotiated units: UTF-16 by default), and back
    for a line. Python's ``str.splitlines`` would also break at form feeds and other separators,
    which editors do not."""

    _LSP_BREAK = re.compile("\r\n|[\n\r]")

    def __init__(self, text: str, syntax: str | None, codec=None) -> None:
        from parallint.engine.suppress import physical_lines

        self.text = text
        self.codec = codec
        self.syn_starts = self._starts(physical_lines(text, syntax, keepends=True))
        self.syn_lines = physical_lines(text, syntax)
        self.lsp_starts = [0] + [m.end() for m in self._LSP_BREAK.finditer(text)]

    @staticmethod
    def _starts(lines: list[str]) -> list[int]:
        out, at = [0], 0
        for piece in lines:
            at += len(piece)
            out.append(at)
        return out

    def _units(self, s: str) -> int:
        return len(s) if self.codec is None else self.codec.client_num_units(s)

    def offset(self, line: int, column: int) -> int:
        """The text offset of a 1-based syntax line and code-point column (clipped to the line)."""
        if not self.syn_lines:
            return 0
        i = min(max(line, 1), len(self.syn_lines)) - 1
        return self.syn_starts[i] + min(max(column - 1, 0), len(self.syn_lines[i]))

    def lsp(self, offset: int) -> dict:
        i = max(bisect.bisect_right(self.lsp_starts, offset) - 1, 0)
        return _pos(i, self._units(self.text[self.lsp_starts[i]:offset]))

    def syntax_line(self, lsp_line: int) -> int:
        """The 1-based syntax line that holds the start of LSP line ``lsp_line``."""
        at = self.lsp_starts[min(max(lsp_line, 0), len(self.lsp_starts) - 1)]
        return max(bisect.bisect_right(self.syn_starts, at) - 1, 0) + 1


SEVERITY = {3: 1, 2: 2, 1: 3}  # parallint error, warning, info -> LSP Error, Warning, Information


def _to_lsp(d, pos: "Positions | None" = None) -> dict:
    from parallint.report.formats import doc_uri

    s = d.span

    def at(line: int, column: int) -> dict:
        if pos is not None:
            return pos.lsp(pos.offset(line, column))
        return _pos(max(line - 1, 0), max(column - 1, 0))  # no text: as given

    start = at(s.line, s.column)
    if s.end_line >= s.line and s.end_column > 0 and (s.end_line > s.line or s.end_column > s.column):
        end = at(s.end_line, s.end_column)
    else:
        end = _pos(start["line"], start["character"] + 1)
    out: dict = {"range": {"start": start, "end": end}, "message": d.message,
                 "severity": SEVERITY[int(d.severity)], "code": d.code, "source": SOURCE,
                 "codeDescription": {"href": doc_uri(d.code)}}
    related = []
    for r in d.related:
        p = Path(r.path)
        uri = _uri_of(p if p.is_absolute() else Path.cwd() / p)
        rpos = _pos(max(r.line - 1, 0), max(r.column - 1, 0) if hasattr(r, "column") else 0)
        related.append({"location": {"uri": uri, "range": {"start": rpos, "end": dict(rpos)}}, "message": r.message})
    if related:
        out["relatedInformation"] = related
    if d.fix is not None:  # what the code action needs to make the fix (sent back by the client)
        out["data"] = {"fix": [d.fix.title, d.fix.safe, d.fix.data], "span": [s.line, s.column, s.end_line, s.end_column]}
    return out


def hover_text(d) -> str:
    """Markdown for one finding: its rule, the message, the facts behind it with where each is
    set, the fix when there is one, and what the rule checks (its doc's first section)."""
    import re

    from parallint.engine.registry import get_registry
    from parallint.report.formats import doc_uri

    lines = [f"**{d.code}** `{d.name}` ({d.severity}): {d.message}"]
    if d.related:
        lines.append("Facts behind it:\n" + "\n".join(f"- {r.message} (`{r.path}:{r.line}`)" for r in d.related))
    if d.fix is not None:
        lines.append(f"Fix: {d.fix.title}" + (" (safe: `parallint check --fix`)" if d.fix.safe else
                                              " (unsafe: `parallint check --fix --unsafe-fixes`)"))
    rule = get_registry().lookup(d.code)
    if rule is not None:
        import textwrap

        doc = textwrap.dedent(rule.doc or "")
        m = re.search(r"^## What it does\s*\n(.*?)(?=^## |\Z)", doc, re.S | re.M)
        if m:
            lines.append(" ".join(m.group(1).split()))
    lines.append(f"[{d.code} documentation]({doc_uri(d.code)})")
    return "\n\n".join(lines)


def fix_action(diag: dict, uri: str, path: Path, text: str, pos: "Positions") -> dict | None:
    """The code action that makes the fix an LSP diagnostic of ours carries, or None (no fix, or
    the text is no longer what the finding saw)."""
    from parallint.model.diagnostics import Diagnostic, Fix, Severity, Span
    from parallint.report.fixer import rule_edit

    data = diag.get("data")
    try:
        title, safe, extra = data["fix"]  # type: ignore[index]
        line, column, end_line, end_column = (int(x) for x in data["span"])  # type: ignore[index]
    except (TypeError, KeyError, ValueError):
        return None
    code = str(diag.get("code"))
    ours = Diagnostic(code, "", Severity.INFO, str(diag.get("message", "")),
                      Span(str(path), line, column, end_line, end_column), fix=Fix(str(title), bool(safe), str(extra)))
    e = rule_edit(ours, text)
    if e is None:
        return None
    rng = {"start": pos.lsp(e.start), "end": pos.lsp(e.end)}
    return {"title": f"Fix {code}: {title}" + ("" if safe else " (unsafe: may change what the job does)"),
            "kind": "quickfix", "diagnostics": [diag], "isPreferred": bool(safe),
            "edit": {"changes": {uri: [{"range": rng, "newText": e.text}]}}}


LOG_ERROR, LOG = 1, 4  # window/logMessage types


class Server:
    """The LSP methods: a table of request and notification handlers (:mod:`parallint.cli.lsp_io`
    reads, dispatches and writes)."""

    def __init__(self, conn) -> None:
        self.conn = conn
        self.linter = Linter(Path.cwd())
        self.codec = Codec()
        self.docs: dict[str, str] = {}  # uri -> the editor's text
        self.pending: dict = {}  # uri -> its scheduled analysis (an asyncio.Task)
        self.edits: dict[str, int] = {}  # uri -> how many edits so far (an analysis of an older one is stale)
        self.published: dict[str, list] = {}  # uri -> [(finding, its LSP diagnostic)] (hover reads them)
        self.delay = debounce_seconds()
        self.shut = False
        self.requests = {"initialize": self.initialize, "shutdown": self.shutdown,
                         "textDocument/hover": self.hover, "textDocument/codeAction": self.code_action}
        self.notifications = {"initialized": lambda p: None, "textDocument/didOpen": self.did_open,
                              "textDocument/didChange": self.did_change, "textDocument/didSave": self.did_save,
                              "textDocument/didClose": self.did_close}

    def log(self, kind: int, message: str) -> None:
        self.conn.notify("window/logMessage", {"type": kind, "message": message})

    def log_error(self, message: str) -> None:
        self.log(LOG_ERROR, message)

    # lifecycle ------------------------------------------------------------------------------
    def initialize(self, params: dict) -> dict:
        from parallint import __version__

        root = None
        folders = params.get("workspaceFolders")
        if isinstance(folders, list) and folders and isinstance(folders[0], dict):
            root = _path_of(folders[0].get("uri"))
        elif params.get("rootUri"):
            root = _path_of(params.get("rootUri"))
        elif isinstance(params.get("rootPath"), str) and params["rootPath"]:
            root = Path(os.path.abspath(params["rootPath"]))
        if root is not None and root.is_dir():
            os.chdir(root)
            self.linter = Linter(root)
        self.codec = Codec(negotiate(params))
        return {"capabilities": {
            "positionEncoding": self.codec.encoding,
            "textDocumentSync": {"openClose": True, "change": 1, "save": True},
            "hoverProvider": True, "codeActionProvider": {"codeActionKinds": ["quickfix"]},
            "workspace": {"workspaceFolders": {"supported": True, "changeNotifications": True}}},
            "serverInfo": {"name": "parallint", "version": __version__}}

    def shutdown(self, params: dict) -> None:
        self.shut = True
        for task in self.pending.values():
            task.cancel()
        self.pending.clear()

    # documents ------------------------------------------------------------------------------
    @staticmethod
    def _uri(params: dict) -> str | None:
        doc = params.get("textDocument")
        uri = doc.get("uri") if isinstance(doc, dict) else None
        return uri if isinstance(uri, str) else None

    def did_open(self, params: dict):
        doc = params.get("textDocument") or {}
        uri, text = self._uri(params), doc.get("text")
        if uri is None or not isinstance(text, str):
            return None
        self.docs[uri] = text
        path = _path_of(uri)
        if path is not None:
            self.linter.buffers[path] = text
        seen = self.edits.get(uri, 0)  # a change made while the first analysis runs stops it
        return self.publish(uri, lambda: self.edits.get(uri, 0) != seen)

    def did_change(self, params: dict) -> None:
        uri = self._uri(params)
        if uri is None or uri not in self.docs:
            return
        text = self.docs[uri]
        for change in params.get("contentChanges") or ():
            if isinstance(change, dict):
                text = apply_change(text, change, self.codec)
        self.docs[uri] = text
        path = _path_of(uri)
        if path is not None:
            self.linter.buffers[path] = text
        self.schedule(uri)

    def did_save(self, params: dict) -> None:
        uri = self._uri(params)
        if uri is not None:
            self.schedule(uri)

    def did_close(self, params: dict) -> None:
        uri = self._uri(params)
        if uri is None:
            return
        old = self.pending.pop(uri, None)
        if old is not None:
            old.cancel()
        self.docs.pop(uri, None)
        path = _path_of(uri)
        if path is not None:
            self.linter.buffers.pop(path, None)

    # analysis -------------------------------------------------------------------------------
    def schedule(self, uri: str) -> None:
        """Analyse ``uri`` after the debounce delay, replacing an analysis not yet started."""
        old = self.pending.pop(uri, None)
        if old is not None:
            old.cancel()
        self.edits[uri] = self.edits.get(uri, 0) + 1
        seen = self.edits[uri]

        async def later() -> None:
            try:
                await asyncio.sleep(self.delay)
            except asyncio.CancelledError:
                return
            if self.pending.get(uri) is task:
                del self.pending[uri]
            await self.publish(uri, lambda: self.edits.get(uri) != seen)

        task = asyncio.ensure_future(later())
        self.pending[uri] = task

    async def publish(self, uri: str, stale=lambda: False) -> None:
        """Analyse the document and publish: its own findings as soon as they are known, then
        those of the other files of its jobs (each checked in all of its jobs)."""
        import time

        path = _path_of(uri)
        if path is None:
            return
        loop = asyncio.get_running_loop()
        linter = self.linter
        t0 = time.perf_counter()
        try:
            got = await loop.run_in_executor(None, linter.lint_buffer, path, lambda: stale() or self.shut)
        except Exception as exc:  # never take the editor session down
            self.log(LOG_ERROR, f"parallint: {type(exc).__name__}: {exc}")
            return
        t1 = time.perf_counter()
        if got is None:  # abandoned: a newer edit arrived while it ran (that one publishes)
            self.log(LOG, f"parallint: stopped the analysis of {path} (a newer edit)")
            return
        out, others = got
        self.log(LOG, f"parallint: analysed {path} ({(t1 - t0) * 1000:.0f} ms)")
        if stale() or self.shut:
            return  # a newer edit is scheduled; it publishes
        self._send(linter, {path: out.get(path, [])})
        if not others and set(out) <= {path}:
            return
        try:
            done = await loop.run_in_executor(None, linter.lint_others, path, out, others,
                                              lambda: stale() or self.shut)
        except Exception as exc:
            self.log(LOG_ERROR, f"parallint: {type(exc).__name__}: {exc}")
            return
        if done is None:
            return  # stopped: a newer edit (it publishes)
        out = done
        self.log(LOG, f"parallint: re-checked the other files of its jobs ({len(others)}; "
                      f"{(time.perf_counter() - t1) * 1000:.0f} ms)")
        if stale() or self.shut:
            return
        self._send(linter, {p: d for p, d in out.items() if p != path})

    def _send(self, linter: Linter, results: dict[Path, list]) -> None:
        from parallint.engine.suppress import syntax_of

        for p, diags in sorted(results.items()):
            pos = None
            if diags:
                text = linter.text_of(p)
                pos = None if text is None else Positions(text, syntax_of(p.name), self.codec)
            lsp_diags = [_to_lsp(d, pos) for d in diags]
            self.published[_uri_of(p)] = list(zip(diags, lsp_diags))
            self.conn.notify("textDocument/publishDiagnostics", {"uri": _uri_of(p), "diagnostics": lsp_diags})

    # requests -------------------------------------------------------------------------------
    def hover(self, params: dict) -> dict | None:
        """The findings under the cursor: each with its rule, the facts behind it (the related
        places: the launch file that sets the world size) and the start of the rule's doc."""
        here = params.get("position") or {}
        at = (here.get("line", -1), here.get("character", -1))
        hits = []
        for d, ld in self.published.get(self._uri(params) or "", ()):
            r = ld["range"]
            if (r["start"]["line"], r["start"]["character"]) <= at <= (r["end"]["line"], r["end"]["character"]):
                hits.append((d, ld))
        if not hits:
            return None
        return {"contents": {"kind": "markdown", "value": "\n\n---\n\n".join(hover_text(d) for d, _ in hits)},
                "range": hits[0][1]["range"]}

    def code_action(self, params: dict) -> list:
        from parallint.engine.suppress import syntax_of
        from parallint.report.noqa import noqa_edit

        uri = self._uri(params)
        path = _path_of(uri)
        if uri is None or path is None:
            return []
        text = self.docs.get(uri)
        if text is None:
            text = self.linter.text_of(path)
            if text is None:
                return []
        actions: list = []
        syntax = syntax_of(path.name)
        pos = Positions(text, syntax, self.codec)
        context = params.get("context") or {}
        for diag in context.get("diagnostics") or ():
            if not isinstance(diag, dict) or diag.get("source") != SOURCE or not diag.get("code"):
                continue
            fixed = fix_action(diag, uri, path, text, pos)
            if fixed is not None:
                actions.append(fixed)
            start_line = ((diag.get("range") or {}).get("start") or {}).get("line", 0)
            line = pos.syntax_line(int(start_line))
            edit = noqa_edit(text, syntax, line, [str(diag["code"])])
            if edit is None or not edit[1]:
                continue
            start = pos.offset(line, 1)
            end = start + len(pos.syn_lines[line - 1])
            rng = {"start": pos.lsp(start), "end": pos.lsp(end)}
            actions.append({"title": f"Suppress {diag['code']} on this line (# noqa: {diag['code']})",
                            "kind": "quickfix", "diagnostics": [diag],
                            "edit": {"changes": {uri: [{"range": rng, "newText": edit[0]}]}}})
        return actions


def main() -> None:
    import sys

    from parallint.cli.lsp_io import serve

    # The reader thread reads the raw descriptor: a daemon thread blocked in a *buffered* read
    # holds the buffer's lock, and the interpreter aborts (SIGABRT) when it finalises stdin at
    # exit. Framer keeps its own buffer, so the raw stream's one-syscall reads are all it needs.
    stdin = getattr(sys.stdin.buffer, "raw", sys.stdin.buffer)
    sys.exit(serve(Server, stdin, sys.stdout.buffer))
