"""Configuration: ``[tool.parallint]`` in the nearest ``pyproject.toml`` or a ``parallint.toml``
(``--config`` names one explicitly), validated against ``schemas/config.schema.json``."""

from __future__ import annotations

import fnmatch
import os
from pathlib import Path

from parallint.model.diagnostics import Severity
from parallint.util.record import EqRecord

TYPE_CHECKING = False  # typing is not imported at run time (start-up, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Any


class ConfigError(Exception):
    """A configuration problem; the CLI prints it on one line and exits 2."""


class Config(EqRecord):
    _fields = ("path", "base", "settings")
    path: Path | None  # the file it came from (None: defaults)
    base: Path  # folder globs are relative to
    settings: dict[str, Any]

    def __init__(
        self,
        path: Path | None = None,
        base: Path | None = None,
        settings: dict[str, Any] | None = None,
    ) -> None:
        self.path = path
        self.base = Path.cwd() if base is None else base
        self.settings = {} if settings is None else settings

    def get(self, key: str, default: Any = None) -> Any:
        return self.settings.get(key, default)

    @property
    def fail_level(self) -> Severity:
        return Severity.parse(self.settings.get("fail-level", "warning"))

    @property
    def exclude(self) -> list[str]:
        return list(self.settings.get("exclude", [])) + list(self.settings.get("extend-exclude", []))

    def per_file_ignores(self, display_path: str, abspath: Path) -> list[str]:
        try:
            rel = abspath.relative_to(self.base).as_posix()
        except ValueError:
            rel = display_path
        out: list[str] = []
        for glob, sels in self.settings.get("per-file-ignores", {}).items():
            g = glob[2:] if glob.startswith("./") else glob
            if fnmatch.fnmatch(rel, g) or fnmatch.fnmatch(Path(rel).name, g) or fnmatch.fnmatch(rel, g.rstrip("/") + "/*"):
                out.extend(sels)
        return out


def _load_schema() -> dict:
    import json
    from parallint.data import read_text

    return json.loads(read_text("parallint.schemas", "config.schema.json"))


def _key_line(text: str, key: str) -> int | None:
    """The line of ``key = ...`` in a configuration's text (in its ``[tool.parallint]`` table when
    it has one), or None."""
    import re

    head = re.search(r"^\s*\[\s*tool\s*\.\s*parallint\s*\]", text, re.M)
    start = head.end() if head else 0
    m = re.compile(rf"^[ \t]*([\"']?){re.escape(key)}\1[ \t]*=", re.M).search(text, start)
    return text.count("\n", 0, m.start()) + 1 if m else None


def validate(settings: dict, source: str, text: str = "") -> None:
    """Raise ConfigError naming the file, the line and the key of everything the schema rejects
    (every problem, one line each: a typo is not found one run at a time)."""
    schema = _load_schema()
    known = list(schema["properties"])
    problems: list[str] = []

    def at(key: str) -> str:
        line = _key_line(text, key) if text else None
        return f"{source}:{line}" if line else source

    for key in settings:
        if key not in schema["properties"]:
            import difflib

            close = difflib.get_close_matches(key, known, n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            problems.append(f"{at(key)}: unknown key '{key}' in [tool.parallint]{hint}")
    if problems:
        raise ConfigError("\n".join(problems))
    from parallint.model.schemacheck import settles

    if settles(schema, settings):  # valid: jsonschema is not even imported
        return
    import jsonschema

    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(settings), key=lambda e: list(e.absolute_path))
    for e in errors:
        where = ".".join(str(p) for p in e.absolute_path) or "[tool.parallint]"
        top = str(e.absolute_path[0]) if e.absolute_path else ""
        problems.append(f"{at(top) if top else source}: invalid value for '{where}': {e.message}")
    if problems:
        raise ConfigError("\n".join(problems))


MAX_CONFIG_BYTES = 1_000_000


def _read_toml(path: Path, with_text: bool = False) -> Any:
    """The TOML at ``path``; every failure (unreadable, not a regular file, invalid UTF-8, too
    large or too deeply nested, invalid TOML) is a one-line ConfigError, never a traceback."""
    from parallint.util.guards import config_guard

    try:
        if not path.is_file():
            raise ConfigError(f"{path}: cannot read configuration: not a regular file")
        with open(path, "rb") as fh:
            raw = fh.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read configuration: {exc.strerror or exc}") from None
    if len(raw) > MAX_CONFIG_BYTES:
        raise ConfigError(f"{path}: configuration file larger than {MAX_CONFIG_BYTES} bytes")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ConfigError(f"{path}: invalid UTF-8 at byte {exc.start} (line {line})") from None
    reason = config_guard("toml", text)
    if reason:
        raise ConfigError(f"{path}: cannot read configuration: {reason}")
    import sys  # tomllib only when a configuration file is there to read

    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    try:
        data = tomllib.loads(text)
        return (data, text) if with_text else data
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    except (RecursionError, MemoryError, ValueError) as exc:
        raise ConfigError(f"{path}: cannot read configuration: {type(exc).__name__}: {exc}") from None


def _settings_from(path: Path, data: dict) -> dict | None:
    if path.name == "parallint.toml":
        tool = data.get("tool", {}).get("parallint") if isinstance(data.get("tool"), dict) else None
        return tool if isinstance(tool, dict) else {k: v for k, v in data.items() if k != "tool"}
    tool = data.get("tool")
    if isinstance(tool, dict) and isinstance(tool.get("parallint"), dict):
        return tool["parallint"]
    return None


def find_config(start: Path) -> Path | None:
    """The nearest parallint.toml, or pyproject.toml with [tool.parallint], at or above ``start``."""
    for d in (start, *start.parents):
        cand = d / "parallint.toml"
        try:
            if cand.is_file():
                return cand
        except OSError:
            pass
        cand = d / "pyproject.toml"
        try:
            is_file = cand.is_file()
        except OSError:
            is_file = False
        if is_file:
            try:
                with open(cand, "rb") as fh:
                    text = fh.read(MAX_CONFIG_BYTES + 1).decode("utf-8", errors="replace")
            except OSError:
                continue
            if "[tool.parallint" in text:
                return cand
        try:
            if (d / ".git").exists():
                break
        except OSError:
            break
    return None


def load_config(explicit: str | None = None, start: Path | None = None, found: bool = False) -> Config:
    """The configuration ``explicit`` names (``--config``), or, with ``found``, the one a search
    found in the checked tree (whose ``extend`` stays inside its repository), else the nearest
    to ``start``."""
    start = start or Path.cwd()
    if explicit:
        path = Path(explicit)
        if not path.is_file():
            raise ConfigError(f"{explicit}: configuration file not found")
    else:
        path = find_config(start)
        if path is None:
            return Config(None, start, {})
    settings = _load_settings(path, bool(explicit), (), named=bool(explicit) and not found)
    if settings is None:
        return Config(None, start, {})
    return Config(path.resolve(), path.resolve().parent, settings)


MAX_EXTEND_DEPTH = 10


def _load_settings(path: Path, explicit: bool, chain: tuple[Path, ...], named: bool | None = None) -> dict | None:
    """The validated settings of ``path``, with what it ``extend``s merged underneath. A
    configuration found in the checked tree (not ``named`` with ``--config``) may extend only
    files inside its repository (parallint.util.boundary): one outside is not read."""
    if named is None:
        named = explicit
    data, text = _read_toml(path, with_text=True)
    settings = _settings_from(path, data)
    if settings is None:
        if explicit or chain:
            raise ConfigError(f"{path}: no [tool.parallint] table")
        return None
    try:
        validate(settings, str(path), text)
    except RecursionError:
        raise ConfigError(f"{path}: [tool.parallint] nested too deeply") from None
    if "extend" not in settings:
        return settings
    here = path.resolve()
    target = Path(settings["extend"]).expanduser()
    target = Path(os.path.abspath(here.parent / target))
    if target in chain or target == here:
        raise ConfigError(f"{path}: 'extend' makes a cycle through {target}")
    if len(chain) >= MAX_EXTEND_DEPTH:
        raise ConfigError(f"{path}: 'extend' chains more than {MAX_EXTEND_DEPTH} configurations")
    if not named:
        from parallint.util.boundary import Boundary

        inside = Boundary()
        inside.add(chain[0] if chain else here)
        if not inside.holds(target):
            raise ConfigError(f"{path}: 'extend' names a file outside the repository, which is not read "
                              "(name it with --config to use it)")
    if not target.is_file():
        raise ConfigError(f"{path}: 'extend' names {settings['extend']}, which is not a file")
    base = _load_settings(target, True, chain + (here,), named) or {}
    return merge_extended(base, target.parent, settings, here.parent)


def merge_extended(base: dict, base_dir: Path, child: dict, child_dir: Path) -> dict:
    """Ruff's ``extend``: the child's settings replace the base's; ``extend-select``,
    ``extend-exclude`` and ``links`` add up; ``per-file-ignores`` merge by pattern (the child's
    win). The base's paths are rebased onto the child's folder: a link's files exactly, a glob
    when it starts with the child's folder (other globs match by file name as before)."""
    try:
        prefix = child_dir.relative_to(base_dir).as_posix() + "/"
    except ValueError:
        prefix = None
    prefix = None if prefix == "./" else prefix

    def glob(g: str) -> str:
        g2 = g[2:] if g.startswith("./") else g
        return g2[len(prefix):] if prefix and g2.startswith(prefix) else g

    def path(p: str) -> str:
        return Path(os.path.relpath(base_dir / p, child_dir)).as_posix()

    merged = {k: v for k, v in base.items() if k != "extend"}
    for key in ("exclude", "extend-exclude"):
        if key in merged:
            merged[key] = [glob(g) for g in merged[key]]
    if "per-file-ignores" in merged:
        merged["per-file-ignores"] = {glob(g): v for g, v in merged["per-file-ignores"].items()}
    if "links" in merged:
        merged["links"] = [{**ln, **({"launch": path(ln["launch"])} if "launch" in ln else {}),
                            "files": [path(f) for f in ln.get("files", [])]} for ln in merged["links"]]
    for key, value in child.items():
        if key == "extend":
            continue
        if key in ("extend-select", "extend-exclude", "links"):
            merged[key] = list(merged.get(key, [])) + list(value)
        elif key == "per-file-ignores":
            merged[key] = {**merged.get(key, {}), **value}
        else:
            merged[key] = value
    return merged


def configs_for(paths: list[str], stdin_name: str | None = None, explicit: str | None = None,
                cwd: Path | None = None) -> list[tuple[Config, list[str], bool]]:
    """Settings per file, as Ruff finds them: each path gets the nearest configuration up from it
    (a file's folder, or the folder itself), not the working directory's. Returns (config, the
    paths it governs, whether the standard-input file is among them), in the order first met.
    ``explicit`` (``--config``) governs every path."""
    cwd = cwd or Path.cwd()
    if explicit:
        return [(load_config(explicit, cwd), list(paths), stdin_name is not None)]
    groups: dict[Path | None, tuple[Config, list[str], list[bool]]] = {}
    items = [(p, False) for p in paths] + ([(stdin_name, True)] if stdin_name is not None else [])
    for p, is_stdin in items:
        ap = Path(p) if Path(p).is_absolute() else cwd / p
        start = ap if (not is_stdin and ap.is_dir()) else ap.parent
        while not start.exists() and start != start.parent:
            start = start.parent
        found = find_config(start.resolve()) if start.exists() else None
        if found is None:
            found = find_config(cwd)  # nothing above the path: the working directory's, as before
        key = found.resolve() if found else None
        if key not in groups:
            groups[key] = (load_config(str(found), cwd, found=True) if found else Config(None, cwd, {}), [], [False])
        if is_stdin:
            groups[key][2][0] = True
        else:
            groups[key][1].append(p)
    return [(c, ps, s[0]) for c, ps, s in groups.values()]
