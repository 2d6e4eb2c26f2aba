"""`parallint server` end to end with pytest-lsp: diagnostics on open and change from unsaved
buffers, cross-file re-publishing (an edit to a DeepSpeed config re-publishes the launch file's
job; a launch edit re-publishes the config), and the noqa code action."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

pytest.importorskip("pygls", reason="the 'lsp' extra (pygls) is not installed")
pytest_lsp = pytest.importorskip("pytest_lsp", reason="pytest-lsp is not installed")
from lsprotocol import types  # noqa: E402
from pytest_lsp import ClientServerConfig, LanguageClient  # noqa: E402

from conftest import ROOT  # noqa: E402

WORK = Path()  # the workspace of the running test (a fresh temporary folder)


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "parallint", "server", "--stdio"]))
async def client(lsp_client: LanguageClient):
    import tempfile

    global WORK
    WORK = Path(tempfile.mkdtemp(prefix="parallint-lsp-")).resolve()
    shutil.copytree(ROOT / "examples" / "deepspeed_batch", WORK / "job")
    (WORK / ".git").mkdir()
    await lsp_client.initialize_session(types.InitializeParams(
        capabilities=types.ClientCapabilities(), root_uri=WORK.as_uri(),
        workspace_folders=[types.WorkspaceFolder(uri=WORK.as_uri(), name="work")]))
    yield
    await lsp_client.shutdown_session()
    shutil.rmtree(WORK, ignore_errors=True)


async def _published(client, uri: str, tries: int = 20):
    for _ in range(tries):
        if uri in client.diagnostics:
            return client.diagnostics[uri]
        await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    return client.diagnostics.get(uri)


def _open(client, path: Path, text: str | None = None, lang: str = "plaintext"):
    client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
        uri=path.as_uri(), language_id=lang, version=1, text=path.read_text() if text is None else text)))


def _change(client, path: Path, text: str, version: int):
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=path.as_uri(), version=version),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)]))


@pytest.mark.asyncio
async def test_cross_file_diagnostics_follow_unsaved_edits(client: LanguageClient):
    ds, launch = WORK / "job" / "ds_config.json", WORK / "job" / "launch.sh"
    fixed = ds.read_text().replace('"train_batch_size": 32', '"train_batch_size": 64')

    # open the config: its cross-file finding is there (the world size is in launch.sh)
    _open(client, ds, lang="json")
    diags = await _published(client, ds.as_uri())
    assert [d.code for d in diags] == ["BAT001"]
    assert diags[0].severity == types.DiagnosticSeverity.Error and diags[0].range.start.line == 1

    # fix it in the buffer (not saved): the diagnostic goes away
    client.diagnostics.clear()
    _change(client, ds, fixed, 2)
    assert list(await _published(client, ds.as_uri())) == []

    # edit the launch file (unsaved): 16 GPUs break the (unsaved) config again; the config's
    # diagnostics are re-published although only the launch file changed
    client.diagnostics.clear()
    _open(client, launch, lang="shellscript")
    await _published(client, launch.as_uri())
    client.diagnostics.clear()
    _change(client, launch, launch.read_text().replace("--num_gpus 8", "--num_gpus 16"), 2)
    diags = await _published(client, ds.as_uri())
    assert [d.code for d in diags] == ["BAT001"] and "16" in diags[0].message

    # no noqa in JSON (no comments); the fix is offered, unsafe (it changes the global batch),
    # and computed on the unsaved buffer of the config with the unsaved launch line's 16 GPUs
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=ds.as_uri()),
        range=diags[0].range, context=types.CodeActionContext(diagnostics=list(diags))))
    (fix,) = actions
    assert fix.title.startswith("Fix BAT001: set train_batch_size to 128") and "unsafe" in fix.title
    assert not fix.is_preferred
    (edit,) = fix.edit.changes[ds.as_uri()]
    assert _apply(fixed, edit) == fixed.replace('"train_batch_size": 64', '"train_batch_size": 128')


@pytest.mark.asyncio
async def test_code_action_adds_noqa(client: LanguageClient):
    script = WORK / "train.py"
    text = ("import torch\nimport torch.distributed as dist\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
            "dist.init_process_group('nccl')\nmodel = DDP(torch.nn.Linear(2, 2), find_unused_parameters=True)\n")
    script.write_text(text)
    _open(client, script, lang="python")
    diags = await _published(client, script.as_uri())
    (d,) = [d for d in diags if d.code == "DDP001"]
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=script.as_uri()),
        range=d.range, context=types.CodeActionContext(diagnostics=[d])))
    (action,) = [a for a in actions if "noqa" in a.title]
    (edit,) = action.edit.changes[script.as_uri()]
    assert edit.new_text.endswith("find_unused_parameters=True)  # noqa: DDP001")


@pytest.mark.asyncio
async def test_hover_shows_the_rule_and_the_facts_behind_a_finding(client: LanguageClient):
    """The server runs as clients start it (`--stdio`); hovering a finding shows its rule, the
    facts behind it with the file and line that set each (the launch file's GPU count), its fix
    and the rule's doc; elsewhere nothing."""
    ds = WORK / "job" / "ds_config.json"
    _open(client, ds, lang="json")
    (d,) = await _published(client, ds.as_uri())
    got = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=ds.as_uri()), position=d.range.start))
    text = got.contents.value
    assert text.startswith("**BAT001** `deepspeed-batch-identity` (error)")
    assert "Facts behind it:\n- micro batch 2 (`job/ds_config.json:3`)\n" in text, text
    assert "- world size 8 (`job/launch.sh:" in text, text
    assert "Fix: set train_batch_size to 64 (unsafe" in text
    assert "What it does" not in text and "DeepSpeed" in text  # the doc's first section, as prose
    nothing = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=ds.as_uri()), position=types.Position(line=0, character=0)))
    assert nothing is None


@pytest.mark.asyncio
async def test_code_action_makes_the_fix(client: LanguageClient):
    """The fix `check --fix` makes is offered as a code action, in UTF-16 columns (an emoji on
    the line), and applying it removes the finding; an unsafe fix says so and is not preferred."""
    import ast

    script = WORK / "loader.py"
    text = ("import torch\nfrom torch.utils.data import DataLoader, DistributedSampler\n"
            "tag = '\U0001F600'; loader = DataLoader(ds, sampler=DistributedSampler(ds), shuffle=True)\n")
    script.write_text(text)
    _open(client, script, lang="python")
    diags = await _published(client, script.as_uri())
    (d,) = [d for d in diags if d.code == "DAT003"]
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=script.as_uri()),
        range=d.range, context=types.CodeActionContext(diagnostics=[d])))
    (fix,) = [a for a in actions if a.title.startswith("Fix DAT003")]
    assert fix.is_preferred and "unsafe" not in fix.title
    (edit,) = fix.edit.changes[script.as_uri()]
    after = _apply(text, edit)
    assert after.endswith("tag = '\U0001F600'; loader = DataLoader(ds, sampler=DistributedSampler(ds))\n")
    ast.parse(after)
    client.diagnostics.clear()
    _change(client, script, after, 2)
    assert [x.code for x in await _published(client, script.as_uri())] == []


@pytest.mark.asyncio
async def test_code_action_offers_the_lay001_layout_fix(client: LanguageClient):
    """LAY001's fix (the nearest layout `plan` accepts) is a code action like the others: unsafe,
    so not preferred; applied, the degree is the only change and the finding goes."""
    (WORK / "pretrain_gpt.py").write_text("import torch.distributed as dist\ndist.init_process_group('nccl')\n")
    launch = WORK / "run.sh"
    text = "#!/bin/bash\ntorchrun --nproc_per_node 4 pretrain_gpt.py --tensor-model-parallel-size 8\n"
    launch.write_text(text)
    _open(client, launch, lang="shellscript")
    diags = await _published(client, launch.as_uri())
    (d,) = [d for d in diags if d.code == "LAY001"]
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=launch.as_uri()),
        range=d.range, context=types.CodeActionContext(diagnostics=[d])))
    (fix,) = [a for a in actions if a.title.startswith("Fix LAY001")]
    assert "set TP to 4" in fix.title and "unsafe" in fix.title and not fix.is_preferred
    (edit,) = fix.edit.changes[launch.as_uri()]
    after = _apply(text, edit)
    assert after == text.replace("--tensor-model-parallel-size 8", "--tensor-model-parallel-size 4")
    client.diagnostics.clear()
    _change(client, launch, after, 2)
    assert [x.code for x in await _published(client, launch.as_uri())] == []


def _analyses(client) -> int:
    return sum(1 for m in client.log_messages if m.message.startswith("parallint: analysed "))


@pytest.mark.asyncio
async def test_a_burst_of_edits_gives_one_analysis(client: LanguageClient):
    """didChange is debounced: five quick edits are analysed once, with the last text."""
    import asyncio

    ds = WORK / "job" / "ds_config.json"
    original = ds.read_text()
    _open(client, ds, lang="json")
    await _published(client, ds.as_uri())
    before = _analyses(client)
    assert before >= 1
    client.diagnostics.clear()
    for version, batch in enumerate((40, 48, 56, 64, 16), start=2):  # 64 would be right; 16 is last
        _change(client, ds, original.replace('"train_batch_size": 32', f'"train_batch_size": {batch}'), version)
        await asyncio.sleep(0.02)
    diags = await _published(client, ds.as_uri())
    assert [d.code for d in diags] == ["BAT001"] and "train_batch_size 16 " in diags[0].message
    await asyncio.sleep(0.6)  # longer than the debounce delay: nothing else was scheduled
    assert _analyses(client) - before == 1, [m.message for m in client.log_messages]


def _apply(text: str, edit) -> str:
    """``edit`` applied as an editor does: lines broken at \\n, \\r\\n and \\r only, columns in
    UTF-16 code units (the default position encoding)."""
    import re

    starts = [0] + [m.end() for m in re.finditer("\r\n|[\n\r]", text)]

    def offset(pos) -> int:
        at, units = starts[pos.line], 0
        while units < pos.character:
            units += 2 if ord(text[at]) > 0xFFFF else 1
            at += 1
        return at

    return text[:offset(edit.range.start)] + edit.new_text + text[offset(edit.range.end):]


async def _quick_fix(client, script: Path, text: str) -> str:
    script.write_text(text, newline="")
    _open(client, script, text=text, lang="python")
    diags = await _published(client, script.as_uri())
    (d,) = [d for d in diags if d.code == "DDP001"]
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=script.as_uri()),
        range=d.range, context=types.CodeActionContext(diagnostics=[d])))
    (action,) = [a for a in actions if "noqa" in a.title]
    (edit,) = action.edit.changes[script.as_uri()]
    return _apply(text, edit)


_HEAD = ("import torch\nimport torch.distributed as dist\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
         "dist.init_process_group('nccl')\n")


@pytest.mark.asyncio
async def test_quick_fix_counts_utf16_units(client: LanguageClient):
    """An emoji is two UTF-16 units: the edit covers the whole line, leaving no stray characters,
    and the diagnostic's columns are in the same units."""
    import ast

    line = "tag = '\U0001F600\U0001F600'; model = DDP(torch.nn.Linear(2, 2), find_unused_parameters=True)"
    text = _HEAD + line + "\nprint(tag)\n"
    after = await _quick_fix(client, WORK / "emoji.py", text)
    assert after == _HEAD + line + "  # noqa: DDP001\nprint(tag)\n"
    assert ast.dump(ast.parse(after)) == ast.dump(ast.parse(text))
    diags = client.diagnostics[(WORK / "emoji.py").as_uri()]
    (d,) = [d for d in diags if d.code == "DDP001"]
    at = line.index("True)")  # the finding points at the value, past the two emoji
    assert (d.range.start.character, d.range.end.character) == (at + 2, at + 2 + len("True"))


@pytest.mark.asyncio
async def test_quick_fix_after_a_form_feed_edits_the_finding_line(client: LanguageClient):
    """A form feed is whitespace to Python and to the editor, not a line break."""
    import ast

    line = "model = DDP(torch.nn.Linear(2, 2), find_unused_parameters=True)"
    text = _HEAD + "\x0c\n# section two\n" + line + "\n"
    after = await _quick_fix(client, WORK / "ff.py", text)
    assert after == _HEAD + "\x0c\n# section two\n" + line + "  # noqa: DDP001\n"
    assert ast.dump(ast.parse(after)) == ast.dump(ast.parse(text))
