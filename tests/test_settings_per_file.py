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
