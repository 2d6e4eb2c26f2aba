"""parallint: a static linter and pre-launch checker for distributed PyTorch training."""

__version__ = "0.1.0"
