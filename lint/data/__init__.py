"""Package data: the GPU catalogue, model presets, Megatron argument tables.

:func:`read_text` reads a file of one of parallint's data packages the way ``pkgutil.get_data``
does (through the package's loader, so a zipped install works too) without importing
importlib.resources, whose import (with zipfile) is a measurable part of a one-file run.
"""

from __future__ import annotations


def read_text(package: str, name: str) -> str:
    """The UTF-8 text of ``name`` in ``package`` (e.g. ``"parallint.schemas"``)."""
    import importlib
    import os

    mod = importlib.import_module(package)
    loader = getattr(mod.__spec__, "loader", None)
    path = os.path.join(os.path.dirname(mod.__file__ or ""), name)
    if loader is not None and hasattr(loader, "get_data"):
        data: bytes = loader.get_data(path)
        return data.decode("utf-8")
    from importlib.resources import files  # pragma: no cover - an unusual loader

    return files(package).joinpath(name).read_text("utf-8")
