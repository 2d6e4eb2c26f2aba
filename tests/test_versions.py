"""Version facts (issue 24): specifier ranges (parallint.model.versions), one reader per source
(parallint.readers.versions), what reaches a job (parallint.link.versions), and the version-aware
rules end to end through the CLI, on both sides of each version boundary."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from parallint.model import versions as v
from parallint.model.facts import Value
from parallint.readers import versions as rv


def vals(*specs: str) -> list[Value]:
    return [Value(s) for s in specs]


# -- ranges -------------------------------------------------------------------------------------
@pytest.mark.parametrize("spec, lo, hi", [
    ("==1.13.1", (1, 13, 1, 0), (1, 13, 1, 0)),
    (">=2.1,<2.4", (2, 1, 0, 0), (2, 4, 0, 0)),
    ("~=2.1", (2, 1, 0, 0), (3, 0, 0, 0)),
    ("~=2.1.0", (2, 1, 0, 0), (2, 2, 0, 0)),
    ("==2.1.*", (2, 1, 0, 0), (2, 2, 0, 0)),
    ("^1.13", (1, 13, 0, 0), (2, 0, 0, 0)),  # poetry
    ("~1.13.1", (1, 13, 1, 0), (1, 14, 0, 0)),  # poetry
    ("=1.13", (1, 13, 0, 0), (1, 14, 0, 0)),  # conda
    (">=2.1 <2.4", (2, 1, 0, 0), (2, 4, 0, 0)),  # conda's space
])
def test_specifiers_are_ranges(spec, lo, hi):
    iv = v.interval(spec)
    assert iv is not None and iv[0] == lo and iv[2] == hi


def test_unreadable_and_empty_specifiers():
    assert v.interval("") == v.ANY and v.interval("*") == v.ANY
    assert v.interval("garbage") is None and v.interval("1.0|2.0") is None
    assert v.interval(">=2.4,<2.1") is None  # empty: misread, so nothing is concluded


def test_a_range_concludes_only_what_holds_for_every_version():
    assert v.at_least(vals(">=2.1,<2.4"), "2.0") and not v.below(vals(">=2.1,<2.4"), "2.0")
    assert v.below(vals("==1.13.1"), "2.0") and not v.at_least(vals("==1.13.1"), "2.0")
    assert not v.below(vals(">=1.13,<2.2"), "2.0") and not v.at_least(vals(">=1.13,<2.2"), "2.0")
    assert v.below(vals("<2.0"), "2.0") and not v.below(vals("<=2.0"), "2.0")
    # unpinned, unknown or alternatives that disagree: nothing
    assert not v.at_least(vals(""), "2.0") and not v.below(vals(""), "2.0")
    assert not v.below([Value.unknown("a URL")], "2.0")
    assert not v.below(vals("==1.13.1", "==2.1.0"), "2.0")
    assert v.below(vals("==1.13.1", "<1.12"), "2.0")
    # NGC builds count by their release numbers
    assert v.at_least(vals("==2.0.0a0"), "2.0")


def test_minors_of_the_pytorch_table():
    known = v.pytorch_minors()
    assert v.minors(vals(">=2.1,<2.4"), known) == ["2.1", "2.2", "2.3"]
    assert v.minors(vals("==1.13.1"), known) == ["1.13"]
    assert v.minors(vals(">=1.13"), known) is None  # open-ended: reaches releases past the table


def test_bundled_table_marks_uncertain_fields_instead_of_stating_them():
    assert v.ngc_pytorch("23.10-py3") == {"torch": "2.1.0", "cuda": "12.2"}  # nccl marked uncertain
    assert v.ngc_pytorch("22.08-py3")["cuda"] == "11.7"
    assert v.ngc_pytorch("99.99-py3") == {}
    assert v.pytorch_release("1.13.1")["cuda_builds"] == ["11.6", "11.7"]
    assert v.gpu_arch("H100-80GB")["min_cuda"] == "11.8" and v.gpu_arch("B200")["min_cuda"] == "12.8"
    assert v.gpu_arch("tesla-t4")["name"] == "T4" and v.gpu_arch("unknown-gpu") == {}


# -- readers, one per source --------------------------------------------------------------------
def facts(stated) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for key, val in stated:
        out.setdefault(key, []).append(val.value if val.known else "?")
    return out


def test_requirements_txt():
    text = textwrap.dedent("""\
        # training
        --extra-index-url https://download.pytorch.org/whl/cu118
        torch==2.1.0 ; sys_platform == "linux"
        transformers>=4.41,<4.46  # pinned for eval_strategy
        deepspeed @ git+https://github.com/microsoft/DeepSpeed
        accelerate \\
            ==0.30.1
        -r requirements-extra.txt
        numpy
        """)
    stated, includes = rv.requirements_txt("requirements.txt", text)
    got = facts(stated)
    assert got == {"version.torch": ["==2.1.0"], "version.transformers": [">=4.41,<4.46"],
                   "version.deepspeed": ["?"], "version.accelerate": ["==0.30.1"], "version.cuda": ["==11.8"]}
    assert includes == ["requirements-extra.txt"]
    torch = next(val for k, val in stated if k == "version.torch")
    assert torch.span.line == 3 and torch.origin.via == "requirements" and ";" not in torch.source


def test_requirements_local_cuda_tag():
    stated, _ = rv.requirements_txt("r.txt", "torch==1.13.1+cu117\n")
    assert facts(stated) == {"version.torch": ["==1.13.1"], "version.cuda": ["==11.7"]}


def test_pyproject_pep621_and_poetry():
    text = textwrap.dedent("""\
        [project]
        name = "x"
        dependencies = ["torch>=2.1,<2.4", "transformers==4.44.2"]

        [project.optional-dependencies]
        old = ["torch==1.13.1"]

        [tool.poetry.dependencies]
        python = "^3.10"
        deepspeed = "^0.14"
        flash-attn = {version = "2.5.8", optional = true}
        """)
    got = facts(rv.pyproject("pyproject.toml", text))
    assert got == {"version.torch": [">=2.1,<2.4"], "version.transformers": ["==4.44.2"],
                   "version.deepspeed": ["^0.14"], "version.flash_attn": ["2.5.8"]}


def test_setup_cfg():
    text = "[metadata]\nname = x\n\n[options]\ninstall_requires =\n    torch==1.12.1\n    numpy\n"
    stated = rv.setup_cfg("setup.cfg", text)
    assert facts(stated) == {"version.torch": ["==1.12.1"]} and stated[0][1].span.line == 6


def test_setup_py_is_read_with_ast_never_run(tmp_path):
    marker = tmp_path / "ran"
    text = textwrap.dedent(f"""\
        import os
        from setuptools import setup
        os.system("touch {marker}")
        REQUIRED = ["torch==1.13.1", "transformers>=4.30"]
        setup(name="x", install_requires=REQUIRED)
        """)
    got = facts(rv.setup_py("setup.py", text))
    assert got == {"version.torch": ["==1.13.1"], "version.transformers": [">=4.30"]}
    assert not marker.exists()
    # a list built at run time is not followed
    assert rv.setup_py("setup.py", "from setuptools import setup\nsetup(install_requires=open('r').read().split())\n") == []


def test_environment_yml():
    text = textwrap.dedent("""\
        name: train
        channels: [pytorch, nvidia]
        dependencies:
          - python=3.10
          - pytorch=1.13.1=py3.10_cuda11.7_cudnn8.5.0_0
          - pytorch-cuda=11.7
          - pip:
            - transformers==4.30.2
        """)
    got = facts(rv.environment_yml("environment.yml", text))
    assert got == {"version.torch": ["=1.13.1"], "version.cuda": ["=11.7"], "version.transformers": ["==4.30.2"]}


def test_uv_and_poetry_locks():
    uv = '[[package]]\nname = "torch"\nversion = "2.3.1+cu121"\nsource = { registry = "x" }\n\n' \
         '[[package]]\nname = "numpy"\nversion = "1.26.4"\n'
    stated = rv.lock_file("uv.lock", uv)
    assert facts(stated) == {"version.torch": ["==2.3.1"], "version.cuda": ["==12.1"]}
    assert stated[0][1].span.line == 2 and stated[0][1].origin.via == "lock"
    poetry = '[[package]]\nname = "transformers"\nversion = "4.36.2"\ndescription = "x"\n'
    assert facts(rv.lock_file("poetry.lock", poetry)) == {"version.transformers": ["==4.36.2"]}


def test_a_lock_states_only_package_tables_at_a_line_start_with_their_lines():
    """A package table counts where ``[[package]]`` starts a line; the same text elsewhere (inside
    a string, after other text) does not, and each version points at its ``name`` line."""
    import re

    def reference(text):  # the line-anchored reading, every line counted from the top
        out = []
        for m in re.finditer(r'^\[\[package\]\]\s*\nname\s*=\s*"([^"]+)"\s*\nversion\s*=\s*"([^"]+)"', text, re.M):
            out.append((m.group(1), m.group(2), text.count("\n", 0, m.start()) + 2))
        return out

    table = '[[package]]\nname = "{n}"\nversion = "{v}"\n\n'
    text = (table.format(n="numpy", v="1.26.4") + 'x = "[[package]]"\n' + table.format(n="torch", v="2.3.1+cu121")
            + "  " + table.format(n="deepspeed", v="0.14.0") + "a" + table.format(n="accelerate", v="0.30.0")
            + table.format(n="transformers", v="4.40.0").replace("\n", "\r\n") + table.format(n="accelerate", v="0.31.0"))
    stated = rv.lock_file("uv.lock", text)
    got = [(k, v.value, v.span.line) for k, v in stated if k != "version.cuda"]
    want = [(k, "==" + ver.split("+")[0], line) for name, ver, line in reference(text)
            for k in [{"torch": "version.torch", "transformers": "version.transformers",
                       "accelerate": "version.accelerate"}.get(name)] if k]
    assert got == want
    assert [k for k, *_ in got] == ["version.torch", "version.transformers", "version.accelerate"]  # not deepspeed, 0.30


def test_dockerfile_from_ngc_and_pytorch_tags():
    ngc = rv.dockerfile("Dockerfile", "FROM nvcr.io/nvidia/pytorch:23.10-py3\nRUN pip install -r requirements.txt\n")
    assert facts(ngc) == {"version.torch": ["==2.1.0"], "version.cuda": ["==12.2"], "version.cuda_toolkit": ["==12.2"]}
    assert all(val.origin.via == "dockerfile" for _k, val in ngc)
    pt = rv.dockerfile("Dockerfile", "ARG TAG=1.13.1-cuda11.6-cudnn8-devel\nFROM pytorch/pytorch:${TAG} AS base\n"
                                     "FROM base\nRUN pip install transformers==4.30.2\n")
    assert facts(pt) == {"version.transformers": ["==4.30.2"], "version.torch": ["==1.13.1"],
                         "version.cuda": ["==11.6"], "version.cuda_toolkit": ["==11.6"]}
    # a RUN pip install replaces what the image bundles
    over = rv.dockerfile("Dockerfile", "FROM nvcr.io/nvidia/pytorch:23.10-py3\nRUN pip install 'torch==2.3.1'\n")
    assert facts(over)["version.torch"] == ["==2.3.1"]
    # an earlier stage's RUN lines do not reach an unrelated final stage
    multi = rv.dockerfile("Dockerfile", "FROM python:3.10 AS build\nRUN pip install torch==1.13.1\n"
                                        "FROM nvcr.io/nvidia/pytorch:24.05-py3\n")
    assert facts(multi)["version.torch"] == ["==2.4.0"]
    assert rv.dockerfile("Dockerfile", "FROM ${BASE_IMAGE}\n") == []


def test_launch_images_sbatch_kube_skypilot():
    sb = rv.launch_images("run.sbatch", "#!/bin/bash\n#SBATCH --container-image=nvcr.io#nvidia/pytorch:22.08-py3\n"
                                        "srun --container-image nvcr.io/nvidia/pytorch:22.08-py3 torchrun train.py\n")
    assert facts(sb)["version.cuda"] == ["==11.7", "==11.7"] and sb[0][1].origin.via == "image"
    kube = rv.launch_images("job.yaml", "spec:\n  containers:\n    - name: t\n      image: pytorch/pytorch:2.1.0-cuda12.1-cudnn8-runtime\n")
    assert facts(kube) == {"version.torch": ["==2.1.0"], "version.cuda": ["==12.1"]}
    assert kube[0][1].span.line == 4
    sky = rv.launch_images("task.yaml", "resources:\n  image_id: docker:nvcr.io/nvidia/pytorch:24.01-py3\n")
    assert facts(sky)["version.torch"] == ["==2.2.0"]
    assert rv.launch_images("task.yaml", "resources:\n  image_id: ami-0123456789\n") == []


def test_module_load():
    got = facts(rv.module_loads("run.sh", "#!/bin/bash\nmodule load gcc/11 cuda/11.7.1\nml load cudatoolkit/12.1\n"))
    assert got == {"version.cuda_toolkit": ["==11.7", "==12.1"]}


# -- what reaches a job -------------------------------------------------------------------------
def _repo(tmp_path, files: dict[str, str]):
    (tmp_path / ".git").mkdir(parents=True)
    for name, text in files.items():
        p = tmp_path / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text))
    return tmp_path


def _jobs(path, cwd):
    from parallint.engine.runner import build_jobs

    return build_jobs([str(path)], {}, cwd=cwd)


def test_repository_version_files_reach_every_job(tmp_path):
    _repo(tmp_path, {"requirements.txt": "torch==1.13.1\n", "scripts/run.sh": "#!/bin/bash\ntorchrun train.py\n",
                     "scripts/train.py": "import torch.distributed as d\nd.init_process_group('nccl')\n"})
    (job,) = [j for j in _jobs(tmp_path / "scripts" / "run.sh", tmp_path) if j.launch is not None]
    (torch,) = job.facts.all("version.torch")
    assert torch.value == "==1.13.1" and torch.span.path == "requirements.txt" and torch.span.line == 1


def test_the_launch_files_own_image_is_more_specific(tmp_path):
    _repo(tmp_path, {"requirements.txt": "torch==1.13.1\ntransformers==4.30.2\n",
                     "run.sbatch": "#!/bin/bash\n#SBATCH --nodes=1\n"
                                   "srun --container-image=nvcr.io#nvidia/pytorch:23.10-py3 torchrun train.py\n"})
    (job,) = [j for j in _jobs(tmp_path / "run.sbatch", tmp_path) if j.launch is not None]
    assert [x.value for x in job.facts.all("version.torch")] == ["==2.1.0"]  # the image's, not requirements'
    assert [x.value for x in job.facts.all("version.transformers")] == ["==4.30.2"]


def test_installed_versions_replace_the_pins_of_the_same_packages(tmp_path):
    """parallint preflight: what is installed on the node is what runs (origin host); a package not
    installed keeps its repository statements; the launch file's own image still comes first."""
    from parallint.engine.runner import _versions
    from parallint.link import versions as lv
    from parallint.model.origin import How
    from parallint.readers import shell

    installed = rv.installed("torch", "2.3.1+cu121", "pf.sh", 3, 18)
    assert facts(installed) == {"version.torch": ["==2.3.1"], "version.cuda": ["==12.1"]}
    assert all(x.origin.how is How.HOST and x.origin.via == "installed" for _k, x in installed)
    assert installed[0][1].span.column == 18 and installed[0][1].source == "torch 2.3.1+cu121 installed"
    assert rv.installed("megatron-core", "0.8.0", "pf.sh", 3) == []  # no version fact
    assert rv.installed("torch", "not-a-version", "pf.sh", 3) == []
    _repo(tmp_path, {"requirements.txt": "torch==1.13.1\ntransformers==4.30.2\n",
                     "run.sh": "#!/bin/bash\ntorchrun train.py\n",
                     "img.sbatch": "#!/bin/bash\nsrun --container-image=nvcr.io#nvidia/pytorch:23.10-py3 torchrun x.py\n"})

    def read(name):
        return shell.read(name, tmp_path / name, (tmp_path / name).read_text())

    try:
        assert [x.value for x in _versions(read("run.sh")).all("version.torch")] == ["==1.13.1"]
        lv.reset()
        lv.set_installed(installed)
        got = _versions(read("run.sh"))
        assert [x.value for x in got.all("version.torch")] == ["==2.3.1"]  # installed, not the pin
        assert [x.value for x in got.all("version.transformers")] == ["==4.30.2"]  # not installed: the pin
        img = _versions(read("img.sbatch"))
        assert [x.value for x in img.all("version.torch")] == ["==2.1.0"]  # the image is what runs
    finally:
        lv.reset()


def test_version_files_outside_the_repository_are_not_read(tmp_path):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "requirements.txt").write_text("torch==1.13.1\n")
    repo = _repo(tmp_path / "repo", {"run.sh": "#!/bin/bash\ntorchrun train.py\n"})
    (repo / "requirements.txt").symlink_to(outside / "requirements.txt")
    (job,) = [j for j in _jobs(repo / "run.sh", repo) if j.launch is not None]
    assert job.facts.all("version.torch") == []


# -- the CLI, end to end ------------------------------------------------------------------------
def _check(tmp_path, files: dict[str, str], *args: str) -> list[dict]:
    _repo(tmp_path, files)
    proc = subprocess.run([sys.executable, "-m", "parallint", "check", ".", "--no-cache", "--format", "json",
                           "--fail-level", "info", *args], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)


LAUNCH = "#!/bin/bash\npython -m torch.distributed.launch --nproc_per_node=8 train.py\n"
PARSER = ("import argparse\nimport torch.distributed as dist\n\nparser = argparse.ArgumentParser()\n"
          "parser.add_argument('--local_rank', type=int, default=0)\nargs = parser.parse_args()\n"
          "dist.init_process_group('nccl')\n")
TODAY = ("python -m torch.distributed.launch is deprecated; use torchrun (and read LOCAL_RANK from the "
         "environment)")


def _lch004(found):
    return [(d["severity"], d["message"]) for d in found if d["code"] == "LCH004"]


def test_lch004_without_a_version_is_todays_warning(tmp_path):
    assert _lch004(_check(tmp_path, {"run.sh": LAUNCH, "train.py": PARSER})) == [("warning", TODAY)]


def test_lch004_unpinned_torch_is_todays_warning(tmp_path):
    found = _check(tmp_path, {"run.sh": LAUNCH, "train.py": PARSER, "requirements.txt": "torch\n"})
    assert _lch004(found) == [("warning", TODAY)]


def test_lch004_torch_1x_pin_is_the_deprecation_notice(tmp_path):
    found = _check(tmp_path, {"run.sh": LAUNCH, "train.py": PARSER, "requirements.txt": "torch==1.13.1\n"})
    ((sev, msg),) = _lch004(found)
    assert sev == "info" and "torch==1.13.1 (requirements.txt:1) passes --local_rank" in msg


def test_lch004_torch_2x_pin_and_an_underscore_parser_is_the_crash(tmp_path):
    found = _check(tmp_path, {"run.sh": LAUNCH, "train.py": PARSER, "requirements.txt": "torch>=2.1,<2.4\n"})
    ((sev, msg),) = _lch004(found)
    assert sev == "error" and "--local-rank=N" in msg and "unrecognized arguments" in msg


def test_lch004_torch_2x_with_a_dashed_option_or_use_env_stays_the_warning(tmp_path):
    dashed = PARSER.replace("'--local_rank',", "'--local_rank', '--local-rank',")
    found = _check(tmp_path, {"run.sh": LAUNCH, "train.py": dashed, "requirements.txt": "torch==2.1.0\n"})
    assert _lch004(found) == [("warning", TODAY)]


def test_lch004_ngc_image_on_the_launch_line(tmp_path):
    launch = "#!/bin/bash\nsrun --container-image=nvcr.io#nvidia/pytorch:22.08-py3 python -m torch.distributed.launch " \
             "--nproc_per_node=8 train.py\n"
    found = _check(tmp_path, {"run.sh": launch, "train.py": PARSER, "requirements.txt": "torch==2.1.0\n"})
    assert [s for s, _ in _lch004(found)] == ["info"]  # the image's torch 1.13 is what runs


def test_cuda_too_old_for_the_gpu_both_sides(tmp_path):
    sb = "#!/bin/bash\n#SBATCH --nodes=1\n#SBATCH --gres=gpu:h100:8\nsrun torchrun --nproc_per_node=8 train.py\n"
    old = _check(tmp_path / "a", {"train.sbatch": sb, "requirements.txt": "torch==1.13.1\n"})
    assert [d["code"] for d in old] == ["ENV006"] and old[0]["line"] == 3
    new = _check(tmp_path / "b", {"train.sbatch": sb, "requirements.txt": "torch==2.0.1\n"})
    assert [d["code"] for d in new] == []


def test_gpu_from_the_configuration(tmp_path):
    files = {"run.sh": "#!/bin/bash\ntorchrun --nproc_per_node=8 train.py\n", "requirements.txt": "torch==2.6.0\n"}
    found = _check(tmp_path / "a", files, "--gpu", "B200")
    assert [d["code"] for d in found] == ["ENV006"]
    assert _check(tmp_path / "b", {**files, "requirements.txt": "torch==2.7.0\n"}, "--gpu", "B200") == []


def test_transformers_rename_both_sides(tmp_path):
    script = "from transformers import TrainingArguments\n\nargs = TrainingArguments(output_dir='o', evaluation_strategy='steps')\n"
    sev = {}
    for i, pin in enumerate(("4.40.2", "4.44.2", "4.52.0")):
        found = _check(tmp_path / str(i), {"train.py": script, "requirements.txt": f"transformers=={pin}\n"})
        sev[pin] = [d["severity"] for d in found if d["code"] == "CFG010"]
    assert sev == {"4.40.2": [], "4.44.2": ["warning"], "4.52.0": ["error"]}


def test_torchrun_before_1_10_both_sides(tmp_path):
    run = {"run.sh": "#!/bin/bash\ntorchrun --nproc_per_node=8 train.py\n"}
    assert [d["code"] for d in _check(tmp_path / "a", {**run, "requirements.txt": "torch==1.9.1\n"})] == ["LCH020"]
    assert _check(tmp_path / "b", {**run, "requirements.txt": "torch==1.10.0\n"}) == []


def test_a_cached_result_is_dropped_when_a_version_file_changes(tmp_path):
    """The content cache keys a script checked on its own by its text; its CFG010 finding depends
    on requirements.txt beside it, for every script of the folder (not only the first read)."""
    script = "from transformers import TrainingArguments\n\nargs = TrainingArguments(output_dir='o', evaluation_strategy='steps')\n"
    _repo(tmp_path, {"a.py": script, "b.py": script, "requirements.txt": "transformers==4.52.0\n"})

    def run():
        proc = subprocess.run([sys.executable, "-m", "parallint", "check", ".", "--format", "json"], cwd=tmp_path,
                              capture_output=True, text=True, timeout=120)
        return sorted(d["path"] for d in json.loads(proc.stdout) if d["code"] == "CFG010")

    assert run() == ["a.py", "b.py"]
    (tmp_path / "requirements.txt").write_text("transformers==4.40.0\n")
    assert run() == []
    (tmp_path / "requirements.txt").unlink()
    (tmp_path / "requirements-gpu.txt").write_text("transformers==4.52.0\n")
    assert run() == ["a.py", "b.py"]


# -- DeepSpeed keys per release (CFG011's table) --------------------------------------------------
def test_deepspeed_key_table_is_generated_from_the_release_tags(tmp_path):
    """scripts/update_deepspeed_keys.py on a small history: a key is `since` the first tag whose
    config code reads it (a quoted constant, or a pydantic field), `removed` at the first tag
    after which it is gone; a docstring's sample config does not count."""
    import shutil

    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = tmp_path / "ds"
    (repo / "deepspeed/runtime/zero").mkdir(parents=True)

    def commit(tag: str, constants: str, zero: str, utils: str = "") -> None:
        (repo / "deepspeed/runtime/constants.py").write_text(constants)
        (repo / "deepspeed/runtime/zero/constants.py").write_text("")
        (repo / "deepspeed/runtime/zero/config.py").write_text(zero)
        (repo / "deepspeed/runtime/config_utils.py").write_text(utils)
        for args in (["add", "-A"], ["commit", "-q", "-m", tag], ["tag", tag]):
            subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)

    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    for name, val in (("user.email", "t@example.com"), ("user.name", "t")):
        subprocess.run(["git", "-C", str(repo), "config", name, val], check=True)
    commit("v0.1.0", 'BFLOAT16 = "bfloat16"\n', '"""\n    "zero_quantized_weights": [true|false],\n"""\n')
    commit("v0.2.0", 'BFLOAT16 = "bf16"\n', "class DeepSpeedZeroConfig(DeepSpeedConfigModel):\n"
                                            "    cpu_offload_param: bool = False\n",
           'class Config:\n    extra = "forbid"\n')
    commit("v0.10.0", 'BFLOAT16 = "bf16"\n', "class DeepSpeedZeroConfig(DeepSpeedConfigModel):\n"
                                             "    zero_quantized_weights: bool = False\n", 'extra = "forbid"\n')
    out = subprocess.run([sys.executable, str(Path(__file__).parent.parent / "scripts/update_deepspeed_keys.py"),
                          str(repo / ".git")], capture_output=True, text=True, check=True).stdout
    data = json.loads(out)
    rows = {(r["section"], r["key"]): r for r in data["keys"]}
    assert data["newest_release"] == "0.10.0" and data["zero_forbid_since"] == "0.2.0"
    assert rows[("", "bf16")]["since"] == "0.2.0" and "removed" not in rows[("", "bf16")]
    assert rows[("", "bfloat16")]["since"] == "0.1.0" and rows[("", "bfloat16")]["removed"] == "0.2.0"
    assert rows[("", "bfloat16")]["uncertain"] == ["since"]  # in the oldest tag: maybe older still
    assert rows[("zero_optimization", "zero_quantized_weights")]["since"] == "0.10.0"  # not the docstring's 0.1.0
    assert rows[("zero_optimization", "cpu_offload_param")] == {
        "section": "zero_optimization", "key": "cpu_offload_param", "since": "0.2.0", "removed": "0.10.0",
        "found_in": ["deepspeed/runtime/zero/config.py"]}
    assert rows[("", "compile")]["since"] is None and rows[("", "compile")]["uncertain"] == ["since"]


def test_the_bundled_deepspeed_key_table_states_only_settled_rows():
    from parallint.rules.cfg import cfg011_deepspeed_key_not_in_version as cfg011

    data = cfg011.table()
    assert data["zero_forbid_since"] == "0.7.0" and data["newest_release"] == "0.16.4"
    stated = {(r["section"], r["key"]): (r["since"], r.get("removed")) for r in cfg011._rows()}
    assert stated[("", "bf16")] == ("0.6.0", None)
    assert stated[("zero_optimization", "zero_quantized_weights")] == ("0.10.0", None)
    assert stated[("zero_optimization", "cpu_offload_params")] == ("0.3.12", "0.7.0")
    unsettled = [r["key"] for r in data["keys"] if "since" in (r.get("uncertain") or ())]
    assert unsettled and not any(k in {key for _s, key in stated} for k in unsettled)
