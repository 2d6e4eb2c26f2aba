"""``parallint server``: a Language Server (pygls; ``pip install 'parallint[lsp]'``).

Diagnostics are published on open, change and save, from the editor's buffers (unsaved text
stands for the file everywhere, also as the other side of a cross-file finding). A document is
checked in every job that includes it, as ``parallint check FILE`` does; the other files of those
jobs are re-published too, so editing ``ds_config.json`` updates the launch file and the script,
and the reverse. Code actions add ``# noqa: CODE`` to a finding's line.

Edits are debounced: a change (or save) schedules the document's analysis
``PARALLINT_LSP_DEBOUNCE_MS`` (default 250) milliseconds later, and a newer change of the same
document within that time replaces it, so a burst of keystrokes gives one analysis of the last
text. An analysis that finishes after a newer change was made publishes nothing (the newer one
will). Each analysis is logged (``window/logMessage``, type Log: ``parallint: analysed PATH``).
"""

from __future__ import annotations

import asyncio
import bisect
import os
import re
import threading
from pathlib import Path

SOURCE = "parallint"
TEXT_CAP = 8 * 1024 * 1024  # a file read back to place its diagnostics in the editor's units


def debounce_seconds() -> float:
    try:
        ms = float(os.environ.get("PARALLINT_LSP_DEBOUNCE_MS", "250"))
    except ValueError:
        ms = 250.0
    return min(max(ms, 0.0), 10_000.0) / 1000.0


def _path_of(uri: str) -> Path | None:
    from pygls.uris import to_fs_path

    p = to_fs_path(uri)
    return Path(os.path.abspath(p)) if p else None


def _uri_of(path: Path) -> str:
    from pygls.uris import from_fs_path

    return from_fs_path(str(path))


class Linter:
    """The checking part, free of LSP types (testable without a client)."""

    def __init__(self, cwd: Path) -> None:
        self.cwd = cwd
        self.buffers: dict[Path, str] = {}
        self.job_files: dict[Path, set[Path]] = {}  # file -> files of its jobs (last run)
        self.trees: dict = {}  # repository root -> its link index, kept in memory between edits
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
        from parallint.discover.settings import ConfigError, configs_for
        from parallint.engine.index import check_files

        with self.lock:
            try:
                ((config, _, _),) = configs_for([str(changed)], cwd=self.cwd)
            except (ConfigError, ValueError):
                from parallint.discover.settings import Config

                config = Config(None, self.cwd, {})
            rules = self._rules(config)
            first = check_files([str(changed)], config, rules, cwd=self.cwd, buffers=dict(self.buffers),
                                trees=self.trees)
            affected = {changed}
            for job in first.jobs:
                members = {f.abspath for f in job.files}
                if changed in members:
                    affected |= members
            previous = self.job_files.get(changed, set())
            targets = sorted((affected | previous) - {changed})
            out: dict[Path, list] = {p: [] for p in affected | previous}
            for d in first.diagnostics:
                out.setdefault(self._abs(d.span.path), []).append(d)
            existing = [p for p in targets if p.is_file() or p in self.buffers]
            if existing:
                # each other file checked in all of its own jobs, as `check FILE` would
                second = check_files([str(p) for p in existing], config, rules, cwd=self.cwd,
                                     buffers=dict(self.buffers), trees=self.trees)
                for d in second.diagnostics:
                    p = self._abs(d.span.path)
                    if p != changed:
                        out.setdefault(p, []).append(d)
            for p in affected:
                self.job_files[p] = affected
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

    def lsp(self, offset: int):
        from lsprotocol import types

        i = max(bisect.bisect_right(self.lsp_starts, offset) - 1, 0)
        return types.Position(line=i, character=self._units(self.text[self.lsp_starts[i]:offset]))

    def syntax_line(self, lsp_line: int) -> int:
        """The 1-based syntax line that holds the start of LSP line ``lsp_line``."""
        at = self.lsp_starts[min(max(lsp_line, 0), len(self.lsp_starts) - 1)]
        return max(bisect.bisect_right(self.syn_starts, at) - 1, 0) + 1


def _to_lsp(d, pos: "Positions | None" = None):
    from lsprotocol import types

    from parallint.model.diagnostics import Severity

    s = d.span

    def at(line: int, column: int):
        if pos is not None:
            return pos.lsp(pos.offset(line, column))
        return types.Position(line=max(line - 1, 0), character=max(column - 1, 0))  # no text: as given

    start = at(s.line, s.column)
    if s.end_line >= s.line and s.end_column > 0 and (s.end_line > s.line or s.end_column > s.column):
        end = at(s.end_line, s.end_column)
    else:
        end = types.Position(line=start.line, character=start.character + 1)
    sev = {Severity.ERROR: types.DiagnosticSeverity.Error, Severity.WARNING: types.DiagnosticSeverity.Warning,
           Severity.INFO: types.DiagnosticSeverity.Information}[d.severity]
    from parallint.report.formats import doc_uri

    related = []
    for r in d.related:
        p = Path(r.path)
        uri = _uri_of(p if p.is_absolute() else Path.cwd() / p)
        rpos = types.Position(line=max(r.line - 1, 0), character=max(r.column - 1, 0) if hasattr(r, "column") else 0)
        related.append(types.DiagnosticRelatedInformation(
            location=types.Location(uri=uri, range=types.Range(start=rpos, end=rpos)), message=r.message))
    data = None
    if d.fix is not None:  # what the code action needs to make the fix (sent back by the client)
        data = {"fix": [d.fix.title, d.fix.safe, d.fix.data], "span": [s.line, s.column, s.end_line, s.end_column]}
    return types.Diagnostic(
        range=types.Range(start=start, end=end), message=d.message, severity=sev, code=d.code,
        source=SOURCE, code_description=types.CodeDescription(href=doc_uri(d.code)),
        related_information=related or None, data=data,
    )


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


def fix_action(diag, uri: str, path: Path, text: str, pos: "Positions"):
    """The code action that makes the fix an LSP diagnostic of ours carries, or None (no fix, or
    the text is no longer what the finding saw)."""
    from lsprotocol import types

    from parallint.model.diagnostics import Diagnostic, Fix, Severity, Span
    from parallint.report.fixer import rule_edit

    data = diag.data if isinstance(diag.data, dict) else None
    try:
        title, safe, extra = data["fix"]  # type: ignore[index]
        line, column, end_line, end_column = (int(x) for x in data["span"])  # type: ignore[index]
    except (TypeError, KeyError, ValueError):
        return None
    ours = Diagnostic(str(diag.code), "", Severity.INFO, diag.message, Span(str(path), line, column, end_line, end_column),
                      fix=Fix(str(title), bool(safe), str(extra)))
    e = rule_edit(ours, text)
    if e is None:
        return None
    rng = types.Range(start=pos.lsp(e.start), end=pos.lsp(e.end))
    return types.CodeAction(
        title=f"Fix {diag.code}: {title}" + ("" if safe else " (unsafe: may change what the job does)"),
        kind=types.CodeActionKind.QuickFix, diagnostics=[diag], is_preferred=bool(safe),
        edit=types.WorkspaceEdit(changes={uri: [types.TextEdit(range=rng, new_text=e.text)]}),
    )


def make_server():
    from lsprotocol import types
    from pygls.lsp.server import LanguageServer

    from parallint import __version__

    server = LanguageServer("parallint", __version__, text_document_sync_kind=types.TextDocumentSyncKind.Full)
    state = {"linter": Linter(Path.cwd())}
    pending = {}  # uri -> its scheduled analysis (an asyncio.Task)
    edits = {}  # uri -> how many edits so far (an analysis of an older one is stale)
    published = {}  # uri -> [(finding, its LSP diagnostic)] last published (hover reads them)
    delay = debounce_seconds()

    def linter() -> Linter:
        return state["linter"]

    def schedule(ls, uri: str) -> None:
        """Analyse ``uri`` after the debounce delay, replacing an analysis not yet started."""
        old = pending.pop(uri, None)
        if old is not None:
            old.cancel()
        edits[uri] = edits.get(uri, 0) + 1
        seen = edits[uri]

        async def later() -> None:
            try:
                await asyncio.sleep(delay)
            except asyncio.CancelledError:
                return
            if pending.get(uri) is task:
                del pending[uri]
            await publish(ls, uri, lambda: edits.get(uri) != seen)

        task = asyncio.ensure_future(later())
        pending[uri] = task

    async def publish(ls, uri: str, stale=lambda: False) -> None:
        path = _path_of(uri)
        if path is None:
            return
        loop = asyncio.get_running_loop()
        try:
            results = await loop.run_in_executor(None, linter().lint, path)
        except Exception as exc:  # never take the editor session down
            ls.window_log_message(types.LogMessageParams(type=types.MessageType.Error,
                                                         message=f"parallint: {type(exc).__name__}: {exc}"))
            return
        ls.window_log_message(types.LogMessageParams(type=types.MessageType.Log, message=f"parallint: analysed {path}"))
        if stale():
            return  # a newer edit is scheduled; it publishes
        from parallint.engine.suppress import syntax_of

        codec = ls.workspace.position_codec
        for p, diags in sorted(results.items()):
            pos = None
            if diags:
                text = linter().text_of(p)
                pos = None if text is None else Positions(text, syntax_of(p.name), codec)
            lsp_diags = [_to_lsp(d, pos) for d in diags]
            published[_uri_of(p)] = list(zip(diags, lsp_diags))
            ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
                uri=_uri_of(p), diagnostics=lsp_diags))

    @server.feature(types.INITIALIZE)
    def initialize(ls, params: types.InitializeParams):
        root = None
        if params.workspace_folders:
            root = _path_of(params.workspace_folders[0].uri)
        elif params.root_uri:
            root = _path_of(params.root_uri)
        if root is not None and root.is_dir():
            os.chdir(root)
            state["linter"] = Linter(root)

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    async def did_open(ls, params: types.DidOpenTextDocumentParams):
        path = _path_of(params.text_document.uri)
        if path is not None:
            linter().buffers[path] = params.text_document.text
        await publish(ls, params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    async def did_change(ls, params: types.DidChangeTextDocumentParams):
        path = _path_of(params.text_document.uri)
        doc = ls.workspace.get_text_document(params.text_document.uri)
        if path is not None:
            linter().buffers[path] = doc.source
        schedule(ls, params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    async def did_save(ls, params: types.DidSaveTextDocumentParams):
        schedule(ls, params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls, params: types.DidCloseTextDocumentParams):
        old = pending.pop(params.text_document.uri, None)
        if old is not None:
            old.cancel()
        path = _path_of(params.text_document.uri)
        if path is not None:
            linter().buffers.pop(path, None)

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    def hover(ls, params: types.HoverParams):
        """The findings under the cursor: each with its rule, the facts behind it (the related
        places: the launch file that sets the world size) and the start of the rule's doc."""
        here = params.position
        hits = []
        for d, ld in published.get(params.text_document.uri, ()):
            r = ld.range
            if (r.start.line, r.start.character) <= (here.line, here.character) <= (r.end.line, r.end.character):
                hits.append((d, ld))
        if not hits:
            return None
        return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown,
                                                        value="\n\n---\n\n".join(hover_text(d) for d, _ in hits)),
                           range=hits[0][1].range)

    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION,
                    types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix]))
    def code_action(ls, params: types.CodeActionParams):
        from parallint.engine.suppress import syntax_of
        from parallint.report.noqa import noqa_edit

        path = _path_of(params.text_document.uri)
        if path is None:
            return []
        doc = ls.workspace.get_text_document(params.text_document.uri)
        text = doc.source
        actions = []
        syntax = syntax_of(path.name)
        pos = Positions(text, syntax, ls.workspace.position_codec)
        for diag in params.context.diagnostics:
            if diag.source != SOURCE or not diag.code:
                continue
            fixed = fix_action(diag, params.text_document.uri, path, text, pos)
            if fixed is not None:
                actions.append(fixed)
            line = pos.syntax_line(diag.range.start.line)
            edit = noqa_edit(text, syntax, line, [str(diag.code)])
            if edit is None or not edit[1]:
                continue
            start = pos.offset(line, 1)
            end = start + len(pos.syn_lines[line - 1])
            rng = types.Range(start=pos.lsp(start), end=pos.lsp(end))
            actions.append(types.CodeAction(
                title=f"Suppress {diag.code} on this line (# noqa: {diag.code})",
                kind=types.CodeActionKind.QuickFix, diagnostics=[diag],
                edit=types.WorkspaceEdit(changes={params.text_document.uri: [types.TextEdit(range=rng, new_text=edit[0])]}),
            ))
        return actions

    return server


def main() -> None:
    import sys

    from parallint.cli.lsp_io import serve

    sys.exit(serve(make_server(), sys.stdin.buffer, sys.stdout.buffer))
