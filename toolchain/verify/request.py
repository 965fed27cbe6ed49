"""What `devkit verify` runs for a target, with flags over [tool.devkit] over defaults.

Shared by the `verify` command and `devkit matrix run` (the CI job's command).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from ..building.frameworks import BUILD_ADAPTERS
from ..building.plugin import device_bundle_path
from ..project.config import DevkitConfig
from ..project.frameworks import DEFAULT_FRAMEWORK, FRAMEWORKS, Framework, find_framework
from ..project.project import Project
from ..project.recipes import Recipe
from ..run.select import host_recipe
from ..util.console import err
from ..util.errors import InputError
from .device import run_device_tests
from .frameworks import VERIFY_MODES, mode_support, verify_adapter
from .session import VerifyOptions, VerifyResult, wheel_to_check
from .verify_modes import ModeRun, VerifyRequest, check_modes

__all__ = [
    "VerifyRequest",
    "framework_for",
    "project_config",
    "reports_root",
    "run_verification",
    "verify_options",
    "verify_report_dir",
]


def project_config(project: Project | None) -> DevkitConfig:
    """The project's [tool.devkit], or the defaults when a bare wheel is checked."""
    return project.config if project else DevkitConfig(name="", device_type="")


def reports_root(project: Project | None) -> Path:
    return project.root / "reports" if project else Path("devkit-report")


def framework_for(project: Project | None, wheel: Path | None, requested: str | None) -> Framework:
    """--framework, checked against the project; else the project's first; else what the bare wheel is."""
    if project is not None:
        return project.framework(requested)
    if requested:
        return find_framework(requested)
    if wheel is not None and wheel.suffix == ".whl" and wheel.is_file():
        pinning = [name for name, adapter in BUILD_ADAPTERS.items() if adapter.pinned_in(wheel)]
        if pinning:
            return FRAMEWORKS[pinning[0]]
    return DEFAULT_FRAMEWORK  # what a wheel without a pin is checked as (and refused for)


def verify_options(
    project: Project | None, recipe: Recipe, runner: str | None, framework: Framework = DEFAULT_FRAMEWORK, **fields: Any
) -> VerifyOptions:
    """Options for running checks of `recipe`'s plugin: the command line's runner, else [tool.devkit]'s."""
    config = project_config(project)
    return VerifyOptions(
        recipe=recipe,
        framework=framework,
        index_url=config.index_url(framework),
        device_type=project.device_type if project else None,
        runner=runner or config.runner,
        tolerances=config.tolerances,
        sdk_runtime=config.sdk.runtime.get(recipe.name) if config.sdk else None,
        sdk_runtime_env=tuple(sorted(config.sdk.runtime_env.items())) if config.sdk else (),
        device_bundle=device_bundle_path(project, recipe) if project else None,
        **fields,
    )


def _default_model(configured: str, framework: Framework) -> str:
    """[tool.devkit.verify] train-model where the adapter trains it, else the adapter's first model."""
    return configured if configured in framework.train_models else framework.train_models[0]


def verify_report_dir(project: Project | None, recipe: Recipe, framework: Framework, request: VerifyRequest) -> Path:
    """reports/verify-<target><the framework's tree suffix><each requested mode's suffix, in the registry's order>."""
    suffix = framework.tree_suffix + "".join(mode.suffix(request) for mode in VERIFY_MODES if mode.requested(request))
    return reports_root(project) / f"verify-{recipe.name}{suffix}"


def run_verification(
    project: Project | None,
    wheel: Path | None,
    recipe: Recipe,
    request: VerifyRequest,
    infer: bool,
    report_dir: Path | None,
) -> VerifyResult:
    """The request's modes, checked in the registry's order, then the run of the mode that replaces
    training (--infer, --distributed), else the adapter's training run (the device library's tests
    where the target has no runtime). `infer`: --infer (the matrix's entries say it apart)."""
    request = replace(request, infer=request.infer or infer)
    config = project_config(project)
    framework = framework_for(project, wheel, request.framework)
    adapter = verify_adapter(framework)
    report_dir = (report_dir or verify_report_dir(project, recipe, framework, request)).resolve()
    native = host_recipe().matches(recipe.name)
    options = verify_options(
        project,
        recipe,
        request.runner,
        framework,
        model=request.model or _default_model(config.verify.train_model, framework),
        steps=request.steps or (config.verify.steps if native else config.verify.emulated_steps),
        data_dir=request.data,
        modes=request.modes,
        amp=request.amp,
        compile=request.compile,
        profile=request.profile,
    )
    run = ModeRun(project, wheel, recipe, request, framework, options, config, report_dir)
    replacing = [mode.run for mode in check_modes(run, VERIFY_MODES, mode_support()) if mode.run is not None]
    if replacing:
        return replacing[0](run)
    if framework.version(recipe) is None:
        return _device_tests(project, recipe, options, report_dir, framework)
    return adapter.train(wheel_to_check(project, wheel, recipe, framework), options, report_dir)


def _device_tests(
    project: Project | None, recipe: Recipe, options: VerifyOptions, report_dir: Path, framework: Framework
) -> VerifyResult:
    """A target without the framework's runtime: the device library's own tests, on the target."""
    if project is None:
        raise InputError(
            f"{recipe.name} has no {framework.label} runtime; its device tests come from a project",
            f"pass the project directory: devkit verify PROJECT --arch {recipe.name}",
        )
    err.print(
        f"[yellow]![/] {framework.label} publishes no runtime for {recipe.name}: running the device library's "
        f"tests on {recipe.name}"
    )
    return run_device_tests(device_bundle_path(project, recipe), options, report_dir)
