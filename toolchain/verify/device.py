"""Targets without a Paddle runtime (armhf): the device library's own tests, from its bundle,
on the target (under qemu for a foreign one)."""

from __future__ import annotations

import platform
import re
import time
from pathlib import Path

from ..project.recipes import Recipe
from ..run.select import verify_runner
from ..run.step import Step
from ..util.archives import extract_tar
from ..util.errors import DevkitError, InputError, VerificationFailure
from .report import Check, Report
from .session import VerifyOptions, VerifyResult, finish, fresh_log, work_dir

# "PASS name" / "FAIL name", or "FAIL name: detail" (names may have spaces: the flavours' harnesses)
_CASE = re.compile(r"^(PASS|FAIL) (.+?)(?:: (.+))?$", re.M)


def device_test_cases(output: str) -> list[dict[str, object]]:
    """The cases a device test binary reported, in order."""
    return [
        {"case": name, "passed": verdict == "PASS", **({"detail": detail} if detail else {})}
        for verdict, name, detail in _CASE.findall(output)
    ]


def unpack_device_bundle(bundle: Path, work: Path, recipe: Recipe) -> Path:
    """Unpack a device bundle into `work`; return its tests/ directory."""
    if not bundle.is_file():
        raise InputError(f"device bundle {bundle} does not exist", f"run `devkit build --arch {recipe.name}`")
    extract_tar(bundle, work, "device bundle", f"rebuild it with devkit build --arch {recipe.name}")
    tests = next(iter(work.glob("*/tests")), None)
    if tests is None or not any(tests.iterdir()):
        raise InputError(f"{bundle.name} holds no test binaries", f"rebuild it with devkit build --arch {recipe.name}")
    return tests


def run_device_tests(bundle: Path, options: VerifyOptions, report_dir: Path) -> VerifyResult:
    """For targets without a Paddle runtime: run the device library's tests on the target."""
    start = time.monotonic()
    with work_dir() as work:
        tests = sorted(unpack_device_bundle(bundle, work, options.recipe).glob("test_*"))
        log = fresh_log(report_dir)
        runner = verify_runner(options.runner, options.recipe, work, [], log, options.sdk_runtime)
        checks: list[Check] = []
        native = options.recipe.matches(platform.machine())
        for test in tests:
            test.chmod(0o755)
            try:
                output = runner.run(
                    Step(
                        title=f"{test.name} on {options.recipe.name}",
                        argv=[runner.path(test)],
                        log=log,
                        # the tests leave out what qemu-user cannot emulate (a queued SIGBUS)
                        env={**options.modes_env, **({} if native else {"DEVKIT_EMULATED": "1"})},
                        fails_as=VerificationFailure,
                    )
                )
                passed = True
            except DevkitError as exc:
                output, passed = exc.details, False
            summary = re.findall(r"^(\d+) passed, (\d+) failed$", output, re.M)
            detail = f"{summary[-1][0]} passed, {summary[-1][1]} failed" if summary else "no summary line"
            checks.append(
                Check(
                    test.name,
                    passed and bool(summary) and summary[-1][1] == "0",
                    detail,
                    data={"cases": device_test_cases(output)},
                )
            )
    report = Report.of(
        checks,
        device=None,
        paddle_version=None,
        bundle=str(bundle),
        runner=runner.name,
        note=f"PaddlePaddle publishes no {options.recipe.name} runtime: the device library's own tests ran",
    )
    return finish(report, options, report_dir, start, log)
