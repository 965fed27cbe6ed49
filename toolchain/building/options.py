"""A build's options: as asked for (`BuildRequest`, by the command line or a matrix entry) and as
checked against the project and the target (`BuildOptions`, what the placement, the plan and the
build read)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from packaging.version import InvalidVersion, Version

from ..project.frameworks import DEFAULT_FRAMEWORK, Framework
from ..project.project import Project
from ..project.recipes import Recipe
from ..util.errors import InputError


@dataclass(frozen=True)
class BuildOptions:
    recipe: Recipe
    runtime_version: str | None  # the framework's; None: the target has no runtime (device library only)
    framework: Framework = DEFAULT_FRAMEWORK
    clean: bool = False
    runner: str = "auto"
    infer: bool = False  # ON_INFER build plus an inference bundle
    inference_dir: Path | None = None  # an unpacked Paddle Inference release to link
    sdist: bool = False  # also an sdist (python -m build --sdist), checked like the wheel
    index_url: str = ""  # where pip gets the runtime ([tool.devkit.torch] index-url)


def resolve_runtime_version(
    recipe: Recipe, requested: str | None, framework: Framework = DEFAULT_FRAMEWORK
) -> str | None:
    """--<framework>-version, else the recipe's pin; None when the target has no such runtime."""
    flag = f"--{framework.name}-version"
    pinned = framework.version(recipe)
    if pinned is None:
        if requested:
            raise InputError(
                f"target {recipe.name} has no {framework.label} runtime, so {flag} does not apply",
                f"drop {flag} for --arch {recipe.name}",
            )
        return None
    version = requested or pinned
    try:
        Version(version or "")
    except InvalidVersion:
        raise InputError(f"{flag} {version!r} is not a version", f"use e.g. {flag} {pinned}") from None
    return version


@dataclass(frozen=True)
class BuildRequest:
    """A build as asked for, by the command line or a matrix entry; `options` checks it against
    the project and the target, the one place those checks live."""

    recipe: Recipe
    framework: Framework = DEFAULT_FRAMEWORK
    version: str | None = None  # --<framework>-version; None: the recipe's pin
    clean: bool = False
    runner: str = "auto"
    infer: bool = False
    inference_dir: Path | None = None
    sdist: bool = False

    def options(self, project: Project) -> BuildOptions:
        framework, recipe = self.framework, self.recipe
        if ("infer" not in framework.modes and (self.infer or self.inference_dir)) or (
            self.sdist and not framework.sdist
        ):
            raise InputError(
                f"--infer, --sdist and --paddle-inference-dir apply to the Paddle plugin, not the {framework.label} "
                "adapter",
                "drop them, or build with --framework paddle",
            )
        if self.inference_dir is not None:
            if not self.infer:
                raise InputError("--paddle-inference-dir applies to inference builds", "add --infer")
            if not (self.inference_dir / "paddle" / "lib" / "libpaddle_inference.so").is_file():
                raise InputError(
                    f"{self.inference_dir} has no paddle/lib/libpaddle_inference.so",
                    "point --paddle-inference-dir at an unpacked Paddle Inference release",
                )
        version = resolve_runtime_version(recipe, self.version, framework)
        if self.sdist and version is None:
            raise InputError(
                f"{recipe.name} builds no plugin wheel, so there is no sdist to go with it", "drop --sdist"
            )
        return BuildOptions(
            recipe=recipe,
            runtime_version=version,
            framework=framework,
            index_url=project.config.index_url(framework),
            clean=self.clean,
            runner=self.runner,
            infer=self.infer,
            inference_dir=self.inference_dir.resolve() if self.inference_dir else None,
            sdist=self.sdist,
        )
