"""armhf, where no framework publishes a runtime: the device library alone, its tests and golden
op data run under qemu, and check-abi telling it apart from aarch64."""

from __future__ import annotations

import json
import re
import shutil
import tarfile
from pathlib import Path

import pytest
from conftest import (
    CONTAINER_MARKS,
    devkit,
)

from devkit.util.errors import ExitCode

pytestmark = CONTAINER_MARKS


def test_armhf_builds_device_library_and_says_why(project):
    proc = devkit("build", str(project), "--arch", "armv7hf", "--json")
    assert "PaddlePaddle publishes no runtime for armhf" in proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["kind"] == "device-bundle" and summary["paddle_version"] is None
    with tarfile.open(summary["artifact"]) as tar:
        names = tar.getnames()
        test = tar.extractfile(next(n for n in names if n.endswith("/tests/test_stpu_device"))).read()
    assert int.from_bytes(test[18:20], "little") == 40  # EM_ARM
    assert any(n.endswith("include/stpu_device.h") for n in names)


def test_check_abi_rejects_armhf_library_for_aarch64(project, tmp_path):
    bundle = project / "dist" / "paddle-custom-stpu-device-0.1.0-armhf.tar.gz"
    with tarfile.open(bundle) as tar:
        member = next(m for m in tar.getmembers() if m.name.endswith("/tests/test_stpu_device"))
        (tmp_path / "test_stpu_device").write_bytes(tar.extractfile(member).read())
    proc = devkit("check-abi", str(tmp_path / "test_stpu_device"), "--arch", "aarch64", check=False)
    assert proc.returncode == ExitCode.BUILD_FAILED
    assert "is built for EM_ARM but aarch64 needs EM_AARCH64" in proc.stderr


def test_armhf_device_tests_pass_under_emulation(project):
    summary = json.loads(devkit("verify", str(project), "--arch", "armhf", "--json").stdout)
    assert summary["passed"], summary
    check = summary["checks"][0]
    assert check["name"] == "device conformance" and re.fullmatch(
        r"\d+ passed, 0 failed, 0 unimplemented", check["detail"]
    )
    report = json.loads(Path(summary["report"]).read_text())
    cases = report["checks"][0]["cases"]
    assert len(cases) >= 40 and all(c["outcome"] == "passed" for c in cases)
    assert {"memory.copies_round_trip", "collectives.every_collective_across_processes"} <= {c["case"] for c in cases}
    assert (Path(summary["report"]).parent / "conformance.xml").is_file()  # the JUnit XML, for CI dashboards


INJECTED = """#include "conformance.h"

// A vendor's case that finds a bug: it must be named in verify's report.
CONFORMANCE_CASE("flavour.host", an_injected_failing_case) {
  int count = 0;
  EXPECT_OK(stpu_device_count(&count));
  EXPECT(count == 3);
}
"""


def test_an_injected_failing_case_is_named_in_the_report(project, tmp_path):
    """A flavour's own failing case, built into the suite like any other: verify fails, and the
    report names the case and the expectation that did not hold; every other case still passes."""
    copy = tmp_path / "stpu"
    shutil.copytree(project, copy, ignore=shutil.ignore_patterns("build", "dist", "reports"))
    (copy / "tests/flavour/injected_cases.cc").write_text(INJECTED)
    devkit("build", str(copy), "--arch", "armhf")
    proc = devkit("verify", str(copy), "--arch", "armhf", "--json", check=False)
    assert proc.returncode == ExitCode.VERIFICATION_FAILED, proc.stderr[-2000:]
    summary = json.loads(proc.stdout)
    cases = json.loads(Path(summary["report"]).read_text())["checks"][0]["cases"]
    failed = [c for c in cases if c["outcome"] == "failed"]
    assert [c["case"] for c in failed] == ["flavour.host.an_injected_failing_case"], failed
    assert failed[0]["detail"].endswith("injected_cases.cc:7: count == 3")
    assert "failed: flavour.host.an_injected_failing_case" in summary["checks"][0]["detail"]


def test_armhf_inference_bundle_carries_the_device_library(project):
    devkit("build", str(project), "--arch", "armhf", "--infer")
    with tarfile.open(project / "dist" / "paddle-custom-stpu-inference-0.1.0-armhf.tar.gz") as tar:
        manifest = json.loads(tar.extractfile("paddle-custom-stpu-inference-0.1.0-armhf/manifest.json").read())
    assert manifest["paddle_version"] is None and "no runtime for armhf" in manifest["note"]
    assert {"lib/libstpu_device.a", "include/stpu_device.h", "tests/test_stpu_device", "run.sh"} <= set(
        manifest["files"]
    )


def test_armhf_rejects_paddle_version(project):
    proc = devkit("build", str(project), "--arch", "armhf", "--paddle-version", "3.2.2", check=False)
    assert proc.returncode == ExitCode.INPUT and "no PaddlePaddle runtime" in proc.stderr


@pytest.fixture(scope="module")
def golden(tmp_path_factory) -> Path:
    """Golden data recorded with Paddle CPU on this (x86_64) machine."""
    out = tmp_path_factory.mktemp("golden") / "golden"
    summary = json.loads(devkit("test-ops", "--gen-golden", str(out), "--runner", "host", "--json").stdout)
    assert summary["cases"] >= 20 and (out / "manifest.txt").is_file()
    return out


def test_golden_data_checks_the_armhf_device_library_under_emulation(project, golden):
    devkit("build", str(project), "--arch", "armhf")
    summary = json.loads(devkit("test-ops", str(project), "--arch", "armhf", "--golden", str(golden), "--json").stdout)
    assert summary["passed"] and summary["counts"]["pass"] >= 20
    report = json.loads(Path(summary["report"]).read_text())
    assert report["runner"].startswith("docker:devkit-verify-armhf") and report["golden_source"].startswith(
        "Paddle 3.3.1 on CPU"
    )
    assert {r["kernels"][0] for r in report["results"]} >= {"binary", "gemm", "conv2d", "pool2d", "reduce", "softmax"}


def test_golden_data_catches_a_broken_armhf_kernel(golden, tmp_path):
    from test_conformance import break_gemm

    project = tmp_path / "STPU"
    devkit("new-backend", "STPU", "--out", str(project))
    break_gemm(project)
    devkit("build", str(project), "--arch", "armhf")
    proc = devkit("test-ops", str(project), "--arch", "armhf", "--golden", str(golden), check=False)
    assert proc.returncode == ExitCode.VERIFICATION_FAILED
    assert "op case(s) failed: matmul [float32] (gemm: out: max |diff|" in proc.stderr.strip().splitlines()[-1]
    report = json.loads((project / "reports" / "test-ops-armhf-golden" / "report.json").read_text())
    failed = {r["case"] for r in report["results"] if r["status"] == "fail"}
    assert failed == {"matmul", "matmul_transpose_y", "conv2d_pad1", "conv2d_stride2_groups2", "conv2d_dilation2"}
