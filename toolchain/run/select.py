"""Choosing where a step runs: the host, or a container of the right image.

`--runner auto` uses the container engine when one answers, else the host.
"""

from __future__ import annotations

import os
import platform
from pathlib import Path

from ..project.config import RUNNERS
from ..project.recipes import Recipe, all_recipes
from ..project.sdk import SdkSource
from ..run.container import ContainerRunner, Mount
from ..run.engine import Engine
from ..run.envs import cache_root, container_reference_envs, inductor_probes
from ..run.images import COMPILER_PACKAGES, ensure_image, ensure_runtime_image, verify_spec
from ..run.step import HostRunner, Runner
from ..util.errors import EnvironmentProblem, InputError
from ..util.fsutil import private_dir
from ..util.resources import PAYLOAD_DIR


def host_recipe() -> Recipe:
    machine = platform.machine()
    for recipe in all_recipes():
        if recipe.matches(machine):
            return recipe
    raise EnvironmentProblem(
        f"no recipe describes this host ({machine})", "add one under recipes/ or use a container runner"
    )


def use_container(choice: str) -> bool:
    if choice not in RUNNERS:
        raise InputError(f"unknown runner {choice!r}", f"use --runner {' | '.join(RUNNERS)}")
    if choice == "docker":
        Engine.connect()  # a missing engine is named before anything is written
        return True
    return choice == "auto" and Engine.available()


def build_cache(choice: str) -> Path:
    """The host directory the builds of a runner choice keep their tool envs, target runtimes and
    ccache in (per kind of runner); a build's own is its placement's (building/placement.py)."""
    return cache_root() / ("container" if use_container(choice) else "host")


def verify_runner(
    choice: str,
    recipe: Recipe,
    work: Path,
    inputs: list[Path],
    log: Path,
    sdk_runtime: SdkSource | None = None,
    compiler: bool = False,
) -> Runner:
    """A runner for the target's architecture with `work` writable and `inputs` readable, and in a
    container the vendor SDK's runtime (`sdk_runtime`, [tool.devkit.sdk.runtime]) installed, and
    with `compiler` the C++ compiler torch.compile needs. On the host both are the machine's own."""
    if use_container(choice):
        engine = Engine.connect()
        if engine.files_mode == "copy":
            raise EnvironmentProblem(
                f"verifying on a remote container engine ({os.environ.get('DOCKER_HOST', 'DEVKIT_ENGINE_FILES=copy')}) "
                "is not supported: each check step shares a large environment that would cross the network",
                f"run devkit verify on a {recipe.name} machine with --runner host, or unset DOCKER_HOST for a local "
                "engine with qemu",
            )
        spec = verify_spec(recipe)
        compilers = COMPILER_PACKAGES if compiler else ()
        if sdk_runtime is not None and sdk_runtime.kind != "debian":
            raise InputError(
                f"pyproject.toml: tool.devkit.sdk.{sdk_runtime.key} is a {sdk_runtime.kind}; verify images take an SDK "
                "runtime from Debian packages only",
                f"declare {recipe.name} = {{ debian = [...] }} under [tool.devkit.sdk.runtime], or verify with --runner host "
                "on a machine with the driver installed",
            )
        image = verify_image = ensure_image(engine, spec, log)
        if sdk_runtime is not None:
            declared = f"pyproject.toml: tool.devkit.sdk.{sdk_runtime.key}.debian"
            image = ensure_runtime_image(engine, recipe, verify_image, sdk_runtime.packages + compilers, declared, log)
        elif compilers:
            image = ensure_runtime_image(engine, recipe, verify_image, compilers, "verify --compile", log, "compiler")
        mounts = [Mount(work, "/work", read_only=False), *(Mount(p, f"/inputs/{i}") for i, p in enumerate(inputs))]
        # A layer adds Debian packages only, never the venv's Python packages: it shares the
        # reference envs of the verify image below it instead of installing the framework again.
        return _verify_container(engine, image, spec.platform, mounts, key=verify_image)
    if not host_recipe().matches(recipe.name):
        raise EnvironmentProblem(
            f"verifying {recipe.name} needs a {recipe.name} environment, and the host is {platform.machine()}",
            "start a Docker Engine with qemu binfmt handlers (see `devkit doctor`) or run on a native machine",
        )
    return HostRunner(fix_hint="see the verify log")


def reference_env_runner(recipe: Recipe, log: Path) -> Runner:
    """A container of `recipe`'s verify image that sees the reference envs alone: where a native
    container build has the reference env made that it compiles against and verify then clones."""
    engine = Engine.connect()
    spec = verify_spec(recipe)
    image = ensure_image(engine, spec, log)
    return _verify_container(engine, image, spec.platform, [], key=image)


def _verify_container(engine: Engine, image: str, oci_platform: str, mounts: list[Mount], key: str) -> ContainerRunner:
    """A verify image's container: the reference envs (read and made there), devkit's payload and
    pip's cache mounted beside `mounts`; its cached state named after the image `key`."""
    references = container_reference_envs()
    references.mkdir(parents=True, exist_ok=True)
    private_dir(inductor_probes())  # (binaries Inductor loads: nobody else's, not a link)
    return ContainerRunner(
        engine,
        image,
        oci_platform,
        [
            *mounts,
            Mount(references, "/reference-envs", read_only=False),
            Mount(PAYLOAD_DIR, "/devkit/payload"),
            Mount(cache_root() / "container" / "pip", "/cache/pip", read_only=False, cache=True),
            Mount(inductor_probes(), "/cache/inductor-probes", read_only=False, cache=True),
        ],
        env={"PIP_CACHE_DIR": "/cache/pip"},
        fix_hint="see the verify log; for emulated targets check `devkit doctor`",
        key=key,
    )
