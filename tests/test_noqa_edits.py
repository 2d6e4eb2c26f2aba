"""``--add-noqa`` (and the editor's quick fix, which shares :func:`noqa_edit`) never changes what a
program means (issue 23, item 14). A property test over generated Python files with every
line-ending and whitespace oddity: the tree (``ast.dump``) is the same before and after, every byte
but the inserted comment is kept, and each written ``# noqa`` is one that suppression reads. Plus
the named faults end to end through the CLI."""

from __future__ import annotations

import ast
import io
import random
import tokenize
from pathlib import Path

import pytest
import yaml

from conftest import run_cli

# one or more physical lines each; "@" marks where a line break goes (the style is chosen later)
FRAGMENTS = [
    "x = 1",
    's = "a\u2028b"',                      # a line separator inside a string
    't = "a\x0cb"',                        # a form feed inside a string
    "f(1,\x0c 2)",                         # a form feed inside a call
    "\x0c",                                # a form feed alone on a line
    'doc = """first@second@"""',           # a multi-line string
    "y = (1 +@     2)",                    # a bracketed continuation
    "z = 1 + \\@    2",                    # a backslash continuation
    "if x:@\ty = 2",                       # a tab
    "w = 3   ",                            # trailing spaces
    "v = 4\t",                             # a trailing tab
    "# a comment",
    "e = 5  # noqa: E501",                 # another tool's noqa
    "u = 6  # a comment",
    "q = '\u00e9'",                        # not ASCII
    "r = 'a\u0085b'",                      # NEL inside a string
    "",                                    # an empty line
    "def g():@    return 'x'  # noqa: DDP001",
]
BREAKS = {"lf": "\n", "crlf": "\r\n", "cr": "\r"}


class _Span:
    def __init__(self, path: str, line: int) -> None:
        self.path, self.line = path, line


class _Diag:
    def __init__(self, path: str, line: int, code: str = "CKP001") -> None:
        self.code, self.span = code, _Span(path, line)


def _program(rng: random.Random) -> tuple[str, str, str]:
    """(source, encoding, description) of a generated Python file."""
    parts = rng.sample(FRAGMENTS, rng.randint(2, 7))
    style = rng.choice(["lf", "crlf", "cr", "mixed"])
    out = []
    for frag in parts:
        for piece in frag.split("@"):
            brk = BREAKS[rng.choice(list(BREAKS))] if style == "mixed" else BREAKS[style]
            out.append(piece + brk)
    src = "".join(out)
    if rng.random() < 0.3:
        src = src.rstrip("\r\n")  # no final newline
    encoding = rng.choice(["utf-8", "utf-8", "utf-8-sig", "latin-1"])
    if encoding == "latin-1":
        src = "# -*- coding: latin-1 -*-\n" + src.replace("\u2028", " ").replace("\u0085", " ")
    return src, encoding, f"{style} {encoding} {parts!r}"


def _tree(raw: bytes) -> str:
    enc, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
    return ast.dump(ast.parse(raw.decode(enc)))


def _noqa_lines(raw: bytes) -> dict[int, tuple[str, ...]]:
    from parallint.engine.suppress import Suppressions

    enc, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
    return Suppressions.scan(raw.decode(enc), "t.py").lines


@pytest.mark.parametrize("seed", range(400))
def test_add_noqa_keeps_the_program(tmp_path, seed):
    from parallint.report.noqa import add_noqa

    rng = random.Random(seed)
    src, encoding, what = _program(rng)
    before = src.encode(encoding)
    ast.parse(src)  # every generated file is valid Python
    f = tmp_path / "t.py"
    f.write_bytes(before)
    n_lines = len(src.replace("\r\n", "\n").replace("\r", "\n").split("\n"))
    targets = sorted(rng.sample(range(1, n_lines + 1), min(n_lines, rng.randint(1, 3))))
    added, skipped = add_noqa([_Diag(str(f), ln) for ln in targets], tmp_path)
    after = f.read_bytes()
    assert _tree(after) == _tree(before), what
    if after == before:
        return
    # every byte kept but the inserted comment text, line by line (each keeps its own break)
    from parallint.engine.suppress import physical_lines

    a_lines = physical_lines(after.decode(encoding), "python", keepends=True)
    b_lines = physical_lines(before.decode(encoding), "python", keepends=True)
    assert len(a_lines) == len(b_lines), what
    for x, y in zip(a_lines, b_lines):
        if x == y:
            continue
        xc, yc = physical_lines(x)[0], physical_lines(y)[0]
        assert x[len(xc):] == y[len(yc):], ("line break changed", what)
        assert xc in {yc + sep + "# noqa: CKP001" for sep in ("", " ", "  ")} or \
            xc.replace(", CKP001", "", 1) == yc, (x, y, what)
    lines = _noqa_lines(after)
    left = {int(s.rsplit(":", 1)[1]) for s in skipped}
    for ln in targets:
        if ln not in left:
            assert "CKP001" in lines.get(ln, ()) or lines.get(ln) == (), (ln, lines, what)


def _ckp_repo(tmp_path: Path, extra: str = "", newline: str = "\n", tail: str = "") -> Path:
    (tmp_path / ".git").mkdir()
    lines = ["import torch", "import torch.distributed as dist", "", 'dist.init_process_group("nccl")',
             extra, 'torch.save(model.state_dict(), "ckpt.pt")' + tail]
    (tmp_path / "train.py").write_bytes(newline.join(lines).encode() + newline.encode())
    return tmp_path


def _cycle(tmp_path: Path) -> tuple[bytes, bytes, str]:
    before = (tmp_path / "train.py").read_bytes()
    first = run_cli("check", "--no-cache", "train.py", cwd=tmp_path)
    assert "CKP001" in first.stdout, first.stdout
    res = run_cli("check", "--no-cache", "--add-noqa", "train.py", cwd=tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr
    after = (tmp_path / "train.py").read_bytes()
    again = run_cli("check", "--no-cache", "train.py", cwd=tmp_path)
    return before, after, again.stdout


def test_a_line_separator_in_a_string_on_the_finding_line(tmp_path):
    repo = _ckp_repo(tmp_path, tail='; tag = "a\u2028b"')
    before, after, again = _cycle(repo)
    assert _tree(after) == _tree(before)
    assert after.decode().endswith('tag = "a\u2028b"  # noqa: CKP001\n')
    assert "CKP001" not in again and "SYN003" not in again


def test_a_form_feed_inside_the_call(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / "train.py").write_bytes(
        b'import torch\nimport torch.distributed as dist\ndist.init_process_group("nccl")\n'
        b'torch.save(model.state_dict(),\x0c "ckpt.pt")\n')
    before, after, again = _cycle(tmp_path)
    assert _tree(after) == _tree(before)
    assert after.endswith(b'\x0c "ckpt.pt")  # noqa: CKP001\n')
    assert "CKP001" not in again


@pytest.mark.parametrize("newline", ["\r", "\r\n"])
def test_cr_and_crlf_files_take_the_noqa_and_keep_their_line_endings(tmp_path, newline):
    repo = _ckp_repo(tmp_path, newline=newline)
    before, after, again = _cycle(repo)
    assert _tree(after) == _tree(before)
    assert after == before.replace(b'"ckpt.pt")', b'"ckpt.pt")  # noqa: CKP001')
    assert "CKP001" not in again, again


def test_trailing_whitespace_is_kept(tmp_path):
    repo = _ckp_repo(tmp_path, tail="   ")
    before, after, again = _cycle(repo)
    assert after == before.replace(b'"ckpt.pt")   ', b'"ckpt.pt")   # noqa: CKP001')
    assert "CKP001" not in again


def test_a_declared_latin1_file_is_written_back_in_latin1(tmp_path):
    from parallint.report.noqa import add_noqa

    src = "# -*- coding: latin-1 -*-\nname = 'caf\u00e9'\ntorch.save(m, 'x.pt')\n"
    f = tmp_path / "t.py"
    f.write_bytes(src.encode("latin-1"))
    added, skipped = add_noqa([_Diag(str(f), 3)], tmp_path)
    assert (added, skipped) == (1, [])
    assert f.read_bytes() == src.replace("'x.pt')", "'x.pt')  # noqa: CKP001").encode("latin-1")


def test_a_yaml_edit_keeps_the_document(tmp_path):
    from parallint.report.noqa import add_noqa

    src = 'a: 1\r\nb: "x\u2028y"\r\nc: |\r\n  keep # this\r\nd: 4   \r\n'
    f = tmp_path / "c.yaml"
    f.write_bytes(src.encode())
    # YAML 1.1 (PyYAML, whose line numbers the findings carry) also breaks lines at U+2028: b's
    # string is lines 2-3, the block scalar is line 5, d is line 6
    added, skipped = add_noqa([_Diag(str(f), n, "CFG001") for n in (1, 2, 5, 6)], tmp_path)
    after = f.read_bytes().decode()
    assert yaml.safe_load(after) == yaml.safe_load(src)
    assert "d: 4   # noqa: CFG001\r\n" in after and "a: 1  # noqa: CFG001\r\n" in after
    assert added == 2 and sorted(int(x.rsplit(":", 1)[1]) for x in skipped) == [2, 5]
