"""Bounded work per file and the failure contract, piece by piece: the pre-parse guards, the
gitignore globs, the killable workers, the test-file policy and the number checks of
estimate/plan. (tests/hostile/ runs the hostile inputs end to end.)"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

import pytest
import yaml

from conftest import PLANTED_DDP_SCRIPT, ROOT, run_cli, write_tree
from parallint.util import guards
from parallint.discover.settings import Config
from parallint.discover.walk import compile_patterns, is_test_path, _matches
from parallint.engine.runner import Runner, check_paths

DDP = PLANTED_DDP_SCRIPT


# ------------------------------------------------------------------------------- guards
@pytest.mark.parametrize("op", ["and", "or", "+", "|", "<"])
def test_python_guard_stops_long_operator_chains(op):
    short = "x = " + f" {op} ".join(["a"] * 250) + "\n"
    long = "x = " + f" {op} ".join(["a"] * 301) + "\n"
    assert guards.python_guard(short) is None
    assert "too complex" in guards.python_guard(long)
    # split over lines inside brackets, or glued without spaces: still one chain
    assert guards.python_guard("x = (" + f"\n {op} ".join(["a"] * 301) + ")\n")
    if op in ("and", "or"):
        assert guards.python_guard("x = a" + f"{op}(a)" * 301 + "\n")


def test_python_guard_separators_end_a_chain():
    # a long list, call or dict of short expressions is not a chain
    assert guards.python_guard("x = [" + ", ".join(["a + 1"] * 2000) + "]\n") is None
    assert guards.python_guard("f(" + ", ".join(f"k{i}=a or b" for i in range(2000)) + ")\n") is None
    assert guards.python_guard("".join(f"x{i} = a and b and c\n" for i in range(5000))) is None
    # operators inside strings and comments do not count
    assert guards.python_guard("s = '" + " and " * 1000 + "'  # " + "+" * 1000 + "\n") is None
    assert guards.python_guard('s = """\n' + " or\n" * 1000 + '"""\n') is None


def test_python_guard_nesting_and_lines():
    assert guards.python_guard("x = " + "(" * 90 + "1" + ")" * 90 + "\n") is None
    assert "brackets" in guards.python_guard("x = " + "(" * 101 + "1" + ")" * 101 + "\n")
    assert "line" in guards.python_guard("x = 1  # " + "y" * 300_000 + "\n")
    blocks = "".join(" " * i + "if a:\n" for i in range(110)) + " " * 110 + "pass\n"
    assert "blocks" in guards.python_guard(blocks)


def test_python_guard_passes_real_code():
    """No file of parallint itself, nor of the checked-out training repositories, is too complex."""
    files = sorted((ROOT / "lint").rglob("*.py")) + sorted((ROOT / "rules").rglob("*.py"))
    repos = Path("/work/repos")
    if repos.is_dir():
        files += sorted(repos.glob("*/**/train*.py"))[:400]
    for f in files:
        try:
            text = f.read_text("utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        assert guards.python_guard(text) is None, f


@pytest.mark.parametrize("fmt,text,word", [
    ("json", '{"a": ' + "[" * 150 + "]" * 150 + "}", "nested"),
    ("yaml", "a: " + "[" * 150 + "]" * 150 + "\n", "nested"),
    ("yaml", "a:\n  " + "- " * 150 + "x\n", "nested"),
    ("yaml", "a: &a x\n" + "b: [" + ", ".join(["*a"] * 10_001) + "]\n", "aliases"),
    ("toml", "x = " + "[" * 150 + "]" * 150 + "\n", "nested"),
    ("toml", ".".join(["a"] * 101) + " = 1\n", "dotted"),
    ("toml", "[" + ".".join(["a"] * 101) + "]\n", "dotted"),
])
def test_config_guard(fmt, text, word):
    assert word in guards.config_guard(fmt, text)


def test_config_guard_passes_real_configs():
    corpus = ROOT.parent / "shared" / "corpus"
    if not corpus.is_dir():
        pytest.skip("../shared/corpus not present")
    for f in sorted(corpus.rglob("*")):
        fmt = guards.format_of(f.name)
        if fmt and f.is_file():
            assert guards.config_guard(fmt, f.read_text("utf-8", errors="replace")) is None, f


def test_guards_are_linear():
    """Ten times the input costs about ten times the time (a quadratic guard would cost 100x)."""
    def cost(n):
        text = ("x = (a and\n" + "b,\n" * n + ")\n") + "\n" * n + " " * n
        t = time.perf_counter()
        guards.python_guard(text)
        guards.config_guard("yaml", text)
        guards.config_guard("toml", text)
        return time.perf_counter() - t
    cost(1000)
    assert cost(200_000) < 40 * max(cost(20_000), 1e-3)


# ------------------------------------------------------------------------------- sniffers
def test_sniffers_are_linear_on_blank_lines():
    from parallint.discover.sniff import sniff_structured

    for name, text in [("a.yaml", "trainer:\n" + "\n" * 200_000 + " " * 10 + "x"),
                       ("a.yaml", " " * 200_000 + "\n"), ("a.yaml", "- " + " " * 200_000 + "x:"),
                       ("a.toml", "\n" * 200_000 + "[training]\n"),
                       ("a.json", '"a"' + " " * 200_000 + ":")]:
        t = time.perf_counter()
        sniff_structured(name, text)
        assert time.perf_counter() - t < 1.0, name


# ------------------------------------------------------------------------------- gitignore globs
@pytest.mark.parametrize("pattern,path,is_dir,expected", [
    ("*.pyc", "a/b/x.pyc", False, True), ("/build", "build/x", False, True),
    ("/build", "a/build/x", False, False), ("build/", "build", True, True),
    ("build/", "build", False, False), ("docs/*.md", "docs/a.md", False, True),
    ("docs/*.md", "x/docs/a.md", False, False), ("**/foo", "a/b/foo", False, True),
    ("**/foo", "foo", False, True), ("a/**/b", "a/b", False, True), ("a/**/b", "a/x/y/b", False, True),
    ("foo/**", "foo/x", False, True), ("[!a]*", "b.txt", False, True), ("[!a]*", "a.txt", False, False),
    ("x[0-9].py", "x5.py", False, True), ("x[0-9].py", "xa.py", False, False),
    ("[z-a]", "z", False, False), ("\\#x", "#x", False, True), ("a?c", "abc", False, True),
    ("a?c", "a/c", False, False), ("*.egg-info", "p.egg-info/x.py", False, True),
])
def test_glob_semantics(pattern, path, is_dir, expected):
    assert bool(_matches(compile_patterns([pattern]), path, is_dir)) is expected


def test_glob_cannot_explode():
    pats = compile_patterns(["a*" * 200 + "b", "**/" * 500 + "x", "[z-a]", "[", "\\", "*" * 5000,
                             "[" * 3000, "?" * 3000])
    t = time.perf_counter()
    for _ in range(20):
        _matches(pats, "a" * 250 + "/" + "a" * 250, False)
    assert time.perf_counter() - t < 1.0


# ------------------------------------------------------------------------------- test-file policy
@pytest.mark.parametrize("rel,expected", [
    ("tests/x.py", True), ("a/test/conf.yaml", True), ("testing/run.sh", True), ("test_train.py", True),
    ("a/train_test.py", True), ("conftest.py", True), ("train.py", False), ("latest/x.py", False),
    ("contest.py", False), ("test_data.json", False), ("attest/x.py", False),
])
def test_is_test_path(rel, expected):
    assert is_test_path(rel) is expected


def _codes(tmp_path, paths, settings=None):
    res = check_paths(paths, Config(None, tmp_path, dict(settings or {})), cwd=tmp_path)
    assert not res.errors, res.errors
    return sorted((d.path, d.code) for d in res.diagnostics if d.code == "DDP001")


def test_test_files_skipped_when_walking(tmp_path):
    write_tree(tmp_path, {"train.py": DDP, "tests/test_ddp.py": DDP, "pkg/test_x.py": DDP,
                          "pkg/conftest.py": DDP, "pkg/x_test.py": DDP, "testing/run.py": DDP})
    assert _codes(tmp_path, ["."]) == [("train.py", "DDP001")]
    # named explicitly: checked
    assert _codes(tmp_path, ["tests/test_ddp.py"]) == [("tests/test_ddp.py", "DDP001")]
    # a test folder named on the command line: its tests are what was asked for
    assert _codes(tmp_path, ["tests"]) == [("tests/test_ddp.py", "DDP001")]
    # the switch, in the configuration
    assert len(_codes(tmp_path, ["."], {"include-tests": True})) == 6


def test_include_tests_on_the_command_line(tmp_path, cli):
    write_tree(tmp_path, {"train.py": DDP, "tests/test_ddp.py": DDP})
    p = cli("check", "--select", "DDP001", ".", cwd=tmp_path)
    assert p.returncode == 1 and "tests/test_ddp.py" not in p.stdout
    p = cli("check", "--select", "DDP001", "--include-tests", ".", cwd=tmp_path)
    assert p.returncode == 1 and "tests/test_ddp.py" in p.stdout


# ------------------------------------------------------------------------------- killable workers
def _python_items(runner, tmp_path, n):
    items = []
    for i in range(n):
        p = tmp_path / f"t{i}.py"
        p.write_text(DDP)
        items.append(runner._load(p, True))
    return items


@pytest.mark.skipif(sys.platform == "win32", reason="fork")
@pytest.mark.parametrize("failure", ["segfault", "hang", "exception"])
def test_a_worker_that_crashes_or_hangs_is_one_finding(tmp_path, monkeypatch, failure):
    from parallint.engine.registry import get_registry

    runner = Runner(Config(None, tmp_path, {"file-timeout": 4}), tmp_path)
    items = _python_items(runner, tmp_path, 6)
    real = Runner._parse

    def bad_parse(self, abspath, display, text, kind):
        if display == "t2.py":
            if failure == "segfault":
                import faulthandler

                faulthandler.disable()  # pytest's dump of the dying worker is noise here
                os.kill(os.getpid(), signal.SIGSEGV)
            elif failure == "hang":
                signal.setitimer(signal.ITIMER_REAL, 0)  # as if stuck in native code
                signal.signal(signal.SIGALRM, signal.SIG_IGN)
                time.sleep(60)
            else:
                raise SystemExit("out of the reader")
        return real(self, abspath, display, text, kind)

    monkeypatch.setattr(Runner, "_parse", bad_parse)
    rules = [get_registry().lookup("DDP001")]
    t = time.monotonic()
    runner._parse_in_workers(items, rules)
    assert time.monotonic() - t < 30
    bad = runner.cache[tmp_path / "t2.py"]
    (d,) = bad.diagnostics
    assert d.code == "SYN002"
    word = {"segfault": "SIGSEGV", "hang": "timed out", "exception": "crashed"}[failure]
    assert word in d.message, d.message
    for i in (0, 1, 3, 4, 5):  # every other file still parsed, with its finding
        ap = tmp_path / f"t{i}.py"
        assert runner.cache[ap].kind == "python" and not runner.cache[ap].diagnostics
        assert "DDP001" in [x.code for x in runner.early[ap] + runner.early_job[ap]]


def test_many_python_files_go_through_workers(tmp_path, monkeypatch):
    monkeypatch.setenv("PARALLINT_JOBS", "2")
    for i in range(30):
        (tmp_path / f"t{i}.py").write_text(DDP)
    res = check_paths(["."], Config(None, tmp_path, {}), cwd=tmp_path)
    assert len([d for d in res.diagnostics if d.code == "DDP001"]) == 30 and not res.errors


def test_in_process_time_limit_cannot_be_swallowed(tmp_path, monkeypatch):
    """A reader's `except Exception` must not swallow the alarm (the timeout is a BaseException)."""
    import parallint.readers.deepspeed as ds

    def slow(path, abspath, text):
        while True:
            try:
                time.sleep(0.05)
            except Exception:
                pass

    monkeypatch.setattr(ds, "read", slow)
    (tmp_path / "ds_config.json").write_text('{"train_batch_size": 8, "zero_optimization": {"stage": 1}}')
    t = time.monotonic()
    res = check_paths(["."], Config(None, tmp_path, {"file-timeout": 0.5}), cwd=tmp_path)
    assert time.monotonic() - t < 10
    assert [(d.code, "timed out" in d.message) for d in res.diagnostics] == [("SYN002", True)]


# ------------------------------------------------------------------------------- estimate / plan
JOB = """\
model: {layers: 32, hidden: 4096, heads: 32, vocab: 32000, seq_len: 4096}
parallel: {tp: 2, pp: 1, world_size: 8}
training: {micro_batch: 1, precision: 16}
hardware: {gpu: A100-80GB}
"""


@pytest.mark.parametrize("args,option", [
    (["estimate", "--tp", "0"], "--tp"), (["estimate", "--micro-batch", "0"], "--micro-batch"),
    (["estimate", "--pp", "-3"], "--pp"), (["estimate", "--dp", str(1 << 40)], "--dp"),
    (["estimate", "--zero-stage", "7"], "--zero-stage"), (["plan", "--gpus", "0"], "--gpus"),
    (["estimate", "--recompute", "most"], "--recompute"),
])
def test_estimate_and_plan_numbers_are_validated(tmp_path, cli, args, option):
    write_tree(tmp_path, {"job.yaml": JOB})
    p = cli(*args, "job.yaml", cwd=tmp_path)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and option in lines[0], p.stderr


def test_precision_as_a_number_is_read(tmp_path, cli):
    write_tree(tmp_path, {"job.yaml": JOB})
    p = cli("estimate", "job.yaml", cwd=tmp_path)
    assert p.returncode in (0, 1) and "Traceback" not in p.stderr and "job:" in p.stdout


@pytest.mark.parametrize("bad", ["layers: 0", "layers: 1000000000", "hidden: -4"])
def test_absurd_job_numbers_are_one_line_errors(tmp_path, cli, bad):
    write_tree(tmp_path, {"job.yaml": JOB.replace("layers: 32", bad)})
    p = cli("estimate", "job.yaml", cwd=tmp_path)
    assert p.returncode == 2 and "Traceback" not in p.stderr


def test_plan_with_two_to_the_31_gpus_answers_within_a_second():
    import yaml

    from parallint.engine.layouts import plan

    spec = yaml.safe_load(JOB)
    t = time.perf_counter()
    layouts = plan(spec, 2**31, "A100-80GB")
    assert time.perf_counter() - t < 1.0 and layouts
    assert all(lay.tp * lay.pp * lay.dp * lay.cp == 2**31 for lay in layouts)


def test_divisors_by_factorisation():
    from parallint.estimator.plan import _divisors

    for n in range(1, 600):
        assert _divisors(n) == [d for d in range(1, n + 1) if n % d == 0]
    t = time.perf_counter()
    assert len(_divisors(2**31)) == 32 and _divisors(2**31 - 1) == [1, 2**31 - 1]
    assert time.perf_counter() - t < 0.5


ZEROS = {
    "run.sh": """\
#!/bin/bash
#SBATCH --nodes=0
#SBATCH --gpus-per-node=0
srun torchrun --nnodes=0 --nproc_per_node=0 train.py --tensor-model-parallel-size 0 \\
    --pipeline-model-parallel-size 0 --num-layers 0 --micro-batch-size 0 --global-batch-size 0 \\
    --hidden-size 0 --num-attention-heads 0 --use-mcore-models --deepspeed_config ds.json
deepspeed --num_gpus 0 --num_nodes 0 train.py --deepspeed ds.json
accelerate launch --num_processes 0 --num_machines 0 train.py
mpirun -np 0 python train.py
""",
    "train.py": 'import torch.distributed as dist\ndist.init_process_group("nccl")\n',
    "ds.json": '{"train_batch_size": 0, "train_micro_batch_size_per_gpu": 0, "zero_optimization": {"stage": 0}}',
    "job.yaml": "model: {layers: 0, hidden: 0, heads: 0}\nparallel: {tp: 0, pp: 0, world_size: 0}\n"
                "training: {micro_batch: 0, precision: 16}\n",
    "nemo.yaml": "trainer:\n  devices: 0\n  num_nodes: 0\nmodel:\n  micro_batch_size: 0\n"
                 "  tensor_model_parallel_size: 0\n  pipeline_model_parallel_size: 0\n",
}


@pytest.mark.parametrize("command", [["check", "."], ["show", "."], ["estimate", "."], ["plan", "--gpus", "8", "."]])
def test_zero_degrees_never_divide_by_zero(tmp_path, cli, command):
    write_tree(tmp_path, ZEROS)
    p = cli(*command, cwd=tmp_path)
    assert "Traceback" not in p.stderr and "internal error" not in p.stderr, p.stderr
    assert p.returncode in ((1,) if command[0] == "check" else (0, 1, 2))


@pytest.mark.skipif(sys.platform == "win32", reason="fork")
def test_slow_native_shell_parse_is_cancelled(tmp_path, cli):
    """tree-sitter's error recovery is superlinear on some broken text (12,000 `[[x]]` lines take
    over 10 s): the parse is cancelled after its CPU budget, in-process, and the file is reported
    as not analysed; the other files are checked."""
    write_tree(tmp_path, {"slow.sh": "#!/bin/bash\ntorchrun train.py\n" + "[[x]]\n" * 12000,
                          "train.py": DDP})
    t = time.monotonic()
    p = cli("check", "--format", "json", ".", cwd=tmp_path)
    assert time.monotonic() - t < 20
    import json

    items = json.loads(p.stdout)
    assert p.returncode == 1 and "Traceback" not in p.stderr
    slow = [d for d in items if d["path"] == "slow.sh"]
    assert [d["code"] for d in slow] == ["SYN002"]
    assert "too complex (parsing the shell took over" in slow[0]["message"]
    assert any(d["code"] == "DDP001" for d in items)


def test_cancelled_shell_parse_leaves_the_parser_fresh():
    """tree-sitter resumes a cancelled parse on the next call, whatever text it is given (wrong
    trees, then SIGSEGV: fuzz seed 3 crashed 21 times in 64,638 inputs): after a cancellation the
    next text parses on its own."""
    from parallint.readers import shell

    bad = ("#!/bin/bash\n" + "[[x]]\n" * 6000).encode()
    good = b"torchrun --nproc_per_node 8 train.py\n" * 50
    for _ in range(3):
        with pytest.raises(shell.TooComplex):
            shell._ts_parse(bad)
        tree = shell._ts_parse(good)
        assert not tree.root_node.has_error and len(tree.root_node.children) == 50


def test_shell_repair_past_budget_keeps_the_last_parse(monkeypatch):
    """A placeholder repair whose re-parse runs past the budget stops repairing: the text and tree
    returned are the last ones that parsed, so positions stay exact."""
    from parallint.readers import shell

    text = b"NODES=<num nodes>\ntorchrun --nnodes $NODES train.py\n"
    calls = []
    real = shell._ts_parse

    def parse(data):
        calls.append(data)
        if len(calls) > 1:
            raise shell.TooComplex("too complex (test)")
        return real(data)

    monkeypatch.setattr(shell, "_ts_parse", parse)
    data, tree, placeholders = shell.parse_repaired(text)
    assert len(calls) == 2 and data == text and placeholders == []
    assert tree.root_node.has_error


def test_word_splitting_splits_on_what_isspace_calls_space():
    from parallint.readers import shell

    assert shell._SPACE_CHARS == "".join(chr(c) for c in range(0x110000) if chr(c).isspace())


def test_runaway_word_splitting_is_bounded(monkeypatch):
    """`$ARGS` holding thousands of words, used in many commands: each expansion stops at the
    command word limit (the rest is any number of words) instead of building every word (5,000
    words in 40 commands built 200,000 words and took 2.5 s)."""
    from parallint.readers import shell

    built = []
    real = shell._to_word
    monkeypatch.setattr(shell, "_to_word", lambda f, usage: built.append(1) or real(f, usage))
    words = " ".join(["--x"] * 5000)
    text = f'ARGS="{words}"\n' + "torchrun train.py $ARGS\n" * 40
    ev = shell.evaluate(text, "run.sh")
    assert ev.launches == []  # a command of over MAX_WORDS words is not followed
    assert 0 < len(built) <= 40 * (shell.MAX_WORDS + 2)


# ----------------------------------------------------------------------------- absurd sizes in a job
ABSURD = [("model", "layers", 3299999999999999999999), ("model", "hidden", 4 * 10**100),
          ("model", "vocab", 10**40), ("training", "micro_batch", 10**30)]


@pytest.mark.parametrize("section,key,value", ABSURD)
def test_absurd_sizes_are_a_shape_error_not_an_overflow(section, key, value):
    """Found by the mutation fuzzer (jobspec inputs 32091, 56868, 64960, 92352): a 22-digit layer
    count made the estimator allocate a per-layer table (OverflowError, MemoryError), a 100-digit
    hidden size overflowed float division, and MEM001/MEM002 reported internal errors."""
    from parallint.estimator.memory import estimate
    from parallint.estimator.params import ShapeError

    spec = {"model": {"layers": 32, "hidden": 4096, "heads": 32, "vocab": 32000, "seq_len": 4096},
            "parallel": {"tp": 2, "pp": 2, "world_size": 16}, "training": {"micro_batch": 1},
            "hardware": {"gpu": "H100-80GB"}}
    spec[section][key] = value
    with pytest.raises(ShapeError):
        estimate(spec, lower_bound=True)


@pytest.mark.parametrize("section,key,value", ABSURD)
def test_a_job_spec_with_absurd_sizes_gets_one_finding_naming_the_bound(tmp_path, section, key, value):
    job = {"model": {"layers": 32, "hidden": 4096, "heads": 32, "vocab": 32000, "seq_len": 4096},
           "parallel": {"tp": 2, "pp": 2, "world_size": 16}, "training": {"micro_batch": 1},
           "hardware": {"gpu": "H100-80GB"}}
    job[section][key] = value
    (tmp_path / "job.yaml").write_text(yaml.safe_dump(job))
    r = run_cli("check", str(tmp_path), "--format", "json")
    found = json.loads(r.stdout)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert [d["code"] for d in found] == ["SYN001"]
    assert f"{section}.{key}" in found[0]["message"] and "maximum" in found[0]["message"]


def test_job_schema_maxima_are_the_estimators_bounds():
    from parallint.estimator.params import MODEL_BOUNDS

    schema = json.loads((ROOT / "schemas" / "job.schema.json").read_text())
    model = schema["properties"]["model"]["properties"]
    assert {k: model[k]["maximum"] for k in MODEL_BOUNDS} == MODEL_BOUNDS
    from parallint.estimator.params import TRAINING_BOUNDS

    training = schema["properties"]["training"]["properties"]
    assert {k: training[k]["maximum"] for k in TRAINING_BOUNDS} == TRAINING_BOUNDS


def test_plan_of_a_shapeless_model_on_a_highly_divisible_gpu_count_answers_within_a_second():
    """Found by the mutation fuzzer (estimate/plan input 29155: 1.27 s of CPU): a model known only by
    its parameter count has no head count to bound TP, and 720,720 GPUs have 240 divisors, each a
    candidate the layout rules were run on. TP is bounded by the node as well."""
    from parallint.engine.layouts import plan

    t = time.process_time()
    layouts = plan({"model": {"param_count": 10**9}, "training": {"precision": "fp16"}}, 720720, "H100-80GB")
    assert time.process_time() - t < 1.0
    assert layouts and all(lay.tp <= 8 for lay in layouts)


def test_a_syntax_error_far_from_any_f_string_never_reaches_libcsts_error_recovery(tmp_path):
    """Found by the mutation fuzzer (python inputs 65901 and 88426: 2.6 s, and minutes): after
    CPython rejects a file, LibCST was asked whether it is newer syntax (PEP 701 f-strings), and
    its error recovery on thousands of chained subscripts inside an unclosed call ran for
    minutes. LibCST is asked only when the error is at an f-string."""
    text = "import torch.distributed as dist\n\ndist.init_process_group(\n" + "[[x]]\n" * 3000
    write_tree(tmp_path, {"train.py": text})
    t = time.monotonic()
    r = run_cli("check", str(tmp_path), "--format", "json", "--no-cache")
    assert time.monotonic() - t < 20
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert [d["code"] for d in json.loads(r.stdout)] == ["SYN001"]


def test_newer_f_string_syntax_is_still_not_a_syntax_error(tmp_path):
    import sys

    if sys.version_info >= (3, 12):
        pytest.skip("PEP 701 f-strings are valid for this Python's own parser")
    write_tree(tmp_path, {"train.py": 'd = {"k": 1}\nprint(f"{d["k"]}")\n'})
    r = run_cli("check", str(tmp_path), "--format", "json", "--no-cache")
    assert r.returncode == 0, r.stdout


def test_type_parameters_of_a_newer_python_are_not_a_syntax_error(tmp_path):
    """Found on held-out set J (huggingface/lerobot's processor pipeline): PEP 695 generics
    (``class Pipeline[TIn, TOut](Base):``, Python 3.12) were reported as SYN001 under an older
    Python. A real syntax error in the same shape of file is still one."""
    import sys

    if sys.version_info >= (3, 12):
        pytest.skip("PEP 695 type parameters are valid for this Python's own parser")
    head = "import torch.distributed as dist\n\ndist.init_process_group('nccl')\n\n"
    write_tree(tmp_path, {"a.py": head + "class Pipeline[TIn, TOut](dict):\n    pass\n",
                          "b.py": head + "def first[T](xs: list[T]) -> T:\n    return xs[0]\n",
                          "c.py": head + "type Vector = list[float]\n",
                          "d.py": head + "class Pipeline[TIn, TOut](dict):\n    x = = 1\n"})
    r = run_cli("check", str(tmp_path), "--format", "json", "--no-cache")
    found = [(d["path"].rsplit("/", 1)[-1], d["code"]) for d in json.loads(r.stdout)]
    assert found == [("d.py", "SYN001")], found


def test_a_zero_world_has_no_data_parallel_size(tmp_path):
    """Found by the mutation fuzzer (shell inputs 23908/seed 1, 34099, 37573, 43524/seed 2): an
    `#SBATCH --nodes=0` made the world size 0, and BAT002/PIP004 divided by a data-parallel size of
    0 (internal errors). dp_size is unknown for a world that is not positive."""
    from parallint.model.facts import FactMap, Value
    from parallint.model.world import dp_size

    facts = FactMap()
    facts.add("parallel.tp", Value(2))
    assert dp_size(facts, Value(0), sp=False) == (None, [])
    write_tree(tmp_path, {"run.sh": "#!/bin/bash\n#SBATCH --nodes=0\n#SBATCH --ntasks-per-node=1\n"
                                    "srun torchrun --nnodes 0 --nproc_per_node 8 pretrain_gpt.py "
                                    "--tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 "
                                    "--micro-batch-size 2 --global-batch-size 64 --num-layers 24\n"})
    r = run_cli("check", str(tmp_path), "--format", "json", "--no-cache")
    assert "internal error" not in r.stdout + r.stderr and "Traceback" not in r.stderr
    assert r.returncode in (0, 1)


def test_shell_parses_do_not_leak_memory():
    """py-tree-sitter 0.26 keeps what a read callback returns on some texts: 64 KiB slices of an
    18 KB text of `[[x]]` lines leaked about 80 MB per parse (the shell fuzz target grew to 2.6 GB
    over 100,000 inputs). Small texts are parsed from bytes, larger ones in small shared chunks."""
    import tracemalloc

    from parallint.readers import shell

    broken = ("[[x]]\n" * 3000).encode()  # over SMALL_TEXT: the read-callback path
    small = ("torchrun --nproc_per_node 8 train.py \\\n  --lr 1e-4\n[[x\n" * 200).encode()
    assert len(broken) > shell.SMALL_TEXT >= len(small)
    tracemalloc.start()
    try:
        for text in (broken, small) * 3:
            try:
                shell._ts_parse(text)
            except shell.TooComplex:
                pass
        grown = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert grown < 8 * 1024 * 1024, f"{grown / 1e6:.1f} MB kept after 6 parses"
