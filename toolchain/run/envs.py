"""devkit's cache and the fresh Python environments verify creates."""

from __future__ import annotations

import os
from pathlib import Path

from ..run.step import Runner, Step


def cache_root() -> Path:
    root = os.environ.get("DEVKIT_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "devkit"
    )
    return Path(root)


def create_env(runner: Runner, root: Path, packages: list[str], title: str, log: Path) -> str:
    """Create a venv at host path `root` (as the runner sees it), install `packages`
    (requirements or paths as the runner sees them); return its python."""
    venv = runner.path(root)
    runner.run(Step(title=f"{title}: create venv", argv=[runner.python, "-m", "venv", venv], log=log))
    python = f"{venv}/bin/python"
    runner.run(
        Step(
            title=f"{title}: install {' '.join(Path(p).name if '/' in p else p for p in packages)}",
            argv=[python, "-m", "pip", "install", "--disable-pip-version-check", "--progress-bar", "off", *packages],
            log=log,
        )
    )
    return python
