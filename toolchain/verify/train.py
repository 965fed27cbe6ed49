"""`devkit verify` (training) and `devkit check-kernels`: the plugin checks and a model
trained on the device vs CPU, with the fallback report."""

from __future__ import annotations

from pathlib import Path

from ..project.config import TRAIN_MODELS
from ..util.errors import InputError
from ..util.resources import PAYLOAD_DIR
from .cpu_reference import native_cpu_reference
from .datasets import load_dataset
from .report import merge_checks
from .session import VerifyOptions, VerifyResult, finish, plugin_session

PAYLOAD = PAYLOAD_DIR / "plugin_checks.py"
FALLBACK_PAYLOAD = PAYLOAD_DIR / "fallback_report.py"


def run_verify(wheel: Path, options: VerifyOptions, report_dir: Path) -> VerifyResult:
    if options.model not in TRAIN_MODELS:
        raise InputError(f"unknown model {options.model!r}", f"use --model {' | '.join(TRAIN_MODELS)}")
    options.require_training_steps()
    dataset = load_dataset(options.data_dir)
    battery = options.model != "mnist"
    with plugin_session(wheel, options, report_dir) as session:
        data = session.runner.path(session.work / "data.npz")
        dataset.save(session.work / "data.npz")
        fallback_env = {**options.check_env, "FLAGS_enable_api_kernel_fallback": "1"}
        if battery:
            # First with CPU fallback on (Paddle's default): which kernels the model runs on the device and which
            # fall back; then the checks, which train it with fallback off.
            fallback = session.run_payload(
                f"fallback report ({options.model}) on {options.recipe.name}",
                FALLBACK_PAYLOAD,
                ["--data", data, "--model", options.model],
                "fallback.json",
                env=fallback_env,
            )
        reference = session.work / "cpu-reference.json"
        native_reference = not battery and native_cpu_reference(options, dataset, session.log, reference)
        report = session.run_payload(
            f"checks on {options.recipe.name} ({options.steps} {options.model} steps)",
            PAYLOAD,
            ["--data", data, "--steps", str(options.steps), "--model", options.model]
            + (["--cpu-reference", session.runner.path(reference)] if native_reference else []),
            "report.json",
        )
        if battery:
            report["checks"] = merge_checks(report["checks"], [fallback], before=options.model)
            report["passed"] = all(c["passed"] for c in report["checks"])
        elif report.get("device"):
            # With CPU fallback on (Paddle's default): which kernels the model ran on the device, which on CPU.
            fallback = session.run_payload(
                f"fallback report on {options.recipe.name}",
                FALLBACK_PAYLOAD,
                ["--data", data],
                "fallback.json",
                device=report["device"],
                env={**options.check_env, "FLAGS_enable_api_kernel_fallback": "1"},
            )
            report["checks"] = merge_checks(report["checks"], [fallback])
            report["passed"] = all(c["passed"] for c in report["checks"])
    report.update(wheel=str(wheel), runner=session.runner.name)
    return finish(report, options, report_dir, session.start, session.log)


def run_check_kernels(wheel: Path, options: VerifyOptions, report_dir: Path) -> VerifyResult:
    """Load the plugin into its pinned Paddle and compare every kernel's signature with Paddle's."""
    with plugin_session(wheel, options, report_dir) as session:
        report = session.run_payload(
            f"kernel signatures on {options.recipe.name}", PAYLOAD, ["--only", "kernel-signatures"], "report.json"
        )
    report.update(wheel=str(wheel), runner=session.runner.name)
    return finish(report, options, report_dir, session.start, session.log)
