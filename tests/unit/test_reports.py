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
