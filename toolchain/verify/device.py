"""Targets without a framework runtime (armhf): the device library's conformance suite, from
its bundle, on the target (under qemu for a foreign one)."""

from __future__ import annotations

import time
from pathlib import Path

from ..run.select import verify_runner
from .conformance import run_conformance, unpack_device_bundle
from .report import Report
from .session import VerifyOptions, VerifyResult, finish, fresh_log, work_dir


def run_device_tests(bundle: Path, options: VerifyOptions, report_dir: Path) -> VerifyResult:
    """For targets without the framework's runtime: run the device library's conformance suite on the target."""
    start = time.monotonic()
    with work_dir() as work:
        suite = unpack_device_bundle(bundle, work / "device-bundle", options.recipe)
        log = fresh_log(report_dir)
        runner = verify_runner(options.runner, options.recipe, work, [], log, options.sdk_runtime)
        check = run_conformance(runner, suite, work, report_dir, options.modes_env, options.recipe)
    report = Report.of(
        [check],
        device=None,
        bundle=str(bundle),
        runner=runner.name,
        note=f"{options.framework.label} publishes no {options.recipe.name} runtime: the device library's conformance "
        "suite ran",
    )
    return finish(report, options, report_dir, start, log)
