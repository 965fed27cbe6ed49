"""`devkit test-ops`: op conformance of a plugin against its framework's CPU, and golden data.

One report format (report.json, report.md, junit.xml) for what the frameworks' adapters run (their
op cases vs the framework's CPU in a fresh env: verify/frameworks/) and for the device library
bundle of a target without a framework runtime checked against golden data (--golden DIR, recorded
by the Paddle adapter with --gen-golden DIR).
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..project.frameworks import Framework
from ..project.project import Project
from ..project.recipes import Recipe
from ..run.select import verify_runner
from ..run.step import Step
from ..util.errors import DevkitError, InputError, VerificationFailure
from ..util.fsutil import write_atomic
from ..verify.junit import Case, write_junit_suites
from .conformance import unpack_device_bundle
from .expected import (
    EXPECTED_FILE,
    ExpectedFailures,
    ExpectedUpdate,
    judge,
    judged_keys,
    load_expected,
    update_expected,
)
from .report import EXPECTED, NOW_PASSING, OpCase, OpsReport, counts_line, verdict_counts
from .session import PluginSession, VerifyOptions, VerifyResult, fresh_log, work_dir


@dataclass(frozen=True)
class OpsResult:
    report: OpsReport
    report_dir: Path

    @property
    def failed(self) -> list[OpCase]:
        return self.report.failed


@dataclass(frozen=True)
class OpsRequest:
    """What `test-ops` was asked, for the framework's own op checks."""

    project: Project | None
    wheel: Path | None
    recipe: Recipe
    options: VerifyOptions
    report_dir: Path
    golden: Path | None
    ops: str
    dtypes: str
    all_ops: bool
    suites: tuple[str, ...] = ("ops",)  # --suite, checked against the framework's op_suites
    framework_src: Path | None = None  # --framework-src: the framework's source tree, for its own test files
    update_expected: bool = False  # --update-expected: rewrite the project's expected-failures file
    timeout: float | None = None  # --timeout: seconds per torch suite case or per source-tree test file


def parse_selection(r: OpsRequest) -> tuple[str, tuple[str, ...] | None]:
    """--ops (a regular expression) and --dtypes (names of the framework's op_dtypes; None: not
    given, so the suites choose: Paddle's every dtype its cases have, torch's the device's)."""
    try:
        re.compile(r.ops)
    except re.error as exc:
        raise InputError(f"--ops {r.ops!r} is not a regular expression ({exc})", "e.g. --ops 'matmul|conv2d'") from None
    framework = r.options.framework
    chosen = tuple(dict.fromkeys(d.strip() for d in r.dtypes.split(",") if d.strip()))
    unknown = [d for d in chosen if d not in framework.op_dtypes]
    if unknown or (r.dtypes.strip() and not chosen):
        raise InputError(
            f"--dtypes {r.dtypes!r}: {', '.join(unknown) or 'nothing'} is not a dtype of the {framework.label} op checks",
            f"use a subset of {','.join(framework.op_dtypes)}",
        )
    if chosen and r.framework_src is not None:
        raise InputError(
            "--dtypes selects the suites' dtypes; the framework's own test files (--framework-src) choose theirs",
            "drop --dtypes",
        )
    return r.ops, chosen or None


def parse_suites(suites: str, framework: Framework) -> tuple[str, ...]:
    """--suite: comma-separated names of the framework's test databases (Framework.op_suites)."""
    chosen = tuple(dict.fromkeys(s.strip() for s in suites.split(",") if s.strip()))
    unknown = [s for s in chosen if s not in framework.op_suites]
    if unknown or not chosen:
        raise InputError(
            f"--suite {suites!r}: {', '.join(unknown) or 'nothing'} is not a suite of the {framework.label} adapter",
            f"use a subset of {','.join(framework.op_suites)}",
        )
    return chosen


def publish_session_report(
    report: dict[str, Any], wheel: Path, options: VerifyOptions, session: PluginSession
) -> OpsResult:
    """The payload's report with where and how long it ran, published in the session's report directory."""
    report.update(
        wheel=str(wheel),
        arch=options.recipe.name,
        runner=session.runner.name,
        seconds=round(time.monotonic() - session.start, 1),
        log=str(session.log),
    )
    return _publish(report, session.report_dir)


_GOLDEN_LINE = re.compile(r"^GOLDEN (PASS|FAIL) (\S+) (\S+) max_abs_diff=(\S+) values=(\d+) ?(.*)$", re.M)


def validate_golden(golden: Path) -> int:
    """Check a golden directory before it is shipped to the target: the manifest parses and
    every tensor file it names is there, inside the directory, with the size its shape says.
    Returns the number of cases."""
    fix = "record it again with `devkit test-ops --gen-golden DIR`"
    manifest = golden / "manifest.txt"
    if not golden.is_dir():
        raise InputError(f"golden directory {golden} does not exist", fix)
    if not manifest.is_file():
        raise InputError(f"{golden} has no manifest.txt", "make it with `devkit test-ops --gen-golden DIR`")
    try:
        lines = manifest.read_text().splitlines()
    except UnicodeDecodeError:
        raise InputError(f"{manifest} is not a text file", fix) from None
    cases = 0
    for number, line in enumerate(lines, 1):
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split()
        where = f"{manifest}:{number}"
        if len(fields) < 3 or not all("=" in f for f in fields[2:]):
            raise InputError(f"{where} is not `ID OP key=value ...`", fix)
        for key, value in (f.split("=", 1) for f in fields[2:]):
            if ".bin:" not in value:
                continue
            name, dims = value.split(":", 1)
            if "/" in name or name.startswith("."):
                raise InputError(f"{where}: {key} names {name!r}, outside the golden directory", fix)
            try:
                numel = math.prod(int(d) for d in dims.split(",")) if dims != "-" else 1
            except ValueError:
                raise InputError(f"{where}: {key} has the shape {dims!r}, not comma-separated integers", fix) from None
            data = golden / name
            if not data.is_file():
                raise InputError(f"{where}: {key} names {name}, which is missing", fix)
            if data.stat().st_size != 4 * numel:
                raise InputError(
                    f"{data} holds {data.stat().st_size} bytes, but its shape {dims} needs {4 * numel} (float32)", fix
                )
        cases += 1
    if not cases:
        raise InputError(f"{manifest} lists no cases", fix)
    return cases


def run_golden(bundle: Path, golden: Path, options: VerifyOptions, report_dir: Path) -> OpsResult:
    """The device library's golden checker, on the target (under qemu for foreign targets)."""
    validate_golden(golden)
    start = time.monotonic()
    with work_dir() as work:
        suite = unpack_device_bundle(bundle, work, options.recipe)
        checker = next(iter(suite.parent.glob("golden_*")), None)
        log = fresh_log(report_dir)
        if checker is None:
            raise InputError(
                f"{bundle.name} has no golden checker (tests/golden_*)",
                "re-render the project with this devkit and rebuild",
            )
        checker.chmod(0o755)
        runner = verify_runner(options.runner, options.recipe, work, [golden.resolve()], log, options.sdk_runtime)
        try:
            output = runner.run(
                Step(
                    title=f"golden checks on {options.recipe.name}",
                    log=log,
                    argv=[runner.path(checker), runner.path(golden.resolve())],
                    fails_as=VerificationFailure,
                )
            )
        except DevkitError as exc:  # failing cases exit non-zero; their lines are in the log
            output = log.read_text()
            if not _GOLDEN_LINE.search(output):
                raise exc from None
    results = [
        {
            "case": case_id,
            "dtype": "float32",
            "kernels": [op],
            "status": "pass" if status == "PASS" else "fail",
            "max_abs_diff": {"out": float(diff)},
            "values": int(n),
            **({"mismatch": [f"out: max |diff| {float(diff):.3g}; {why}"]} if why else {}),
        }
        for status, case_id, op, diff, n, why in _GOLDEN_LINE.findall(output)
    ]
    manifest = (golden / "manifest.txt").read_text().splitlines()
    report = {
        "mode": "golden",
        "golden_dir": str(golden.resolve()),
        "golden_source": manifest[0].lstrip("# ").removeprefix("golden data: "),
        "bundle": str(bundle),
        "arch": options.recipe.name,
        "runner": runner.name,
        "results": results,
        "not_exercised": [],
        "seconds": round(time.monotonic() - start, 1),
        "log": str(log),
    }
    expected = sum(1 for line in manifest if line and not line.startswith("#"))
    if len(results) != expected:
        results.append(
            {
                "case": "all golden cases ran",
                "dtype": "-",
                "kernels": [],
                "status": "error",
                "error": f"{len(results)} of {expected} cases reported; see {log}",
            }
        )
    return _publish(report, report_dir)


def _detail(r: Mapping[str, Any]) -> str:
    if r.get("error"):
        return str(r["error"])
    if r.get("mismatch"):
        return "; ".join(r["mismatch"])
    if r.get("detail"):
        return str(r["detail"])
    diffs = r.get("max_abs_diff") or {}
    return ", ".join(f"{k} {v:.2g}" for k, v in diffs.items())


def _verdict_detail(case: OpCase) -> str:
    """What the case's row says: the figures or the failure, with the listed reason where there is one."""
    if case.verdict == NOW_PASSING:
        return f"now passes: remove it from {EXPECTED_FILE} (listed: {case.expected})"
    if case.verdict == EXPECTED:
        return f"expected: {case.expected}; {_detail(case.data)}"
    return _detail(case.data)


_RESULT_CELL = {EXPECTED: "expected failure", NOW_PASSING: "now passes"}


def _publish(report: dict[str, Any], report_dir: Path) -> OpsResult:
    """report.json, report.md and junit.xml of the results as they are judged (a result with
    `expected` is listed in the project's expected failures: verify/expected.py)."""
    report_dir.mkdir(parents=True, exist_ok=True)
    ops = OpsReport.from_json(report)
    report["passed"] = bool(ops.results) and not ops.failed
    report["counts"] = verdict_counts(ops.results)
    report["suites"] = {suite: verdict_counts(cases) for suite, cases in ops.suites.items()}
    write_atomic(report_dir / "report.json", json.dumps(report, indent=2, default=str) + "\n")
    ops = OpsReport.from_json(report)
    write_atomic(report_dir / "report.md", _markdown(ops))
    write_junit_suites(
        report_dir / "junit.xml",
        {
            f"devkit test-ops {suite}": [
                Case(
                    name=f"{r.case} [{r.dtype}]",
                    classname=f"test-ops.{suite}.{(r.kernels or (r.case.split(' ', 1)[0],))[0]}",
                    failure=_verdict_detail(r) if r.failed else None,
                    skipped=_verdict_detail(r) if r.verdict in (EXPECTED, "not registered", "skipped") else None,
                )
                for r in cases
            ]
            for suite, cases in ops.suites.items()
        },
    )
    return OpsResult(ops, report_dir)


def _markdown(ops: OpsReport) -> str:
    report, counts = ops.data, ops.counts
    title = f"devkit test-ops — {report['arch']}, " + (
        f"golden data ({report['golden_source']})"
        if report["mode"] == "golden"
        else f"{report['device']} vs {report['reference']}"
    )
    lines = [
        f"# {title}",
        "",
        counts_line(counts) + ".",
    ]
    listed = report.get("expected_failures")
    if listed:
        lines += [
            "",
            f"Expected failures: `{listed['file']}`, {listed['listed']} listed for this framework "
            f"({listed['not_judged']} not judged by this run).",
        ]
    lines += [
        "",
        "| suite | pass | expected | failed | now passing | not run |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for suite, c in report["suites"].items():
        lines.append(
            f"| {suite} | {c['pass']} | {c[EXPECTED]} | {c['fail'] + c['error']} | {c[NOW_PASSING]} | "
            f"{c['not registered'] + c['skipped']} |"
        )
    for suite, cases in ops.suites.items():
        lines += [
            "",
            f"## {suite}",
            "",
            "| case | dtype | kernels | result | max abs diff / reason |",
            "| --- | --- | --- | --- | --- |",
        ]
        lines += [
            f"| {r.case} | {r.dtype} | {', '.join(r.kernels)} | {_RESULT_CELL.get(r.verdict, r.verdict)} | "
            f"{_verdict_detail(r).replace('|', '/')} |"
            for r in cases
        ]
    if report.get("not_exercised"):
        lines += ["", f"Registered but not exercised by any case: {', '.join(report['not_exercised'])}."]
    if report.get("dtypes_not_exercised"):
        lines += ["", f"Registered for a dtype no case ran it in: {', '.join(report['dtypes_not_exercised'])}."]
    skipped = report.get("skipped")  # --framework-src: the tests the framework's own files skipped, by reason
    if skipped:
        lines += ["", f"## skipped ({sum(skipped.values())})", "", "| reason | tests |", "| --- | --- |"]
        lines += [f"| {why.replace('|', '/')} | {n} |" for why, n in sorted(skipped.items(), key=lambda i: -i[1])]
    return "\n".join(lines) + "\n"


def describe_failures(result: OpsResult, limit: int = 6) -> str:
    parts = [f"{r.case} [{r.dtype}] ({', '.join(r.kernels)}: {_verdict_detail(r)[:120]})" for r in result.failed]
    return "; ".join(parts[:limit]) + (f"; and {len(parts) - limit} more" if len(parts) > limit else "")


def with_op_suites(result: VerifyResult, test_ops_dir: Path) -> VerifyResult:
    """`devkit verify`'s report with the last test-ops run's verdicts per suite (of the same target
    and framework: its report directory), when there is one; verify's own verdict stays its checks'."""
    path = test_ops_dir / "report.json"
    try:
        ops = OpsReport.from_json(json.loads(path.read_text()))
    except FileNotFoundError:
        return result
    except (ValueError, KeyError, TypeError):  # (unreadable: summarised as such)
        ops = OpsReport((), {}, False, {})
    wheel = Path(str(ops.data.get("wheel", "")))
    summary = {
        "report": str(test_ops_dir / "report.md"),
        "passed": ops.passed,
        "suites": {suite: verdict_counts(cases) for suite, cases in ops.suites.items()},
        # the wheel rebuilt since: these verdicts are an older build's
        "older_than_wheel": wheel.is_file() and wheel.stat().st_mtime > path.stat().st_mtime,
    }
    report = result.report.with_fields(op_suites=summary)
    write_atomic(result.report_path, json.dumps(report.to_json(), indent=2))
    return replace(result, report=report)


# ---- the project's expected failures (verify/expected.py)


def expected_failures(request: OpsRequest) -> ExpectedFailures | None:
    """The project's expected failures, read and checked before the run (a bad file fails in a
    second, not after it); None for a bare wheel and for golden data, which no file lists."""
    if request.update_expected and (request.project is None or request.golden):
        raise InputError(
            "--update-expected rewrites a project's conformance/expected-failures.toml",
            "drop --golden" if request.golden else "pass the project directory instead of --wheel",
        )
    if request.project is None or request.golden:
        return None
    return load_expected(request.project.root / EXPECTED_FILE)


def judge_expected(
    result: OpsResult, expected: ExpectedFailures | None, request: OpsRequest
) -> tuple[OpsResult, ExpectedUpdate | None]:
    """The run judged against the expected failures (with --update-expected, against the file it
    rewrote), its reports published again."""
    if expected is None:
        return result, None
    framework = request.options.framework.name
    results = [{k: v for k, v in r.items() if k != "expected"} for r in result.report.data["results"]]
    update = None
    if request.update_expected:
        expected, update = update_expected(expected, framework, results)
    listed = expected.of(framework)
    judge(results, listed)
    summary = {
        "file": str(expected.path),
        "listed": len(listed),
        "not_judged": len(listed.keys() - judged_keys(results)),
    }
    return _publish({**result.report.data, "results": results, "expected_failures": summary}, result.report_dir), update
