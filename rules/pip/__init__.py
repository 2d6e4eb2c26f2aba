"""PIP — pipeline partitions: hand-written partitions with gaps, overlaps, a count that does not
match the stages, or an imbalance (PIP001–PIP003), and too few microbatches for the pipeline
(PIP004).

The config forms of PIP001/PIP002 share the script rules' check (``_common.partition_problems``):
the torchtitan readers publish ``module_fqns_per_model_part`` as ``FileFacts.data.partitions``, a
list of :class:`parallint.readers.cfgutil.Partition`.

One rule a file (``pipNNN_<name>.py``); the helpers its rules share are in ``_common``.
"""
