"""The PyTorch adapter for aarch64: cross-compiled against the aarch64 torch wheel, verified under qemu."""

from __future__ import annotations

import json
import re
import zipfile
from pathlib import Path

import pytest
from conftest import (
    CHECK_MODES_SUMMARY,
    CONTAINER_MARKS,
    EMULATED_STEPS,
    assert_cpu_reference,
    devkit,
    with_emulated_steps,
)

pytestmark = CONTAINER_MARKS


@pytest.fixture(scope="module")
def project(project: Path) -> Path:
    """conftest's project with its emulated verifications at EMULATED_STEPS (emulated-steps)."""
    return with_emulated_steps(project)


def test_aarch64_torch_cross_build(project):
    """The PyTorch adapter cross-compiled by the builder's aarch64 g++ against the aarch64 torch wheel."""
    summary = json.loads(devkit("build", str(project), "--framework", "torch", "--arch", "aarch64", "--json").stdout)
    wheel = Path(summary["wheel"])
    assert re.fullmatch(r"torch_stpu-0\.1\.0-py3-none-manylinux_2_\d+_aarch64\.whl", wheel.name), wheel.name
    assert summary["runner"].startswith("docker:devkit-builder-bullseye:") and summary["torch_version"] == "2.9.1"
    assert "libtorch_cpu.so" in summary["platform"]["excluded"] and summary["platform"]["grafted"] == []
    with zipfile.ZipFile(wheel) as zf:
        (lib,) = [n for n in zf.namelist() if n.endswith(".so")]
        assert zf.read(lib)[18] == 183  # e_machine EM_AARCH64
    log = Path(summary["log"]).read_text()
    assert "aarch64-linux-gnu-g++" in log and "qemu" not in log.lower()


def test_aarch64_torch_verify_under_emulation(project):
    summary = json.loads(devkit("verify", str(project), "--framework", "torch", "--arch", "aarch64", "--json").stdout)
    assert summary["passed"], summary
    report = json.loads(Path(summary["report"]).read_text())
    assert report["torch_version"].startswith("2.9.1") and report["runner"].startswith("docker:devkit-verify-aarch64")
    mnist = next(c for c in report["checks"] if c["name"] == "mnist")
    assert mnist["fallbacks"] == {} and mnist["steps"] == EMULATED_STEPS
    # the CPU curve trained natively by the host's torch, not for ten minutes under qemu
    assert_cpu_reference(report, r"torch 2\.13\.0\S*", "on x86_64 (native)")
    if "kept from" not in mnist["cpu_reference"]:
        assert "torch_cpu_reference.py --data" in Path(report["log"]).read_text()
    assert report["modes"]["summary"] == CHECK_MODES_SUMMARY
    # what torch 2.9.1 asks of a device: all met, but for what only later torches have (by design, named)
    contract = next(c for c in report["checks"] if c["name"] == "framework contract")
    by_design = {c["hook"]: c["detail"] for c in contract["clauses"] if c["status"] == "by design"}
    assert set(by_design) == {"dtype support", "memory info", "profiler", "graph capture and replay (LeNet forward)"}
    assert all(detail.startswith("torch 2.9.1") for detail in by_design.values()), by_design
