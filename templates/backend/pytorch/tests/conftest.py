import atexit
import os
import shutil
import subprocess
import sys
import tempfile

import pytest

# One Inductor cache for the session, shared by the tests and the interpreters they start (what
# they compile once, such as Inductor's probes of the CPU's vector instructions, they compile
# once), and none of the user's: set before torch and the adapter (which would pick the user's
# own directory) are imported. Tests about a cold cache use one of their own.
if not os.environ.get("TORCHINDUCTOR_CACHE_DIR"):
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="inductor-")
    atexit.register(shutil.rmtree, os.environ["TORCHINDUCTOR_CACHE_DIR"], ignore_errors=True)

# Inductor calibrates the host before its first CPU kernel: it compiles a program for each vector
# instruction set the CPU reports (AMX, AVX-512 VNNI, AVX-512, AVX2 on x86) and loads each in a
# child interpreter, ~13 s in a cold cache and 0.2 s per set in every interpreter after. These tests
# are about the device, not that calibration: the sets the CPU reports are taken as they are,
# unless the caller chose (TORCHINDUCTOR_VEC_ISA_OK).
os.environ.setdefault("TORCHINDUCTOR_VEC_ISA_OK", "1")

import torch  # noqa: E402

import torch_{{ p }}  # noqa: E402, F401 - registers the device even with autoload off

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
