"""Reports are merged by check name, never by position."""

from __future__ import annotations

from devkit.verify.report import merge_checks


def _checks(*names: str) -> list[dict[str, object]]:
    return [{"name": n, "passed": True} for n in names]


def test_a_check_goes_before_the_one_it_names_and_duplicates_are_dropped():
    checks = _checks("registration", "ops vs CPU", "resnet_bn")
    merged = merge_checks(checks, _checks("fallback report"), before="resnet_bn")
    assert [c["name"] for c in merged] == ["registration", "ops vs CPU", "fallback report", "resnet_bn"]
    # the model's check missing (the payload stopped early): at the end
    merged = merge_checks(_checks("registration"), _checks("fallback report"), before="resnet_bn")
    assert [c["name"] for c in merged] == ["registration", "fallback report"]
    # a second payload's own registration check is not repeated
    merged = merge_checks(_checks("registration", "lenet"), _checks("registration", "fallback report"))
    assert [c["name"] for c in merged] == ["registration", "lenet", "fallback report"]
    assert [c["name"] for c in checks] == ["registration", "ops vs CPU", "resnet_bn"]  # inputs untouched


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
