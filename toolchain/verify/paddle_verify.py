"""The Paddle plugin's verification: `devkit verify` (training: the plugin checks and a model
trained on the device vs CPU, with the fallback report), `test-ops` (its op cases vs Paddle CPU,
or the device library against golden data) and `check-kernels`."""

from __future__ import annotations

from pathlib import Path

from ..building.plugin import device_bundle_path, resolve_runtime_version
from ..project.config import TRAIN_MODELS
from ..project.frameworks import DEFAULT_MODEL, PADDLE
from ..run.select import host_recipe
from ..util.errors import InputError
from ..util.resources import PAYLOAD_DIR
from .cpu_reference import native_cpu_reference
from .ops import OpsRequest, OpsResult, parse_selection, run_golden, run_test_ops
from .report import Check
from .session import DEVICE_TRACE, KernelCheck, VerifyOptions, VerifyResult, plugin_session, wheel_to_check

PAYLOAD = PAYLOAD_DIR / "paddle" / "plugin_checks.py"
FALLBACK_PAYLOAD = PAYLOAD_DIR / "paddle" / "fallback_report.py"


def run_verify(wheel: Path, options: VerifyOptions, report_dir: Path) -> VerifyResult:
    if options.model not in TRAIN_MODELS:
        raise InputError(f"unknown model {options.model!r}", f"use --model {' | '.join(TRAIN_MODELS)}")
    options.require_training_steps()
    from .datasets import load_dataset  # (NumPy, for the commands that train only)

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
        reference = session.work / "cpu-reference.json"
        native_reference = not battery and native_cpu_reference(options, dataset, session.log, reference)
        report = session.run_report(
            f"checks on {options.recipe.name} ({options.steps} {options.model} steps)",
            PAYLOAD,
            ["--data", data, "--steps", str(options.steps), "--model", options.model, *amp]
            + (["--profile", DEVICE_TRACE] if options.profile else [])
            + (["--cpu-reference", session.runner.path(reference)] if native_reference else []),
            "report.json",
        )
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
    # (absent when the payload stopped before comparing: its first failed check says why)
    check = result.report.check("kernel signatures") or next(
        iter(result.report.failed), Check("kernel signatures", False, "no checks ran")
    )
    mismatched = [str(m) for m in check.data.get("mismatched", [])]
    return KernelCheck(
        result,
        {
            "passed": result.passed,
            "report": str(result.report_path),
            "detail": check.detail,
            "mismatched": mismatched,
            "kernels": len(check.data.get("kernels", {})),
        },
        [(True, check.detail)] if result.passed else [],
        f"kernel signatures differ from Paddle {result.report.paddle_version}: "
        + ("; ".join(mismatched) or check.detail),
        "update each named kernel to the declaration in paddle/phi/kernels/ of that Paddle "
        "and rebuild (the build's signature checks then hold)",
    )


def test_ops(r: OpsRequest) -> tuple[OpsResult, str]:
    """Paddle's op cases vs Paddle CPU, or the device library against golden data."""
    if r.all_ops:
        raise InputError("--all selects torch OpInfos", "drop --all, or pass --framework torch")
    ops, dtype_list = parse_selection(r.ops, r.dtypes)
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
    return run_test_ops(wheel, r.options, ops, dtype_list, r.report_dir), "ops"


def golden_version(requested: str | None) -> str:
    """The Paddle that records golden data on this machine: --paddle-version, else the host's pin."""
    version = resolve_runtime_version(host_recipe(), requested, PADDLE)
    if version is None:
        raise InputError(
            f"{host_recipe().name} has no Paddle runtime to record golden data with",
            "record golden data on a machine with a Paddle runtime (x86_64)",
        )
    return version
