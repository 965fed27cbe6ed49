"""devkit: scaffold, build and verify accelerator plugins for PaddlePaddle (a custom device) and
PyTorch (a PrivateUse1 backend): one device library, an adapter per framework."""

__version__ = "0.1.0"
# The distribution name on PyPI (the command and import name are `devkit`).
DISTRIBUTION = "accelerator-devkit"
