"""The Paddle plugin for aarch64: cross-compiled in the builder container (also against a declared
SDK), verified and served for inference in the aarch64 verify image under qemu."""

from __future__ import annotations

import json
import re
import tarfile
import zipfile
from pathlib import Path

import pytest
from conftest import (
    CHECK_MODES_SUMMARY,
    CONTAINER_MARKS,
    EMULATED_STEPS,
    assert_cloned_from_a_clean_reference,
    assert_cpu_reference,
    devkit,
    render_with_opencl_sdk,
    with_emulated_steps,
)

from devkit.building.sdk_abi import SdkExports

pytestmark = CONTAINER_MARKS


@pytest.fixture(scope="module")
def project(project: Path) -> Path:
    """conftest's project with its emulated verifications at EMULATED_STEPS (emulated-steps)."""
    return with_emulated_steps(project)


def test_aarch64_cross_build(project):
    summary = json.loads(devkit("build", str(project), "--arch", "armv8", "--json").stdout)
    wheel = Path(summary["wheel"])
    assert wheel.name == "paddle_custom_stpu-0.1.0-py3-none-manylinux_2_31_aarch64.whl"
    assert summary["platform"]["exceeds_framework"] == ["GLIBC_2.29 > GLIBC_2.27", "GLIBCXX_3.4.26 > GLIBCXX_3.4.22"]
    assert summary["paddle_version"] == "3.2.2"
    with zipfile.ZipFile(wheel) as zf:
        lib = zf.read("paddle_custom_device/stpu/libpaddle-custom-stpu-impl.so")
        meta = zf.read("paddle_custom_stpu-0.1.0.dist-info/METADATA").decode()
    assert int.from_bytes(lib[18:20], "little") == 183  # EM_AARCH64
    assert "Requires-Dist: paddlepaddle==3.2.2" in meta


def test_aarch64_verify_under_emulation(project):
    summary = json.loads(devkit("verify", str(project), "--arch", "aarch64", "--json").stdout)
    assert summary["passed"], summary
    report = json.loads(Path(summary["report"]).read_text())
    assert report["paddle_version"] == "3.2.2" and report["runner"].startswith("docker:devkit-verify-aarch64")
    mnist = next(c for c in report["checks"] if c["name"] == "mnist")
    assert mnist["steps"] == EMULATED_STEPS
    assert_cpu_reference(report, r"paddle 3\.3\.1", "on x86_64 (native)")
    assert report["modes"]["summary"] == CHECK_MODES_SUMMARY
    assert_cloned_from_a_clean_reference(summary)


def test_aarch64_cross_build_against_a_declared_sdk(tmp_path):
    """[tool.devkit.sdk] with Debian's arm64 OpenCL packages: fetched in the builder container
    (its Debian release, arm64 added there), linked by the cross g++, left out of the wheel."""
    project = render_with_opencl_sdk(tmp_path, "opencl-backend")
    summary = json.loads(devkit("build", str(project), "--arch", "aarch64", "--json").stdout)
    assert "libOpenCL.so.1" in summary["platform"]["excluded"] and summary["platform"]["grafted"] == []
    with zipfile.ZipFile(summary["wheel"]) as zf:
        assert not [n for n in zf.namelist() if "libOpenCL" in n]
        assert b"stpu-sdk-build: opencl=3.0" in zf.read("paddle_custom_device/stpu/libpaddle-custom-stpu-impl.so")
    log = Path(summary["log"]).read_text()
    (lib_dir,) = SdkExports.recorded("opencl", "3.0", "aarch64")[summary["sdk"]["provided_on"]]["lib_dirs"]
    assert (Path(lib_dir) / "libOpenCL.so.1").read_bytes()[18] == 183  # the target's library (EM_AARCH64)
    assert re.search(
        r"opencl SDK 3\.0 at /cache/sdk/opencl-3\.0-aarch64-\w+ \(\S+/usr/lib/aarch64-linux-gnu/libOpenCL\.so\)", log
    )
    devkit("check-abi", summary["wheel"], "--arch", "aarch64")  # OPENCL_1.0 symbols resolved by the arm64 libOpenCL


def test_aarch64_inference_under_emulation(project):
    devkit("build", str(project), "--arch", "aarch64", "--infer")
    bundle = project / "dist" / "paddle-custom-stpu-inference-0.1.0-aarch64.tar.gz"
    with tarfile.open(bundle) as tar:
        lib = tar.extractfile(
            "paddle-custom-stpu-inference-0.1.0-aarch64/lib/stpu/libpaddle-custom-stpu-impl.so"
        ).read()
    assert int.from_bytes(lib[18:20], "little") == 183
    summary = json.loads(
        devkit(
            "verify",
            str(project),
            "--arch",
            "aarch64",
            "--infer",
            "--quant",  # LeNet quantized: its float program (level 0) and int8 (levels 1 and 2)
            "int8",
            "--model",
            "mnist",
            "--warmup",
            "2",
            "--repeats",
            "5",
            "--json",
        ).stdout
    )
    assert summary["passed"], summary
    checks = json.loads(Path(summary["report"]).read_text())["checks"]
    levels = checks[0]["quant"]["levels"]
    assert all(levels[n]["passed"] and not levels[n]["not_run"] for n in ("0", "1", "2")), levels
    assert levels["2"]["int8_ops"] == {"conv2d": 2, "matmul": 3, "relu": 2, "pool2d": 2, "flatten": 1}  # 3.2.2's PIR
    assert levels["2"]["int8_activations"] == 4 and levels["2"]["model"]["max_lsb"] <= 1  # LeNet's relu/pool inputs
    assert len(levels["2"]["layers"]) == 5 and all(u["passed"] for u in levels["2"]["layers"])  # each layer alone
    assert all(u["in_engine"] for u in levels["2"]["units"])  # the one-layer models, the residual add's too
    # the bundle's run.sh --check under qemu: the model and goldens the build machine's Paddle 3.3.1 made,
    # run by the target's Paddle 3.2.2 with the plugin from the bundle
    bundle_check = next(c for c in checks if c["name"] == "bundle int8 check")
    assert bundle_check["passed"] and bundle_check["detail"].count("PASS mnist int8") == 2, bundle_check
