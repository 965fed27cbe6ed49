"""Locate the data shipped with devkit (templates/, recipes/, images/) and the payload scripts."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parents[1]
# Scripts that run inside a target's environment (host or container): payload/shared/ (the
# standard library only: what devkit itself may import), payload/numeric/ (NumPy, no framework),
# payload/paddle/ and payload/torch/. A script imports other payloads by plain module name: its own
# folder's (Python puts a script's folder first on sys.path) and those of PAYLOAD_LIBRARIES.
PAYLOAD_DIR = _PACKAGE_DIR / "payload"
PAYLOAD_LIBRARIES = ("shared", "numeric")


def payload_script(folder: str, name: str) -> Path:
    """payload/FOLDER/NAME.py: a framework's (FOLDER: its name) or a shared script."""
    return PAYLOAD_DIR / folder / f"{name}.py"


def payload_env(path: Callable[[Path], str] = str) -> dict[str, str]:
    """The environment every payload script runs with: PAYLOAD_LIBRARIES on its PYTHONPATH, as
    `path` (the runner's Runner.path) shows them where it runs."""
    return {"PYTHONPATH": os.pathsep.join(path(PAYLOAD_DIR / folder) for folder in PAYLOAD_LIBRARIES)}


def resource_dir(name: str) -> Path:
    """The installed copy (inside the package) or, in a source checkout, the repo's."""
    for candidate in (_PACKAGE_DIR / name, _PACKAGE_DIR.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"devkit data directory {name!r} is missing; reinstall devkit")
