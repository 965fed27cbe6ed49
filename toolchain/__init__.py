"""devkit: scaffold, build and verify PaddlePaddle custom-device plugins."""

__version__ = "0.1.0"
# The distribution name on PyPI (the command and import name are `devkit`).
DISTRIBUTION = "accelerator-devkit"
