"""Reports are merged by check name, never by position."""

from __future__ import annotations

import pytest

from devkit.verify.report import Check, Report


def _report(*names: str, passed: bool = True) -> Report:
    return Report.from_json(
        {"device": "stpu", "checks": [{"name": n, "passed": passed} for n in names], "passed": passed}
    )


def _names(report: Report) -> list[str]:
    return [c.name for c in report.checks]


def test_a_check_goes_before_the_one_it_names_and_duplicates_are_dropped():
    report = _report("registration", "ops vs CPU", "resnet_bn")
    merged = report.merged(_report("fallback report").checks, before="resnet_bn")
    assert _names(merged) == ["registration", "ops vs CPU", "fallback report", "resnet_bn"]
    # the model's check missing (the payload stopped early): at the end
    merged = _report("registration").merged(_report("fallback report").checks, before="resnet_bn")
    assert _names(merged) == ["registration", "fallback report"]
    # a second payload's own registration check is not repeated
    merged = _report("registration", "lenet").merged(_report("registration", "fallback report").checks)
    assert _names(merged) == ["registration", "lenet", "fallback report"]
    assert _names(report) == ["registration", "ops vs CPU", "resnet_bn"]  # inputs untouched


def test_a_merged_failure_fails_the_report_and_report_json_says_so():
    merged = _report("registration").merged([Check("fallback report", False, "conv2d fell back")])
    assert not merged.passed and [c.name for c in merged.failed] == ["fallback report"]
    written = merged.with_fields(arch="x86_64").to_json()
    assert written["passed"] is False and written["arch"] == "x86_64" and written["device"] == "stpu"
    assert written["checks"][1] == {"name": "fallback report", "passed": False, "detail": "conv2d fell back"}
    assert Report.from_json(written) == merged.with_fields(arch="x86_64")  # what is read back is what was written


def test_a_report_devkit_writes_fails_on_a_failed_check_not_on_one_that_did_not_run():
    demo = Check("C++ demo", False, "no Paddle Inference library", not_run=True, data={"not_run": True})
    assert Report.of([Check("inference mnist", True), demo], runner="host").passed
    assert not Report.of([Check("inference mnist", False), demo], runner="host").passed


JUNIT = b"""<?xml version="1.0" encoding="UTF-8"?>
<testsuites name="stpu_device">
  <testsuite name="memory" tests="2" failures="1" errors="0" skipped="0" time="0.301">
    <testcase classname="stpu_device.memory" name="copies_round_trip" time="0.001"/>
    <testcase classname="stpu_device.memory" name="freed_memory_waits" time="0.300">
      <failure message="tests/conformance/memory_cases.cc:135: back == want"/>
    </testcase>
  </testsuite>
  <testsuite name="ops.conv_pool" tests="1" failures="0" errors="0" skipped="1" time="0.000">
    <testcase classname="stpu_device.ops.conv_pool" name="conv2d_matches_naive" time="0.000">
      <skipped message="unimplemented: conv2d_forward is not implemented by the opencl device library"/>
    </testcase>
  </testsuite>
</testsuites>
"""


def test_the_conformance_suites_junit_is_read_into_named_cases():
    from devkit.verify.conformance import read_junit, suite_check

    cases = read_junit(JUNIT)
    assert [(c.case, c.outcome) for c in cases] == [
        ("memory.copies_round_trip", "passed"),
        ("memory.freed_memory_waits", "failed"),
        ("ops.conv_pool.conv2d_matches_naive", "unimplemented"),
    ]
    assert cases[1].detail.endswith("back == want") and cases[2].detail.startswith("conv2d_forward is not")
    check = suite_check(cases, True, "")
    assert not check.passed and check.detail == "1 passed, 1 failed, 1 unimplemented; failed: memory.freed_memory_waits"
    assert check.data["unimplemented"] == ["ops.conv_pool.conv2d_matches_naive"]
    assert suite_check([c for c in cases if c.outcome != "failed"], True, "").passed  # unimplemented is no failure


@pytest.mark.parametrize(
    "xml",
    [
        b"",
        b"<testsuites><testsuite",
        b"<report/>",
        b'<testsuites><testsuite name="m"><testcase/></testsuite></testsuites>',
    ],
)
def test_a_junit_report_that_is_not_the_suites_is_refused(xml):
    from devkit.verify.conformance import read_junit

    with pytest.raises(ValueError):
        read_junit(xml)


def test_a_suite_that_died_names_the_case_it_died_in():
    from devkit.verify.conformance import cases_from_output, suite_check

    output = "RUN device.init_and_count\nPASS device.init_and_count\nRUN memory.copies_round_trip\n"
    cases = cases_from_output(output)
    assert [(c.case, c.outcome) for c in cases] == [
        ("device.init_and_count", "passed"),
        ("memory.copies_round_trip", "failed"),
    ]
    check = suite_check(cases, False, "the suite died (SIGSEGV)")
    assert not check.passed and "memory.copies_round_trip" in check.detail and "SIGSEGV" in check.detail
