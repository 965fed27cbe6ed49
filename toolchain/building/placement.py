"""Where a build runs, decided once per build and passed on.

`resolve_placement` asks the one question (host or a container: `--runner auto` uses the engine
when one answers), and resolves what follows from the answer before anything is written: the
build cache, the builder image, the vendor SDK's source for the target and the host directories
a container must see (a `dir` SDK, a Paddle Inference release). `build_place` then makes the
runner from it; nothing after asks again.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from ..project.project import Project
from ..project.recipes import Recipe
from ..project.sdk import SdkSource
from ..run.container import ContainerRunner, Mount
from ..run.engine import Engine
from ..run.envs import cache_root, container_reference_envs
from ..run.images import ImageSpec, builder_spec, ensure_image
from ..run.select import host_recipe, reference_env_runner, use_container
from ..run.step import HostRunner, Runner
from ..util.errors import EnvironmentProblem
from ..util.resources import PAYLOAD_DIR
from .options import BuildOptions
from .sdk import preflight_sdk, sdk_root


@dataclass(frozen=True)
class Placement:
    """Where one build runs: in a container of `image` (None: on the host)."""

    image: ImageSpec | None
    cache: Path  # the host directory for tool envs, target runtimes, ccache and provided SDKs
    sdk_source: SdkSource | None  # the project's SDK for the target ([tool.devkit.sdk.build]); None: none declared
    sdk_root: Path | None  # a `dir` SDK's root on the build machine (checked to exist)
    inputs: tuple[Path, ...]  # host directories the build reads: mounted into a container

    @property
    def in_container(self) -> bool:
        return self.image is not None


def resolve_placement(project: Project, options: BuildOptions) -> Placement:
    """Host or container, the cache, the image and the SDK for the build of `options`: a missing
    engine, SDK directory or runtime library is a one-line error before anything is written."""
    container = use_container(options.runner)
    settings, recipe = project.config.sdk, options.recipe
    source = settings.build_source(recipe) if settings else None
    root = sdk_root(settings, source) if settings and source else None
    if settings and source:
        preflight_sdk(settings, recipe, source, root, container)
    inputs = [*([options.inference_dir] if options.inference_dir else []), *([root] if root else [])]
    return Placement(
        image=builder_spec(project.config.builder_base) if container else None,
        cache=cache_root() / ("container" if container else "host"),
        sdk_source=source,
        sdk_root=root,
        inputs=tuple(inputs),
    )


@dataclass(frozen=True)
class BuildPlace:
    runner: Runner
    machine_recipe: Recipe  # the architecture the compiler runs on
    cache: Path  # host directory for tool envs, target runtimes, ccache

    def reference_runner(self, log: Path) -> Runner:
        """Where the reference env a native build compiles against is made (and verify later clones):
        the host, or a container of the machine's verify image, whose reference envs the builder mounts."""
        if isinstance(self.runner, HostRunner):
            return self.runner
        return reference_env_runner(self.machine_recipe, log)


def build_mounts(
    project: Project, out: Path, cache: Path, inputs: list[Path], reference_envs: Path | None = None
) -> list[Mount]:
    """What a build container sees: the project read-only but its build/, the artifact directory,
    the build cache, devkit's payload, the build's inputs (an SDK, a Paddle Inference release) and,
    read-only, the verify images' reference envs (a native build compiles against the runtime there)."""
    return [
        Mount(project.root, "/src"),
        Mount(project.root / "build", "/src/build", read_only=False),
        Mount(out, "/out", read_only=False),
        Mount(cache, "/cache", read_only=False, cache=True),
        Mount(PAYLOAD_DIR, "/devkit/payload"),
        *(Mount(p, f"/inputs/{i}") for i, p in enumerate(inputs)),
        *([Mount(reference_envs, "/reference-envs")] if reference_envs else []),
    ]


def build_place(placement: Placement, recipe: Recipe, project: Project, out: Path, log: Path) -> BuildPlace:
    """The runner of `placement` for a build of `recipe` writing its artifacts to `out`."""
    if placement.image is not None:
        engine = Engine.connect()
        image = ensure_image(engine, placement.image, log)
        # (not for a remote engine: it would be sent the whole directory; the build installs its runtime)
        references = container_reference_envs() if engine.files_mode != "copy" else None
        if references:
            references.mkdir(parents=True, exist_ok=True)
        runner = ContainerRunner(
            engine,
            image,
            placement.image.platform,
            build_mounts(project, out, placement.cache, list(placement.inputs), references),
            env={"PIP_CACHE_DIR": "/cache/pip"},
            fix_hint="read the compiler lines above; fix the source and rebuild",
        )
        return BuildPlace(runner, placement.image.recipe, placement.cache)
    machine = host_recipe()
    if not machine.matches(recipe.name) and shutil.which(f"{recipe.triple}-g++") is None:
        raise EnvironmentProblem(
            f"cross-building for {recipe.name} on the host needs {recipe.triple}-g++, which is not installed",
            f"use the container runner (start a Docker Engine; see `devkit doctor`) or apt-get install "
            f"{recipe.cross_compiler or f'g++-{recipe.triple}'}",
        )
    return BuildPlace(HostRunner(), machine, placement.cache)
