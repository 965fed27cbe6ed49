"""Build-time metadata: pin the wheel to the Paddle it is compiled against.

scikit-build-core calls ``dynamic_metadata`` while building the wheel. The
version comes from ``PADDLE_VERSION`` (set for cross builds, where the target's
Paddle is not installed) or from the paddlepaddle installed in the build
environment; CMake checks that the headers it compiles against are the same.
"""

from __future__ import annotations

import os
from importlib import metadata


def paddle_version() -> str:
    pinned = os.environ.get("PADDLE_VERSION", "").strip()
    if pinned:
        return pinned
    try:
        return metadata.version("paddlepaddle")
    except metadata.PackageNotFoundError:
        raise RuntimeError(
            "paddlepaddle is not installed in the build environment: install the "
            "version to build against, or set PADDLE_VERSION and PADDLE_ROOT"
        ) from None


def dynamic_metadata(settings, project):  # noqa: ARG001 - the plugin protocol
    return {"dependencies": [f"paddlepaddle=={paddle_version()}"]}
