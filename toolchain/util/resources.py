"""Locate the data shipped with devkit (templates/, recipes/, images/) and the payload scripts."""

from __future__ import annotations

from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parents[1]
# Scripts that run inside a target's environment (host or container), standard library only.
PAYLOAD_DIR = _PACKAGE_DIR / "payload"


def resource_dir(name: str) -> Path:
    """The installed copy (inside the package) or, in a source checkout, the repo's."""
    for candidate in (_PACKAGE_DIR / name, _PACKAGE_DIR.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"devkit data directory {name!r} is missing; reinstall devkit")
