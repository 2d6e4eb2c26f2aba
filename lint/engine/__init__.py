"""The engine: the run (``runner``, ``workers``), the rules in force (``registry``, ``plugins``),
suppressions (``suppress``), the caches (``cache``), a one-file check inside a repository
(``index``), the rule examples run through the engine (``examples``) and ``plan``'s filter, the
real layout rules run on candidate layouts (``layouts``)."""
