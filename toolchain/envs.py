"""Python environments for building and verifying plugins.

The build environment is cached per (Paddle version, Python version) under the
devkit cache; a verify environment is created fresh every time.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from .runner import Runner, Step

# Tools the generated project's build needs (its pyproject's build-system.requires).
BUILD_TOOLS = ("scikit-build-core>=1.1,<2", "cmake>=3.18", "ninja")


def cache_root() -> Path:
    root = os.environ.get("DEVKIT_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "devkit"
    )
    return Path(root)


@dataclass(frozen=True)
class PythonEnv:
    root: Path

    @property
    def python(self) -> Path:
        return self.root / "bin" / "python"

    @property
    def bin(self) -> Path:
        return self.root / "bin"


def _pip_install(runner: Runner, env: PythonEnv, packages: list[str], title: str, log: Path) -> None:
    runner.run(
        Step(
            title=title,
            argv=[str(env.python), "-m", "pip", "install", "--disable-pip-version-check", "--progress-bar", "off", *packages],
            log=log,
        )
    )


def create_env(runner: Runner, root: Path, packages: list[str], title: str, log: Path) -> PythonEnv:
    runner.run(Step(title=f"{title}: create venv", argv=[sys.executable, "-m", "venv", str(root)], log=log))
    env = PythonEnv(root)
    _pip_install(runner, env, packages, f"{title}: install {' '.join(packages)}", log)
    return env


def build_env(runner: Runner, paddle_version: str, log: Path) -> PythonEnv:
    """The cached build environment with paddlepaddle==paddle_version and the build tools."""
    tag = f"cp{sys.version_info.major}{sys.version_info.minor}"
    final = cache_root() / "buildenv" / f"paddle-{paddle_version}-{tag}"
    marker = final / "devkit-env.json"
    if marker.is_file():
        return PythonEnv(final)
    # Console scripts embed their path, so the env is built in place; the marker
    # written last tells a complete env from an interrupted one, which is redone.
    if final.exists():
        shutil.rmtree(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    env = create_env(
        runner,
        final,
        [f"paddlepaddle=={paddle_version}", *BUILD_TOOLS],
        f"build environment (paddlepaddle {paddle_version})",
        log,
    )
    marker.write_text(json.dumps({"paddle_version": paddle_version, "python": tag}))
    return PythonEnv(final)

