"""Settings per file: the nearest pyproject.toml/parallint.toml up from each checked file, wherever
parallint is started; --config overrides."""

from __future__ import annotations

from conftest import write_tree
from test_cli import DDP_SCRIPT


def _tree(tmp_path):
    write_tree(tmp_path, {
        "a/pyproject.toml": "[tool.parallint]\nignore = ['DDP001']\n",
        "a/train.py": DDP_SCRIPT,
        "b/parallint.toml": "select = ['DDP001']\nfail-level = 'error'\n",
        "b/sub/train.py": DDP_SCRIPT,
        "c/train.py": DDP_SCRIPT,
        "strict.toml": "[tool.parallint]\nignore = ['DDP']\n",
    })
    for d in ("a", "b", "c"):
        (tmp_path / d / ".git").mkdir()


def test_each_file_gets_its_nearest_configuration(tmp_path, cli):
    _tree(tmp_path)
    p = cli("check", "a/train.py", "b/sub/train.py", "c/train.py", cwd=tmp_path)
    reported = {ln.split(":")[0] for ln in p.stdout.splitlines() if " DDP001 " in ln}
    assert reported == {"b/sub/train.py", "c/train.py"}, p.stdout
    assert p.returncode == 1  # c has the default fail level (warning)
    # b alone: its own fail-level (error) makes a warning pass
    p = cli("check", "b/sub/train.py", cwd=tmp_path)
    assert p.returncode == 0 and " DDP001 " in p.stdout, p.stdout + p.stderr


def test_an_editor_started_elsewhere_uses_the_files_configuration(tmp_path, cli):
    _tree(tmp_path)
    elsewhere = tmp_path / "c"
    p = cli("check", str(tmp_path / "a" / "train.py"), cwd=elsewhere)
    assert p.returncode == 0 and "DDP001" not in p.stdout, p.stdout + p.stderr
    p = cli("check", "-", "--stdin-filename", str(tmp_path / "a" / "train.py"), cwd=elsewhere, stdin=DDP_SCRIPT)
    assert p.returncode == 0 and "DDP001" not in p.stdout, p.stdout + p.stderr


def test_explicit_config_overrides_every_file(tmp_path, cli):
    _tree(tmp_path)
    p = cli("check", "--config", "strict.toml", "b/sub/train.py", "c/train.py", cwd=tmp_path)
    assert p.returncode == 0 and "DDP001" not in p.stdout, p.stdout + p.stderr


def test_nested_configuration_inside_a_walked_folder(tmp_path, cli):
    write_tree(tmp_path, {
        "pyproject.toml": "[tool.parallint]\nextend-exclude = ['build']\n",
        "train.py": DDP_SCRIPT,
        "legacy/pyproject.toml": "[tool.parallint]\nignore = ['DDP001']\n",
        "legacy/train.py": DDP_SCRIPT,
        "other/parallint.toml": "[per-file-ignores]\n'old_*.py' = ['DDP']\n",
        "other/old_train.py": DDP_SCRIPT,
        "other/new_train.py": DDP_SCRIPT,
    })
    (tmp_path / ".git").mkdir()
    p = cli("check", ".", cwd=tmp_path)
    reported = sorted(ln.split(":")[0] for ln in p.stdout.splitlines() if " DDP001 " in ln)
    assert reported == ["other/new_train.py", "train.py"], p.stdout + p.stderr
    # --config: one configuration for everything
    p = cli("check", "--config", "pyproject.toml", ".", cwd=tmp_path)
    assert len([ln for ln in p.stdout.splitlines() if " DDP001 " in ln]) == 4


TWO_FINDINGS = DDP_SCRIPT + '    model.load_state_dict(torch.load("ckpt.pt"))\n'  # DDP001 and CKP002, both warnings


def _nested_tree(tmp_path):
    write_tree(tmp_path, {
        "pyproject.toml": "[tool.parallint]\nignore = ['CKP002']\n",
        "train.py": TWO_FINDINGS,
        # selects more than the top configuration, with its own fail level
        "strict/parallint.toml": "select = ['ALL']\nfail-level = 'error'\n",
        "strict/train.py": TWO_FINDINGS,
        # no implicit inheritance (Ruff): the nearest configuration alone governs
        "fresh/pyproject.toml": "[tool.parallint]\nignore = ['DDP001']\n",
        "fresh/train.py": TWO_FINDINGS,
        # extend: the top configuration's ignore, plus this one's per-file-ignores
        "ext/pyproject.toml": "[tool.parallint]\nextend = '../pyproject.toml'\n"
                              "[tool.parallint.per-file-ignores]\n'old_*.py' = ['ALL']\n",
        "ext/train.py": TWO_FINDINGS,
        "ext/old_train.py": TWO_FINDINGS,
    })
    (tmp_path / ".git").mkdir()


def _found(p) -> set[tuple[str, str]]:
    return {(ln.split(":")[0], ln.split()[1]) for ln in p.stdout.splitlines() if ln[:1] not in (" ", "") and ": " in ln
            and ln.split()[1][:3].isalpha() and ln.split()[1][3:].isdigit()}


def test_nested_configurations_same_from_the_root_a_folder_or_a_file(tmp_path, cli):
    """The nearest configuration governs each file's findings and fail level, whether parallint
    is given the repository, the file's folder or the file: `check <root>` restricted to a file
    equals `check <file>` (and `check <folder>`), exit codes included."""
    _nested_tree(tmp_path)
    want = {"strict/train.py": {"DDP001", "CKP002"}, "fresh/train.py": {"CKP002"}, "ext/train.py": {"DDP001"},
            "ext/old_train.py": set(), "train.py": {"DDP001"}}
    whole = cli("check", ".", cwd=tmp_path)
    got = _found(whole)
    for path, codes in want.items():
        assert {c for p, c in got if p == path} == codes, (path, whole.stdout + whole.stderr)
        one = cli("check", path, cwd=tmp_path)
        assert _found(one) == {(path, c) for c in codes}, (path, one.stdout + one.stderr)
        # strict's warnings pass its fail level 'error'; the others' fail the default 'warning'
        assert one.returncode == (1 if codes and path != "strict/train.py" else 0), (path, one.stdout + one.stderr)
        folder = path.rsplit("/", 1)[0] if "/" in path else None
        if folder:
            part = cli("check", folder, cwd=tmp_path)
            assert {c for p, c in _found(part) if p == path} == codes, (folder, part.stdout + part.stderr)
    assert whole.returncode == 1
    # only strict's warnings, under its own fail level, from the top: exit 0
    for name in ("train.py", "fresh/train.py", "ext/train.py"):
        (tmp_path / name).unlink()
    p = cli("check", ".", cwd=tmp_path)
    assert p.returncode == 0 and len(_found(p)) == 2, p.stdout + p.stderr


def test_extend_errors_are_one_line(tmp_path, cli):
    write_tree(tmp_path, {
        "a/pyproject.toml": "[tool.parallint]\nextend = '../b/pyproject.toml'\n",
        "b/pyproject.toml": "[tool.parallint]\nextend = '../a/pyproject.toml'\n",
        "a/train.py": TWO_FINDINGS,
        "c/pyproject.toml": "[tool.parallint]\nextend = 'missing.toml'\n",
        "c/train.py": TWO_FINDINGS,
        ".git/x": "",
    })
    for path, words in (("a/train.py", "cycle"), ("c/train.py", "not a file")):
        p = cli("check", path, cwd=tmp_path)
        assert p.returncode == 2 and len(p.stderr.splitlines()) == 1 and words in p.stderr, p.stderr


def test_extend_rebases_the_base_configurations_paths(tmp_path):
    from pathlib import Path

    from parallint.discover.settings import merge_extended

    base = {"per-file-ignores": {"sub/legacy/*": ["DDP"], "old_*.py": ["CKP"]}, "exclude": ["sub/build"],
            "links": [{"launch": "sub/run.sh", "files": ["configs/ds.json"]}], "extend-select": ["PIP"]}
    merged = merge_extended(base, Path("/r"), {"extend-select": ["MEM"], "gpu": "H100"}, Path("/r/sub"))
    assert merged["per-file-ignores"] == {"legacy/*": ["DDP"], "old_*.py": ["CKP"]}
    assert merged["exclude"] == ["build"]
    assert merged["links"] == [{"launch": "run.sh", "files": ["../configs/ds.json"]}]
    assert merged["extend-select"] == ["PIP", "MEM"] and merged["gpu"] == "H100"
