"""`devkit build`: compile a backend project for one target.

The same payload (payload/build_plugin.py) runs on the host or in the builder
container. A build is decided where it runs once (placement.py), then goes in three steps:
`prepare_build` (the log, the stale artifacts), `execute_build` (the SDK provided, the plan run)
and `check_and_publish` (the artifacts checked, tagged and published to PROJECT/dist/).
"""

from __future__ import annotations

import re
import shutil
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from ..project.frameworks import Framework
from ..project.project import Project
from ..project.recipes import Recipe
from ..run.envs import reference_env_for_build, site_package
from ..run.step import Step
from ..util.archives import tar_archive
from ..util.console import err
from ..util.errors import BuildFailure, EnvironmentProblem
from ..util.fsutil import exclusive_lock, publish_file
from .artifacts import check_elf_bytes
from .bundles import bundle_name as inference_bundle_name
from .bundles import make_inference_bundle
from .cmake_toolchain import write_toolchain_file
from .frameworks import build_adapter
from .manylinux import PlatformReport, tag_manylinux
from .options import BuildOptions
from .placement import BuildPlace, Placement, build_place, resolve_placement
from .plan import BuildPlan, build_log, plan_build
from .publish import build_sdist, check_index_ready
from .sdk import ProvidedSdk, provide_sdk, record_sdk_in_wheel

_COMPILE_LINE = re.compile(r"Building (C|CXX) object")


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


def device_bundle_name(project: Project, recipe: Recipe) -> str:
    return f"{project.distribution}-device-{project.version}-{recipe.name}"


def device_bundle_path(project: Project, recipe: Recipe) -> Path:
    """Where `devkit build` puts the device library bundle (the library, its conformance suite and
    golden checker): a target's only artifact without a framework runtime, else beside the wheel."""
    return project.dist_dir / f"{device_bundle_name(project, recipe)}.tar.gz"


def build(project: Project, options: BuildOptions) -> BuildResult:
    """Build one target; a second devkit building the same target of the project waits its turn,
    so dist/ never holds a mix of two builds."""
    # Where it runs is decided first, once (the engine answers once per process): a missing engine,
    # like an SDK or a torch that cannot be had, is a one-line error before anything is written to
    # the project. torch: the target's wheel is fetched by the host into the build's cache.
    placement = resolve_placement(project, options)
    prefetched = None
    if options.runtime_version:
        prefetched = build_adapter(options.framework).prefetch_runtime(
            placement.cache, options.recipe, options.runtime_version, options.index_url
        )
    lock = project.root / "build" / f".devkit-{options.recipe.name}{options.framework.tree_suffix}.lock"
    with exclusive_lock(
        lock,
        lambda holder: err.print(
            f"[yellow]![/] another devkit build of {project.name} for {options.recipe.name} is running ({holder}); "
            "waiting for it to finish"
        ),
    ):
        return _build(project, options, placement, prefetched)


def _build(project: Project, options: BuildOptions, placement: Placement, prefetched: Path | None) -> BuildResult:
    start = time.monotonic()
    log = prepare_build(project, options)
    with tempfile.TemporaryDirectory(prefix="devkit-out-") as tmp:
        out = Path(tmp)
        place = build_place(placement, options.recipe, project, out, log)
        executed = execute_build(project, options, placement, place, out)
        published = check_and_publish(project, options, executed, out, prefetched)
    bundle = None
    if options.infer:
        wheel = None if executed.plan.device_only else published.artifact
        device_bundle = published.artifact if executed.plan.device_only else None
        build_tree = project.root / executed.plan.build_dir
        bundle = make_inference_bundle(
            project, options.recipe, build_tree, wheel, device_bundle, options.runtime_version, log
        )
    return BuildResult(
        artifact=published.artifact,
        kind="device-bundle" if executed.plan.device_only else "wheel",
        arch=options.recipe.name,
        framework=options.framework.name,
        runtime_version=options.runtime_version,
        seconds=time.monotonic() - start,
        compiled_files=len(_COMPILE_LINE.findall(executed.output)),
        log=log,
        runner=place.runner.name,
        device_bundle=device_bundle_path(project, options.recipe),
        bundle=bundle,
        platform=published.platform,
        sdist=published.sdist,
        sdk=executed.sdk.report() if executed.sdk else None,
    )


def prepare_build(project: Project, options: BuildOptions) -> Path:
    """Before a build runs: its log emptied, and the artifacts of the target it replaces removed
    from dist/ (a failed build must not leave an older artifact looking like its result); the log."""
    recipe, framework = options.recipe, options.framework
    log = build_log(project, options)
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("")
    device_only = options.runtime_version is None
    if device_only:
        err.print(
            f"[yellow]![/] {framework.label} publishes no runtime for {recipe.name}: building the {project.name} "
            f"device library and its tests (no plugin wheel)"
        )
    for stale in project.dist_dir.glob(recipe.wheel_glob(project.wheel_prefix_of(framework))):
        stale.unlink()
    # (the device bundle of a plugin build stays: the other framework's wheel was built with it,
    # and this build replaces it when it succeeds)
    for stale in (
        *([device_bundle_path(project, recipe)] if device_only else []),
        project.dist_dir / f"{inference_bundle_name(project, recipe)}.tar.gz",
        *([project.dist_dir / f"{project.wheel_prefix}{project.version}.tar.gz"] if options.sdist else []),
    ):
        stale.unlink(missing_ok=True)
    return log


@dataclass(frozen=True)
class ExecutedBuild:
    plan: BuildPlan
    output: str  # what the build printed
    sdk: ProvidedSdk | None  # the vendor SDK it was compiled against


def execute_build(
    project: Project, options: BuildOptions, placement: Placement, place: BuildPlace, out: Path
) -> ExecutedBuild:
    """Run the build's plan where `place` says (its SDK provided there first), its artifacts written to `out`."""
    recipe, runner = options.recipe, place.runner
    settings, log = project.config.sdk, build_log(project, options)
    sdk = None
    if settings is not None:
        sdk = provide_sdk(settings, recipe, runner, place.cache, log, placement.sdk_source, placement.sdk_root)
    plan = plan_build(project, options, place, out, sdk, device_bundle_name(project, recipe))
    if options.clean:
        shutil.rmtree(project.root / plan.build_dir, ignore_errors=True)
    if plan.toolchain_file is not None:
        write_toolchain_file(recipe, plan.toolchain_file.parent)
    runtime_root = None
    if plan.reference_runtime:
        reference = _reference_and_tools(place, plan.step(), options.runtime_version or "", options.framework)
        runtime_root = runner.path(site_package(reference, options.framework.package))
    return ExecutedBuild(plan, runner.run(plan.step(runtime_root)), sdk)


@dataclass(frozen=True)
class PublishedBuild:
    artifact: Path  # in dist/: the wheel, or a target without a runtime's device bundle
    platform: PlatformReport | None = None  # the wheel's manylinux tag and glibc/libstdc++ floor
    sdist: Path | None = None


def check_and_publish(
    project: Project, options: BuildOptions, executed: ExecutedBuild, out: Path, prefetched: Path | None
) -> PublishedBuild:
    """Check what the build wrote to `out` (a device bundle built for the target, and a wheel
    that loads into the framework's runtime, tagged manylinux) and publish it to dist/."""
    recipe, plan, sdk = options.recipe, executed.plan, executed.sdk
    device_bundle = out / f"{device_bundle_name(project, recipe)}.tar.gz"
    artifacts = [p for p in out.iterdir() if p.is_file() and p != device_bundle]
    if not device_bundle.is_file() or len(artifacts) != (0 if plan.device_only else 1):
        raise BuildFailure(
            f"the build produced {', '.join(sorted(p.name for p in out.iterdir())) or 'nothing'}, expected "
            + ("a device bundle" if plan.device_only else "a wheel and a device bundle"),
            "inspect the log",
            log=plan.log,
        )
    check_device_bundle(device_bundle, recipe)
    if plan.device_only:
        return PublishedBuild(publish_file(device_bundle, project.dist_dir))
    version = options.runtime_version or ""
    adapter = build_adapter(options.framework)
    root = adapter.runtime_root(recipe, version, prefetched)
    wheel = artifacts[0]
    adapter.require_abi(wheel, recipe, version, root, sdk.exports() if sdk else None, plan.says_portability)
    wheel, platform = tag_manylinux(
        wheel, out / "tagged", *adapter.provided_libraries(root), plan.log, *(sdk.wheel_rules() if sdk else ())
    )
    if sdk:
        record_sdk_in_wheel(wheel, sdk.settings)
    adapter.check_wheel(wheel, recipe, version, project.wheel_prefix_of(options.framework))
    err.print(f"[green]✓[/] {platform.summary()}")
    sdist = build_sdist(project.root, out / "sdist", version, plan.log) if options.sdist else None
    check_index_ready([wheel, *([sdist] if sdist else [])], plan.log)
    final = publish_file(wheel, project.dist_dir)
    publish_file(device_bundle, project.dist_dir)
    return PublishedBuild(final, platform, publish_file(sdist, project.dist_dir) if sdist else None)


def _reference_and_tools(place: BuildPlace, build: Step, version: str, framework: Framework) -> Path:
    """The reference env (the runtime, a ~200 MB pip install) and the payload's build tools env
    (CMake, ninja, scikit-build-core), made side by side on first use: both mostly wait on
    downloads and unpacking (measured: 26.5 s and 8.5 s one after the other)."""
    log = build.log
    tools = Step("build tools environment", [*build.argv, "--tools-only"], log, fails_as=EnvironmentProblem)
    with ThreadPoolExecutor(max_workers=1) as pool:
        made = pool.submit(place.runner.run, tools)  # a worker thread: no live display of its own
        reference = reference_env_for_build(place.reference_runner(log), version, framework, log)
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
