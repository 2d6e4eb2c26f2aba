"""Python reader speed: parallint's reader vs CPython's ``ast.parse`` over the same files.

    python benchmarks/bench_python_reader.py [FOLDER ...] [--repeat 1] [--limit N]

Takes the ``.py`` files of the folders that the classifier sends to the Python reader (the
pre-filter in parallint.discover.classify), then times, in the same process one after the other,
``ast.parse`` of every file (the baseline: what any Python tool pays) and ``read`` of every file
(LibCST parse, the walk, facts). Prints both, the ratio reader / ast.parse, and the phases of the
reader (ast check, LibCST parse, the rest). Without a folder it uses
/tmp/repos/NVIDIA+Megatron-LM when present, else this repository's own sources.
"""

from __future__ import annotations

import argparse
import ast
import os
import time
import warnings
from pathlib import Path


def python_files(folders: list[str]) -> list[tuple[Path, str]]:
    from parallint.discover.classify import classify

    out = []
    for folder in folders:
        for d, dirs, fs in os.walk(folder):
            dirs.sort()
            for name in sorted(fs):
                p = Path(d) / name
                if p.suffix != ".py":
                    continue
                try:
                    text = p.read_text("utf-8", errors="replace")
                except OSError:
                    continue
                if classify(str(p), text) == "python":
                    out.append((p, text))
    return out


def best_of(repeat: int, fn) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folders", nargs="*")
    ap.add_argument("--repeat", type=int, default=1, help="best of N runs of each measurement")
    ap.add_argument("--limit", type=int, default=0, help="only the first N files")
    args = ap.parse_args(argv)
    folders = args.folders
    if not folders:
        mega = Path("/tmp/repos/NVIDIA+Megatron-LM")
        folders = [str(mega)] if mega.is_dir() else [str(Path(__file__).resolve().parent.parent)]
    files = python_files(folders)
    if args.limit:
        files = files[: args.limit]
    if not files:
        print("no Python files pass the pre-filter")
        return 1
    size = sum(len(t) for _, t in files)
    print(f"{len(files)} files, {size / 1e6:.1f} MB, from {', '.join(folders)}")

    from parallint.readers import python as reader

    def parse_all() -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for p, text in files:
                try:
                    ast.parse(text, filename=str(p))
                except (SyntaxError, ValueError, RecursionError, MemoryError):
                    pass

    def read_all() -> None:
        for p, text in files:
            reader.read(str(p), p, text)

    def libcst_all() -> None:
        import libcst

        for _p, text in files:
            try:
                libcst.parse_module(text)
            except Exception:  # noqa: BLE001 - only timing
                pass

    read_all()  # warm-up: imports, class construction
    t_ast = best_of(args.repeat, parse_all)
    t_cst = best_of(args.repeat, libcst_all)
    t_read = best_of(args.repeat, read_all)
    print(f"ast.parse        {t_ast:8.2f} s")
    print(f"libcst parse     {t_cst:8.2f} s  ({t_cst / t_ast:.1f}x ast.parse)")
    print(f"reader           {t_read:8.2f} s  ({t_read / t_ast:.1f}x ast.parse; "
          f"{max(t_read - t_cst - t_ast, 0.0):.2f} s beyond both parses)")
    print(f"ratio reader / ast.parse = {t_read / t_ast:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
