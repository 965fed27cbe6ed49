"""`devkit build`: compile a backend project for one target.

The same payload (payload/build_plugin.py) runs on the host or in the builder
container; this module decides what to build, runs it through a Runner, checks
the artifact and publishes it to PROJECT/dist/.
"""

from __future__ import annotations

import re
import shutil
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from packaging.version import InvalidVersion, Version

from ..building.artifacts import check_elf_bytes
from ..building.bundles import bundle_name as inference_bundle_name
from ..building.bundles import make_inference_bundle
from ..building.manylinux import PlatformReport, tag_manylinux
from ..building.publish import build_sdist, check_index_ready
from ..building.sdk import preflight_sdk, provide_sdk, record_sdk_in_wheel, sdk_mounts
from ..project.frameworks import DEFAULT_FRAMEWORK, Framework
from ..project.project import Project
from ..project.recipes import Recipe
from ..run.envs import reference_env_for_build, site_package
from ..run.select import BuildPlace, build_cache, build_place, use_container
from ..run.step import Runner, Step
from ..util.archives import sha256_file, tar_archive
from ..util.console import err
from ..util.errors import BuildFailure, EnvironmentProblem, InputError
from ..util.fsutil import exclusive_lock, publish_file
from .adapters import build_adapter
from .cmake_toolchain import write_toolchain_file
from .plan import build_log, plan_build

_COMPILE_LINE = re.compile(r"Building (C|CXX) object")


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
    device_bundle: Path  # the device library and its conformance suite (the artifact itself without a wheel)
    bundle: Path | None = None
    platform: PlatformReport | None = None  # the wheel's manylinux tag and glibc/libstdc++ floor
    sdist: Path | None = None
    sdk: dict[str, object] | None = None  # the vendor SDK provided (ProvidedSdk.report)

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
            "device_bundle": str(self.device_bundle),
            "inference_bundle": str(self.bundle) if self.bundle else None,
            "sha256": sha256_file(self.artifact),
            "inference_bundle_sha256": sha256_file(self.bundle) if self.bundle else None,
            "platform": self.platform.as_dict() if self.platform else None,
            "sdist": str(self.sdist) if self.sdist else None,
            "sdk": self.sdk,
            **({"wheel": str(self.artifact)} if self.kind == "wheel" else {}),
        }


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


def device_bundle_name(project: Project, recipe: Recipe) -> str:
    return f"{project.distribution}-device-{project.version}-{recipe.name}"


def device_bundle_path(project: Project, recipe: Recipe) -> Path:
    """Where `devkit build` puts the device library bundle (the library, its conformance suite and
    golden checker): a target's only artifact without a framework runtime, else beside the wheel."""
    return project.dist_dir / f"{device_bundle_name(project, recipe)}.tar.gz"


def build(project: Project, options: BuildOptions) -> BuildResult:
    """Build one target; a second devkit building the same target of the project waits its turn,
    so dist/ never holds a mix of two builds."""
    # Where it runs is asked first (the engine answers once per process): a missing engine, like
    # an SDK or a torch that cannot be had, is a one-line error before anything is written to the
    # project. torch: the target's wheel is fetched by the host into the build's cache.
    use_container(options.runner)
    preflight_sdk(project.config.sdk, options.recipe, options.runner)
    prefetched = None
    if options.runtime_version:
        prefetched = build_adapter(options.framework).prefetch_runtime(
            build_cache(options.runner), options.recipe, options.runtime_version, options.index_url
        )
    lock = project.root / "build" / f".devkit-{options.recipe.name}{options.framework.tree_suffix}.lock"
    with exclusive_lock(
        lock,
        lambda holder: err.print(
            f"[yellow]![/] another devkit build of {project.name} for {options.recipe.name} is running ({holder}); "
            "waiting for it to finish"
        ),
    ):
        return _build(project, options, prefetched)


def _build(project: Project, options: BuildOptions, prefetched: Path | None) -> BuildResult:
    recipe, framework, version = options.recipe, options.framework, options.runtime_version
    start = time.monotonic()
    log = build_log(project, options)
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
    # (the device bundle of a plugin build stays: the other framework's wheel was built with it,
    # and this build replaces it when it succeeds)
    for stale in (
        *([device_bundle_path(project, recipe)] if device_only else []),
        project.dist_dir / f"{inference_bundle_name(project, recipe)}.tar.gz",
        *([project.dist_dir / f"{project.wheel_prefix}{project.version}.tar.gz"] if options.sdist else []),
    ):
        stale.unlink(missing_ok=True)

    with tempfile.TemporaryDirectory(prefix="devkit-out-") as tmp:
        out = Path(tmp)
        inputs = [options.inference_dir] if options.inference_dir else []
        sdk_settings = project.config.sdk
        inputs += sdk_mounts(sdk_settings, recipe)  # a missing SDK directory is named before any image is made
        place: BuildPlace = build_place(options.runner, recipe, project, out, log, inputs)
        runner: Runner = place.runner
        sdk = provide_sdk(sdk_settings, recipe, runner, place.cache, log) if sdk_settings else None
        plan = plan_build(project, options, place, out, sdk, device_bundle_name(project, recipe))
        if options.clean:
            shutil.rmtree(project.root / plan.build_dir, ignore_errors=True)
        if plan.toolchain_file is not None:
            write_toolchain_file(recipe, plan.toolchain_file.parent)
        runtime_root = None
        if plan.reference_runtime:
            reference = _reference_and_tools(runner, plan.step(), version or "", framework)
            runtime_root = runner.path(site_package(reference, framework.package))
        output = runner.run(plan.step(runtime_root))
        device_bundle = out / f"{device_bundle_name(project, recipe)}.tar.gz"
        artifacts = [p for p in out.iterdir() if p.is_file() and p != device_bundle]
        if not device_bundle.is_file() or len(artifacts) != (0 if device_only else 1):
            raise BuildFailure(
                f"the build produced {', '.join(p.name for p in out.iterdir()) or 'nothing'}, expected "
                + ("a device bundle" if device_only else "a wheel and a device bundle"),
                "inspect the log",
                log=log,
            )
        check_device_bundle(device_bundle, recipe)
        artifact = device_bundle if device_only else artifacts[0]
        platform = sdist = None
        if not device_only:
            version = version or ""
            adapter = build_adapter(framework)
            root = adapter.runtime_root(recipe, version, prefetched)
            adapter.require_abi(artifact, recipe, version, root, sdk.exports() if sdk else None, plan.says_portability)
            artifact, platform = tag_manylinux(
                artifact, out / "tagged", *adapter.provided_libraries(root), log, *(sdk.wheel_rules() if sdk else ())
            )
            if sdk:
                record_sdk_in_wheel(artifact, sdk.settings)
            adapter.check_wheel(artifact, recipe, version, wheel_prefix)
            err.print(f"[green]✓[/] {platform.summary()}")
            if options.sdist:
                sdist = build_sdist(project.root, out / "sdist", version, log)
            check_index_ready([artifact, *([sdist] if sdist else [])], log)
        final = publish_file(artifact, project.dist_dir)
        if not device_only:
            publish_file(device_bundle, project.dist_dir)
        if sdist:
            sdist = publish_file(sdist, project.dist_dir)
    bundle = None
    if options.infer:
        bundle = make_inference_bundle(
            project,
            recipe,
            project.root / plan.build_dir,
            None if device_only else final,
            final if device_only else None,
            version,
            log,
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
        device_bundle=device_bundle_path(project, recipe),
        bundle=bundle,
        platform=platform,
        sdist=sdist,
        sdk=sdk.report() if sdk else None,
    )


def _reference_and_tools(runner: Runner, build: Step, version: str, framework: Framework) -> Path:
    """The host's reference env (the runtime, a ~200 MB pip install) and the payload's build tools
    env (CMake, ninja, scikit-build-core), made side by side on first use: both mostly wait on
    downloads and unpacking (measured: 26.5 s and 8.5 s one after the other)."""
    log = build.log
    tools = Step("build tools environment", [*build.argv, "--tools-only"], log, fails_as=EnvironmentProblem)
    with ThreadPoolExecutor(max_workers=1) as pool:
        made = pool.submit(runner.run, tools)  # a worker thread: no live display of its own
        reference = reference_env_for_build(runner, version, framework, log)
        made.result()
    return reference


def check_device_bundle(archive: Path, recipe: Recipe) -> None:
    """Every binary in a device bundle is built for the target."""
    with tar_archive(archive, "device bundle", "rebuild it with devkit build --clean") as tar:
        members = [m for m in tar.getmembers() if m.isfile() and "/tests/" in m.name]
        if not members:
            raise BuildFailure(f"{archive.name} holds no test binaries", "check the device library build log")
        for member in members:
            data = tar.extractfile(member).read()  # type: ignore[union-attr]
            check_elf_bytes(data, f"{archive.name}:{member.name}", recipe)
