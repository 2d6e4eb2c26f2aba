"""The fuzz targets: every reader parallint has, fed through the same path a real run takes.

A target returns normally or raises ``Crash``. What counts as a crash for a file reader: an
exception out of the engine, a rule's internal error, or a SYN002 finding saying a reader or
parser crashed or timed out (a file that is merely too large or too complex for the limits is a
correct answer). Every call is timed; ``stats`` keeps, per target, the number of inputs, the
slowest one and its time, and is written as JSON to ``$PARALLINT_FUZZ_STATS`` at exit (the long
campaign, ``benchmarks/fuzz_campaign.py``, reads it).
"""

from __future__ import annotations

import atexit
import json
import os
import tempfile
import time
from pathlib import Path

stats: dict[str, dict] = {}


class Crash(AssertionError):
    pass


def _record(target: str, took: float, data) -> None:
    s = stats.setdefault(target, {"inputs": 0, "seconds": 0.0, "slowest_s": 0.0, "slowest_input": ""})
    s["inputs"] += 1
    s["seconds"] += took
    if took > s["slowest_s"]:
        s["slowest_s"] = took
        text = data if isinstance(data, str) else repr(data)
        s["slowest_input"] = (text[:300] + f"... ({len(text)} chars)") if len(text) > 300 else text
    if s["inputs"] % 500 == 0:  # a campaign stopped by its time budget keeps its counts
        _dump()


_dumped: dict[str, dict] = {}


def _dump() -> None:
    """Add what was counted since the last dump to the JSON file (several processes share it)."""
    out = os.environ.get("PARALLINT_FUZZ_STATS")
    if out and stats:
        delta = {}
        for k, v in stats.items():
            d = _dumped.get(k, {"inputs": 0, "seconds": 0.0})
            delta[k] = dict(v, inputs=v["inputs"] - d["inputs"], seconds=v["seconds"] - d["seconds"])
            _dumped[k] = dict(v)
        _merge(out, delta)


def _merge(out: str, delta: dict) -> None:
    old: dict = {}
    if os.path.exists(out):
        try:
            old = json.loads(Path(out).read_text())
        except ValueError:
            old = {}
    for k, v in delta.items():
        o = old.get(k) or {"inputs": 0, "seconds": 0.0, "slowest_s": 0.0, "slowest_input": ""}
        slow = v if v["slowest_s"] >= o["slowest_s"] else o
        old[k] = {"inputs": o["inputs"] + v["inputs"], "seconds": o["seconds"] + v["seconds"],
                  "slowest_s": slow["slowest_s"], "slowest_input": slow["slowest_input"]}
    Path(out).write_text(json.dumps(old, indent=1))


atexit.register(_dump)


def timed(target: str):
    def deco(fn):
        def run(data, *args):
            t = time.perf_counter()
            try:
                return fn(data, *args)
            finally:
                _record(target, time.perf_counter() - t, data)
        run.__name__ = fn.__name__
        return run
    return deco


# ----------------------------------------------------------------------------- file readers
_TMP = Path(tempfile.mkdtemp(prefix="parallint-fuzz-"))
_RULES = None


def _rules():
    global _RULES
    if _RULES is None:
        from parallint.engine.registry import get_registry

        _RULES = list(get_registry().rules)
    return _RULES


def engine(kind: str, name: str, text: str) -> list:
    """Read ``text`` as a file of ``kind`` the way the runner does (guards, reader, every rule,
    the file's jobs); the findings, or Crash."""
    from parallint.discover.settings import Config
    from parallint.engine.runner import Runner

    runner = Runner(Config(None, _TMP, {"file-timeout": 60}), _TMP)
    ap = _TMP / name
    runner.stdin[ap] = text
    from parallint.util.guards import guard

    reason = guard(kind, name, text)
    if reason is not None:
        return []
    f = runner._parse(ap, name, text, kind)
    if f is None:
        return []
    runner.cache[ap] = f
    try:
        result = runner.check([], _rules(), files=[f])
    except Exception as exc:  # noqa: BLE001
        raise Crash(f"engine raised {type(exc).__name__}: {exc}") from exc
    if result.errors:
        raise Crash("; ".join(result.errors))
    for d in result.diagnostics:
        if d.code == "SYN002" and any(w in d.message for w in ("crashed", "timed out")):
            raise Crash(d.message)
    return result.diagnostics


def classify_and_read(name: str, text: str) -> None:
    """The classifier and sniffers first (they see every file of a repository)."""
    from parallint.discover.classify import classify

    kind = classify(name, text)
    if kind is not None:
        engine(kind, name, text)


# ----------------------------------------------------------------------------- launch lines
def command_line(words: list) -> None:
    from parallint.readers.cmdline import Context, Word, parse_command

    ws = []
    for w in words:
        if w is None:
            ws.append(Word.unknown("environment variable X"))
        elif w == "$@":
            ws.append(Word.unknown("arguments", splat=True))
        else:
            ws.append(Word.lit(w))
    try:
        launch = parse_command(ws, Context())
        if launch is not None:
            launch.facts.keys() if hasattr(launch.facts, "keys") else None
    except Exception as exc:  # noqa: BLE001
        raise Crash(f"parse_command raised {type(exc).__name__}: {exc}") from exc


def megatron(words: list) -> None:
    from parallint.model.facts import Value
    from parallint.readers.megatron_args import args_facts

    vals = [Value.unknown("environment variable") if w is None else Value(w) for w in words]
    try:
        args_facts(vals)
        args_facts(vals, require_marker=False)
    except Exception as exc:  # noqa: BLE001
        raise Crash(f"args_facts raised {type(exc).__name__}: {exc}") from exc


# ----------------------------------------------------------------------------- [tool.parallint]
def tool_config(text: str, name: str = "parallint.toml") -> None:
    from parallint.discover.settings import ConfigError, load_config

    d = Path(tempfile.mkdtemp(dir=_TMP))
    p = d / name
    p.write_text(text, encoding="utf-8", errors="surrogatepass")
    try:
        cfg = load_config(str(p))
        from parallint.util.limits import file_timeout, max_file_size

        max_file_size(cfg.settings)
        file_timeout(cfg.settings)
        cfg.fail_level
        cfg.exclude
        cfg.per_file_ignores("a/b.py", d / "a" / "b.py")
    except ConfigError:
        pass
    except Exception as exc:  # noqa: BLE001
        raise Crash(f"load_config raised {type(exc).__name__}: {exc}") from exc
    finally:
        p.unlink(missing_ok=True)
        d.rmdir()


# ----------------------------------------------------------------------------- estimate / plan
def numbers(spec: dict, gpus: int, overrides: dict) -> None:
    from parallint.cli.estimate import apply_overrides, check_spec
    from parallint.estimator.memory import estimate
    from parallint.estimator.params import ShapeError
    from parallint.engine.layouts import plan

    try:
        s = apply_overrides(spec, overrides)
        if check_spec(s) is not None:
            return
        try:
            estimate(s)
        except (ShapeError, ValueError):
            pass
        if check_spec(spec) is None:
            try:
                plan(spec, gpus, "H100-80GB")
            except (ShapeError, ValueError):
                pass
    except Exception as exc:  # noqa: BLE001
        raise Crash(f"estimate/plan raised {type(exc).__name__}: {exc}") from exc
