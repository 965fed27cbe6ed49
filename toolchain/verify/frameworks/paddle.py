"""The Paddle plugin's verification: `devkit verify` (training: the plugin checks and a model
trained on the device vs CPU, with the fallback report; --infer and --quant, the modes only Paddle
has; --distributed), `test-ops` (its op cases vs Paddle CPU, golden data recorded with Paddle CPU,
or the device library against golden data) and `check-kernels`."""

from __future__ import annotations

import json
import shutil
from dataclasses import asdict
from pathlib import Path

from ...building.bundles import bundle_name as inference_bundle_name
from ...building.options import resolve_runtime_version
from ...building.plugin import device_bundle_path
from ...project.config import TRAIN_MODELS, Tolerances
from ...project.frameworks import DEFAULT_MODEL, PADDLE
from ...project.project import Project
from ...project.recipes import Recipe
from ...run.envs import create_env
from ...run.select import host_recipe, verify_runner
from ...run.step import Step
from ...util.errors import InputError, VerificationFailure
from ...util.fsutil import staging_dir
from ...util.resources import payload_env, payload_script
from ..cpu_reference import CpuReference, cpu_reference
from ..distributed import run_distributed_verify
from ..framework_src import SourceTests, run_source_tests
from ..ops import OpsRequest, OpsResult, parse_selection, publish_session_report, run_golden
from ..outputs import GoldenOutput, PaddleKernelsOutput
from ..session import (
    DEVICE_TRACE,
    KernelCheck,
    VerifyOptions,
    VerifyResult,
    fresh_log,
    plugin_session,
    wheel_to_check,
    work_dir,
)
from ..verify_modes import ModeRun, VerifyMode
from .paddle_infer import InferOptions, run_infer_verify

PAYLOAD = payload_script("paddle", "plugin_checks")
FALLBACK_PAYLOAD = payload_script("paddle", "fallback_report")
OPS_PAYLOAD = payload_script("paddle", "op_tests")
DISTRIBUTED_PAYLOAD = payload_script("paddle", "paddle_distributed")
# --framework-src: the OpTests of Paddle's test/legacy_test
SOURCE_TESTS = SourceTests(
    payload_script("paddle", "paddle_src_tests"), "test/legacy_test", ("pytest>=8",), "Paddle's legacy_test OpTests"
)


def run_verify(wheel: Path, options: VerifyOptions, report_dir: Path) -> VerifyResult:
    if options.model not in TRAIN_MODELS:
        raise InputError(f"unknown model {options.model!r}", f"use --model {' | '.join(TRAIN_MODELS)}")
    options.require_training_steps()
    from ..datasets import load_dataset  # (NumPy, for the commands that train only)

    dataset = load_dataset(options.data_dir)
    battery = options.model != DEFAULT_MODEL
    with plugin_session(wheel, options, report_dir, conformance=True) as session:
        data = session.runner.path(session.work / "data.npz")
        dataset.save(session.work / "data.npz")
        fallback_env = {**options.check_env, "FLAGS_enable_api_kernel_fallback": "1"}
        amp = ["--amp", options.amp] if options.amp else []
        if battery:
            # First with CPU fallback on (Paddle's default): which kernels the model runs on the device and which
            # fall back; then the checks, which train it with fallback off.
            fallback = session.run_check(
                f"fallback report ({options.model}) on {options.recipe.name}",
                FALLBACK_PAYLOAD,
                ["--data", data, "--model", options.model, *amp],
                "fallback.json",
                env=fallback_env,
            )
        reference = CpuReference((), None) if battery else cpu_reference(options, dataset, session)
        report = session.run_report(
            f"checks on {options.recipe.name} ({options.steps} {options.model} steps)",
            PAYLOAD,
            ["--data", data, "--steps", str(options.steps), "--model", options.model, *amp]
            + (["--profile", DEVICE_TRACE] if options.profile else [])
            + list(reference.argv),
            "report.json",
        )
        reference.keep(report)
        session.keep(DEVICE_TRACE)
        if battery:
            report = report.merged([fallback], before=options.model)
        elif report.device:
            # With CPU fallback on (Paddle's default): which kernels the model ran on the device, which on CPU.
            fallback = session.run_check(
                f"fallback report on {options.recipe.name}",
                FALLBACK_PAYLOAD,
                ["--data", data, *amp],
                "fallback.json",
                device=report.device,
                env=fallback_env,
            )
            report = report.merged([fallback])
    return session.finish(report)


def run_check_kernels(wheel: Path, options: VerifyOptions, report_dir: Path) -> VerifyResult:
    """Load the plugin into its pinned Paddle and compare every kernel's signature with Paddle's."""
    with plugin_session(wheel, options, report_dir) as session:
        report = session.run_report(
            f"kernel signatures on {options.recipe.name}", PAYLOAD, ["--only", "kernel-signatures"], "report.json"
        )
    return session.finish(report)


def check_kernels(wheel: Path, options: VerifyOptions, report_dir: Path) -> KernelCheck:
    result = run_check_kernels(wheel, options, report_dir)
    signatures = result.report.kernel_signatures()
    # (None when the payload stopped before comparing: its first failed check says why)
    detail = signatures["detail"] if signatures else next((c.detail for c in result.report.failed), "no checks ran")
    mismatched = signatures.get("mismatched", []) if signatures else []
    return KernelCheck(
        result,
        PaddleKernelsOutput(
            passed=result.passed,
            report=result.report_path,
            detail=detail,
            mismatched=[str(m) for m in mismatched],
            kernels=len(signatures.get("kernels", {})) if signatures else 0,
        ),
        [(True, detail)] if result.passed else [],
        f"kernel signatures differ from Paddle {result.report.runtime_version}: " + ("; ".join(mismatched) or detail),
        "update each named kernel to the declaration in paddle/phi/kernels/ of that Paddle "
        "and rebuild (the build's signature checks then hold)",
    )


def test_ops(r: OpsRequest) -> tuple[OpsResult, str]:
    """Paddle's op cases vs Paddle CPU, or the device library against golden data."""
    if r.all_ops:
        raise InputError("--all selects torch OpInfos", "drop --all, or pass --framework torch")
    ops, dtypes = parse_selection(r)
    if r.timeout is not None and r.framework_src is None:
        raise InputError(
            "--timeout bounds torch's suite cases and --framework-src test files; Paddle's op cases run in one process",
            "drop --timeout, or add --framework-src DIR",
        )
    if r.golden:
        if r.project is None:
            raise InputError("--golden checks a project's device library bundle", "pass the project directory")
        return run_golden(device_bundle_path(r.project, r.recipe), r.golden, r.options, r.report_dir), "golden"
    if r.options.framework.version(r.recipe) is None:
        raise InputError(
            f"{r.recipe.name} has no Paddle runtime to compare with",
            f"record golden data on x86_64 (--gen-golden DIR) and check with --arch {r.recipe.name} --golden DIR",
        )
    wheel = wheel_to_check(r.project, r.wheel, r.recipe, r.options.framework)
    if r.framework_src is not None:  # the tree's op tests instead of devkit's op cases
        return run_source_tests(r, wheel, r.options, SOURCE_TESTS, lambda session: r.options.check_env), "framework-src"
    return run_test_ops(wheel, r.options, ops, list(dtypes or PADDLE.op_dtypes), r.report_dir), "ops"


def golden_version(requested: str | None) -> str:
    """The Paddle that records golden data on this machine: --paddle-version, else the host's pin."""
    version = resolve_runtime_version(host_recipe(), requested, PADDLE)
    if version is None:
        raise InputError(
            f"{host_recipe().name} has no Paddle runtime to record golden data with",
            "record golden data on a machine with a Paddle runtime (x86_64)",
        )
    return version


def run_test_ops(wheel: Path, options: VerifyOptions, ops: str, dtypes: list[str], report_dir: Path) -> OpsResult:
    with plugin_session(wheel, options, report_dir) as session:
        report = session.run_json(
            f"op tests on {options.recipe.name}", OPS_PAYLOAD, ["--ops", ops, "--dtypes", ",".join(dtypes)], "ops.json"
        )
    reference = f"Paddle {report.get('paddle_version')} CPU"
    return publish_session_report({**report, "mode": "plugin", "reference": reference}, wheel, options, session)


def gen_golden(out_dir: Path, paddle_version: str, runner_choice: str, log_dir: Path) -> GoldenOutput:
    """Record golden data with Paddle CPU on this machine; out_dir appears only when complete."""
    recipe = host_recipe()
    log = fresh_log(log_dir)
    with work_dir() as work, staging_dir(out_dir.resolve(), replace=True) as stage:
        runner = verify_runner(runner_choice, recipe, work, [], log)
        python = create_env(
            runner,
            work / "venv",
            [f"paddlepaddle=={paddle_version}"],
            f"Paddle CPU environment (paddlepaddle {paddle_version})",
            log,
        )
        runner.run(
            Step(
                title=f"record golden data with Paddle {paddle_version} CPU",
                log=log,
                argv=[
                    python,
                    runner.path(OPS_PAYLOAD),
                    "--gen-golden",
                    runner.path(work / "golden"),
                    "--out",
                    runner.path(work / "golden.json"),
                ],
                env={**payload_env(runner.path), "DEVKIT_TOLERANCES": json.dumps(asdict(Tolerances()))},
                fails_as=VerificationFailure,
            )
        )
        summary = json.loads((work / "golden.json").read_text())
        for item in (work / "golden").iterdir():
            shutil.move(str(item), stage / item.name)
    return GoldenOutput(str(out_dir.resolve()), recipe.name, int(summary["cases"]), str(summary["paddle_version"]))


# ---- the modes only Paddle has: inference (paddle.inference), and quantized inference


def _inference_bundle(project: Project | None, recipe: Recipe) -> Path | None:
    if project is None:
        return None
    path = project.dist_dir / f"{inference_bundle_name(project, recipe)}.tar.gz"
    return path if path.is_file() else None


def _has_runtime(run: ModeRun) -> None:
    if run.framework.version(run.recipe) is None:
        raise InputError(
            f"{run.recipe.name} has no Paddle runtime, so there is no inference to verify",
            f"run `devkit verify PROJECT --arch {run.recipe.name}` for its device library tests",
        )


def _run_inference(run: ModeRun) -> VerifyResult:
    request, settings = run.request, run.config.verify
    return run_infer_verify(
        wheel_to_check(run.project, run.wheel, run.recipe, run.framework),
        run.options,
        InferOptions(
            models=(request.model,) if request.model else settings.infer_models,
            model_dir=request.model_dir.resolve() if request.model_dir else None,
            warmup=settings.warmup if request.warmup is None else request.warmup,
            repeats=settings.repeats if request.repeats is None else request.repeats,
            inference_dir=request.inference_dir.resolve() if request.inference_dir else None,
            bundle=_inference_bundle(run.project, run.recipe),
            quant=request.quant,
        ),
        run.report_dir,
    )


INFER = VerifyMode(
    "infer",
    "--infer",
    purpose="verifies Paddle Inference",
    lacks="inference mode",
    scope="is one process on one device",
    requested=lambda request: request.infer,
    excludes=("distributed",),
    validate=_has_runtime,
    suffix=lambda request: "-infer",
    run=_run_inference,
)

QUANT_DTYPES = ("int8",)


def _quant_dtype(run: ModeRun) -> None:
    if run.request.quant not in QUANT_DTYPES:
        raise InputError(f"--quant {run.request.quant!r} is not a quantization devkit verifies", "use --quant int8")


QUANT = VerifyMode(
    "quant",
    "--quant",
    purpose="verifies quantized inference with Paddle Inference",
    lacks="quantized inference",
    scope="checks inference on one device",
    requested=lambda request: bool(request.quant),
    requires=("infer",),
    excludes=("distributed", "amp"),
    validate=_quant_dtype,
    suffix=lambda request: f"-{request.quant}",
)


class PaddleVerify:
    """The Paddle plugin's verify adapter (frameworks.VerifyAdapter)."""

    modes = ("profile", "amp", "quant", "infer", "distributed")

    def train(self, wheel: Path, options: VerifyOptions, report_dir: Path) -> VerifyResult:
        return run_verify(wheel, options, report_dir)

    def distributed(self, wheel: Path, options: VerifyOptions, report_dir: Path, ranks: int) -> VerifyResult:
        return run_distributed_verify(
            wheel, options, report_dir, ranks, DISTRIBUTED_PAYLOAD, lambda session: options.check_env
        )

    def test_ops(self, request: OpsRequest) -> tuple[OpsResult, str]:
        return test_ops(request)

    def check_kernels(self, wheel: Path, options: VerifyOptions, report_dir: Path) -> KernelCheck:
        return check_kernels(wheel, options, report_dir)
