"""MEM: memory feasibility, from parallint's estimator (``parallint estimate`` shows the numbers).

One rule a file (``memNNN_<name>.py``); the helpers its rules share are in ``_common``.
"""
