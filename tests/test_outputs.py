"""Report formats: SARIF fingerprints/help/%SRCROOT%, rule docs pages, JUnit, GitLab code quality,
Checkstyle, --output-file, --statistics, colour and code frames on a terminal, doc links."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from parallint.model.diagnostics import Diagnostic, Severity, Span
from parallint.engine.registry import get_registry
from parallint.report.formats import Options, render
from parallint.report.ruledocs import pages

from conftest import ROOT


def _example_repo(tmp_path):
    shutil.copytree(ROOT / "examples" / "deepspeed_batch", tmp_path / "job")
    (tmp_path / ".git").mkdir()
    return tmp_path


def test_sarif_fingerprints_help_and_srcroot(tmp_path, cli):
    import jsonschema
    from test_sarif_schema import _schema

    repo = _example_repo(tmp_path)
    p = cli("check", "--format", "sarif", ".", cwd=repo / "job")  # run from a subfolder
    doc = json.loads(p.stdout)
    jsonschema.Draft4Validator(_schema()).validate(doc)
    run = doc["runs"][0]
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == repo.resolve().as_uri() + "/"
    (res,) = run["results"]
    loc = res["locations"][0]["physicalLocation"]["artifactLocation"]
    assert loc == {"uri": "job/ds_config.json", "uriBaseId": "%SRCROOT%"}
    fp = res["partialFingerprints"]["parallint/v1"]
    rule = run["tool"]["driver"]["rules"][res["ruleIndex"]]
    assert rule["id"] == "BAT001" and "## How to fix" in rule["help"]["markdown"]
    assert rule["helpUri"].endswith("/docs/rules/BAT001.md")
    # the fingerprint survives lines inserted above the finding
    ds = repo / "job" / "ds_config.json"
    ds.write_text("\n\n" + ds.read_text())
    again = json.loads(cli("check", "--format", "sarif", ".", cwd=repo).stdout)["runs"][0]["results"][0]
    assert again["locations"][0]["physicalLocation"]["region"]["startLine"] == 4
    assert again["partialFingerprints"]["parallint/v1"] == fp


def test_sarif_meets_githubs_limits_and_links_related_places(tmp_path, cli):
    """Every rule's descriptions are at most 1,000 characters (GitHub's limit); the whole doc is
    the help of the rules with results only; a finding's related places are linked from its
    message (``[world size 8](2)`` names relatedLocation 2)."""
    repo = _example_repo(tmp_path)
    p = cli("check", "--format", "sarif", ".", cwd=repo)
    run = json.loads(p.stdout)["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert len(rules) > 60
    for r in rules:
        assert len(r["shortDescription"]["text"]) <= 1000, r["id"]
        assert len(r.get("fullDescription", {}).get("text", "")) <= 1000, r["id"]
    assert [r["id"] for r in rules if "help" in r] == [r["id"] for r in rules if "fullDescription" in r] == ["BAT001"]
    from parallint.engine.registry import get_registry
    from parallint.report.formats import _cut, _what_it_does

    longest = max(get_registry().rules, key=lambda r: len(_what_it_does(r)))
    assert len(_what_it_does(longest)) > 1000 and len(_cut(_what_it_does(longest))) <= 1000  # the cut works
    (res,) = run["results"]
    text = res["message"]["text"]
    for loc in res["relatedLocations"]:
        assert f"[{loc['message']['text']}]({loc['id']})" in text
    assert "[world size 8](" in text
    assert len(p.stdout) < 80_000, len(p.stdout)  # was 318 KB for 7 results when every rule carried its doc


def test_rule_docs_are_committed_and_current():
    rules = get_registry().rules
    docs = ROOT / "docs" / "rules"
    stale = [name for name, text in pages(rules).items()
             if not (docs / name).is_file() or (docs / name).read_text("utf-8") != text]
    extra = sorted({p.name for p in docs.glob("*.md")} - set(pages(rules)))
    assert not stale and not extra, (
        f"docs/rules is out of date ({stale or extra}): run `parallint rules --write-docs docs/rules`")


def test_junit_gitlab_checkstyle_and_output_file(tmp_path, cli):
    repo = _example_repo(tmp_path)
    p = cli("check", "--format", "junit", "--output-file", "out/report.xml", ".", cwd=repo)
    assert p.returncode == 1 and p.stdout == ""
    suite = ET.parse(repo / "out/report.xml").getroot().find("testsuite")
    (case,) = suite.findall("testcase")
    assert suite.get("failures") == "1" and case.find("failure").get("type") == "BAT001"
    assert case.get("file") == "job/ds_config.json" and case.get("line") == "2"

    clean = cli("check", "--format", "junit", "job/train.py", cwd=repo)
    root = ET.fromstring(clean.stdout)
    assert root.get("failures") == "0" and len(root.iter("testcase").__next__().findall("failure")) == 0

    gl = json.loads(cli("check", "--format", "gitlab", ".", cwd=repo / "job").stdout)
    assert gl == [{
        "description": gl[0]["description"], "check_name": "BAT001", "fingerprint": gl[0]["fingerprint"],
        "severity": "major", "location": {"path": "job/ds_config.json", "lines": {"begin": 2, "end": 2}},
    }] and gl[0]["description"].startswith("BAT001 train_batch_size 32")

    cs = ET.fromstring(cli("check", "--format", "checkstyle", ".", cwd=repo).stdout)
    (f,) = cs.findall("file")
    assert f.get("name") == "job/ds_config.json" and f.find("error").get("source") == "parallint.BAT001"


def test_statistics_docs_link_and_plain_when_piped(tmp_path, cli):
    repo = _example_repo(tmp_path)
    p = cli("check", "--statistics", "--show-docs-link", ".", cwd=repo)
    assert "\x1b[" not in p.stdout
    assert "    docs: https://github.com/parallint/parallint/blob/main/docs/rules/BAT001.md" in p.stdout
    assert p.stdout.rstrip().splitlines()[-1].split() == ["1", "BAT001", "deepspeed-batch-identity"]
    forced = cli("check", ".", cwd=repo, env={"FORCE_COLOR": "1"})
    assert "\x1b[" in forced.stdout
    assert "\x1b[" not in cli("check", ".", cwd=repo, env={"FORCE_COLOR": "1", "NO_COLOR": "1"}).stdout


def test_terminal_gets_colour_and_a_code_frame(tmp_path):
    if sys.platform == "win32":
        return
    import pty

    repo = _example_repo(tmp_path)
    exe = Path(sys.executable).with_name("parallint")
    master, slave = pty.openpty()
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    env["TERM"] = "xterm"
    proc = subprocess.Popen([str(exe), "check", "."], cwd=repo, stdout=slave, stderr=slave, env=env)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=120)
    os.close(master)
    out = b"".join(chunks).decode("utf-8", "replace")
    assert "\x1b[" in out
    import re

    out = re.sub(r"\x1b\[[0-9;]*m", "", out)
    assert '> ' in out and '"train_batch_size": 32' in out and "^" in out


def test_code_frame_marks_the_span():
    d = Diagnostic("DDP001", "find-unused-parameters", Severity.WARNING, "m", Span("t.py", 2, 5, 2, 9))
    src = Path(__file__).parent / "_frame_tmp"
    try:
        src.mkdir(exist_ok=True)
        (src / "t.py").write_text("a = 1\nb = 2222\nc = 3\n")
        out = render("text", [d], 1, (), Options(cwd=src, code_frame=True))
    finally:
        shutil.rmtree(src, ignore_errors=True)
    lines = out.splitlines()
    assert lines[0] == "t.py:2:5: DDP001 m"
    assert lines[2].endswith("| b = 2222") and lines[2].lstrip().startswith(">")
    assert lines[3].endswith("|     ^^^^")
