"""--related-findings (what the pre-commit hook runs): a file given by name also gets the findings
of its jobs that cite it in a note, so an edit to a launch file that breaks a config's batch
identity is reported although the finding is located in the config."""

from __future__ import annotations

import shutil

from conftest import ROOT


def _job(tmp_path):
    shutil.copytree(ROOT / "examples" / "deepspeed_batch", tmp_path / "job")
    (tmp_path / ".git").mkdir()
    ds = tmp_path / "job" / "ds_config.json"
    ds.write_text(ds.read_text().replace('"train_batch_size": 32', '"train_batch_size": 64'))
    return tmp_path / "job" / "launch.sh"


def _codes(p):
    return [ln.split(": ", 1)[0] + " " + ln.split()[1] for ln in p.stdout.splitlines() if ln and not ln.startswith(" ")
            and ln.split()[1:2] and ln.split()[1][:3].isalpha() and ln.split()[1][3:].isdigit()]


def test_a_launch_edit_that_breaks_a_config_is_reported(tmp_path, cli):
    launch = _job(tmp_path)
    assert cli("check", "--related-findings", "job/launch.sh", cwd=tmp_path).returncode == 0  # consistent
    launch.write_text(launch.read_text().replace("--num_gpus 8", "--num_gpus 4"))
    plain = cli("check", "job/launch.sh", cwd=tmp_path)
    assert plain.returncode == 0 and not _codes(plain), plain.stdout  # located in ds_config.json only
    p = cli("check", "--related-findings", "job/launch.sh", cwd=tmp_path)
    assert p.returncode == 1, p.stdout + p.stderr
    assert _codes(p) == ["job/ds_config.json:2:23 BAT001"], p.stdout
    assert "job/launch.sh:4: world size 4" in p.stdout
    # the unrelated script of the same job does not pull the finding in
    p = cli("check", "--related-findings", "job/train.py", cwd=tmp_path)
    assert p.returncode == 0 and not _codes(p), p.stdout
    # an unsaved buffer (editor) works the same
    p = cli("check", "--related-findings", "-", "--stdin-filename", "job/launch.sh", cwd=tmp_path,
            stdin=launch.read_text())
    assert _codes(p) == ["job/ds_config.json:2:23 BAT001"], p.stdout + p.stderr


def test_the_hook_runs_with_related_findings():
    import yaml

    hooks = {h["id"]: h for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
    assert hooks["parallint"]["entry"].split() == ["parallint", "check", "--related-findings"]
