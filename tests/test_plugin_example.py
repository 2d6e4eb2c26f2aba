"""The documented example plugin (docs/plugins/acme-parallint-rules), installed with pip into a
folder of its own: listed, run, its examples hold, and its declared needle feeds the pre-filter."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from parallint.discover.classify import classify

from conftest import ROOT, write_tree

PKG = ROOT / "docs" / "plugins" / "acme-parallint-rules"
LAUNCH = "#!/bin/bash\nacmerun --nodes 4 worker.py\n"


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    import shutil

    target = tmp_path_factory.mktemp("site")
    src = tmp_path_factory.mktemp("src") / PKG.name  # pip builds in the source folder: a copy
    shutil.copytree(PKG, src)
    p = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                        "--target", str(target), str(src)], capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        pytest.skip(f"cannot install the example plugin here: {p.stderr.strip().splitlines()[-1:]}")
    return {"PYTHONPATH": str(target)}


def test_example_plugin_is_listed_and_its_needle_feeds_the_prefilter(tmp_path, cli, site):
    assert classify("run.sh", LAUNCH) is None  # the built-in pre-filter alone skips this file
    p = cli("rules", cwd=tmp_path, env=site)
    assert "ACME001  acme-hardcoded-nodes" in p.stdout
    write_tree(tmp_path, {"run.sh": LAUNCH, ".git/x": ""})
    p = cli("check", "--format", "json", "run.sh", cwd=tmp_path, env=site)
    assert [(d["code"], d["line"], d["column"]) for d in json.loads(p.stdout)] == [("ACME001", 2, 17)], p.stderr
    assert p.returncode == 1
    # suppressions work for plugin codes too
    (tmp_path / "run.sh").write_text(LAUNCH.replace("worker.py", "worker.py  # noqa: ACME001"))
    p = cli("check", "run.sh", cwd=tmp_path, env=site)
    assert p.returncode == 0, p.stdout


def test_example_plugin_examples_hold(tmp_path, cli, site):
    code = (
        "import json, sys\n"
        "from pathlib import Path\n"
        "from parallint.discover.settings import Config\n"
        "from parallint.engine.registry import get_registry\n"
        "from parallint.engine.runner import check_paths\n"
        "rule = get_registry().lookup('ACME001')\n"
        "out = []\n"
        "for i, ex in enumerate(rule.valid + rule.invalid):\n"
        "    d = Path(sys.argv[1]) / str(i); d.mkdir()\n"
        "    for n, t in ex.all_files().items(): (d / n).write_text(t)\n"
        "    r = check_paths(['.'], Config(None, d, {}), rules=[rule], cwd=d)\n"
        "    out.append([x.span.line for x in r.diagnostics])\n"
        "print(json.dumps(out))\n"
    )
    p = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True,
                       env={**__import__("os").environ, **site}, timeout=120)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout) == [[], [2]]
