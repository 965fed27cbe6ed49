"""Build-time metadata: pin a plugin wheel to the framework release it is compiled against.

scikit-build-core calls ``dynamic_metadata`` while building either adapter's wheel, with the
settings of its ``[[tool.dynamic-metadata]]`` entry: ``distribution`` (paddlepaddle, torch)
and ``version-env`` (PADDLE_VERSION, TORCH_VERSION). The version comes from that variable (set
for cross builds, where the target's framework is not installed) or from the framework
installed in the build environment; CMake checks that the headers it compiles against are the
same release. The pin is the public version (2.13.0, not 2.13.0+cpu): a local label would not
match the framework a user installs from another index.
"""

from __future__ import annotations

import os
from importlib import metadata


def public_version(version: str) -> str:
    return version.split("+", 1)[0]


def framework_version(distribution: str, version_env: str) -> str:
    pinned = os.environ.get(version_env, "").strip()
    if pinned:
        return public_version(pinned)
    try:
        return public_version(metadata.version(distribution))
    except metadata.PackageNotFoundError:
        raise RuntimeError(
            f"{distribution} is not installed in the build environment: install the version to "
            f"build against, or set {version_env} (and the unpacked framework's root for a cross build)"
        ) from None


def dynamic_metadata(settings, project):  # noqa: ARG001 - the plugin protocol
    distribution = settings["distribution"]
    return {"dependencies": [f"{distribution}=={framework_version(distribution, settings['version-env'])}"]}
