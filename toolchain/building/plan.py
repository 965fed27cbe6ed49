"""A build as data, decided before anything runs.

`plan_build` turns a project, the checked options and where the build runs (`BuildPlace`)
into the payload's argv, environment, working directory, build tree and log; the caller
executes the plan. It runs nothing and writes nothing, so unit tests assert the plans of
native, cross, container, device-only, torch and SDK builds without building
(cibuildwheel's `get_build_steps` is the model).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ..project.config import DEFAULT_BUILDER_BASE
from ..project.project import Project
from ..run.envs import container_reference_envs
from ..run.step import Runner, Step
from ..util.errors import DevkitError
from ..util.resources import payload_script
from .cmake_toolchain import toolchain_file_path
from .options import BuildOptions
from .placement import BuildPlace
from .sdk import ProvidedSdk

PAYLOAD = payload_script("shared", "build_plugin")


@dataclass(frozen=True)
class BuildPlan:
    title: str
    argv: tuple[str, ...]
    env: Mapping[str, str | None]  # None: removed from the step's environment
    cwd: str  # as the runner sees it
    log: Path
    build_dir: str  # the build tree, relative to the project
    device_only: bool  # the target has no runtime of the framework: the device library and its tests
    cross: bool  # the compiler runs on another architecture than the target's
    toolchain_file: Path | None = None  # the CMake toolchain file a cross build reads, written from the recipe
    # A native build compiles against the runtime of the reference environment verify clones (one
    # install serves both; from nothing, the builder's own install of a 200 MB wheel took 20 s): the
    # caller makes that environment and passes --runtime-root.
    reference_runtime: bool = False
    # Whether the wheel's portability findings are worth a line: not for a build on the oldest
    # builder base, where nothing older is on offer (the build's summary states the wheel's reach).
    says_portability: bool = True

    def step(self, runtime_root: str | None = None) -> Step:
        extra = ("--runtime-root", runtime_root) if runtime_root else ()
        return Step(self.title, [*self.argv, *extra], self.log, Path(self.cwd), self.env)


def sees_reference_envs(runner: Runner) -> bool:
    """The host does; a builder container when they are mounted (not into a remote engine's)."""
    try:
        runner.path(container_reference_envs())
    except DevkitError:
        return False
    return True


def build_variant(options: BuildOptions) -> str:
    """One build tree and log per (framework, target, runtime version, mode): matrix entries never share one."""
    framework, version = options.framework, options.runtime_version
    other_version = version and version != framework.version(options.recipe)
    return (
        framework.tree_suffix
        + (f"-{framework.name}{version}" if other_version else "")
        + ("-infer" if options.infer else "")
    )


def build_log(project: Project, options: BuildOptions) -> Path:
    return project.log_dir / f"build-{options.recipe.name}{build_variant(options)}.log"


def ccache_dir(place: BuildPlace) -> Path:
    """Where a build's compiler cache is: the user's CCACHE_DIR for a build on the host (a cache a
    machine already keeps, or one shared between devkit caches), else devkit's cache for the runner
    (a container's is in its cache volume)."""
    if place.runner.key == "host" and os.environ.get("CCACHE_DIR"):
        return Path(os.environ["CCACHE_DIR"])
    return place.cache / "ccache"


# The Paddle kernels' precompiled header (paddle/CMakeLists.txt): ccache caches the units that use
# it only when it hashes neither its macros nor time stamps (ccache's manual, "Precompiled headers").
PCH_SLOPPINESS = ("pch_defines", "time_macros")


def ccache_sloppiness() -> str:
    """The user's CCACHE_SLOPPINESS (the environment's wins over ccache.conf) and the PCH's."""
    own = [word.strip() for word in os.environ.get("CCACHE_SLOPPINESS", "").split(",") if word.strip()]
    return ",".join(dict.fromkeys([*own, *PCH_SLOPPINESS]))


def plan_build(
    project: Project,
    options: BuildOptions,
    place: BuildPlace,
    out: Path,
    sdk: ProvidedSdk | None = None,
    bundle_name: str = "",
) -> BuildPlan:
    """The build of `options` where `place` says, its artifacts written to `out`; `bundle_name`
    names the device bundle (the device library and its conformance suite) every build writes."""
    recipe, framework, version = options.recipe, options.framework, options.runtime_version
    runner = place.runner
    device_only = version is None
    cross = not place.machine_recipe.matches(recipe.name)
    variant = build_variant(options)
    build_dir = f"build/{recipe.name + '-device' if device_only else recipe.wheel_tag}{variant}"
    argv = [
        runner.python,
        runner.path(PAYLOAD),
        *("--project", runner.path(project.root)),
        *("--out", runner.path(out)),
        *("--cache", runner.path(place.cache)),
        *("--env-key", runner.key),
        *("--build-dir", build_dir),
        *("--target", recipe.name),
        *("--framework", framework.name),
        *("--source", framework.source_dir),
        *("--runtime-version", version or ""),
        *("--index-url", options.index_url),
        *("--bundle-name", bundle_name),  # the device library and its conformance suite, built with every plugin
    ]
    toolchain = toolchain_file_path(recipe, project.root / "build") if cross else None
    flags: list[str] = []
    if toolchain is not None:
        flags += ["--toolchain-file", runner.path(toolchain)]
    if not device_only and (cross or framework.unpacked_runtime):
        flags += ["--runtime-platform", framework.wheel_platform(recipe)]
    if cross and not device_only:
        flags += ["--wheel-tag", recipe.wheel_tag]
    if device_only:
        flags += ["--device-only"]
    what = "device library" if device_only else f"{framework.name} plugin wheel ({framework.name} {version})"
    env: dict[str, str | None] = {
        "CCACHE_DIR": runner.path(ccache_dir(place)),
        # Paths below the project are hashed as relative ones, so a second checkout or a new project
        # rendered from the same templates compiles from the cache (measured: a cold build of a second
        # project 32 s -> 2.6 s).
        "CCACHE_BASEDIR": runner.path(project.root),
        "ON_INFER": "ON" if options.infer else "OFF",
        "CCACHE_DISABLE": os.environ.get("CCACHE_DISABLE"),  # honoured in containers too
        "CCACHE_SLOPPINESS": ccache_sloppiness(),
        "PADDLE_INFERENCE_DIR": runner.path(options.inference_dir) if options.inference_dir else "",
        # [tool.devkit] inference-passes, for the runtime to hand Paddle (CMakeLists.txt)
        "DEVKIT_INFERENCE_PASSES": ";".join(project.config.inference_passes),
        **(sdk.build_env(runner) if sdk else {}),
    }
    return BuildPlan(
        title=f"build {project.name} {what} for {recipe.name}"
        + (" (cross)" if cross else "")
        + (" with ON_INFER" if options.infer else ""),
        argv=(*argv, *flags),
        env=env,
        cwd=runner.path(project.root),
        log=build_log(project, options),
        build_dir=build_dir,
        device_only=device_only,
        cross=cross,
        toolchain_file=toolchain,
        reference_runtime=not (cross or device_only or framework.unpacked_runtime) and sees_reference_envs(runner),
        says_portability=runner.key == "host" or project.config.builder_base != DEFAULT_BUILDER_BASE,
    )
