"""`devkit verify`, `test-ops`, `check-kernels` and `check-abi`: checks of a built plugin."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, cast

import typer
from rich.markup import escape

from ..building.frameworks import build_adapter
from ..project.config import RunnerChoice, VerifySettings
from ..project.naming import switch_prefix
from ..project.project import is_project_dir, load_project
from ..util.console import err
from ..util.errors import BuildFailure, InputError, VerificationFailure
from ..verify.frameworks import verify_adapter
from ..verify.frameworks.paddle import gen_golden as record_golden
from ..verify.frameworks.paddle import golden_version
from ..verify.modes import MODES_HELP, DeviceModes
from ..verify.ops import (
    OpsRequest,
    describe_failures,
    expected_failures,
    judge_expected,
    parse_suites,
    with_op_suites,
)
from ..verify.outputs import (
    AbiFindingSummary,
    CheckAbiOutput,
    OpsMode,
    OpsOutput,
    Severity,
    VerifyOutput,
)
from ..verify.request import framework_for, project_config, reports_root, run_verification, verify_options
from ..verify.session import wheel_to_check
from ..verify.verify_modes import VerifyRequest
from . import views

if TYPE_CHECKING:
    from ..project.project import Project
    from ..project.recipes import Recipe
    from ..verify.ops import OpsResult

from .options import (
    ArchOpt,
    ArtifactProjectArg,
    FrameworkOpt,
    JsonOpt,
    PaddleInferenceDirOpt,
    PaddleVersionOpt,
    ReportDirOpt,
    RunnerOpt,
    WheelOpt,
    WithRuntimeVersions,
    emit_json,
    project_unless_wheel,
    runner_name,
    target_recipe,
)

_VERIFY = VerifySettings()  # the defaults the help states
_KNOWN_GAPS = (
    "; list a known gap with its reason in conformance/expected-failures.toml and remove what now passes "
    "(--update-expected does both)"
)


def verify(
    project_dir: ArtifactProjectArg = None,
    wheel: WheelOpt = None,
    arch: ArchOpt = None,
    framework: FrameworkOpt = None,
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            help="Model to train on the device vs CPU: mnist (LeNet), resnet_bn (ResNet-style CNN, BatchNorm training), transformer (tiny encoder: embedding, layer_norm, attention, gelu, dropout); with --infer, the model to run (default: [tool.devkit.verify]).",
        ),
    ] = None,
    steps: Annotated[
        int | None,
        typer.Option(
            "--steps", help=f"Training steps (default {_VERIFY.steps} native, {_VERIFY.emulated_steps} emulated)."
        ),
    ] = None,
    data: Annotated[Path | None, typer.Option("--data", help="Directory with MNIST idx files.")] = None,
    report_dir: ReportDirOpt = None,
    runner: RunnerOpt = None,
    infer: Annotated[
        bool, typer.Option("--infer", help="Verify inference (paddle.inference) instead of training.")
    ] = False,
    model_dir: Annotated[
        Path | None, typer.Option("--model-dir", help="With --infer: a user's exported model.")
    ] = None,
    warmup: Annotated[
        int | None, typer.Option("--warmup", help=f"With --infer: runs before timing (default {_VERIFY.warmup}).")
    ] = None,
    repeats: Annotated[
        int | None, typer.Option("--repeats", help=f"With --infer: timed runs (default {_VERIFY.repeats}).")
    ] = None,
    paddle_inference_dir: PaddleInferenceDirOpt = None,
    modes: Annotated[str, typer.Option("--modes", help=MODES_HELP)] = "",
    distributed: Annotated[
        int,
        typer.Option(
            "--distributed",
            metavar="N",
            help="Train data-parallel on N devices in N processes (the framework's launcher): every collective vs a "
            "CPU reference, LeNet vs one process on the whole batch, and a killed and a stalled rank.",
        ),
    ] = 0,
    amp: Annotated[
        str,
        typer.Option(
            "--amp",
            metavar="LEVEL",
            help="Train LeNet under mixed precision instead, vs the float32 CPU curve, with per-op dtypes and an "
            "overflowing step: Paddle O1 or O2 (auto_cast with a GradScaler, O2 with float32 master weights; "
            "float16, and bfloat16 through explicit casts); torch O1 (torch.autocast in float16 with "
            "torch.amp.GradScaler, and in bfloat16).",
        ),
    ] = "",
    quant: Annotated[
        str,
        typer.Option(
            "--quant",
            metavar="DTYPE",
            help="With --infer: int8 quantizes each model with Paddle's post-training quantization (QDQ, seeded "
            "calibration) and checks it at level 0 (the deployment: QDQ folded by the runtime's passes, every op "
            "on the device, vs Paddle CPU) and level 1 (simulated int8: QDQ kernels on the device vs Paddle CPU); "
            "a --model-dir must hold a quantized model.",
        ),
    ] = "",
    compile_: Annotated[
        bool,
        typer.Option(
            "--compile",
            help="Check torch.compile with its default backend (Inductor) on the device instead of training: an MLP "
            "and LeNet forward + training steps on the last card and its own stream vs eager and the CPU, eager -> "
            "compiled -> eager ordering, recompiles on new shapes, every kernel in the device's op trace "
            "(--framework torch).",
        ),
    ] = False,
    profile: Annotated[
        bool,
        typer.Option(
            "--profile",
            help="Also profile a LeNet training step with the framework's profiler (torch.profiler, paddle.profiler) "
            "and write its trace, device rows included, to device-trace.json beside the report (Chrome trace format: "
            "open it in Perfetto); checks that every device op of the step is in it, against the device's op dump.",
        ),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Install the wheel beside its reference framework (Paddle or torch) in a fresh env and check it on the device."""
    recipe = target_recipe(arch)
    project = project_unless_wheel(project_dir, wheel)
    request = VerifyRequest(
        model=model,
        steps=steps,
        data=data,
        runner=runner_name(runner),
        model_dir=model_dir,
        warmup=warmup,
        repeats=repeats,
        inference_dir=paddle_inference_dir,
        framework=framework,
        modes=DeviceModes.parse(modes),
        distributed=distributed,
        amp=amp,
        quant=quant,
        compile=compile_,
        profile=profile,
        infer=infer,
    )
    result = run_verification(project, wheel, recipe, request, infer, report_dir)
    if project is not None:  # the last test-ops run's suites, summarised in the report
        suffix = framework_for(project, wheel, framework).tree_suffix
        result = with_op_suites(result, reports_root(project) / f"test-ops-{recipe.name}{suffix}")
    if as_json:
        emit_json(
            VerifyOutput(
                passed=result.passed,
                report=result.report_path,
                plot=result.plot_path,
                checks=[c.summary() for c in result.report.checks],
            )
        )
    else:
        views.show_verify(result, recipe)
    if not result.passed:
        raise VerificationFailure(
            f"verification failed: {', '.join(c.name for c in result.report.failed)}", f"see {result.report_path}"
        )


def test_ops(
    project_dir: ArtifactProjectArg = None,
    wheel: WheelOpt = None,
    arch: ArchOpt = None,
    framework: FrameworkOpt = None,
    ops: Annotated[
        str,
        typer.Option(
            "--ops",
            help="Regular expression: cases whose name or kernels match (torch: comma-separated regular "
            "expressions, each matching whole OpInfo names, e.g. 'fft.hfft,nn.functional.conv2d').",
        ),
    ] = "",
    dtypes: Annotated[
        str,
        typer.Option(
            "--dtypes",
            help="Comma-separated dtypes to test (default: Paddle every dtype of its op cases; torch the device "
            "library's, every dtype with --all).",
        ),
    ] = "",
    gen_golden: Annotated[
        Path | None, typer.Option("--gen-golden", help="Record golden data with Paddle CPU into this directory.")
    ] = None,
    golden: Annotated[
        Path | None,
        typer.Option("--golden", help="Check the target's device library against golden data from --gen-golden."),
    ] = None,
    all_ops: Annotated[
        bool,
        typer.Option(
            "--all", help="torch: every OpInfo of torch's op_db (CPU fallback allowed), not only implemented ops."
        ),
    ] = False,
    suite: Annotated[
        str,
        typer.Option(
            "--suite",
            help="Comma-separated test databases to run: ops (Paddle: devkit's op cases; torch: OpInfo forward "
            "samples and their out=/in-place variants), and for torch grads (OpInfo gradients), modules "
            "(module_db) and optims (optim_db).",
        ),
    ] = "ops",
    framework_src: Annotated[
        Path | None,
        typer.Option(
            "--framework-src",
            help="A source tree of the framework (its test/ directory is read): run its own test files with the "
            "device as the test device (torch: the device-generic files under test/; Paddle: the OpTests of "
            "test/legacy_test), instead of the suites; --ops then searches the test files' paths.",
        ),
    ] = None,
    update_expected: Annotated[
        bool,
        typer.Option(
            "--update-expected",
            help="Rewrite the project's conformance/expected-failures.toml from this run's failures.",
        ),
    ] = False,
    timeout: Annotated[
        float | None,
        typer.Option(
            "--timeout",
            min=1,
            help="Seconds one case of torch's suites may take (default 120), or one test file of --framework-src "
            "(default 1800 torch, 600 Paddle); a case or file over it is reported as timed out and the run goes on.",
        ),
    ] = None,
    paddle_version: PaddleVersionOpt = None,
    report_dir: ReportDirOpt = None,
    runner: RunnerOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Every registered kernel vs Paddle CPU over shapes and dtypes (torch: torch's OpInfo samples vs torch CPU);
    or golden data for targets without Paddle."""
    if gen_golden and golden:
        raise InputError("--gen-golden and --golden exclude each other", "record on one machine, check on the target")
    if gen_golden:
        summary = record_golden(
            gen_golden,
            golden_version(paddle_version),
            _golden_runner(project_dir, runner),
            (report_dir or gen_golden.resolve().parent / f".{gen_golden.name}-log"),
        )
        if as_json:
            emit_json(summary)
        else:
            err.print(
                f"[green]✓[/] recorded {summary.cases} golden cases with Paddle {summary.paddle_version} "
                f"CPU into {summary.golden_dir}"
            )
        return
    recipe = target_recipe(arch)
    project = project_unless_wheel(project_dir, wheel)
    adapter = framework_for(project, wheel, framework)
    request = OpsRequest(
        project,
        wheel,
        recipe,
        verify_options(project, recipe, runner_name(runner), adapter),
        (
            report_dir
            or reports_root(project) / f"test-ops-{recipe.name}{adapter.tree_suffix}{'-golden' if golden else ''}"
        ).resolve(),
        golden,
        ops,
        dtypes,
        all_ops,
        parse_suites(suite, adapter),
        framework_src,
        update_expected,
        timeout,
    )
    expected = expected_failures(request)  # (a bad file is refused before the run)
    result, mode = verify_adapter(adapter).test_ops(request)
    result, update = judge_expected(result, expected, request)
    if update is not None:
        views.show_expected_update(update)
    _show_test_ops(result, recipe, mode, project, as_json)


def _golden_runner(project_dir: Path | None, runner: RunnerChoice | None) -> str:
    """--runner, else [tool.devkit] runner of the project (given, or the current directory when it
    is one); recording golden data needs no project, and without one the default runner records it."""
    if runner is None and (project_dir or is_project_dir(Path("."))):
        return load_project(project_dir or Path(".")).config.runner
    return runner_name(runner) or project_config(None).runner


def _show_test_ops(result: OpsResult, recipe: Recipe, mode: str, project: Project | None, as_json: bool) -> None:
    report, report_dir = result.report, result.report_dir
    if as_json:
        emit_json(
            OpsOutput(
                passed=report.passed,
                mode=cast(OpsMode, mode),
                counts=dict(report.counts),
                report=report_dir / "report.json",
                markdown=report_dir / "report.md",
                junit=report_dir / "junit.xml",
                failed=[f"{r.case} [{r.dtype}]" for r in result.failed],
                seconds=report.data.get("seconds"),
            )
        )
    else:
        views.show_test_ops(report, recipe, mode, report_dir)
    if not report.passed:
        prefix = switch_prefix(project.device_type) if project else "<DEVICE_TYPE>"
        raise VerificationFailure(
            f"{len(result.failed) or 'no'} op case(s) failed: {describe_failures(result) or 'no cases ran'}",
            f"see {report_dir / 'report.md'}; isolate a kernel with {prefix}_FALLBACK_OPS or {prefix}_AUTOCOMPARE=1"
            + (_KNOWN_GAPS if project else ""),
        )
    expected = report.counts.get("expected", 0)
    err.print("[green]✓[/] all op cases pass" + (f" but the {expected} expected failures" if expected else ""))


def check_kernels(
    project_dir: ArtifactProjectArg = None,
    wheel: WheelOpt = None,
    arch: ArchOpt = None,
    framework: FrameworkOpt = None,
    runner: RunnerOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Load the plugin into its framework and check each registered kernel's signature against the framework's."""
    recipe = target_recipe(arch)
    project = project_unless_wheel(project_dir, wheel)
    adapter = framework_for(project, wheel, framework)
    checked = verify_adapter(adapter).check_kernels(
        wheel_to_check(project, wheel, recipe, adapter),
        verify_options(project, recipe, runner_name(runner), adapter),
        (reports_root(project) / f"check-kernels-{recipe.name}{adapter.tree_suffix}").resolve(),
    )
    if as_json:
        emit_json(checked.summary)
    for passed, line in checked.lines:
        err.print(f"{'[green]✓' if passed else '[red]✗'}[/] {escape(line)}")
    if not checked.result.passed:
        raise VerificationFailure(checked.problem, checked.fix)


def _check_abi(
    path: Annotated[Path, typer.Argument(help="A plugin wheel or shared library.")],
    arch: ArchOpt = None,
    framework: FrameworkOpt = None,
    versions: dict[str, str | None] | None = None,
    as_json: JsonOpt = False,
) -> None:
    """Check, without loading it, that a plugin links, and matches the target's machine and framework."""
    recipe = target_recipe(arch)
    adapter = framework_for(None, path, framework)
    checks = build_adapter(adapter)
    is_wheel = path.suffix == ".whl" and path.is_file()
    requested = (versions or {}).get(adapter.name)
    version = requested or (checks.pinned_in(path) if is_wheel else None) or adapter.version(recipe)
    if not version:
        raise InputError(
            f"{recipe.name} has no {adapter.label} runtime to check against",
            f"pass --arch with a {adapter.label} runtime",
        )
    findings = checks.check_abi(path, recipe, version)
    errors = [f for f in findings if f.severity == "error"]
    if as_json:
        emit_json(
            CheckAbiOutput(
                path=path,
                arch=recipe.name,
                framework=adapter.name,
                versions={f"{adapter.name}_version": version},
                ok=not errors,
                findings=[AbiFindingSummary(f.library, f.problem, f.fix, cast(Severity, f.severity)) for f in findings],
            )
        )
    elif not errors:
        err.print(
            f"[green]✓[/] {path.name}: loads into {checks.label} {version} on {recipe.name} "
            f"(machine, symbols, {checks.abi_checks})"
        )
    for f in findings:
        err.print(f"{'[red]✗' if f.severity == 'error' else '[yellow]!'}[/] {escape(f.line())}", markup=True)
    if errors:
        raise BuildFailure(f"{len(errors)} ABI problem(s) in {path.name}: {errors[0].problem}", errors[0].fix)


check_abi = WithRuntimeVersions(_check_abi)
