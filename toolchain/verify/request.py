"""What `devkit verify` runs for a target, with flags over [tool.devkit] over defaults.

Shared by the `verify` command and `devkit matrix run` (the CI job's command).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..building.adapters import BUILD_ADAPTERS
from ..building.bundles import bundle_name as inference_bundle_name
from ..building.plugin import device_bundle_path
from ..project.config import DevkitConfig
from ..project.frameworks import DEFAULT_FRAMEWORK, DEFAULT_MODEL, FRAMEWORKS, Framework, find_framework
from ..project.project import Project
from ..project.recipes import Recipe
from ..run.select import host_recipe
from ..util.console import err
from ..util.errors import InputError
from .adapters import verify_adapter
from .device import run_device_tests
from .distributed import check_request as check_distributed_request
from .distributed import run_distributed_verify
from .infer import InferOptions, run_infer_verify
from .modes import CHECK_MODES, DeviceModes
from .session import VerifyOptions, VerifyResult, wheel_to_check


@dataclass(frozen=True)
class VerifyRequest:
    """Command-line values; None means "from [tool.devkit]"."""

    model: str | None = None
    steps: int | None = None
    data: Path | None = None
    runner: str | None = None
    model_dir: Path | None = None
    warmup: int | None = None
    repeats: int | None = None
    inference_dir: Path | None = None
    framework: str | None = None  # --framework; None: the project's first, or what a bare wheel is
    modes: DeviceModes = CHECK_MODES  # --modes
    distributed: int = 0  # --distributed N: data parallel on N devices in N processes
    amp: str = ""  # --amp LEVEL: train under mixed precision
    quant: str = ""  # --quant DTYPE: quantized inference
    compile: bool = False  # --compile: torch.compile (Inductor) on the device
    profile: bool = False  # --profile: the framework's profiler over a training step: the device trace


def _inference_bundle(project: Project | None, recipe: Recipe) -> Path | None:
    if project is None:
        return None
    path = project.dist_dir / f"{inference_bundle_name(project, recipe)}.tar.gz"
    return path if path.is_file() else None


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
        index_url=config.torch.index_url,
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


def run_verification(
    project: Project | None,
    wheel: Path | None,
    recipe: Recipe,
    request: VerifyRequest,
    infer: bool,
    report_dir: Path | None,
) -> VerifyResult:
    config = project_config(project)
    framework = framework_for(project, wheel, request.framework)
    _check_amp(request, framework, infer)
    _check_quant(request, framework, infer)
    _check_compile(request, framework, infer, recipe)
    _check_profile(request, infer)
    suffix = (
        framework.tree_suffix
        + ("-distributed" if request.distributed else "")
        + (f"-amp-{request.amp}" if request.amp else "")
        + (f"-{request.quant}" if request.quant else "")
        + ("-compile" if request.compile else "")
    )
    if project is not None:
        report_dir = report_dir or reports_root(project) / f"verify-{recipe.name}{suffix}{'-infer' if infer else ''}"
    report_dir = (report_dir or reports_root(None) / f"verify-{recipe.name}{suffix}").resolve()
    native = host_recipe().matches(recipe.name)
    steps = request.steps or (config.verify.steps if native else config.verify.emulated_steps)
    options = verify_options(
        project,
        recipe,
        request.runner,
        framework,
        model=request.model or _default_model(config.verify.train_model, framework),
        steps=steps,
        data_dir=request.data,
        modes=request.modes,
        amp=request.amp,
        compile=request.compile,
        profile=request.profile,
    )
    if request.distributed:
        check_distributed_request(request.distributed, options, infer)
        wheel = wheel_to_check(project, wheel, recipe, framework)
        return run_distributed_verify(wheel, options, report_dir, request.distributed)
    if infer and "infer" not in framework.modes:
        raise InputError(
            f"--infer verifies Paddle Inference; the {framework.label} adapter has no inference mode",
            "drop --infer, or use --framework paddle",
        )
    if framework.version(recipe) is None:
        if infer:
            raise InputError(
                f"{recipe.name} has no Paddle runtime, so there is no inference to verify",
                f"run `devkit verify PROJECT --arch {recipe.name}` for its device library tests",
            )
        return _device_tests(project, recipe, options, report_dir, framework)
    if infer:
        models = (request.model,) if request.model else config.verify.infer_models
        inference_dir = request.inference_dir.resolve() if request.inference_dir else None
        return run_infer_verify(
            wheel_to_check(project, wheel, recipe),
            options,
            InferOptions(
                models=models,
                model_dir=request.model_dir.resolve() if request.model_dir else None,
                warmup=config.verify.warmup if request.warmup is None else request.warmup,
                repeats=config.verify.repeats if request.repeats is None else request.repeats,
                inference_dir=inference_dir,
                bundle=_inference_bundle(project, recipe),
                quant=request.quant,
            ),
            report_dir,
        )
    return verify_adapter(framework).train(wheel_to_check(project, wheel, recipe, framework), options, report_dir)


def _check_amp(request: VerifyRequest, framework: Framework, infer: bool) -> None:
    """--amp LEVEL: a level of the framework's, for training one of its models on one device."""
    if not request.amp:
        return
    if not framework.amp_levels:
        raise InputError(f"--amp is not yet verified for {framework.label}", "drop --amp, or use --framework paddle")
    if request.amp not in framework.amp_levels:
        raise InputError(
            f"--amp {request.amp!r} is not a {framework.label} mixed-precision level",
            f"use --amp {' | '.join(framework.amp_levels)}",
        )
    if infer or request.distributed:
        raise InputError("--amp trains a model on one device", "drop --infer and --distributed (or --amp)")


QUANT_DTYPES = ("int8",)


def _check_quant(request: VerifyRequest, framework: Framework, infer: bool) -> None:
    """--quant DTYPE: quantized inference (Paddle)."""
    if not request.quant:
        return
    if request.quant not in QUANT_DTYPES:
        raise InputError(f"--quant {request.quant!r} is not a quantization devkit verifies", "use --quant int8")
    if not infer or "infer" not in framework.modes:
        raise InputError(
            "--quant verifies quantized inference with Paddle Inference", "add --infer (with --framework paddle)"
        )
    if request.distributed or request.amp:
        raise InputError("--quant checks inference on one device", "drop --distributed and --amp (or --quant)")


def _check_profile(request: VerifyRequest, infer: bool) -> None:
    """--profile: a training step of one process, profiled beside the default checks."""
    if request.profile and (infer or request.distributed or request.compile):
        other = "--infer" if infer else "--distributed" if request.distributed else "--compile"
        raise InputError(
            f"--profile traces a training step of one process; {other} checks something else",
            f"run `devkit verify --profile` and `devkit verify {other}` separately",
        )


def _check_compile(request: VerifyRequest, framework: Framework, infer: bool, recipe: Recipe) -> None:
    """--compile: torch.compile's default backend on one process's devices, where the target's
    torch has the seam the adapter targets."""
    if not request.compile:
        return
    if not framework.compiler_seam:
        raise InputError(
            f"--compile checks torch.compile; the {framework.label} adapter has no compiler backend",
            "use --framework torch, or drop --compile",
        )
    if infer or request.distributed or request.amp or (request.model or DEFAULT_MODEL) != DEFAULT_MODEL:
        raise InputError(
            "--compile checks compiled models of its own on one process",
            "drop --infer, --distributed, --amp and --model",
        )
    version = framework.version(recipe)
    if version is not None and ".".join(version.split(".")[:2]) not in framework.compiler_seam:
        raise InputError(
            f"--compile: the device's Inductor backend needs torch {' or '.join(framework.compiler_seam)} (the seam the "
            f"adapter is written for), and the {recipe.name} reference is torch {version}",
            f"verify --compile on a target with torch {framework.compiler_seam[-1]}; on {recipe.name} compile with "
            'torch.compile(model, backend="aot_eager")',
        )


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
