"""`devkit images ...` and `devkit doctor`: the container side of the machine."""

from __future__ import annotations

import time
from typing import Annotated

import typer

from ..project.config import BUILDER_BASES, DEFAULT_BUILDER_BASE, VERIFY_SUITE
from ..project.recipes import all_recipes, find_recipe
from ..run.doctor import run_doctor
from ..run.engine import Engine
from ..run.envs import cache_root
from ..run.images import bootstrap_base, builder_spec, check_suite, ensure_image, list_images, prune_images, verify_spec
from ..util.console import err
from ..util.errors import EnvironmentProblem
from . import views
from .options import JsonOpt, emit_json, target_recipe
from .outputs import DoctorRow, ImageBootstrapOutput, ImageRow, PruneOutput

SuiteOpt = Annotated[
    str, typer.Option("--suite", help=f"Debian release: {', '.join(BUILDER_BASES)} (verify images use bookworm).")
]


def images_bootstrap(
    arch: Annotated[
        str | None, typer.Option("--arch", help="Target whose Debian base to make (default: this machine's).")
    ] = None,
    suite: SuiteOpt = VERIFY_SUITE,
    as_json: JsonOpt = False,
) -> None:
    """Make the Debian base image for ARCH offline (debootstrap + import with the right platform)."""
    recipe = target_recipe(arch)
    check_suite(suite)
    start = time.monotonic()
    info = bootstrap_base(
        Engine.connect(), recipe, cache_root() / "logs" / f"bootstrap-{recipe.name}-{suite}.log", suite
    )
    if as_json:
        emit_json(ImageBootstrapOutput(info.tag, info.platform, round(time.monotonic() - start, 1)))


def images_build(
    arch: Annotated[
        list[str] | None,
        typer.Option("--arch", help="Targets whose verify image to build (repeatable; default: every recipe)."),
    ] = None,
    builder_base: Annotated[
        str, typer.Option("--builder-base", help=f"Debian release of the builder: {', '.join(BUILDER_BASES)}.")
    ] = DEFAULT_BUILDER_BASE,
    as_json: JsonOpt = False,
) -> None:
    """Build (or reuse) the builder image and the verify images of the given targets."""
    recipes = [find_recipe(a) for a in arch] if arch else all_recipes()
    specs = [builder_spec(builder_base), *(verify_spec(r) for r in recipes)]
    engine = Engine.connect()
    log = cache_root() / "logs" / "images.log"
    tags = {spec.kind: ensure_image(engine, spec, log) for spec in specs}
    if as_json:
        emit_json(tags)
    else:
        for kind, tag in tags.items():
            err.print(f"{kind}: {tag}")


def images_list(as_json: JsonOpt = False) -> None:
    """List devkit's images."""
    infos = list_images(Engine.connect())
    if as_json:
        emit_json([ImageRow.of(i) for i in infos])
    else:
        views.show_images(infos)


def images_binfmt(
    platforms: Annotated[list[str], typer.Argument(help="qemu platforms to register, e.g. arm64 arm.")],
) -> None:
    """Register qemu handlers through the engine (for CI engines you have no shell on, e.g. docker:dind)."""
    err.print(Engine.connect().install_binfmt(platforms))
    err.print(f"[green]✓[/] qemu handlers for {', '.join(platforms)} registered in the engine's kernel")


def images_prune(as_json: JsonOpt = False) -> None:
    """Remove devkit images that the current Dockerfiles no longer produce."""
    removed = prune_images(Engine.connect())
    if as_json:
        emit_json(PruneOutput(removed))
    else:
        err.print(f"removed {len(removed)} image(s)" + (": " + ", ".join(removed) if removed else ""))


def doctor(as_json: JsonOpt = False) -> None:
    """Check the container engine, qemu/binfmt, disk space and cross compilers; print the fix for each gap."""
    checks = run_doctor()
    if as_json:
        emit_json([DoctorRow.of(c) for c in checks])
    else:
        views.show_doctor(checks)
    if any(c.required and not c.ok for c in checks):
        raise EnvironmentProblem("some required pieces are missing", "apply the fixes listed above")
