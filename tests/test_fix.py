"""``check --fix``, ``--unsafe-fixes`` and ``--diff`` (issue 26), and the writer's guarantee that an
edit never changes what a program means beyond the fix (issue 23).

End to end through the CLI on copies of ``examples/`` and on small jobs per fixable rule: the
finding goes away on the next check, a second ``--fix`` changes nothing, the file still parses,
``--diff`` prints exactly the change ``--fix`` writes and writes nothing. A property test over
generated Python files with every line-ending and whitespace oddity checks that the tree after
the fix is the tree before with the one keyword removed, and that every byte outside the edit is
kept."""

from __future__ import annotations

import ast
import difflib
import io
import json
import os
import random
import shutil
import tokenize
from pathlib import Path

import pytest

from conftest import ROOT, run_cli, write_tree
from test_noqa_edits import BREAKS, FRAGMENTS

FIXABLE = {"BAT001", "CFG001", "CFG006", "CKP002", "DAT003", "DDP001", "ENV005", "LAY001", "LCH004"}


def _codes(cwd: Path, *paths: str) -> list[str]:
    res = run_cli("check", "--no-cache", "--format", "json", *(paths or (".",)), cwd=cwd)
    assert res.returncode in (0, 1), res.stderr
    return sorted(d["code"] for d in json.loads(res.stdout))


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and ".parallint_cache" not in p.parts}


def _copy_examples(tmp_path: Path) -> Path:
    dst = tmp_path / "examples"
    shutil.copytree(ROOT / "examples", dst, ignore=shutil.ignore_patterns(".parallint_cache"))
    (dst / ".git").mkdir()  # the repository root: the walk stops here
    return dst


def _unified(before: dict[str, bytes], after: dict[str, bytes]) -> str:
    out = []
    for name in sorted(after):
        if before.get(name) != after[name]:
            a = before[name].decode().splitlines(keepends=True)
            b = after[name].decode().splitlines(keepends=True)
            out.extend(difflib.unified_diff(a, b, f"a/{name}", f"b/{name}"))
    return "".join(out)


def test_fix_on_a_copy_of_the_examples(tmp_path):
    ex = _copy_examples(tmp_path)
    first = _codes(ex)
    fixable_before = [c for c in first if c in FIXABLE]
    assert set(fixable_before) >= {"DDP001", "DAT003", "LCH004", "CKP002", "CFG001", "ENV005", "BAT001", "LAY001"}
    before = _snapshot(ex)

    shown = run_cli("check", "--no-cache", "--diff", "--unsafe-fixes", ".", cwd=ex)
    assert shown.returncode == 1, shown.stderr  # something to fix
    assert _snapshot(ex) == before  # --diff writes nothing
    assert "Would fix" in shown.stderr

    done = run_cli("check", "--no-cache", "--fix", "--unsafe-fixes", ".", cwd=ex)
    assert done.returncode in (0, 1), done.stderr
    after = _snapshot(ex)
    assert shown.stdout == _unified(before, after)  # --diff printed the change --fix made
    left = _codes(ex)
    for code in ("DDP001", "DAT003", "LCH004", "CKP002", "CFG001", "ENV005", "BAT001", "LAY001"):
        assert code not in left, (code, left)
    # what the fixes do not touch is still reported as before
    assert [c for c in left if c not in FIXABLE] == [c for c in first if c not in FIXABLE]
    for name, data in after.items():
        if name.endswith(".py"):
            ast.parse(data.decode())
        elif name.endswith(".json"):
            json.loads(data)

    again = run_cli("check", "--no-cache", "--fix", "--unsafe-fixes", ".", cwd=ex)
    assert _snapshot(ex) == after, again.stderr  # idempotent
    assert "Fixed 0 findings." in again.stderr


def test_safe_fixes_only_without_unsafe_fixes(tmp_path):
    ex = _copy_examples(tmp_path)
    res = run_cli("check", "--no-cache", "--fix", "autofix", cwd=ex)
    assert "more with --unsafe-fixes" in res.stderr, res.stderr
    left = _codes(ex, "autofix")
    assert "DAT003" not in left and "LCH004" not in left  # safe: made
    assert {"CKP002", "CFG001", "ENV005"} <= set(left)  # unsafe: left for --unsafe-fixes
    assert "torchrun --nproc_per_node=4 \\\n" in (ex / "autofix" / "launch.sh").read_text()
    assert "--use_env" not in (ex / "autofix" / "launch.sh").read_text()
    assert res.returncode == 1  # the report of what is left, with its exit status
    assert "CKP002" in res.stdout


def test_fix_keeps_comments_and_layout_of_the_other_arguments(tmp_path):
    ex = _copy_examples(tmp_path)
    run_cli("check", "--no-cache", "--fix", "autofix", cwd=ex)
    text = (ex / "autofix" / "train.py").read_text()
    assert "    loader = DataLoader(data, batch_size=8, sampler=sampler,\n                        num_workers=2)\n" in text


def test_torchrun_without_use_env_is_an_unsafe_fix(tmp_path):
    write_tree(tmp_path, {".git/x": "", "run.sh": "#!/bin/bash\npython3 -m torch.distributed.launch --nproc_per_node 2 train.py --use_env\n"})
    safe = run_cli("check", "--no-cache", "--diff", "run.sh", cwd=tmp_path)
    assert safe.stdout == "" and safe.returncode == 0, safe.stdout  # the script's own --use_env is not the launcher's
    res = run_cli("check", "--no-cache", "--diff", "--unsafe-fixes", "run.sh", cwd=tmp_path)
    assert "+torchrun --nproc_per_node 2 train.py --use_env\n" in res.stdout, res.stdout


def test_another_interpreter_is_not_rewritten(tmp_path):
    write_tree(tmp_path, {".git/x": "", "run.sh": "#!/bin/bash\n/opt/conda/bin/python -m torch.distributed.launch --use_env --nproc_per_node 2 train.py\n"})
    assert "LCH004" in _codes(tmp_path, "run.sh")
    res = run_cli("check", "--no-cache", "--diff", "--unsafe-fixes", "run.sh", cwd=tmp_path)
    assert res.stdout == "", res.stdout


_MEGATRON = """#!/bin/bash
torchrun --nproc_per_node 8 /workspace/Megatron-LM/pretrain_gpt.py \\
    --tensor-model-parallel-size 2 --num-layers 24 --micro-batch-size 2 \\
    --checkpoint-activations --activations-checkpoint-method=uniform --num-layrs-x 3
"""


def test_megatron_flags_renamed(tmp_path):
    write_tree(tmp_path, {".git/x": "", "run.sh": _MEGATRON})
    assert _codes(tmp_path, "run.sh").count("CFG006") == 3
    run_cli("check", "--no-cache", "--fix", "run.sh", cwd=tmp_path)
    text = (tmp_path / "run.sh").read_text()
    # the flags Megatron renamed, with one replacement, are safe fixes; the value after = is kept
    assert "--recompute-activations --recompute-method=uniform --num-layrs-x 3" in text, text
    assert _codes(tmp_path, "run.sh").count("CFG006") == 1  # the misspelling: no close match, no fix


def test_batch_identity_fix_is_unsafe_and_sets_the_product(tmp_path):
    ex = _copy_examples(tmp_path)
    run_cli("check", "--no-cache", "--fix", "deepspeed_batch", cwd=ex)
    assert '"train_batch_size": 32' in (ex / "deepspeed_batch" / "ds_config.json").read_text()
    run_cli("check", "--no-cache", "--fix", "--unsafe-fixes", "deepspeed_batch", cwd=ex)
    assert '"train_batch_size": 64' in (ex / "deepspeed_batch" / "ds_config.json").read_text()
    assert "BAT001" not in _codes(ex, "deepspeed_batch")


_BROKEN = "from torch.utils.data import DataLoader\nloader = DataLoader(ds, sampler=s, shuffle=True)\ndef (:\n"


def test_a_file_that_does_not_parse_is_never_fixed(tmp_path):
    write_tree(tmp_path, {".git/x": "", "train.py": _BROKEN})
    res = run_cli("check", "--no-cache", "--fix", "train.py", cwd=tmp_path)
    assert (tmp_path / "train.py").read_text() == _BROKEN, res.stderr


def test_a_linked_file_is_never_written(tmp_path):
    outside = tmp_path / "outside.py"
    outside.write_text("from torch.utils.data import DataLoader\nloader = DataLoader(ds, sampler=s, shuffle=True)\n")
    repo = tmp_path / "repo"
    write_tree(repo, {".git/x": ""})
    (repo / "train.py").symlink_to(outside)
    before = outside.read_bytes()
    run_cli("check", "--no-cache", "--fix", ".", cwd=repo)
    assert outside.read_bytes() == before
    assert (repo / "train.py").is_symlink()


def test_usage_errors(tmp_path):
    write_tree(tmp_path, {".git/x": "", "train.py": "x = 1\n"})
    for args, needle in ((["--unsafe-fixes"], "--unsafe-fixes needs --fix or --diff"),
                         (["--fix", "--add-noqa"], "cannot be combined"),
                         (["--fix", "--stdin-filename", "t.py", "-"], "standard input")):
        res = run_cli("check", *args, *([] if "-" in args else ["train.py"]), cwd=tmp_path)
        assert res.returncode == 2 and needle in res.stderr, (args, res.stderr)


def test_rule_says_whether_it_fixes():
    out = run_cli("rule", "DAT003").stdout
    assert "Automatic fix (safe, `check --fix`)" in out
    assert "Automatic fix (unsafe" in run_cli("rule", "CKP002").stdout
    assert "Automatic fix" not in run_cli("rule", "LAY002").stdout
    listed = {r["code"]: r["fix"] for r in json.loads(run_cli("rules", "--format", "json").stdout)}
    assert {c for c, f in listed.items() if f} == FIXABLE
    assert listed["LCH004"] == "sometimes" and listed["BAT001"] == "unsafe" and listed["DDP001"] == "safe"


# --------------------------------------------------------------------------- property test
#: DataLoader calls with a sampler and shuffle=True, one or more physical lines ("@" is a break)
LOADERS = [
    "loader = DataLoader(ds, sampler=DistributedSampler(ds), shuffle=True)",
    "loader = DataLoader(ds,@    sampler=DistributedSampler(ds),  # note@    shuffle=True)",
    "loader = DataLoader(ds, shuffle=True,@    sampler=DistributedSampler(ds))",
    "loader = DataLoader(@    ds,@    shuffle=True,@    sampler=DistributedSampler(ds),@)",
    "loader = DataLoader(ds,\x0c sampler=DistributedSampler(ds), shuffle=True)",
    "loader = DataLoader(ds, collate_fn=f('\U0001f600\u00e9'), sampler=DistributedSampler(ds), shuffle=True)",
    "loader = DataLoader(ds, sampler=DistributedSampler(ds), shuffle=True, **extra)",
    "if ok:@\tloader = DataLoader(ds, sampler=DistributedSampler(ds),@\t\tshuffle=True)  # trailing",
]
HEAD = "from torch.utils.data import DataLoader, DistributedSampler"


def _program(rng: random.Random) -> tuple[str, str, str]:
    parts = [HEAD] + rng.sample(FRAGMENTS, rng.randint(0, 4)) + rng.sample(LOADERS, rng.randint(1, 2))
    parts = parts[:1] + rng.sample(parts[1:], len(parts) - 1)
    style = rng.choice(["lf", "crlf", "cr", "mixed"])
    out = []
    for frag in parts:
        for piece in frag.split("@"):
            brk = BREAKS[rng.choice(list(BREAKS))] if style == "mixed" else BREAKS[style]
            out.append(piece + brk)
    src = "".join(out)
    if rng.random() < 0.3:
        src = src.rstrip("\r\n")
    encoding = rng.choice(["utf-8", "utf-8", "utf-8-sig", "latin-1"])
    if encoding == "latin-1":
        src = "# -*- coding: latin-1 -*-\n" + src.replace("\u2028", " ").replace("\u0085", " ").replace(
            "\U0001f600", "x")
    return src, encoding, f"{style} {encoding} {parts!r}"


def _expected_tree(src: str) -> str:
    """The tree of ``src`` with shuffle= removed from every DataLoader call given a sampler."""
    tree = ast.parse(src)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "DataLoader" and \
                any(k.arg == "sampler" for k in node.keywords):
            node.keywords = [k for k in node.keywords if k.arg != "shuffle"]
    return ast.dump(tree)


def _decode(raw: bytes) -> str:
    enc, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
    return raw.decode(enc)


def _check(path: Path):
    from parallint.discover.settings import configs_for
    from parallint.engine.index import check_files
    from parallint.engine.registry import get_registry

    (config, group, _), = configs_for([str(path)], None, None)
    return check_files(group, config, get_registry().enabled(["DAT003"], [], []), use_cache=False).diagnostics


_BLANKS = set(" ,\t\r\n\x0c")


def _deleted(old: str, new: str, n: int) -> bool:
    """Whether ``new`` is ``old`` with ``n`` occurrences of ``shuffle=True`` deleted, each with
    only commas and blanks around it."""
    if n == 0:
        return old == new
    p = old.find("shuffle=True")
    while p >= 0:
        j = p
        while True:
            e = p + len("shuffle=True")
            while True:
                if _deleted(old[:j] + old[e:], new, n - 1):
                    return True
                if e >= len(old) or old[e] not in _BLANKS:
                    break
                e += 1
            if j == 0 or old[j - 1] not in _BLANKS:
                break
            j -= 1
        p = old.find("shuffle=True", p + 1)
    return False


@pytest.mark.parametrize("seed", range(300))
def test_fix_keeps_the_program_but_the_fix(tmp_path, monkeypatch, seed):
    from parallint.report import fixer

    rng = random.Random(seed)
    src, encoding, what = _program(rng)
    raw = src.encode(encoding)
    ast.parse(src)
    (tmp_path / ".git").mkdir()
    f = tmp_path / "t.py"
    f.write_bytes(raw)
    f.chmod(0o751)
    monkeypatch.chdir(tmp_path)
    diags = _check(Path("t.py"))
    assert diags and all(d.code == "DAT003" for d in diags), (diags, what)
    plans = fixer.plan(diags, tmp_path, unsafe=False)
    fixer.write(plans)
    after = f.read_bytes()
    text = _decode(after)
    if after == raw:  # not fixed: each finding says why, and nothing was written
        assert plans and all(why for p in plans for _, why in p.skipped), what
        return
    # the tree is the old one with shuffle= gone, where each fix was made
    fixed = {d.span.line for p in plans for d in p.fixed}
    assert len(fixed) == len(diags) or any(p.skipped for p in plans), what
    if len(fixed) == len(diags):
        assert ast.dump(ast.parse(text)) == _expected_tree(src), what
    # every byte outside the edits kept (line breaks included): the new text is the old one with
    # each fixed `shuffle=True` deleted, with at most its comma and the blanks beside it
    assert _deleted(_decode(raw), text, len(fixed)), what
    assert after.startswith(b"\xef\xbb\xbf") == raw.startswith(b"\xef\xbb\xbf")
    assert not _check(Path("t.py")) or len(fixed) < len(diags), what  # the finding is gone
    assert os.stat(f).st_mode & 0o777 == 0o751  # the file's mode kept


def _apply_sarif(text: str, region: dict, new: str) -> str:
    """A SARIF replacement applied (lines at LF, CRLF or CR; columns in code points)."""
    import re

    starts = [0] + [m.end() for m in re.finditer("\r\n|[\n\r]", text)]
    a = starts[region["startLine"] - 1] + region["startColumn"] - 1
    b = starts[region["endLine"] - 1] + region["endColumn"] - 1
    return text[:a] + new + text[b:]


def test_sarif_carries_the_fixes(tmp_path):
    """Each fixable finding's SARIF result has the replacement --fix makes (safe and unsafe ones,
    the unsafe ones said so); applied, they give the file --fix --unsafe-fixes writes."""
    ex = _copy_examples(tmp_path)
    res = run_cli("check", "--no-cache", "--format", "sarif", "autofix", cwd=ex)
    results = json.loads(res.stdout)["runs"][0]["results"]
    with_fix = {r["ruleId"]: r["fixes"][0] for r in results if "fixes" in r}
    assert set(with_fix) == {"CFG001", "ENV005", "LCH004", "CKP002", "DAT003"}
    assert "unsafe" in with_fix["CKP002"]["description"]["text"]
    assert "unsafe" not in with_fix["DAT003"]["description"]["text"]
    texts = {}
    for r in sorted(results, key=lambda r: (-r["locations"][0]["physicalLocation"]["region"]["startLine"])):
        for change in r.get("fixes", [{}])[0].get("artifactChanges", []):
            name = change["artifactLocation"]["uri"]
            texts.setdefault(name, (ex / name).read_text())
            for rep in change["replacements"]:
                texts[name] = _apply_sarif(texts[name], rep["deletedRegion"], rep["insertedContent"]["text"])
    run_cli("check", "--no-cache", "--fix", "--unsafe-fixes", "autofix", cwd=ex)
    for name, text in texts.items():
        assert text == (ex / name).read_text(), name


# ------------------------------------------------- property test: span edits in other formats
def _config(rng: random.Random) -> tuple[str, str, str]:
    """(file name, text, description) of a DeepSpeed JSON or a launch script with fixable findings,
    written with odd line breaks, blanks, a BOM or no final newline."""
    brk = rng.choice(["\n", "\r\n", "\r"])
    if rng.random() < 0.5:
        keys = ['"train_micro_batch_size_per_gpu": 2', '"gradient_accumulation_step": 4',
                '"optimizer":\t{"type": "AdamW",' + brk + '   "params": {"lr": 1e-4}}', '"bf16": {"enabled": true}']
        rng.shuffle(keys)
        sep = rng.choice([", ", "," + brk + "  ", "," + brk + "\t"])
        text = "{" + brk + "  " + sep.join(keys) + brk + "}" + (brk if rng.random() < 0.7 else "")
        if rng.random() < 0.3:
            text = "\ufeff" + text
        return "ds_config.json", text, f"json {brk!r} {sep!r}"
    brk = brk if brk != "\r" else "\n"  # a shell reads a CR-only script as one line (a comment here)
    lines = ["#!/bin/bash", "export NCCL_SOCKET_IFNAM=eth0" + rng.choice(["", "  # the NIC", "\t"]),
             rng.choice(["", "# the launch", "\x0c"]),
             "python -m torch.distributed.launch --nproc_per_node=2 --use_env" + rng.choice([" \\" + brk + "    ", " "])
             + "train.py --lr 1e-4" + rng.choice(["", " &&" + brk + "echo done"])]
    text = brk.join(lines) + (brk if rng.random() < 0.7 else "")
    return "run.sh", text, f"shell {brk!r} {lines!r}"


@pytest.mark.parametrize("seed", range(60))
def test_span_fixes_change_only_the_value(tmp_path, seed):
    """A key, a variable or a launcher renamed: the file still parses (JSON) or is the old text
    with only those characters replaced (every line break and blank kept), and the findings go."""
    rng = random.Random(seed)
    name, text, what = _config(rng)
    write_tree(tmp_path, {".git/x": ""})
    f = tmp_path / name
    f.write_bytes(text.encode())
    before = _codes(tmp_path, name)
    assert set(before) & {"CFG001", "ENV005", "LCH004"}, (before, what)
    run_cli("check", "--no-cache", "--fix", "--unsafe-fixes", name, cwd=tmp_path)
    after = f.read_bytes().decode()
    if name.endswith(".json"):
        json.loads(after.lstrip("\ufeff"))
        assert after == text.replace('"gradient_accumulation_step"', '"gradient_accumulation_steps"'), what
    else:
        expected = text.replace("NCCL_SOCKET_IFNAM=", "NCCL_SOCKET_IFNAME=").replace(
            "python -m torch.distributed.launch --nproc_per_node=2 --use_env", "torchrun --nproc_per_node=2")
        assert after == expected, what
    assert not set(_codes(tmp_path, name)) & {"CFG001", "ENV005", "LCH004"}, what


# ------------------------------------------------ LAY001: the nearest layout `plan` accepts
_GPT = "import torch.distributed as dist\n\ndist.init_process_group('nccl')\n"


def _lay001(tmp_path: Path, launch: str, **more: str) -> Path:
    write_tree(tmp_path, {".git/x": "", "pretrain_gpt.py": _GPT, "run.sh": launch, **more})
    return tmp_path


def test_lay001_sets_the_nearest_degree_plan_accepts_in_the_launch_line(tmp_path):
    """TP 8 × PP 4 on 16 GPUs: TP 4 (4 × 4 = 16) is the nearest; the flag's value is the only
    change, shown by --diff, made only with --unsafe-fixes, and the finding goes away."""
    launch = ("#!/bin/bash\ntorchrun --nnodes 2 --nproc_per_node 8 pretrain_gpt.py \\\n"
              "    --tensor-model-parallel-size 8 --pipeline-model-parallel-size=4 --num-layers 24 \\\n"
              "    --hidden-size 2048 --num-attention-heads 16 --seq-length 2048 --max-position-embeddings 2048\n")
    _lay001(tmp_path, launch)
    assert _codes(tmp_path, "run.sh") == ["LAY001"]
    assert run_cli("check", "--no-cache", "--diff", "run.sh", cwd=tmp_path).stdout == ""  # unsafe: not without asking
    shown = run_cli("check", "--no-cache", "--diff", "--unsafe-fixes", "run.sh", cwd=tmp_path)
    assert "-    --tensor-model-parallel-size 8 --pipeline-model-parallel-size=4 --num-layers 24 \\\n" in shown.stdout
    assert "+    --tensor-model-parallel-size 4 --pipeline-model-parallel-size=4 --num-layers 24 \\\n" in shown.stdout
    assert (tmp_path / "run.sh").read_text() == launch  # --diff writes nothing
    run_cli("check", "--no-cache", "--fix", "--unsafe-fixes", "run.sh", cwd=tmp_path)
    after = (tmp_path / "run.sh").read_text()
    assert after == launch.replace("--tensor-model-parallel-size 8", "--tensor-model-parallel-size 4")
    assert _codes(tmp_path, "run.sh") == []
    again = run_cli("check", "--no-cache", "--fix", "--unsafe-fixes", "run.sh", cwd=tmp_path)
    assert (tmp_path / "run.sh").read_text() == after and "Fixed 0 findings." in again.stderr


def test_lay001_skips_the_nearest_degree_a_layout_rule_rejects(tmp_path):
    """6 heads: TP 8 on 4 GPUs becomes TP 2, not the nearer TP 4 (LAY003: 6 heads do not split in
    4, so `plan` rejects it)."""
    _lay001(tmp_path, "#!/bin/bash\ntorchrun --nproc_per_node 4 pretrain_gpt.py --tensor-model-parallel-size 8 "
                      "--num-layers 4 --hidden-size 384 --num-attention-heads 6\n")
    run_cli("check", "--no-cache", "--fix", "--unsafe-fixes", "run.sh", cwd=tmp_path)
    assert "--tensor-model-parallel-size 2 " in (tmp_path / "run.sh").read_text()
    assert _codes(tmp_path, "run.sh") == []


def test_lay001_in_a_nemo_yaml_and_a_torchtitan_toml(tmp_path):
    """The key's value in the config where the degree is written: NeMo's YAML, torchtitan's TOML
    (its dp_shard set to the one degree that makes the product the world)."""
    ex = _copy_examples(tmp_path)
    nemo = ex / "nemo_tp_pp" / "conf" / "megatron_gpt_config.yaml"
    titan = ex / "torchtitan" / "llama3_8b.toml"
    before = nemo.read_text(), titan.read_text()
    run_cli("check", "--no-cache", "--fix", "--unsafe-fixes", "nemo_tp_pp", "torchtitan", cwd=ex)
    assert nemo.read_text() == before[0].replace("tensor_model_parallel_size: 4", "tensor_model_parallel_size: 2")
    assert titan.read_text() == before[1].replace("data_parallel_shard_degree = 4", "data_parallel_shard_degree = 2")
    assert "LAY001" not in _codes(ex, "nemo_tp_pp", "torchtitan")


def test_lay001_in_a_python_plugin_call(tmp_path):
    """ColossalAI's HybridParallelPlugin(tp_size=4, pp_size=2) on 4 processes: tp_size=2, the
    rest of the program unchanged (the fixer compares the trees)."""
    train = ("import colossalai\nfrom colossalai.booster import Booster\n"
             "from colossalai.booster.plugin import HybridParallelPlugin\n\ncolossalai.launch_from_torch()\n"
             "plugin = HybridParallelPlugin(tp_size=4, pp_size=2, zero_stage=1)  # the plugin\n"
             "booster = Booster(plugin=plugin)\n")
    write_tree(tmp_path, {".git/x": "", "run.sh": "torchrun --standalone --nproc_per_node 4 train.py\n",
                          "train.py": train})
    assert _codes(tmp_path) == ["LAY001"]
    run_cli("check", "--no-cache", "--fix", "--unsafe-fixes", ".", cwd=tmp_path)
    assert (tmp_path / "train.py").read_text() == train.replace("tp_size=4", "tp_size=2")
    assert _codes(tmp_path) == []


@pytest.mark.parametrize("launch", [
    # a shell variable may be used elsewhere (a checkpoint name, another flag): not changed
    "#!/bin/bash\nTP=8\ntorchrun --nproc_per_node 4 pretrain_gpt.py --tensor-model-parallel-size $TP\n",
    # no degree fits: TP 3 × PP 3 on 8 GPUs (no TP with PP 3 divides 8)
    "#!/bin/bash\ntorchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size 3 "
    "--pipeline-model-parallel-size 3\n",
])
def test_lay001_without_a_literal_or_a_layout_is_not_fixed(tmp_path, launch):
    _lay001(tmp_path, launch)
    assert _codes(tmp_path, "run.sh") == ["LAY001"]
    run_cli("check", "--no-cache", "--fix", "--unsafe-fixes", "run.sh", cwd=tmp_path)
    assert (tmp_path / "run.sh").read_text() == launch
    assert _codes(tmp_path, "run.sh") == ["LAY001"]


def test_sarif_carries_the_lay001_fix(tmp_path):
    _lay001(tmp_path, "#!/bin/bash\ntorchrun --nproc_per_node 4 pretrain_gpt.py --tensor-model-parallel-size 8\n")
    res = run_cli("check", "--no-cache", "--format", "sarif", "run.sh", cwd=tmp_path)
    (r,) = json.loads(res.stdout)["runs"][0]["results"]
    fix = r["fixes"][0]
    assert r["ruleId"] == "LAY001" and "set TP to 4" in fix["description"]["text"]
    assert "unsafe" in fix["description"]["text"]
    (rep,) = fix["artifactChanges"][0]["replacements"]
    assert rep["insertedContent"]["text"] == "4" and rep["deletedRegion"]["startLine"] == 2
