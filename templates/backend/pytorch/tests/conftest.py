import subprocess
import sys

import pytest
import torch

import torch_{{ p }}  # noqa: F401 - registers the device even with autoload off

DEVICE = "{{ device_type }}"


def run_python(code: str, **env: str) -> subprocess.CompletedProcess:
    """A fresh interpreter: switches are read once, when the library loads."""
    import os

    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, **env}, timeout=300)


@pytest.fixture
def device():
    torch.{{ device_type }}.reset_fallback_counts()
    return DEVICE
