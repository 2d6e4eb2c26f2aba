"""parallint: a static linter and pre-launch checker for distributed PyTorch training.

The public names that plugins use have one stable import path, the package itself
(docs/plugins.md)::

    from parallint import Rule, Example, Context, Diagnostic, Related, Severity, Span
    from parallint import FileFacts, Value, Job, Launch, script_of, job_scripts

They are loaded on first use (PEP 562), so ``import parallint`` costs nothing.
"""

__version__ = "0.1.0"

#: public name -> the module that defines it
_PUBLIC = {
    "Rule": "parallint.model.rule",
    "Example": "parallint.model.rule",
    "Context": "parallint.model.rule",
    "Diagnostic": "parallint.model.diagnostics",
    "Related": "parallint.model.diagnostics",
    "Severity": "parallint.model.diagnostics",
    "Span": "parallint.model.diagnostics",
    "FileFacts": "parallint.model.facts",
    "Value": "parallint.model.facts",
    "Job": "parallint.model.job",
    "Launch": "parallint.model.launch",
    "Script": "parallint.model.script",
    "script_of": "parallint.model.script",
    "job_scripts": "parallint.model.script",
}

__all__ = ["__version__", *sorted(_PUBLIC)]


def __getattr__(name: str):  # type: ignore[no-untyped-def]
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'parallint' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
