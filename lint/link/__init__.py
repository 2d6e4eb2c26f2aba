"""Joining files into jobs: the linker (``jobs``), the launch facts a Python script states
(``pylaunch``), HF Trainer flags on a launch line (``hfargs``), the Hydra entry script of a config
(``hydrascripts``) and the flags a launched Megatron script accepts (``megatron_table``)."""
