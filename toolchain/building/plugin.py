"""`devkit build`: compile a backend project for one target.

The same payload (payload/build_plugin.py) runs on the host or in the builder
container; this module decides what to build, runs it through a Runner, checks
the artifact and publishes it to PROJECT/dist/.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from packaging.version import InvalidVersion, Version

from ..building.abi import paddle_root_for, require_abi
from ..building.artifacts import check_elf_bytes, check_plugin_wheel
from ..building.bundles import bundle_name as inference_bundle_name
from ..building.bundles import make_inference_bundle
from ..building.manylinux import PlatformReport, paddle_framework, tag_manylinux
from ..building.publish import build_sdist, check_index_ready
from ..building.sdk import preflight_sdk, provide_sdk, record_sdk_in_wheel, sdk_mounts
from ..project.frameworks import PADDLE, TORCH, Framework
from ..project.project import Project
from ..project.recipes import Recipe
from ..run.envs import reference_env, site_package
from ..run.select import BuildPlace, build_cache, build_place
from ..run.step import Runner, Step
from ..util.archives import sha256_file, tar_archive
from ..util.console import err
from ..util.errors import DevkitError
from ..util.fsutil import exclusive_lock, publish_file
from ..util.resources import PAYLOAD_DIR
from .cmake_toolchain import write_toolchain_file
from .torch_wheel import check_torch_wheel, fetch_torch, require_torch_abi, torch_framework

_COMPILE_LINE = re.compile(r"Building (C|CXX) object")
PAYLOAD = PAYLOAD_DIR / "build_plugin.py"


@dataclass(frozen=True)
class BuildOptions:
    recipe: Recipe
    runtime_version: str | None  # the framework's; None: the target has no runtime (device library only)
    framework: Framework = PADDLE
    clean: bool = False
    runner: str = "auto"
    infer: bool = False  # ON_INFER build plus an inference bundle
    inference_dir: Path | None = None  # an unpacked Paddle Inference release to link
    sdist: bool = False  # also an sdist (python -m build --sdist), checked like the wheel
    index_url: str = ""  # where pip gets the runtime ([tool.devkit.torch] index-url)


@dataclass(frozen=True)
class BuildResult:
    artifact: Path
    kind: str  # "wheel" or "device-bundle"
    arch: str
    framework: str
    runtime_version: str | None
    seconds: float
    compiled_files: int
    log: Path
    runner: str
    bundle: Path | None = None
    platform: PlatformReport | None = None  # the wheel's manylinux tag and glibc/libstdc++ floor
    sdist: Path | None = None

    def as_dict(self) -> dict[str, object]:
        return {
            "artifact": str(self.artifact),
            "kind": self.kind,
            "arch": self.arch,
            "framework": self.framework,
            "runtime_version": self.runtime_version,
            f"{self.framework}_version": self.runtime_version,
            "seconds": round(self.seconds, 2),
            "compiled_files": self.compiled_files,
            "log": str(self.log),
            "runner": self.runner,
            "inference_bundle": str(self.bundle) if self.bundle else None,
            "sha256": sha256_file(self.artifact),
            "inference_bundle_sha256": sha256_file(self.bundle) if self.bundle else None,
            "platform": self.platform.as_dict() if self.platform else None,
            "sdist": str(self.sdist) if self.sdist else None,
            **({"wheel": str(self.artifact)} if self.kind == "wheel" else {}),
        }


def resolve_runtime_version(recipe: Recipe, requested: str | None, framework: Framework = PADDLE) -> str | None:
    """--<framework>-version, else the recipe's pin; None when the target has no such runtime."""
    flag = f"--{framework.name}-version"
    pinned = framework.version(recipe)
    if pinned is None:
        if requested:
            raise DevkitError(
                f"target {recipe.name} has no {framework.label} runtime, so {flag} does not apply",
                f"drop {flag} for --arch {recipe.name}",
            )
        return None
    version = requested or pinned
    try:
        Version(version or "")
    except InvalidVersion:
        raise DevkitError(f"{flag} {version!r} is not a version", f"use e.g. {flag} {pinned}") from None
    return version


def resolve_paddle_version(recipe: Recipe, requested: str | None) -> str | None:
    return resolve_runtime_version(recipe, requested, PADDLE)


def device_bundle_name(project: Project, recipe: Recipe) -> str:
    return f"{project.distribution}-device-{project.version}-{recipe.name}"


def device_bundle_path(project: Project, recipe: Recipe) -> Path:
    """Where `devkit build` puts the device library bundle of a target without a Paddle runtime."""
    return project.dist_dir / f"{device_bundle_name(project, recipe)}.tar.gz"


def build(project: Project, options: BuildOptions) -> BuildResult:
    """Build one target; a second devkit building the same target of the project waits its turn,
    so dist/ never holds a mix of two builds."""
    # torch: the target's wheel, fetched by the host into the build's cache before anything is
    # written to the project (a torch that cannot be had is a one-line error that leaves nothing)
    preflight_sdk(project.config.sdk, options.recipe, options.runner)
    torch_root = None
    if options.framework is TORCH and options.runtime_version:
        torch_root = fetch_torch(
            build_cache(options.runner), options.recipe, options.runtime_version, options.index_url
        )
    lock = project.root / "build" / f".devkit-{options.recipe.name}{_framework_suffix(options.framework)}.lock"
    with exclusive_lock(
        lock,
        lambda holder: err.print(
            f"[yellow]![/] another devkit build of {project.name} for {options.recipe.name} is running ({holder}); "
            "waiting for it to finish"
        ),
    ):
        return _build(project, options, torch_root)


def _build(project: Project, options: BuildOptions, torch_root: Path | None) -> BuildResult:
    recipe, framework, version = options.recipe, options.framework, options.runtime_version
    start = time.monotonic()
    # One build tree and log per (framework, target, runtime version, mode): matrix entries never share one.
    other_version = version and version != framework.version(recipe)
    variant = (
        _framework_suffix(framework)
        + (f"-{framework.name}{version}" if other_version else "")
        + ("-infer" if options.infer else "")
    )
    log = project.log_dir / f"build-{recipe.name}{variant}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("")
    device_only = version is None
    if device_only:
        err.print(
            f"[yellow]![/] {framework.label} publishes no runtime for {recipe.name}: building the {project.name} "
            f"device library and its tests (no plugin wheel)"
        )
    wheel_prefix = project.wheel_prefix_of(framework)
    # A failed build must not leave an older artifact looking like its result.
    for stale in project.dist_dir.glob(recipe.wheel_glob(wheel_prefix)):
        stale.unlink()
    for stale in (
        device_bundle_path(project, recipe),
        project.dist_dir / f"{inference_bundle_name(project, recipe)}.tar.gz",
        *([project.dist_dir / f"{project.wheel_prefix}{project.version}.tar.gz"] if options.sdist else []),
    ):
        stale.unlink(missing_ok=True)
    build_dir = f"build/{recipe.name + '-device' if device_only else recipe.wheel_tag}{variant}"
    index_url = options.index_url if framework is TORCH else ""
    if options.clean:
        shutil.rmtree(project.root / build_dir, ignore_errors=True)

    with tempfile.TemporaryDirectory(prefix="devkit-out-") as tmp:
        out = Path(tmp)
        inputs = [options.inference_dir] if options.inference_dir else []
        sdk_settings = project.config.sdk
        inputs += sdk_mounts(sdk_settings, recipe)  # a missing SDK directory is named before any image is made
        place: BuildPlace = build_place(options.runner, recipe, project, out, log, inputs)
        runner: Runner = place.runner
        sdk = provide_sdk(sdk_settings, recipe, runner, place.cache, log) if sdk_settings else None
        cross = not place.machine_recipe.matches(recipe.name)
        argv = [
            runner.python,
            runner.path(PAYLOAD),
            "--project",
            runner.path(project.root),
            "--out",
            runner.path(out),
            "--cache",
            runner.path(place.cache),
            "--env-key",
            runner.key,
            "--build-dir",
            build_dir,
            "--target",
            recipe.name,
            "--framework",
            framework.name,
            "--source",
            framework.source_dir,
            "--runtime-version",
            version or "",
            "--index-url",
            index_url,
        ]
        if not (cross or device_only or framework.unpacked_runtime) and runner.key == "host":
            # The reference env verify clones holds the same runtime: one install serves both.
            reference = _reference_and_tools(runner, argv, version or "", log, framework)
            argv += ["--runtime-root", runner.path(site_package(reference, framework.package))]
        if cross:
            argv += ["--toolchain-file", runner.path(write_toolchain_file(recipe, project.root / "build"))]
        if not device_only and (cross or framework.unpacked_runtime):
            argv += ["--runtime-platform", framework.wheel_platform(recipe)]
        if cross and not device_only:
            argv += ["--wheel-tag", recipe.wheel_tag]
        if device_only:
            argv += ["--device-only", "--bundle-name", device_bundle_name(project, recipe)]
        what = "device library" if device_only else f"{framework.name} plugin wheel ({framework.name} {version})"
        output = runner.run(
            Step(
                title=f"build {project.name} {what} for {recipe.name}"
                + (" (cross)" if cross else "")
                + (" with ON_INFER" if options.infer else ""),
                argv=argv,
                log=log,
                cwd=Path(runner.path(project.root)),
                env={
                    "CCACHE_DIR": runner.path(place.cache / "ccache"),
                    # Paths below the project are hashed as relative ones, so a second checkout or a new
                    # project rendered from the same templates compiles from the cache (measured: a cold
                    # build of a second project 32 s -> 2.6 s).
                    "CCACHE_BASEDIR": runner.path(project.root),
                    "ON_INFER": "ON" if options.infer else "OFF",
                    "CCACHE_DISABLE": os.environ.get("CCACHE_DISABLE"),  # honoured in containers too
                    "PADDLE_INFERENCE_DIR": runner.path(options.inference_dir) if options.inference_dir else "",
                    **(sdk.build_env(runner) if sdk else {}),
                },
            )
        )
        artifacts = [p for p in out.iterdir() if p.is_file()]
        if len(artifacts) != 1:
            raise DevkitError(f"the build produced {len(artifacts)} artifacts, expected 1", "inspect the log", log=log)
        artifact = artifacts[0]
        platform = sdist = None
        if device_only:
            check_device_bundle(artifact, recipe)
        elif torch_root is not None:
            require_torch_abi(artifact, recipe, version or "", torch_root, sdk.exports() if sdk else None)
            artifact, platform = tag_manylinux(
                artifact, out / "tagged", *torch_framework(torch_root), log, *(sdk.wheel_rules() if sdk else ())
            )
            if sdk:
                record_sdk_in_wheel(artifact, sdk.settings)
            check_torch_wheel(artifact, recipe, version or "", wheel_prefix)
            err.print(f"[green]✓[/] {platform.summary()}")
        else:
            version = version or ""
            paddle_root = paddle_root_for(recipe, version)  # once: a cached target wheel is re-hashed on each lookup
            require_abi(artifact, recipe, version, paddle_root, sdk.exports() if sdk else None)
            artifact, platform = tag_manylinux(
                artifact, out / "tagged", *paddle_framework(paddle_root), log, *(sdk.wheel_rules() if sdk else ())
            )
            if sdk:
                record_sdk_in_wheel(artifact, sdk.settings)
            check_plugin_wheel(artifact, recipe, version)
            err.print(f"[green]✓[/] {platform.summary()}")
            if options.sdist:
                sdist = build_sdist(project.root, out / "sdist", version, log)
            check_index_ready([artifact, *([sdist] if sdist else [])], log)
        final = publish_file(artifact, project.dist_dir)
        if sdist:
            sdist = publish_file(sdist, project.dist_dir)
    bundle = None
    if options.infer:
        bundle = make_inference_bundle(
            project,
            recipe,
            project.root / build_dir,
            None if device_only else final,
            final if device_only else None,
            version,
        )
    return BuildResult(
        artifact=final,
        kind="device-bundle" if device_only else "wheel",
        arch=recipe.name,
        framework=framework.name,
        runtime_version=version,
        seconds=time.monotonic() - start,
        compiled_files=len(_COMPILE_LINE.findall(output)),
        log=log,
        runner=runner.name,
        bundle=bundle,
        platform=platform,
        sdist=sdist,
    )


def _reference_and_tools(runner: Runner, argv: list[str], version: str, log: Path, framework: Framework) -> Path:
    """The host's reference env (the runtime, a ~200 MB pip install) and the payload's build tools
    env (CMake, ninja, scikit-build-core), made side by side on first use: both mostly wait on
    downloads and unpacking (measured: 26.5 s and 8.5 s one after the other)."""
    tools = Step(title="build tools environment", argv=[*argv, "--tools-only"], log=log)
    with ThreadPoolExecutor(max_workers=1) as pool:
        made = pool.submit(runner.run, tools)  # a worker thread: no live display of its own
        reference = reference_env(runner, version, log.with_name(log.stem + "-reference-env.log"), framework)
        made.result()
    assert reference is not None  # the host runner always sees its reference envs
    return reference


def _framework_suffix(framework: Framework) -> str:
    """Paddle's build trees, logs and locks keep their names; other frameworks' are suffixed."""
    return "" if framework is PADDLE else f"-{framework.name}"


def check_device_bundle(archive: Path, recipe: Recipe) -> None:
    """Every binary in a device bundle is built for the target."""
    with tar_archive(archive, "device bundle", "rebuild it with devkit build --clean") as tar:
        members = [m for m in tar.getmembers() if m.isfile() and "/tests/" in m.name]
        if not members:
            raise DevkitError(f"{archive.name} holds no test binaries", "check the device library build log")
        for member in members:
            data = tar.extractfile(member).read()  # type: ignore[union-attr]
            check_elf_bytes(data, f"{archive.name}:{member.name}", recipe)
