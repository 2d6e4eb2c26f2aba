"""The run cache (parallint.engine.cache.RunCache), end to end through the CLI: a second identical run
over unchanged folders reuses the first run's findings, byte for byte; every change that can
change the findings (a file edited, added, removed or renamed, a .gitignore, the configuration,
the command's options, a file a launch links from outside the checked folder, one a launch
names that did not exist, parallint's own code) makes the next run check again and report what a
cold run reports. The cache's trace (PARALLINT_CACHE_TRACE) says which happened."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from conftest import PLANTED_DDP_SCRIPT, write_tree

LAUNCHED = """\
import torch.distributed as dist
dist.init_process_group("nccl", world_size=4)
"""
DS_TRAIN = """\
import deepspeed
import torch.distributed as dist

def main(model, args):
    dist.init_process_group("nccl")
    engine, *_ = deepspeed.initialize(args=args, model=model)
"""
DS_GOOD = '{"train_batch_size": 32, "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 1}\n'
DS_BAD = '{"train_batch_size": 30, "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 1}\n'
TREE = {
    "train.py": PLANTED_DDP_SCRIPT,
    "run.sh": "torchrun --nproc_per_node 8 launched.py\n",
    "launched.py": LAUNCHED,
    "sub/run_ds.sh": "deepspeed --num_gpus 8 ds_train.py --deepspeed --deepspeed_config ../cfg/ds.json\n",
    "sub/ds_train.py": DS_TRAIN,
    "cfg/ds.json": DS_GOOD,
}


@pytest.fixture
def repo(tmp_path):
    root = tmp_path / "repo"
    write_tree(root, TREE)
    (root / ".git").mkdir()
    return root


@pytest.fixture
def env(tmp_path):
    return {"PARALLINT_CACHE_DIR": str(tmp_path / "cache"), "XDG_CACHE_HOME": str(tmp_path / "home"),
            "PARALLINT_JOBS": "1", "PARALLINT_CACHE_TRACE": "1"}


def _age(root: Path, seconds: float = 30) -> None:
    """Set every time stamp below ``root`` (files and folders) ``seconds`` into the past: files
    as a user's checkout has them, not written a moment before the run."""
    past = time.time() - seconds
    for d, dirs, files in os.walk(root):
        for n in files + dirs:
            os.utime(os.path.join(d, n), (past, past), follow_symlinks=False)
    os.utime(root, (past, past))


def _check(cli, repo: Path, env: dict, *args: str, cache: bool = True) -> tuple[str, str]:
    """(report, what the run cache did) of ``parallint check --format json ARGS``."""
    cmd = ["check", "--format", "json", "--exit-zero", *(["--no-cache"] if not cache else []), *args]
    if not any(a == "sub" or a == "." for a in args):
        cmd.append(".")
    p = cli(*cmd, cwd=repo, env=env)
    assert p.returncode == 0, p.stderr
    trace = [ln.split("run cache: ", 1)[1] for ln in p.stderr.splitlines() if "run cache: " in ln]
    return p.stdout, (trace[0] if trace else "")


def _settled(cli, repo: Path, env: dict, *args: str) -> str:
    """The report of a run stored in the run cache, checked to be reused as is."""
    first, how = _check(cli, repo, env, *args)
    assert how.endswith("stored") and "not stored" not in how, how
    again, how = _check(cli, repo, env, *args)
    assert how == "hit" and again == first
    return first


def test_an_unchanged_tree_reuses_the_run_byte_for_byte(cli, repo, env):
    _age(repo)
    cold, how = _check(cli, repo, env, cache=False)
    assert how == "" and '"DDP001"' in cold
    assert _settled(cli, repo, env) == cold
    assert (Path(env["PARALLINT_CACHE_DIR"])).rglob("runs/*")


def test_files_written_just_now_are_trusted_by_content_only(cli, repo, env):
    # no aging: every file is younger than the clock's resolution allows to trust by its stat
    first, how = _check(cli, repo, env)
    assert how == "miss, stored"
    st = os.stat(repo / "train.py")
    # same size, same inode, and the time stamp put back: only the content tells
    (repo / "train.py").write_text(PLANTED_DDP_SCRIPT.replace("find_unused_parameters=True",
                                                              "find_unused_parameters=Fals"))
    os.utime(repo / "train.py", ns=(st.st_atime_ns, st.st_mtime_ns))
    assert os.stat(repo / "train.py")[6:9] == st[6:9] or os.stat(repo / "train.py").st_size == st.st_size
    after, how = _check(cli, repo, env)
    assert how.startswith("changed") and after == _check(cli, repo, env, cache=False)[0] and after != first


@pytest.mark.parametrize("change", ["edit", "add", "remove", "rename", "gitignore", "config", "linked-outside",
                                    "named-missing"])
def test_a_change_checks_again_and_reports_what_a_cold_run_reports(cli, repo, env, change):
    if change == "named-missing":
        (repo / "cfg" / "ds.json").unlink()
    _age(repo)
    before = _settled(cli, repo, env)
    if change == "edit":
        (repo / "train.py").write_text(PLANTED_DDP_SCRIPT.replace(", find_unused_parameters=True", ""))
    elif change == "add":
        (repo / "more").mkdir()
        (repo / "more" / "train2.py").write_text(PLANTED_DDP_SCRIPT)
    elif change == "remove":
        (repo / "train.py").unlink()
    elif change == "rename":
        (repo / "train.py").rename(repo / "main.py")
    elif change == "gitignore":
        (repo / ".gitignore").write_text("train.py\n")
    elif change == "config":
        (repo / "pyproject.toml").write_text('[tool.parallint]\nignore = ["DDP001"]\n')
    elif change == "linked-outside":
        (repo / "cfg" / "ds.json").write_text(DS_BAD)
    elif change == "named-missing":  # the file the launch names appears
        (repo / "cfg" / "ds.json").write_text(DS_BAD)
    after, how = _check(cli, repo, env)
    assert how.startswith(("changed", "miss")), how
    assert after == _check(cli, repo, env, cache=False)[0]
    assert after != before
    assert how.endswith(", stored"), how  # the files the run read are known by content
    assert _check(cli, repo, env) == (after, "hit")


def test_a_file_linked_from_outside_the_checked_folder(cli, repo, env):
    """`check sub`: the launch there names ../cfg/ds.json, which the walk never lists."""
    _age(repo)
    before = _settled(cli, repo, env, "sub")
    (repo / "cfg" / "ds.json").write_text(DS_BAD)
    after, how = _check(cli, repo, env, "sub")
    assert how.startswith("changed") and '"BAT001"' in after and '"BAT001"' not in before
    assert after == _check(cli, repo, env, "sub", cache=False)[0]


def test_the_named_file_appearing_outside_the_checked_folder(cli, repo, env):
    (repo / "cfg" / "ds.json").unlink()
    _age(repo)
    before = _settled(cli, repo, env, "sub")
    (repo / "cfg" / "ds.json").write_text(DS_BAD)
    after, how = _check(cli, repo, env, "sub")
    assert how.startswith("changed") and '"BAT001"' in after and '"BAT001"' not in before


@pytest.mark.parametrize("opts", [("--select", "DDP"), ("--ignore", "DDP001"), ("--include-tests",),
                                  ("--max-file-size", "1KiB"), ("--all-job-findings",)])
def test_options_that_change_the_findings_have_runs_of_their_own(cli, repo, env, opts):
    (repo / "tests").mkdir()
    (repo / "tests" / "test_x.py").write_text(PLANTED_DDP_SCRIPT)
    _age(repo)
    plain = _settled(cli, repo, env)
    other, how = _check(cli, repo, env, *opts)
    assert how == "miss, stored"
    assert other == _check(cli, repo, env, *opts, cache=False)[0]
    assert _check(cli, repo, env, *opts) == (other, "hit")
    assert _check(cli, repo, env) == (plain, "hit")


def test_a_touched_file_with_the_same_content_is_still_a_hit(cli, repo, env):
    _age(repo)
    before = _settled(cli, repo, env)
    past = time.time() - 10
    os.utime(repo / "train.py", (past, past))  # a checkout of the same content: new stat
    assert _check(cli, repo, env) == (before, "hit")
    assert _check(cli, repo, env) == (before, "hit")


def test_workers_report_what_they_read(cli, repo, env):
    """With worker processes (enough Python files), a config that only a worker's standalone job
    reads still invalidates the run."""
    for i in range(30):
        (repo / "pkg" / f"m{i}.py").parent.mkdir(exist_ok=True)
        (repo / "pkg" / f"m{i}.py").write_text(f"import torch.distributed as dist\nX = {i}\n")
    (repo / "pkg" / "ds_alone.py").write_text(
        'import deepspeed\nimport torch.distributed as dist\n\ndef main(m):\n    dist.init_process_group("nccl")\n'
        '    deepspeed.initialize(model=m, config="alone.json")\n')
    (repo / "pkg" / "alone.json").write_text('{"train_batch_size": 30, "train_micro_batch_size_per_gpu": 4, '
                                             '"gradient_accumulation_steps": 2}\n')
    env = dict(env, PARALLINT_JOBS="2")
    _age(repo)
    before = _settled(cli, repo, env)
    (repo / "pkg" / "alone.json").write_text('{"train_batch_size": 32, "train_micro_batch_size_per_gpu": 4, '
                                             '"gradient_accumulation_steps": 2}\n')
    after, how = _check(cli, repo, env)
    assert how.startswith("changed")
    assert after == _check(cli, repo, env, cache=False)[0] and after != before


def test_a_damaged_or_foreign_entry_is_a_miss(cli, repo, env, tmp_path):
    _age(repo)
    before = _settled(cli, repo, env)
    (entry,) = (tmp_path / "cache").rglob("runs/*")
    data = entry.read_bytes()
    entry.write_bytes(data[:32] + bytes([data[32] ^ 1]) + data[33:])
    assert _check(cli, repo, env) == (before, "miss, stored")
    assert _check(cli, repo, env) == (before, "hit")


def test_no_cache_neither_reads_nor_writes_it(cli, repo, env, tmp_path):
    _age(repo)
    _check(cli, repo, env, cache=False)
    assert not list((tmp_path / "cache").rglob("runs/*"))


def test_parallint_code_is_part_of_the_key(monkeypatch, tmp_path):
    """Another parallint version (or edited code) never reuses a run."""
    import parallint
    from parallint.engine.cache import RunCache

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "home"))
    a = RunCache(tmp_path / "c", [], {}, {"paths": ["."]}).run_key
    monkeypatch.setattr(parallint, "__version__", parallint.__version__ + ".post1")
    b = RunCache(tmp_path / "c", [], {}, {"paths": ["."]}).run_key
    assert a != b


def test_a_cache_folder_inside_the_repository_is_reused_from_the_second_run(cli, repo, env):
    env = dict(env, PARALLINT_CACHE_DIR="")  # the default: .parallint_cache at the repository root
    _age(repo)
    first, how = _check(cli, repo, env)
    assert how == "miss, stored" and (repo / ".parallint_cache" / "runs").is_dir()
    assert _check(cli, repo, env) == (first, "hit")


def test_settings_key_ignores_order_and_tells_values_apart():
    """The settings' part of the cache keys: one text whatever the order of keys and set members,
    different texts for different values (a changed setting is a miss)."""
    from parallint.engine.cache import canonical

    a = {"select": ["DDP001", "MEM001"], "ignore": {"LCH002", "ENV001"}, "gpu": "H100", "max": 2.5, "off": None}
    b = {"off": None, "max": 2.5, "gpu": "H100", "ignore": {"ENV001", "LCH002"}, "select": ["DDP001", "MEM001"]}
    assert canonical(a) == canonical(b)
    assert canonical(a) != canonical({**a, "select": ["MEM001", "DDP001"]})  # a list keeps its order
    assert canonical({"n": 1}) != canonical({"n": "1"}) != canonical({"n": True})
    assert canonical({"p": Path("x")}) == canonical({"p": Path("x")}) != canonical({"p": Path("y")})
    deep: list = []
    for _ in range(100):
        deep = [deep]
    assert canonical(deep)  # bounded, no RecursionError


def test_a_path_a_launch_only_names_is_no_folder_dependency(cli, repo, env, tmp_path):
    """Issue 27: Megatron's launch scripts name `--save /tmp/checkpoints`; its folder (/tmp) was
    recorded as a dependency, so any change there made the next run miss. A named path counts by
    its own existence only: a new file beside it is still a hit, the path itself appearing is not."""
    outside = tmp_path / "scratch"
    (outside / "ckpt").mkdir(parents=True)
    (repo / "run_save.sh").write_text(f"torchrun --nproc_per_node 8 launched.py --save {outside}/ckpt "
                                      f"--deepspeed {outside}/ds.json\n")
    _age(repo)
    _age(outside)
    before = _settled(cli, repo, env)
    (outside / "other.log").write_text("a file the run never named\n")
    _age(outside)
    again, how = _check(cli, repo, env)
    assert how == "hit" and again == before
    (outside / "ds.json").write_text(DS_GOOD)  # what the launch names appears
    _age(outside)
    _, how = _check(cli, repo, env)
    assert how.startswith("changed"), how


def test_a_folder_listing_counts_only_where_it_was_listed(cli, repo, env):
    """Issue 27: dependencies are what was read. `sub/run_ds.sh` links `../cfg/ds.json`; checking
    `sub` reads that file but never lists `cfg/`, so a new file there is still a hit, while an edit
    of the linked file itself is not."""
    _age(repo)
    before = _settled(cli, repo, env, "sub")
    (repo / "cfg" / "notes.txt").write_text("a file beside the linked config\n")
    _age(repo / "cfg")
    again, how = _check(cli, repo, env, "sub")
    assert how == "hit" and again == before
    (repo / "cfg" / "ds.json").write_text(DS_BAD)
    _age(repo / "cfg")
    after, how = _check(cli, repo, env, "sub")
    assert how.startswith("changed"), how
    assert after != before and "BAT001" in after
