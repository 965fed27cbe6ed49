"""devkit: scaffold, build and verify PaddlePaddle custom-device plugins."""

__version__ = "0.1.0"
