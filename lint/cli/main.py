"""The command line's entry: ``parallint`` (``parallint.cli.main:main``) and ``python -m parallint``.

Start-up matters: pre-commit runs ``parallint check FILE...`` on every commit, and importing typer
(with click) is a large part of a one-file run. So ``check`` with the options it documents,
``preflight`` (it runs in front of every launch: :mod:`parallint.cli.preflight`), ``server`` (an
editor starts it and waits for its answer to ``initialize``) and
``parallint --version``, are parsed here without typer; everything else, and anything this parser
does not recognise (``--help``, an unknown option, a value that looks like an option, a usage
error), goes to the typer app in :mod:`parallint.cli.app`, which defines the interface: its
commands, options and help. ``check`` itself is :mod:`parallint.cli.check`; ``tests/test_startup.py``
keeps the two option tables equal. The engine, readers, LibCST and jsonschema load when a command needs them.
"""

from __future__ import annotations

import sys
from parallint.cli.check import EXIT_ERROR, EXIT_OK, echo, parse_check, run_check, tolerant_streams

TYPE_CHECKING = False  # typing itself is not imported: `parallint --version` needs none of it
if TYPE_CHECKING:  # pragma: no cover
    from typing import Any, List, Optional


def _fast(argv: List[str]) -> Optional[int]:
    """The exit status of a command run without typer, or None when typer must run it."""
    if argv == ["--version"]:
        from parallint import __version__

        echo(f"parallint {__version__}")
        return EXIT_OK
    if argv[:1] == ["check"]:
        kw = parse_check(argv[1:])
        if kw is not None:
            return run_check(**kw)
    if argv in (["server"], ["server", "--stdio"]):  # editors start it: no typer
        from parallint.cli.server import main as serve

        serve()
    if argv[:1] == ["preflight"]:
        from parallint.cli.preflight import parse_preflight, run_preflight

        kw = parse_preflight(argv[1:])
        if kw is not None:
            return run_preflight(**kw)
    return None


EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report it: never 1, which means findings


class Interrupted(BaseException):
    """Ctrl-C, raised by our own handler so that click's ``Aborted!`` (exit 1) never sees it."""


def _on_sigint(signum: int, frame: Any) -> None:
    raise Interrupted


def main() -> None:
    try:  # _signal: already loaded by the interpreter (``signal`` itself would cost start-up)
        import _signal

        _signal.signal(_signal.SIGINT, _on_sigint)
    except (ImportError, ValueError, OSError):  # pragma: no cover - not the main thread
        pass
    try:
        _main()
    except (Interrupted, KeyboardInterrupt):
        echo("", err=True)
        echo("Aborted!", err=True)
        sys.exit(EXIT_INTERRUPTED)


def _main() -> None:
    import os

    tolerant_streams()
    argv = sys.argv[1:]
    try:
        code = _fast(argv)
    except BrokenPipeError:  # pragma: no cover - as click does: quiet, exit 1
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - the process is ending
        sys.exit(1)
    except Exception as exc:  # never a traceback, never exit 1
        if os.environ.get("PARALLINT_DEBUG"):
            raise
        echo(f"parallint: error: internal error: {type(exc).__name__}: {exc} "
             "(set PARALLINT_DEBUG=1 for a traceback)", err=True)
        sys.exit(EXIT_ERROR)
    if code is not None:
        import gc

        # what the run built stays until the process ends: the collector's passes at interpreter
        # exit need not walk it (they cost more than reading a config file)
        gc.freeze()
        sys.exit(code)
    from parallint.cli.app import main as typer_main

    typer_main()


def __getattr__(name: str) -> Any:
    """``parallint.cli.main.app`` and the other typer objects, loaded on first use."""
    if name.startswith("__"):
        raise AttributeError(name)
    from parallint.cli import app as cli_typer

    try:
        return getattr(cli_typer, name)
    except AttributeError:
        raise AttributeError(f"module 'parallint.cli.main' has no attribute {name!r}") from None


if __name__ == "__main__":  # pragma: no cover
    main()
