import os
import subprocess
import sys
import tempfile

import pytest
import torch

import torch_{{ p }}  # noqa: F401 - registers the device even with autoload off

DEVICE = "{{ device_type }}"
# Inductor's caches in a directory of our own: its default, /tmp/torchinductor_<user>, is a name
# another local user can take first (set before anything compiles)
os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", tempfile.mkdtemp(prefix="inductor-"))


def run_python(code: str, **env: str) -> subprocess.CompletedProcess:
    """A fresh interpreter: switches are read once, when the library loads."""
    import os

    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, **env}, timeout=300)


@pytest.fixture
def device():
    torch.{{ device_type }}.reset_fallback_counts()
    return DEVICE
