"""The keys a Hydra entry script sets in its config after loading it.

NeMo's examples start from ``@hydra_runner(config_path="conf", config_name="x")`` (or Hydra's own
``@hydra.main``), and some then overwrite what the config says before anything reads it::

    @hydra_runner(config_path="conf", config_name="baseline")
    def main(cfg) -> None:
        cfg.model.global_batch_size = cfg.trainer.devices * cfg.trainer.num_nodes * cfg.model.micro_batch_size

The file's ``model.global_batch_size`` then never runs as written: a rule must not report it. This
module finds, for a config file, the entry scripts next to it (in its folder and the folder above,
where Hydra's ``config_path`` is relative to the script) whose decorator names it, and the dotted
keys their decorated function assigns through its config parameter (``cfg.a.b = ...``,
``cfg.a["b"] = ...``, augmented and annotated assignments too). As the config is read, the runner
turns the facts read from those keys unknown (:func:`parallint.link.jobs.hydra_assignments`). Only
folders inside the repository are looked at; the scripts are read as text (at most
:data:`MAX_BYTES`, regular files only) and parsed with ``ast`` only when their text mentions
``config_name`` and ``hydra``; nothing is imported or run.
"""

from __future__ import annotations

import os
from pathlib import Path

TYPE_CHECKING = False  # typing is not imported at run time (start-up, docs/architecture.md)
if TYPE_CHECKING:
    import ast

MAX_BYTES = 1_000_000  # an entry script is small; a larger .py next to a config is not one

#: per folder: its entry scripts, as (script, [(config_path, config_name, [(key, line)])])
_SCRIPTS: dict[Path, list[tuple[Path, list[tuple[str, str, list[tuple[str, int]]]]]]] = {}


def reset() -> None:
    """Forget what earlier runs found (the runner calls it at the start of a run)."""
    _SCRIPTS.clear()


def assigned_keys(config: Path, display_root: Path | None = None,
                  boundary: Path | None = None) -> dict[str, tuple[str, int]]:
    """``{dotted key: (script path, line)}`` for the keys of ``config`` that an entry script sets
    after Hydra loads it. Script paths are shown relative to ``display_root``; no folder above
    ``boundary`` (the repository's top, when it has one) is looked at."""
    stem = config.name.rsplit(".", 1)[0]
    out: dict[str, tuple[str, int]] = {}
    for folder in dict.fromkeys((config.parent, config.parent.parent)):
        if boundary is not None and folder != boundary and boundary not in folder.parents:
            continue  # outside the repository
        for script, entries in _scripts(folder):
            for cpath, cname, keys in entries:
                if cname not in (stem, config.name) or not keys:
                    continue
                try:
                    same = os.path.realpath(script.parent / cpath) == os.path.realpath(config.parent)
                except (OSError, ValueError):
                    same = False
                if same:
                    shown = _shown(script, display_root)
                    for dotted, line in keys:
                        out.setdefault(dotted, (shown, line))
    return out


def _scripts(folder: Path) -> list[tuple[Path, list[tuple[str, str, list[tuple[str, int]]]]]]:
    """The Hydra entry scripts directly in ``folder``, each read and parsed once per run."""
    if folder in _SCRIPTS:
        return _SCRIPTS[folder]
    from parallint.util.safeio import read_text_regular

    found: list[tuple[Path, list[tuple[str, str, list[tuple[str, int]]]]]] = []
    try:
        names = sorted(e.name for e in os.scandir(folder) if e.name.endswith(".py"))
    except OSError:
        names = []
    for name in names:
        script = folder / name
        try:
            text = read_text_regular(script, MAX_BYTES)
        except (OSError, ValueError):
            continue
        if "config_name" in text and ("hydra" in text):
            entries = _entries(text)
            if entries:
                found.append((script, entries))
    _SCRIPTS[folder] = found
    return found


def _shown(script: Path, root: Path | None) -> str:
    if root is not None:
        try:
            return os.path.relpath(script, root).replace(os.sep, "/")
        except ValueError:
            pass
    return str(script)


def _entries(text: str) -> list[tuple[str, str, list[tuple[str, int]]]]:
    """``(config_path, config_name, [(key set, line)])`` for each function of ``text`` that a Hydra
    decorator with literal ``config_path`` and ``config_name`` starts."""
    from parallint.util.guards import python_guard

    if python_guard(text):
        return []
    import ast
    import warnings

    try:
        with warnings.catch_warnings():  # an invalid escape in the user's script: not ours to print
            warnings.simplefilter("ignore")
            tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    from parallint.readers.pycli import dotted_under as _dotted_under, hydra_names as _hydra_names

    out: list[tuple[str, str, list[tuple[str, int]]]] = []
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or not node.args.args:
            continue
        named = [n for n in map(_hydra_names, node.decorator_list) if n is not None]
        if not named:
            continue
        param = node.args.args[0].arg
        keys: list[tuple[str, int]] = []
        for sub in ast.walk(node):
            targets: list[ast.expr] = []
            if isinstance(sub, ast.Assign):
                targets = list(sub.targets)
            elif isinstance(sub, (ast.AugAssign, ast.AnnAssign)):
                targets = [sub.target]
            for t in targets:
                for el in (t.elts if isinstance(t, (ast.Tuple, ast.List)) else [t]):
                    dotted = _dotted_under(el, param)
                    if dotted:
                        keys.append((dotted, el.lineno))
        out.extend((cpath, cname, keys) for cpath, cname in named)
    return out
