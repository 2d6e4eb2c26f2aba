"""The model layer: what parallint knows about a training job, independent of any file format.

* :mod:`parallint.model.vocab` — the one declared vocabulary of facts (name, type, unit, meaning,
  allowed values, the readers that produce it). ``parallint.facts.FACT_KEYS``, the estimator's
  spec fields and ``schemas/job.schema.json`` are derived from it or checked against it.
* :mod:`parallint.model.world` — world size / processes of a job or a launch, computed once.

This layer imports nothing of parallint but :mod:`parallint.diagnostics` and :mod:`parallint.facts`
(checked by ``tests/test_layering.py``); it is type-checked strictly.
"""
