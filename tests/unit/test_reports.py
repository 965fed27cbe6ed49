"""Reports are merged by check name, never by position."""

from __future__ import annotations

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


def test_device_test_cases_are_read_in_both_harness_forms():
    """The host-backed harness prints `FAIL name`, the OpenCL one `FAIL name with spaces: detail`."""
    from devkit.verify.device import device_test_cases

    output = (
        "PASS memory_accounting\n  FAILED test.cc:3: x\nFAIL copies_round_trip\n"
        "PASS memory and accounting\nFAIL stream query is quick under load: event_query failed: CL (-6)\n"
        "3 passed, 2 failed\n"
    )
    assert device_test_cases(output) == [
        {"case": "memory_accounting", "passed": True},
        {"case": "copies_round_trip", "passed": False},
        {"case": "memory and accounting", "passed": True},
        {"case": "stream query is quick under load", "passed": False, "detail": "event_query failed: CL (-6)"},
    ]
