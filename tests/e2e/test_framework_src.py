"""test-ops --framework-src for Paddle, for real: the OpTests of a legacy_test tree (devkit's
fixture in Paddle's shape, tests/fixtures/framework-src/paddle) on the generated plugin's custom place
in a fresh env with Paddle 3.3.1 and pytest, with CPU kernel fallback off and float64 skipped.
(The torch half is in test_torch.py, on its build.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import devkit

from devkit.util.errors import ExitCode

pytestmark = pytest.mark.e2e

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "framework-src"


def test_paddles_op_tests_run_on_the_custom_place_without_fallback(built_project: Path) -> None:
    proc = devkit(
        "test-ops",
        str(built_project),
        "--runner",
        "host",
        "--framework-src",
        str(FIXTURES / "paddle"),
        "--json",
        check=False,
    )
    summary = json.loads(proc.stdout)
    report = json.loads(Path(summary["report"]).read_text())
    got = {r["case"].removeprefix("test/legacy_test/test_activation_op.py::"): r for r in report["results"]}
    assert {case: (r["status"], r["kernels"], r["dtype"]) for case, r in got.items()} == {
        "TestExp::test_check_output": ("pass", ["exp"], "float32"),
        "TestExp::test_check_grad": ("pass", ["exp"], "float32"),
        "TestSin::test_check_output": ("fail", ["sin"], "float32"),
        "TestSin::test_check_grad": ("pass", ["sin"], "float32"),
    }
    # the plugin has no sin kernel: with fallback off (as PaddleCustomDevice runs these) the test says so;
    # OpTest's own places are the CPU's alone: the runner puts its checks on the custom place (sin
    # passed on the CPU, and the fixture's check asserts the output's place)
    sin = got["TestSin::test_check_output"]["detail"]
    assert "kernel `sin` is not registered" in sin and "FLAGS_enable_api_kernel_fallback" in sin, sin
    # float64 read from the checks' input arrays (TestExpFeedsFloat64's dtype attribute says float32)
    assert report["skipped"] == {"float64 skipped on the custom device (float64 inputs)": 4}
    assert "| float64 skipped on the custom device (float64 inputs) | 4 |" in Path(summary["markdown"]).read_text()
    assert all(r["suite"] == "framework-src" for r in report["results"])
    assert proc.returncode == ExitCode.VERIFICATION_FAILED and summary["mode"] == "framework-src"
    assert "TestSin::test_check_output" in proc.stderr
