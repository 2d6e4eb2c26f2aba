"""The commands: the entry point and its fast path (``main``), the typer app for everything else
(``app``), ``check`` (``check``), ``estimate`` and ``plan`` (``estimate``, ``estimate_ux``) and the
language server (``server``)."""
