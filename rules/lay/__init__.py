"""LAY — parallel layout: degrees that do not fit the world size or the model shape, and device
meshes whose shape does not multiply to the world size (LAY007).

The config rules work on facts (:mod:`parallint.model.factrule`): the same check runs on one config
file (``check_file``) and on a linked job (``check_job``: a Megatron command line + its configs),
and stays silent unless every number it needs is known.

One rule a file (``layNNN_<name>.py``); the helpers its rules share are in ``_common``.
"""
