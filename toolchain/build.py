"""`devkit build`: compile a backend project into a plugin wheel."""

from __future__ import annotations

import os
import platform
import re
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from packaging.version import InvalidVersion, Version

from .artifacts import check_plugin_wheel
from .envs import build_env
from .errors import DevkitError
from .fsutil import publish_file
from .project import Project
from .recipes import Recipe
from .runner import Runner, Step

# The host's architecture, as recipes spell it in their names or aliases.
HOST_MACHINE = platform.machine()

_COMPILE_LINE = re.compile(r"Building (C|CXX) object")


@dataclass(frozen=True)
class BuildOptions:
    recipe: Recipe
    paddle_version: str
    clean: bool = False


@dataclass(frozen=True)
class BuildResult:
    wheel: Path
    arch: str
    paddle_version: str
    seconds: float
    compiled_files: int
    log: Path
    tag: str

    def as_dict(self) -> dict[str, object]:
        return {
            "wheel": str(self.wheel),
            "arch": self.arch,
            "paddle_version": self.paddle_version,
            "seconds": round(self.seconds, 2),
            "compiled_files": self.compiled_files,
            "tag": self.tag,
            "log": str(self.log),
        }


def resolve_paddle_version(recipe: Recipe, requested: str | None) -> str:
    version = requested or recipe.paddle_version
    if not version:
        raise DevkitError(
            f"target {recipe.name} has no Paddle runtime to build a plugin wheel against",
            "build the device library only for this target, or pick a target with paddle_version in its recipe",
        )
    try:
        Version(version)
    except InvalidVersion:
        raise DevkitError(f"--paddle-version {version!r} is not a version", "use e.g. --paddle-version 3.3.1") from None
    return version


def check_native(recipe: Recipe) -> None:
    names = {recipe.name.lower(), *(a.lower() for a in recipe.aliases)}
    if HOST_MACHINE.lower() not in names:
        raise DevkitError(
            f"the host runner builds natively for {HOST_MACHINE}, not {recipe.name}",
            f"use --arch {HOST_MACHINE}, or a container runner for cross builds",
        )


def build_wheel(project: Project, options: BuildOptions, runner: Runner) -> BuildResult:
    recipe = options.recipe
    check_native(recipe)
    start = time.monotonic()
    log = project.log_dir / f"build-{recipe.name}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("")
    # A failed build must not leave an older wheel looking like its result.
    for stale in project.dist_dir.glob(f"{project.wheel_prefix}*{recipe.wheel_platform}.whl"):
        stale.unlink()
    if options.clean:
        shutil.rmtree(project.root / "build" / f"py3-none-{recipe.wheel_platform}", ignore_errors=True)

    env = build_env(runner, options.paddle_version, log)
    with tempfile.TemporaryDirectory(prefix="devkit-wheel-") as tmp:
        output = runner.run(
            Step(
                title=f"build {project.distribution} for {recipe.name} (paddle {options.paddle_version})",
                argv=[
                    str(env.python),
                    "-c",
                    "import sys; from scikit_build_core.build import build_wheel; print(build_wheel(sys.argv[1]))",
                    tmp,
                ],
                cwd=project.root,
                log=log,
                env={"PADDLE_VERSION": options.paddle_version, "PATH": f"{env.bin}:{os.environ.get('PATH', '')}"},
            )
        )
        wheels = list(Path(tmp).glob("*.whl"))
        if len(wheels) != 1:
            raise DevkitError(f"the build produced {len(wheels)} wheels, expected 1", "inspect the log", log=log)
        info = check_plugin_wheel(wheels[0], recipe, options.paddle_version)
        final = publish_file(wheels[0], project.dist_dir)
    return BuildResult(
        wheel=final,
        arch=recipe.name,
        paddle_version=options.paddle_version,
        seconds=time.monotonic() - start,
        compiled_files=len(_COMPILE_LINE.findall(output)),
        log=log,
        tag=str(info["tag"]),
    )

