"""Build-time metadata: pin the wheel to the torch it is compiled against.

scikit-build-core calls ``dynamic_metadata`` while building the wheel. The
version comes from ``TORCH_VERSION`` (set for cross builds, where the target's
torch is not installed) or from the torch installed in the build environment;
CMake checks that the headers it compiles against are the same release.
The pin is the public version (2.13.0, not 2.13.0+cpu): a local label would
not match the torch a user installs from another index.
"""

from __future__ import annotations

import os
from importlib import metadata


def public_version(version: str) -> str:
    return version.split("+", 1)[0]


def torch_version() -> str:
    pinned = os.environ.get("TORCH_VERSION", "").strip()
    if pinned:
        return public_version(pinned)
    try:
        return public_version(metadata.version("torch"))
    except metadata.PackageNotFoundError:
        raise RuntimeError(
            "torch is not installed in the build environment: install the version to "
            "build against, or set TORCH_VERSION and TORCH_ROOT"
        ) from None


def dynamic_metadata(settings, project):  # noqa: ARG001 - the plugin protocol
    return {"dependencies": [f"torch=={torch_version()}"]}
