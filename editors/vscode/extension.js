// The parallint extension: starts `parallint server --stdio` and hands it the documents parallint
// reads (Python, shell and sbatch scripts, YAML, JSON and TOML configs). Diagnostics, hover and the
// fixes as code actions come from the server.
"use strict";
const vscode = require("vscode");
const { LanguageClient } = require("vscode-languageclient/node");

let client;

function activate(context) {
  const [command, ...args] = vscode.workspace.getConfiguration("parallint").get("command");
  const server = { command, args, options: { cwd: vscode.workspace.workspaceFolders?.[0]?.uri.fsPath } };
  client = new LanguageClient("parallint", "parallint", { run: server, debug: server }, {
    documentSelector: ["python", "shellscript", "yaml", "json", "jsonc", "toml"].map((language) => ({ scheme: "file", language })),
  });
  context.subscriptions.push(client);
  return client.start();
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
