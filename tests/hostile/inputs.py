"""Hostile inputs for parallint, generated at test time (nothing big is committed).

``build(folder)`` writes every input named in the reliability issue into ``folder`` and returns
``{relative path: reason}`` for the files that must come back as one SYN002 "not analysed"
finding (the reason is a word the message must contain). Files not in the mapping must simply not
hang or crash the run (a FIFO, a socket, a symlink loop, a file parallint does not read).
``PLANTED`` is a script with a known mistake (DDP001 on line ``PLANTED_LINE``).
"""

from __future__ import annotations

import os
import socket
import stat
from pathlib import Path

from conftest import PLANTED_DDP_SCRIPT

PLANTED = PLANTED_DDP_SCRIPT
PLANTED_LINE = 13

DEEP = 10_000
HEADER = "import torch.distributed as dist\n"


def _bool_chain(n: int, op: str = "and") -> str:
    return HEADER + "ok = " + f" {op} ".join(f"a{i % 7}" for i in range(n)) + "\n"


def texts() -> dict[str, tuple[bytes, str | None]]:
    """name -> (content, reason word or None); only small and medium regular files."""
    ds_deep = '{"train_batch_size": 8, "x": ' + "[" * DEEP + "]" * DEEP + "}\n"
    yaml_deep = "trainer:\n  devices: 8\nmodel:\n  x: " + "[" * DEEP + "]" * DEEP + "\n"
    yaml_block = "trainer:\n  devices: 8\nmodel:\n  x:\n    " + "- " * DEEP + "x\n"
    toml_deep = "[training]\ntensor_parallel_degree = 2\n[parallelism]\nx = " + "[" * DEEP + "]" * DEEP + "\n"
    toml_dotted = ("[training]\ntensor_parallel_degree = 2\n[parallelism]\n"
                   + ".".join(["a"] * 60_000) + " = 1\n")
    alias_bomb = "trainer:\n  devices: 8\nmodel:\n  a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"  a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]\n" for i in range(1, 10))
    blank_yaml = "trainer:\n" + "\n" * 2048 + " " * 10 + "x"
    py_deep = HEADER + "x = " + "(" * DEEP + "1" + ")" * DEEP + "\n"
    py_list_deep = HEADER + "x = " + "[" * DEEP + "]" * DEEP + "\n"
    sh_deep = "#!/bin/bash\ntorchrun " + "$(" * DEEP + "echo" + ")" * DEEP + " train.py\n"
    sh_long = "#!/bin/bash\ntorchrun --nproc_per_node 8 train.py " + " ".join(f"--a{i} {i}" for i in range(40_000)) + "\n"
    sh_rec = "#!/bin/bash\nf() { f; f; torchrun --nproc_per_node 8 train.py; }\nf\n"
    surrogate = '{"train_batch_size": 8, "train_micro_batch_size_per_gpu": "\\ud800", "zero_optimization": {"stage": "\\udfff"}}\n'
    return {
        "chain_and_8000.py": (_bool_chain(8000).encode(), "complex"),
        "chain_or_700.py": (_bool_chain(700, "or").encode(), "complex"),
        "deep_parens.py": (py_deep.encode(), "complex"),
        "deep_list.py": (py_list_deep.encode(), "complex"),
        "binary.py": (b"\x7fELF\x00\x01torch.distributed\x00" * 64, "binary"),
        "binary.yaml": (b"trainer:\n  devices: 8\nmodel:\n  x: 1\n\x00\x01\x02", "binary"),
        "bad_utf8.py": (HEADER.encode() + b"x = '\xff\xfe'\n", None),  # SYN001: a real decode error
        "deep.json": (ds_deep.encode(), "complex"),
        "deep_flow.yaml": (yaml_deep.encode(), "complex"),
        "deep_block.yaml": (yaml_block.encode(), "complex"),
        "deep.toml": (toml_deep.encode(), "complex"),
        "dotted.toml": (toml_dotted.encode(), "complex"),
        "alias_bomb.yaml": (alias_bomb.encode(), "complex"),
        "blank_lines.yaml": (blank_yaml.encode(), None),
        "deep_subst.sh": (sh_deep.encode(), "complex"),
        "deep_lines.sh": (("#!/bin/bash\ntorchrun " + "$(\n" * DEEP + "echo" + "\n)" * DEEP + " train.py\n"
                           + "(\n" * DEEP + "torchrun train.py\n" + ")\n" * DEEP).encode(), None),
        "long_line.sh": (sh_long.encode(), "complex"),
        "recursive.sh": (sh_rec.encode(), None),
        "surrogate.json": (surrogate.encode(), None),
        "empty_offload.json": (b'{"train_batch_size": 8, "zero_optimization": {"stage": 2, "offload_optimizer": {}}}\n', None),
    }


def build(folder: Path, big: bool = True, specials: bool = True) -> dict[str, str]:
    """Write the hostile inputs into ``folder`` (created); returns {relative path: reason} for the
    files that must be reported as not analysed."""
    folder.mkdir(parents=True, exist_ok=True)
    expect: dict[str, str] = {}
    (folder / "train.py").write_text(PLANTED)
    for name, (data, reason) in texts().items():
        (folder / name).write_bytes(data)
        if reason:
            expect[name] = reason
    # a .gitignore whose patterns are invalid or explosive, next to the files
    (folder / ".gitignore").write_text("[z-a]\n" + "**/" * 40 + "*.tmp\n" + "a*" * 30 + "b\n[\n\\\n")
    # symlink loops: a folder link to its parent, a file link to itself, a dangling link
    (folder / "loop").mkdir()
    os.symlink("..", folder / "loop" / "up")
    os.symlink("self.py", folder / "self.py")
    expect["self.py"] = "unreadable"
    os.symlink("missing/nothing.yaml", folder / "dangling.yaml")
    expect["dangling.yaml"] = "unreadable"
    # a link into a user's home that does not exist, and a launch line that names one
    os.symlink("~nosuchuser_parallint/train.py", folder / "tilde.py")
    expect["tilde.py"] = "unreadable"
    (folder / "tilde_launch.sh").write_text(
        "#!/bin/bash\nsource ~nosuchuser_parallint/env.sh\n"
        "torchrun --nproc_per_node 8 ~nosuchuser_parallint/train.py --deepspeed ~nosuchuser_parallint/ds.json\n")
    # a file name that is not valid UTF-8 (printed with a lone surrogate escape)
    os.symlink("train.py", os.path.join(os.fsencode(folder), b"caf\xe9_train.py"))
    # an unreadable folder (root can still read it: the run must not care either way)
    locked = folder / "locked"
    locked.mkdir()
    (locked / "inside.py").write_text(PLANTED)
    os.chmod(locked, 0)
    if specials:
        os.mkfifo(folder / "fifo.py")
        expect["fifo.py"] = "not a regular file"
        os.mkfifo(folder / "fifo.yaml")
        expect["fifo.yaml"] = "not a regular file"
        (folder / "sub").mkdir()
        os.mkfifo(folder / "sub" / ".gitignore")  # read by the walk, never opened for reading
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.bind(str(folder / "socket.sh"))
            expect["socket.sh"] = "not a regular file"
        except OSError:
            pass
        finally:
            sock.close()
        if os.path.exists("/dev/zero"):
            # a device file, through a link that leaves the repository: never opened
            os.symlink("/dev/zero", folder / "zero.py")
            expect["zero.py"] = "outside the repository (linked, not read)"
    if big:
        # a 50 MB training script (over any sane size cap)
        with open(folder / "huge.py", "wb") as fh:
            fh.write(HEADER.encode())
            line = b"x = 1  # padding padding padding padding padding padding padding\n"
            fh.write(line * (50 * 1024 * 1024 // len(line)))
        expect["huge.py"] = "large"
    return expect


def unlock(folder: Path) -> None:
    """Give the unreadable folder its permissions back (so it can be removed)."""
    locked = folder / "locked"
    if locked.exists():
        os.chmod(locked, stat.S_IRWXU)
