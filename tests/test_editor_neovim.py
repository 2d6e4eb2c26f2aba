"""The language server driven by a real client (issue 26): headless Neovim (Debian's `neovim`
package) starts `parallint server --stdio`, opens a script, gets its diagnostics, edits the
buffer (the finding moves with it), applies the fix code action and saves; the finding is gone.
Also the editor files under ``editors/`` parse (the VS Code extension's script and manifest)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT

SCRIPT = r'''
local root = vim.env.PARALLINT_ROOT
local out = io.open(root .. "/nvim.log", "w")
local function log(s) out:write(s .. "\n"); out:flush() end
local id = vim.lsp.start_client({cmd = {vim.env.PARALLINT_PYTHON, "-m", "parallint", "server", "--stdio"},
                                 root_dir = root, name = "parallint"})
vim.cmd("edit " .. root .. "/train.py")
local buf = vim.api.nvim_get_current_buf()
vim.lsp.buf_attach_client(buf, id)
local function find(code)
  for _, x in ipairs(vim.diagnostic.get(buf)) do if x.code == code then return x end end
  return nil
end
local ok = vim.wait(30000, function() return find("DAT003") ~= nil end, 100)
log("open " .. tostring(ok) .. " " .. (ok and find("DAT003").lnum or -1))
vim.api.nvim_buf_set_lines(buf, 0, 0, false, {"# a comment"})
ok = vim.wait(30000, function() local d = find("DAT003"); return d ~= nil and d.lnum == 4 end, 100)
log("edit " .. tostring(ok))
local d = find("DAT003")
local params = {textDocument = {uri = vim.uri_from_bufnr(buf)},
                range = {start = {line = d.lnum, character = d.col}, ["end"] = {line = d.end_lnum, character = d.end_col}},
                context = {diagnostics = {{range = {start = {line = d.lnum, character = d.col},
                                                     ["end"] = {line = d.end_lnum, character = d.end_col}},
                                            message = d.message, code = d.code, source = d.source,
                                            severity = d.severity, data = d.user_data.lsp.data}}}}
local res = vim.lsp.buf_request_sync(buf, "textDocument/codeAction", params, 20000)
local titles = {}
for _, r in pairs(res or {}) do
  for _, a in ipairs(r.result or {}) do
    table.insert(titles, a.title)
    if a.title:sub(1, 10) == "Fix DAT003" then vim.lsp.util.apply_workspace_edit(a.edit, "utf-16") end
  end
end
log("actions " .. table.concat(titles, " | "))
vim.cmd("write")
ok = vim.wait(30000, function() return find("DAT003") == nil end, 100)
log("after " .. tostring(ok))
vim.cmd("qa!")
'''

TRAIN = ("import torch\nfrom torch.utils.data import DataLoader, DistributedSampler\n\n"
         "loader = DataLoader(ds, sampler=DistributedSampler(ds), shuffle=True)\n")


@pytest.mark.skipif(shutil.which("nvim") is None, reason="headless Neovim is not installed (apt-get install neovim)")
def test_neovim_open_diagnostics_edit_fix(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / "train.py").write_text(TRAIN)
    (tmp_path / "t.lua").write_text(SCRIPT)
    env = {**os.environ, "PARALLINT_ROOT": str(tmp_path), "PARALLINT_PYTHON": sys.executable}
    res = subprocess.run(["nvim", "--headless", "--clean", "-u", "NONE", "-c", "luafile t.lua"], cwd=tmp_path,
                         env=env, capture_output=True, text=True, timeout=240)
    log = (tmp_path / "nvim.log").read_text().splitlines()
    assert log[0] == "open true 3", (log, res.stderr)  # DAT003 on line 4 (0-based 3)
    assert log[1] == "edit true", log  # the diagnostic followed the unsaved edit
    assert "Fix DAT003: remove shuffle=True" in log[2] and "noqa" in log[2], log
    assert log[3] == "after true", log
    assert (tmp_path / "train.py").read_text() == "# a comment\n" + TRAIN.replace(", shuffle=True", "")


def test_editor_files_parse():
    manifest = json.loads((ROOT / "editors" / "vscode" / "package.json").read_text())
    assert manifest["main"] == "./extension.js" and "vscode-languageclient" in manifest["dependencies"]
    assert manifest["contributes"]["configuration"]["properties"]["parallint.command"]["default"] == \
        ["parallint", "server", "--stdio"]
    if shutil.which("node"):
        subprocess.run(["node", "--check", str(ROOT / "editors" / "vscode" / "extension.js")], check=True)
    assert 'cmd = { "parallint", "server", "--stdio" }' in (ROOT / "editors" / "neovim" / "parallint.lua").read_text()
