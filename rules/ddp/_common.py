"""What the DDP rules share."""

from __future__ import annotations


_PY = frozenset({"python"})

#: Horovod's optimizer wrappers, in each front end
HVD_WRAPPERS = frozenset(f"horovod.{fe}.DistributedOptimizer"
                         for fe in ("torch", "tensorflow", "keras", "tensorflow.keras"))
HVD_SIZE = frozenset(f"horovod.{fe}.size" for fe in ("torch", "tensorflow", "keras", "tensorflow.keras", "mxnet"))


def within(node, outer) -> bool:
    """``node`` lies inside ``outer`` (by position)."""
    a = (outer.lineno, outer.col_offset)
    b = (outer.end_lineno or outer.lineno, outer.end_col_offset or 0)
    return a <= (node.lineno, node.col_offset) <= b
