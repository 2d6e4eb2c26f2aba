"""Engine units: discovery and .gitignore, configuration, selectors, suppression, reporters."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from parallint.discover.settings import ConfigError, load_config
from parallint.model.diagnostics import Diagnostic, Related, Severity, Span
from parallint.discover.walk import Excluder, compile_patterns, discover
from parallint.engine.registry import Registry, UnknownSelector, get_registry
from parallint.report.formats import github_line, render, sarif
from parallint.model.rule import Example, Rule
from parallint.engine.suppress import Suppressions

from conftest import write_tree


def _files(tmp: Path, exclude=(), explicit=None):
    errors: list[str] = []
    cands = discover(explicit or ["."], Excluder(list(exclude), tmp), tmp, errors)
    return sorted(c.display for c in cands), errors


def test_gitignore_and_excludes(tmp_path):
    write_tree(tmp_path, {
        ".gitignore": "build/\n*.log\n!keep.log\n/top_only.py\n",
        "a.py": "", "build/b.py": "", "x.log": "", "keep.log": "", "top_only.py": "",
        "sub/top_only.py": "", "sub/.gitignore": "secret.sh\n", "sub/secret.sh": "", "sub/ok.sh": "",
        "node_modules/m.py": "", ".venv/lib.py": "", "gen/out.py": "",
    })
    (tmp_path / ".git").mkdir()
    files, errors = _files(tmp_path, exclude=["gen"])
    assert errors == []
    assert files == [".gitignore", "a.py", "keep.log", "sub/.gitignore", "sub/ok.sh", "sub/top_only.py"]


def test_explicit_file_beats_gitignore_but_not_exclude(tmp_path):
    write_tree(tmp_path, {".gitignore": "ignored.py\n", "ignored.py": "", "gen/x.py": ""})
    (tmp_path / ".git").mkdir()
    assert _files(tmp_path, explicit=["ignored.py"])[0] == ["ignored.py"]
    assert _files(tmp_path, exclude=["gen"], explicit=["gen/x.py"])[0] == []


def test_missing_path_is_an_error_not_a_crash(tmp_path):
    files, errors = _files(tmp_path, explicit=["nope.py"])
    assert files == [] and errors == ["nope.py: no such file or directory"]


def test_symlink_loop_terminates(tmp_path):
    write_tree(tmp_path, {"d/a.py": ""})
    (tmp_path / "d" / "loop").symlink_to(tmp_path / "d", target_is_directory=True)
    files, _ = _files(tmp_path)
    assert files == ["d/a.py"]


def test_glob_patterns():
    pats = compile_patterns(["**/cache/**", "docs/*.md", "a?c.py"])
    assert pats[0].regex.match("x/cache/y/z.py")
    assert pats[1].regex.match("docs/x.md") and not pats[1].regex.match("src/docs/x.md")
    assert pats[2].regex.match("abc.py") and not pats[2].regex.match("abbc.py")


def test_config_found_and_validated(tmp_path):
    write_tree(tmp_path, {"pyproject.toml": '[tool.parallint]\nselect = ["DDP"]\nfail-level = "error"\n'})
    (tmp_path / "sub").mkdir()
    cfg = load_config(start=tmp_path / "sub")
    assert cfg.settings["select"] == ["DDP"] and cfg.fail_level == Severity.ERROR


def test_config_unknown_key_names_key_and_file(tmp_path):
    write_tree(tmp_path, {"pyproject.toml": '[tool.parallint]\nselct = ["DDP"]\n'})
    with pytest.raises(ConfigError) as e:
        load_config(start=tmp_path)
    assert "selct" in str(e.value) and "pyproject.toml" in str(e.value) and "select" in str(e.value)


def test_config_bad_value(tmp_path):
    write_tree(tmp_path, {"parallint.toml": 'memory-headroom = 2\n'})
    with pytest.raises(ConfigError) as e:
        load_config(start=tmp_path)
    assert "memory-headroom" in str(e.value)


class _A(Rule):
    code, name, summary = "ABC001", "first-thing", "x"


class _B(Rule):
    code, name, summary = "ABC002", "second-thing", "x"


class _C(Rule):
    code, name, summary = "XYZ101", "third-thing", "x"


def test_selectors_specificity():
    reg = Registry([_A, _B, _C])
    codes = lambda rules: sorted(r.code for r in rules)  # noqa: E731
    assert codes(reg.enabled(None, [], [])) == ["ABC001", "ABC002", "XYZ101"]
    assert codes(reg.enabled(["ABC"], [], [])) == ["ABC001", "ABC002"]
    assert codes(reg.enabled(["ABC001"], [], ["ABC"])) == ["ABC001"]  # code beats prefix
    assert codes(reg.enabled(None, [], ["second-thing"])) == ["ABC001", "XYZ101"]
    assert codes(reg.enabled(["XYZ1"], ["first-thing"], [])) == ["ABC001", "XYZ101"]
    with pytest.raises(UnknownSelector):
        reg.matches("NOPE")


def test_duplicate_codes_rejected():
    class _Dup(Rule):
        code, name, summary = "ABC001", "other-name", "x"

    from parallint.engine.registry import RegistryError

    with pytest.raises(RegistryError):
        Registry([_A, _Dup])


def test_noqa_scanning():
    text = "a = 1  # noqa: DDP001, PG001\nb = 2  # noqa\nc = 3\n# parallint: noqa: CKP\n"
    s = Suppressions.scan(text)
    assert s.lines[1] == ("DDP001", "PG001") and s.lines[2] == ("ALL",)
    assert 3 not in s.lines and s.file_level == ("CKP",)
    assert "CKP" in s.selectors_for(3, 3)


def _diag(sev=Severity.ERROR, related=()):
    return Diagnostic("SYN001", "parse-error", sev, "bad, very: bad", Span("a b/c.json", 3, 5, 3, 9), tuple(related))


def test_text_and_json_output():
    d = _diag(related=[Related("x.sh", 7, "stated here")])
    out = render("text", [d], 2)
    assert out.splitlines()[0] == "a b/c.json:3:5: SYN001 bad, very: bad"
    assert "    note: x.sh:7: stated here" in out
    assert out.splitlines()[-1] == "Found 1 finding (1 error) in 2 files."
    item = json.loads(render("json", [d], 2))[0]
    assert set(item) == {"code", "name", "severity", "message", "path", "line", "column", "end_line", "end_column", "related"}
    assert item["related"] == [{"path": "x.sh", "line": 7, "message": "stated here"}]
    assert render("text", [], 3) == "All checks passed (3 files checked).\n"


def test_github_annotation_escaping():
    line = github_line(_diag(Severity.INFO))
    assert line.startswith("::notice file=a b/c.json,line=3,col=5,endLine=3,endColumn=9,title=SYN001 parse-error::")
    assert line.endswith("bad, very: bad")
    assert "%0A" in github_line(_diag(related=[Related("x", 1, "m")]))


def test_sarif_shape():
    from parallint.rules.syn.syn001_parse_error import ParseError

    doc = sarif([_diag(related=[Related("x.sh", 7, "here")])], [ParseError])
    run = doc["runs"][0]
    assert doc["version"] == "2.1.0"
    assert run["tool"]["driver"]["rules"][0]["id"] == "SYN001"
    res = run["results"][0]
    assert res["ruleId"] == "SYN001" and res["ruleIndex"] == 0 and res["level"] == "error"
    region = res["locations"][0]["physicalLocation"]["region"]
    assert region == {"startLine": 3, "startColumn": 5, "endLine": 3, "endColumn": 9}
    assert res["relatedLocations"][0]["physicalLocation"]["region"]["startLine"] == 7
    assert res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "a%20b/c.json"


def test_example_dedent():
    ex = Example("""
        x = 1
          y
    """, filename="t.py", files={"b.sh": "  echo\n"})
    assert ex.all_files() == {"t.py": "x = 1\n  y\n", "b.sh": "echo\n"}


def test_builtin_registry_loads():
    reg = get_registry()
    assert reg.lookup("SYN001") is reg.lookup("parse-error")


def test_per_file_ignores_globs_relative_to_config(tmp_path):
    from parallint.discover.settings import Config

    cfg = Config(None, tmp_path, {"per-file-ignores": {"./.hidden/*": ["DDP001"], "legacy/*.py": ["PG"]}})
    assert cfg.per_file_ignores(".hidden/a.py", tmp_path / ".hidden" / "a.py") == ["DDP001"]
    assert cfg.per_file_ignores("legacy/b.py", tmp_path / "legacy" / "b.py") == ["PG"]
    assert cfg.per_file_ignores("src/c.py", tmp_path / "src" / "c.py") == []
