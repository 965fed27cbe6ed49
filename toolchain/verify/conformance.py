"""The device library's conformance suite (the generated project's tests/conformance and
tests/flavour), run on the target from the device bundle `devkit build` writes beside every
plugin: every case by name in the report, typed from the JUnit XML the suite writes (or, when
the suite died before writing it, from its per-case lines, the case it died in named)."""

from __future__ import annotations

import platform
import re
import shutil
import xml.etree.ElementTree as ET
from collections import Counter
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..project.recipes import Recipe
from ..run.step import Runner, Step
from ..util.archives import extract_tar
from ..util.errors import InputError, VerificationFailure
from .report import Check

CHECK = "device conformance"
OUTCOMES = ("passed", "failed", "unimplemented")
# the suite's lines: RUN area.name, then PASS area.name / FAIL area.name: detail / UNIMPLEMENTED area.name: detail
_LINE = re.compile(r"^(RUN|PASS|FAIL|UNIMPLEMENTED) (\S+?)(?:: (.*))?$", re.M)


@dataclass(frozen=True)
class ConformanceCase:
    area: str  # device, memory, stream, event, collectives, ops.<family>, flavour.<name>
    name: str
    outcome: str  # passed | failed | unimplemented
    detail: str = ""  # the first failed expectation, or the op that is not implemented
    seconds: float = 0.0

    @property
    def case(self) -> str:
        return f"{self.area}.{self.name}"

    def to_json(self) -> dict[str, Any]:
        return {
            "case": self.case,
            "area": self.area,
            "outcome": self.outcome,
            "passed": self.outcome != "failed",
            **({"detail": self.detail} if self.detail else {}),
            "seconds": round(self.seconds, 3),
        }


def read_junit(xml: bytes) -> list[ConformanceCase]:
    """The cases of the suite's JUnit XML; ValueError when it is not such a report."""
    try:
        root = ET.fromstring(xml)
    except ET.ParseError as exc:
        raise ValueError(f"not XML ({exc})") from None
    if root.tag != "testsuites":
        raise ValueError(f"the root element is <{root.tag}>, not <testsuites>")
    cases = []
    for suite in root.iter("testsuite"):
        for case in suite.iter("testcase"):
            area, name = suite.get("name"), case.get("name")
            if not area or not name:
                raise ValueError("a <testsuite> or <testcase> has no name")
            failure, skipped = case.find("failure"), case.find("skipped")
            outcome = "failed" if failure is not None else "unimplemented" if skipped is not None else "passed"
            detail = (failure if failure is not None else skipped if skipped is not None else case).get("message", "")
            try:
                seconds = float(case.get("time", "0"))
            except ValueError:
                raise ValueError(f"case {area}.{name} has time={case.get('time')!r}") from None
            cases.append(ConformanceCase(area, name, outcome, detail.removeprefix("unimplemented: "), seconds))
    return cases


def cases_from_output(output: str) -> list[ConformanceCase]:
    """The cases the suite's lines report; a case it started and never finished failed there
    (the suite died in it)."""
    verdicts = {"PASS": "passed", "FAIL": "failed", "UNIMPLEMENTED": "unimplemented"}
    cases: list[ConformanceCase] = []
    running = None
    for word, full, detail in _LINE.findall(output):
        if word == "RUN":
            running = full
            continue
        area, _, name = full.rpartition(".")
        cases.append(ConformanceCase(area, name, verdicts[word], detail))
        running = None
    if running:
        area, _, name = running.rpartition(".")
        cases.append(ConformanceCase(area, name, "failed", "the suite ended during this case (crashed or killed)"))
    return cases


def suite_check(cases: list[ConformanceCase], finished: bool, where: str) -> Check:
    counts = Counter(c.outcome for c in cases)
    failed = [c.case for c in cases if c.outcome == "failed"]
    detail = ", ".join(f"{counts[o]} {o}" for o in OUTCOMES)
    if failed:
        detail += f"; failed: {', '.join(failed[:5])}{' ...' if len(failed) > 5 else ''}"
    if not finished:
        detail += f"; {where}"
    return Check.from_json(
        {
            "name": CHECK,
            "kind": "conformance",
            "passed": finished and not failed and bool(cases),
            "detail": detail,
            "cases": [c.to_json() for c in cases],
            "counts": {o: counts[o] for o in OUTCOMES},
            "unimplemented": [c.case for c in cases if c.outcome == "unimplemented"],
        }
    )


def unpack_device_bundle(bundle: Path, work: Path, recipe: Recipe) -> Path:
    """The conformance suite's binary of a device bundle, unpacked into `work`."""
    if not bundle.is_file():
        raise InputError(
            f"device bundle {bundle} does not exist (the device library and its conformance suite)",
            f"run `devkit build --arch {recipe.name}`",
        )
    extract_tar(bundle, work, "device bundle", f"rebuild it with devkit build --arch {recipe.name}")
    suite = sorted(work.glob("*/tests/test_*_device"))
    if len(suite) != 1:
        raise InputError(
            f"{bundle.name} holds {len(suite)} conformance suites (tests/test_*_device), expected 1",
            f"rebuild it with devkit build --arch {recipe.name}",
        )
    suite[0].chmod(0o755)
    return suite[0]


def run_conformance(
    runner: Runner, suite: Path, work: Path, report_dir: Path, env: dict[str, str], recipe: Recipe
) -> Check:
    """Run the suite on the target (under qemu for a foreign one) and type what it reports; its
    output (whose lines name the case it died in, if it dies) and JUnit XML go to `report_dir`
    (conformance.log, conformance.xml: for CI dashboards)."""
    junit = work / "conformance.xml"
    junit.unlink(missing_ok=True)
    report_dir.mkdir(parents=True, exist_ok=True)
    log = report_dir / "conformance.log"
    log.write_text("")
    (report_dir / "conformance.xml").unlink(missing_ok=True)
    finished = True
    where = ""
    try:
        runner.run(
            Step(
                title=f"device conformance suite on {recipe.name}",
                argv=[runner.path(suite), "--junit", runner.path(junit)],
                log=log,
                # the suite leaves out what qemu-user cannot emulate (a queued SIGBUS)
                env={**env, **({} if recipe.matches(platform.machine()) else {"DEVKIT_EMULATED": "1"})},
                fails_as=VerificationFailure,
            )
        )
    except VerificationFailure as exc:  # failed cases (exit 1), or a suite that died
        where = exc.problem
    try:
        cases = read_junit(junit.read_bytes())
        shutil.copyfile(junit, report_dir / "conformance.xml")
    except (OSError, ValueError) as exc:
        finished = False
        where = where or f"no JUnit report ({exc})"
        cases = cases_from_output(log.read_text(errors="replace"))
    return suite_check(cases, finished, where)


@dataclass
class PendingConformance:
    """The suite running on a worker thread while the framework's checks run: its cases take
    seconds of waiting (queued work, ranks that time out), not of CPU."""

    future: Future[Check]
    pool: ThreadPoolExecutor

    def result(self) -> Check:
        try:
            return self.future.result()
        finally:
            self.pool.shutdown()


def start_conformance(
    runner: Runner, suite: Path, work: Path, report_dir: Path, env: dict[str, str], recipe: Recipe
) -> PendingConformance:
    """run_conformance() beside the caller's steps (sequentially first where the runner cannot
    run two steps at once)."""
    pool = ThreadPoolExecutor(max_workers=1)
    if runner.concurrent_steps:
        return PendingConformance(pool.submit(run_conformance, runner, suite, work, report_dir, env, recipe), pool)
    done: Future[Check] = Future()
    done.set_result(run_conformance(runner, suite, work, report_dir, env, recipe))
    return PendingConformance(done, pool)
