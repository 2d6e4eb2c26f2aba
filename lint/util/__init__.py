"""Utilities that import nothing else of parallint: the bases of the value classes (``record``),
cheap input guards run before any parser (``guards``), reads of regular files that never block
(``safeio``), run limits (``limits``) and the recorder of what a run read (``deps``)."""
