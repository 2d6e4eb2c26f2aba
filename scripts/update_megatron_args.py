#!/usr/bin/env python3
"""Regenerate parallint's bundled Megatron argument table from a Megatron checkout.

    python scripts/update_megatron_args.py /path/to/Megatron-LM
    python scripts/update_megatron_args.py /path/to/Megatron-DeepSpeed

Reads ``megatron/training/arguments.py`` (Megatron-LM) or ``megatron/arguments.py``
(Megatron-DeepSpeed) and the config dataclasses it generates flags from, with ``ast`` only: nothing
of the checkout is imported or run. Writes ``lint/data/<framework>.args.json`` with the flag names,
the extra flags of the checkout's entry scripts, the flags its validation rejects
(``no longer valid, use ...``), the checkout's commit, and keeps the hand-written
``renamed`` map (removed or renamed flags and their replacements) of the existing table.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(HERE))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("checkout", type=Path, help="a Megatron-LM or Megatron-DeepSpeed checkout")
    ap.add_argument("--framework", choices=("megatron-lm", "megatron-deepspeed"),
                    help="the table to write (default: detected from the checkout)")
    ap.add_argument("--source", help="how to name the checkout in the table (default: folder@commit)")
    ap.add_argument("--out", type=Path, default=HERE / "lint" / "data", help="folder of the tables")
    args = ap.parse_args(argv)

    from parallint.link import megatron_table

    table = megatron_table.extract(args.checkout.resolve())
    if table is None:
        print(f"{args.checkout}: no readable megatron arguments module", file=sys.stderr)
        return 2
    framework = args.framework or table["framework"]
    out = args.out / f"{framework}.args.json"
    renamed = {}
    if out.is_file():
        renamed = json.loads(out.read_text()).get("renamed", {})
    try:
        commit = subprocess.run(["git", "-C", str(args.checkout), "rev-parse", "HEAD"], capture_output=True,
                                text=True, check=False).stdout.strip()
    except OSError:
        commit = ""
    data = {
        "framework": framework,
        "source": args.source or (f"{args.checkout.name}@{commit}" if commit else args.checkout.name),
        "flags": table["flags"],
        "scripts": table["scripts"],
        "rejected": table["rejected"],
        "renamed": renamed,
    }
    out.write_text(json.dumps(data, indent=1, sort_keys=False) + "\n")
    print(f"{out}: {len(data['flags'])} flags, {len(data['scripts'])} entry scripts")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
