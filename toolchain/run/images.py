"""Builder and verify images: offline base bootstrap, content-hash tags, reuse."""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..project.config import BUILDER_BASES as SUITES
from ..project.config import DEFAULT_BUILDER_BASE, VERIFY_SUITE
from ..project.recipes import Recipe, all_recipes, build_machine_recipe
from ..run.engine import Engine, ImageInfo, tar_context
from ..run.envs import cache_root
from ..run.step import HostRunner, Step
from ..util.console import err, status
from ..util.errors import DevkitError, EnvironmentProblem, InputError
from ..util.fsutil import exclusive_lock, private_dir
from ..util.resources import resource_dir

LABEL = "org.devkit.image"
LAYER_BASE_LABEL = "org.devkit.layer-of"  # a layer image's: the verify image it was made on


def debian_mirror() -> str:
    return os.environ.get("DEVKIT_DEBIAN_MIRROR", "http://deb.debian.org/debian")


def registry_base(suite: str) -> str | None:
    """DEVKIT_BASE_IMAGE (e.g. `debian:{suite}`) where a registry is reachable; a value
    without `{suite}` names the bookworm base only."""
    value = os.environ.get("DEVKIT_BASE_IMAGE", "")
    if "{suite}" in value:
        return value.replace("{suite}", suite)
    return value if value and suite == "bookworm" else None


def bootstrapped_tag(recipe: Recipe, suite: str) -> str:
    """The base image `devkit images bootstrap` makes for a target and Debian release."""
    return f"devkit-base:{suite}-{recipe.debian_arch}"


def base_tag(recipe: Recipe, suite: str = VERIFY_SUITE) -> str:
    """The base image for a target: from a registry (DEVKIT_BASE_IMAGE), else the bootstrapped one."""
    return registry_base(suite) or bootstrapped_tag(recipe, suite)


def check_suite(suite: str) -> str:
    if suite not in SUITES:
        raise InputError(
            f"{suite!r} is not a builder base devkit knows",
            f"use one of: {', '.join(f'{name} ({what})' for name, what in SUITES.items())}",
        )
    return suite


@dataclass(frozen=True)
class ImageSpec:
    kind: str  # "builder" or "verify-<arch>"
    dockerfile: str  # file under images/
    recipe: Recipe  # whose platform the image runs on
    suite: str = VERIFY_SUITE  # the Debian release of its base

    @property
    def platform(self) -> str:
        return self.recipe.oci_platform

    def buildargs(self) -> dict[str, str]:
        """The Dockerfile's arguments: its base, and for the builder the cross compilers the
        recipes name (adding a target adds its compiler to the next builder image)."""
        args = {"BASE": base_tag(self.recipe, self.suite)}
        if self.kind.startswith("builder"):
            args["CROSS_COMPILERS"] = " ".join(sorted(r.cross_compiler for r in all_recipes() if r.cross_compiler))
        return args

    def tag(self, engine: Engine) -> str:
        base = engine.image(base_tag(self.recipe, self.suite))
        if base is None:
            raise EnvironmentProblem(
                f"base image {base_tag(self.recipe, self.suite)} is missing",
                f"run `devkit images bootstrap --arch {self.recipe.name} --suite {self.suite}` (or set "
                "DEVKIT_BASE_IMAGE='debian:{suite}' where a registry is reachable)",
            )
        digest = hashlib.sha256()
        digest.update((resource_dir("images") / self.dockerfile).read_bytes())
        digest.update(base.id.encode())
        digest.update(self.platform.encode())
        digest.update(repr(sorted(self.buildargs().items())).encode())
        return f"devkit-{self.kind}:{digest.hexdigest()[:12]}"


def builder_spec(suite: str = DEFAULT_BUILDER_BASE) -> ImageSpec:
    # Cross compilers run on the build machine; every target is built from one image per base.
    return ImageSpec(f"builder-{check_suite(suite)}", "builder.Dockerfile", build_machine_recipe(), suite)


def verify_spec(recipe: Recipe) -> ImageSpec:
    # A target no framework publishes a runtime for verifies its device library alone, whose
    # test binaries need no Python: its image is the base (nothing installed under qemu).
    framework = recipe.has_runtime
    return ImageSpec(f"verify-{recipe.name}", "verify.Dockerfile" if framework else "verify-device.Dockerfile", recipe)


# What a verify image adds for `verify --compile`: Inductor compiles the kernels it generates
# with the machine's C++ compiler, against Python's headers (its kernels' Python bindings).
COMPILER_PACKAGES = ("g++", "python3-dev")


def ensure_runtime_image(
    engine: Engine, recipe: Recipe, base: str, packages: tuple[str, ...], declared: str, log: Path, layer: str = "sdk"
) -> str:
    """The target's verify image `base` (ensure_image's tag) with Debian packages installed by apt
    (a layer on it, tagged by the packages and the image below, so made once): a vendor SDK's
    runtime ("sdk"), the compiler Inductor needs ("compiler"); `declared` says who asked for them
    (the error names it)."""
    kind = f"verify-{recipe.name}-{layer}"
    tag = f"devkit-{kind}:{hashlib.sha256(' '.join([base, *packages]).encode()).hexdigest()[:12]}"
    # The names match project/sdk.py's DEBIAN_PACKAGE pattern: nothing a shell would interpret.
    dockerfile = (
        "ARG BASE\nFROM ${BASE}\nRUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y "
        f"--no-install-recommends {' '.join(packages)} && rm -rf /var/lib/apt/lists/*\n"
    )
    with _image_lock(kind):
        if engine.image(tag) is None:
            try:
                with status(f"[bold]building image {tag}[/] ({' '.join(packages)})…"):
                    engine.build_image(
                        tar_context({"Dockerfile": dockerfile.encode()}),
                        tag=tag,
                        platform=recipe.oci_platform,
                        buildargs={"BASE": base},
                        labels={LABEL: kind, LAYER_BASE_LABEL: base},
                        log=log,
                    )
            except DevkitError as exc:
                raise InputError(
                    f"{declared}: apt could not install {' '.join(packages)} in the {recipe.name} verify image "
                    f"({exc.problem})",
                    "check each name with `apt-cache policy NAME` on Debian bookworm for that architecture",
                    log=log,
                ) from None
            err.print(f"[green]✓[/] built image {tag} with {' '.join(packages)} ({recipe.oci_platform})")
    return tag


def _image_lock(name: str) -> contextlib.AbstractContextManager[None]:
    """One process at a time makes a given image. The images are the engine's, whoever's cache
    asked for them, so the lock is the user's, whatever DEVKIT_CACHE_DIR each command sets (two
    devkit commands, or `devkit images build` running beside a build, wait for each other instead
    of building the same image twice). It lives in the user's own devkit cache, a private
    directory, never at a /tmp name another user could make first."""
    home = Path(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")) / "devkit" / "locks"
    try:
        directory = private_dir(home)
    except OSError:  # no writable home: the cache devkit was pointed at
        directory = private_dir(cache_root() / "locks")
    lock = directory / f"image-{name}.lock"
    return exclusive_lock(lock, lambda holder: err.print(f"waiting for {holder}, which is making image {name}…"))


def ensure_image(engine: Engine, spec: ImageSpec, log: Path) -> str:
    """The image's tag, building it (and bootstrapping its base) when missing."""
    with _image_lock(spec.kind):
        base = base_tag(spec.recipe, spec.suite)
        if engine.image(base) is None and not registry_base(spec.suite):
            with _image_lock(base.replace(":", "-").replace("/", "-")):
                if engine.image(base) is None:
                    bootstrap_base(engine, spec.recipe, log, spec.suite)
        return _build_image(engine, spec, log)


def _build_image(engine: Engine, spec: ImageSpec, log: Path) -> str:
    tag = spec.tag(engine)
    if engine.image(tag) is not None:
        return tag
    dockerfile = (resource_dir("images") / spec.dockerfile).read_bytes()
    with status(f"[bold]building image {tag}[/] ({spec.platform})…") as live:
        engine.build_image(
            tar_context({"Dockerfile": dockerfile}),
            tag=tag,
            platform=spec.platform,
            buildargs=spec.buildargs(),
            labels={LABEL: spec.kind},
            log=log,
            on_line=lambda line: live.update(f"[bold]building image {tag}[/] [dim]{line[:90]}[/]"),
        )
    err.print(f"[green]✓[/] built image {tag} ({spec.platform})")
    return tag


def bootstrap_base(engine: Engine, recipe: Recipe, log: Path, suite: str = VERIFY_SUITE) -> ImageInfo:
    """Make devkit-base:<suite>-<arch> offline: debootstrap from the Debian mirror, then
    import it with a FROM scratch build so the image records the target's platform."""
    tag = bootstrapped_tag(recipe, check_suite(suite))
    if shutil.which("debootstrap") is None:
        raise EnvironmentProblem(
            "debootstrap is not installed, so no base image can be made offline",
            "apt-get install debootstrap (or set DEVKIT_BASE_IMAGE='debian:{suite}' with registry access)",
        )
    work_root = cache_root() / "bootstrap"
    work_root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f"{recipe.debian_arch}-", dir=work_root) as tmp:
        rootfs = Path(tmp) / "rootfs"
        HostRunner(
            fix_hint=f"check that {debian_mirror()} is reachable and, for a foreign architecture, "
            "that qemu binfmt handlers are registered (devkit doctor)"
        ).run(
            Step(
                title=f"debootstrap {suite} for {recipe.debian_arch}",
                argv=[
                    "debootstrap",
                    "--variant=minbase",
                    f"--arch={recipe.debian_arch}",
                    suite,
                    str(rootfs),
                    debian_mirror(),
                ],
                log=log,
                fails_as=EnvironmentProblem,
            )
        )
        archive = Path(tmp) / "rootfs.tar"
        with tarfile.open(archive, "w") as tar:
            tar.add(str(rootfs), arcname=".")
        context = tar_context({"Dockerfile": b'FROM scratch\nADD rootfs.tar /\nCMD ["bash"]\n', "rootfs.tar": archive})
        with status(f"[bold]importing {tag}[/]…"):
            info = engine.build_image(
                context, tag=tag, platform=recipe.oci_platform, buildargs={}, labels={LABEL: "base"}, log=log
            )
    err.print(f"[green]✓[/] bootstrapped base image {tag} ({info.platform})")
    return info


def list_images(engine: Engine) -> list[ImageInfo]:
    return sorted(engine.images_with_label(LABEL), key=lambda i: i.tag)


def prune_images(engine: Engine) -> list[str]:
    """Remove devkit images that the current Dockerfiles no longer produce: bases are kept, and the
    layers (an SDK's runtime, the compiler) made on a verify image that is kept."""
    wanted = set()
    for spec in [*(builder_spec(s) for s in SUITES), *(verify_spec(r) for r in all_recipes())]:
        try:
            wanted.add(spec.tag(engine))
        except DevkitError:
            pass
    removed = []
    for info in list_images(engine):
        layer_of = info.labels.get(LAYER_BASE_LABEL)
        if info.labels.get(LABEL) != "base" and info.tag not in wanted and layer_of not in wanted:
            engine.remove_image(info.tag)
            removed.append(info.tag)
    return removed
