"""An edit in the language server gives the findings `parallint check FILE` reports for the same
text on disk (the server keeps the link index and the editor's buffers in memory; the CLI reads
a copy of the workspace with the edit saved), and an edit of a launch file updates the
diagnostics of the script it starts (unsaved)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pygls", reason="pytest-lsp's client needs pygls")
pytest_lsp = pytest.importorskip("pytest_lsp", reason="pytest-lsp is not installed")
from lsprotocol import types  # noqa: E402
from pytest_lsp import ClientServerConfig, LanguageClient  # noqa: E402

from conftest import ROOT  # noqa: E402

WORK = Path()

TRAIN = ("import os\nimport torch\nimport torch.distributed as dist\n"
         "from torch.nn.parallel import DistributedDataParallel as DDP\n"
         "dist.init_process_group('nccl')\ntorch.cuda.set_device(int(os.environ['RANK']))\n"
         "model = DDP(torch.nn.Linear(2, 2), find_unused_parameters=True)\n")
RUN = "#!/bin/bash\ntorchrun --nnodes 1 --nproc_per_node 8 train.py\n"


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "parallint", "server", "--stdio"]))
async def client(lsp_client: LanguageClient):
    import tempfile

    global WORK
    WORK = Path(tempfile.mkdtemp(prefix="parallint-lsp-edit-")).resolve()
    shutil.copytree(ROOT / "examples" / "deepspeed_batch", WORK / "job")
    shutil.copytree(ROOT / "examples" / "torchtitan", WORK / "titan")
    (WORK / "train.py").write_text(TRAIN)
    (WORK / "run.sh").write_text(RUN)
    (WORK / ".git").mkdir()
    await lsp_client.initialize_session(types.InitializeParams(
        capabilities=types.ClientCapabilities(), root_uri=WORK.as_uri(),
        workspace_folders=[types.WorkspaceFolder(uri=WORK.as_uri(), name="work")]))
    yield
    await lsp_client.shutdown_session()
    shutil.rmtree(WORK, ignore_errors=True)


async def _published_until(client, uri: str, want, tries: int = 40):
    """The diagnostics of ``uri`` once a publication satisfies ``want``: an analysis still running
    from an earlier change may publish the file once more, with its older result, first."""
    for _ in range(tries):
        got = client.diagnostics.get(uri)
        if got is not None and want([d.code for d in got]):
            return got
        client.diagnostics.pop(uri, None)
        await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    return client.diagnostics.get(uri) or []


async def _published(client, uri: str, tries: int = 40):
    for _ in range(tries):
        if uri in client.diagnostics:
            return client.diagnostics[uri]
        await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    return client.diagnostics.get(uri)


def _open(client, path: Path) -> None:
    client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
        uri=path.as_uri(), language_id="plaintext", version=1, text=path.read_text())))


def _change(client, path: Path, text: str, version: int) -> None:
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=path.as_uri(), version=version),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)]))


def _cli(rel: str, edited: dict[str, str], tmp: Path) -> list[tuple]:
    """`parallint check REL` on a copy of the workspace with the edited texts saved."""
    copy = tmp / "copy"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(WORK, copy)
    for r, text in edited.items():
        (copy / r).write_text(text)
    res = subprocess.run([sys.executable, "-m", "parallint", "check", rel, "--no-cache", "--format", "json"],
                         cwd=copy, capture_output=True, text=True, timeout=120)
    assert res.returncode in (0, 1), res.stderr
    return sorted((d["code"], d["line"] - 1, d["message"]) for d in json.loads(res.stdout))


def _lsp(diags) -> list[tuple]:
    return sorted((d.code, d.range.start.line, d.message) for d in diags)


EDITS = [
    ("job/ds_config.json", '"train_batch_size": 32', '"train_batch_size": 16'),
    ("job/launch.sh", "--num_gpus 8", "--num_gpus 16"),
    ("titan/run_train.sh", "NGPU=8", "NGPU=4"),
    ("titan/llama3_8b.toml", "\n", "\n\n"),
    ("train.py", "find_unused_parameters=True", "find_unused_parameters=False"),
    ("run.sh", "--nnodes 1", "--nnodes 2"),
]


@pytest.mark.asyncio
@pytest.mark.parametrize("rel,old,new", EDITS)
async def test_an_edit_gets_what_check_file_reports_for_the_text_on_disk(client: LanguageClient, tmp_path,
                                                                        rel, old, new):
    path = WORK / rel
    _open(client, path)
    opened = await _published(client, path.as_uri())
    assert _lsp(opened) == _cli(rel, {}, tmp_path)
    text = path.read_text()
    assert old in text
    edited = text.replace(old, new, 1)
    client.diagnostics.clear()
    _change(client, path, edited, 2)
    assert _lsp(await _published(client, path.as_uri())) == _cli(rel, {rel: edited}, tmp_path)


@pytest.mark.asyncio
async def test_a_launch_edit_updates_the_script_it_starts(client: LanguageClient):
    """Two nodes make the global rank a wrong device index (DDP002, located in train.py): the
    unsaved edit of run.sh re-publishes train.py with it, and the edit back clears it."""
    script, launch = WORK / "train.py", WORK / "run.sh"
    _open(client, script)
    assert "DDP002" not in [d.code for d in await _published(client, script.as_uri())]
    _open(client, launch)
    await _published(client, launch.as_uri())
    client.diagnostics.clear()
    _change(client, launch, RUN.replace("--nnodes 1", "--nnodes 2"), 2)
    got = await _published_until(client, script.as_uri(), lambda codes: "DDP002" in codes)
    assert "DDP002" in [d.code for d in got]
    client.diagnostics.clear()
    _change(client, launch, RUN, 3)
    got = await _published_until(client, script.as_uri(), lambda codes: "DDP002" not in codes)
    assert "DDP002" not in [d.code for d in got]


def test_incremental_changes_are_applied_in_utf16_units():
    """A client may send ranges although the server asks for whole texts: a range after an emoji
    (two UTF-16 units) replaces the right characters."""
    from parallint.cli.server import Codec, apply_change

    text = "a = '\U0001F600'; b = 1\r\nc = 2\n"
    change = {"range": {"start": {"line": 0, "character": 14}, "end": {"line": 0, "character": 15}}, "text": "7"}
    assert apply_change(text, change, Codec()) == "a = '\U0001F600'; b = 7\r\nc = 2\n"
    change = {"range": {"start": {"line": 1, "character": 4}, "end": {"line": 1, "character": 5}}, "text": "3"}
    assert apply_change(text, change, Codec()) == "a = '\U0001F600'; b = 1\r\nc = 3\n"
    assert apply_change(text, {"text": "whole"}, Codec()) == "whole"
    assert apply_change("x\n", {"range": {"start": {"line": 1, "character": 0}, "end": {"line": 1, "character": 0}},
                                "text": "y\n"}, Codec("utf-8")) == "x\ny\n"
