"""The model layer: what parallint knows about a training job, independent of any file format.

* :mod:`parallint.model.vocab` — the one declared vocabulary of facts (name, type, unit, meaning,
  allowed values, the readers that produce it). ``parallint.model.facts.FACT_KEYS``, the estimator's
  spec fields and ``schemas/job.schema.json`` are derived from it or checked against it.
* :mod:`parallint.model.world` — world size / processes of a job or a launch, and the
  data-parallel size, computed once.
* :mod:`parallint.model.launches` — which launch layer stated a value and which one decides.
* :mod:`parallint.model.scalars` — which raw config scalars cannot be known values.
* :mod:`parallint.model.origin` — structured provenance of a value.
* :mod:`parallint.model.calls` — the calls rules declare, and what the engine derives from them.
* :mod:`parallint.model.script` — the script event API: what a Python script does, as the rules
  see it (built by :mod:`parallint.readers.python`; values from :mod:`parallint.model.pyeval`).

This layer imports nothing of parallint but :mod:`parallint.model.diagnostics` and :mod:`parallint.model.facts`
(checked by ``tests/test_layering.py``); it is type-checked strictly, except the script API and its
evaluator (moved from the reader with loose types: a shrinking ignore list in ``pyproject.toml``).
"""
