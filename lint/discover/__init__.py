"""Finding the files: the walk with its ignore rules (``walk``), the classification of each file
by suffix and content (``classify``, ``sniff``) and the settings that apply to it (``settings``:
``[tool.parallint]``)."""
