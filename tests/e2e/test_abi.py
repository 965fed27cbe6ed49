"""check-abi on real ELF files: the built plugin, a plugin that forgot Paddle's core
libraries, and a plugin offered to the wrong Paddle version."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import devkit

from devkit.util.errors import ExitCode

pytestmark = pytest.mark.e2e


def wheel_of(project: Path) -> Path:
    return next((project / "dist").glob("*_x86_64.whl"))


def test_built_plugin_passes(built_project):
    summary = json.loads(devkit("check-abi", str(wheel_of(built_project)), "--json").stdout)
    assert summary["ok"] and summary["paddle_version"] == "3.3.1"
    assert [f for f in summary["findings"] if f["severity"] == "error"] == []


def test_newer_system_symbol_versions_than_paddle_are_a_warning(built_project):
    """Built on Debian 12 (glibc 2.36, GCC 12), the plugin needs newer glibc symbol versions than
    Paddle 3.3.1's own libraries (glibc 2.28): it loads here, not on every system that Paddle does."""
    summary = json.loads(devkit("check-abi", str(wheel_of(built_project)), "--json").stdout)
    warnings = [f["problem"] for f in summary["findings"] if f["severity"] == "warning"]
    assert any(
        p.startswith("needs GLIBC_2.") and "Paddle 3.3.1's libraries need at most GLIBC_2.28" in p for p in warnings
    ), warnings


def test_other_device_ext_version_is_caught(built_project, tmp_path):
    lib = next(built_project.glob("build/*/paddle/stpu/libpaddle-custom-stpu-impl.so"))
    data = lib.read_bytes()
    assert data.count(b"custom_runtime_version=0.1.1") == 1
    forged = tmp_path / lib.name
    forged.write_bytes(data.replace(b"custom_runtime_version=0.1.1", b"custom_runtime_version=0.9.1"))
    proc = devkit("check-abi", str(forged), "--json", check=False)
    assert proc.returncode == ExitCode.BUILD_FAILED
    problems = [f["problem"] for f in json.loads(proc.stdout)["findings"] if f["severity"] == "error"]
    assert problems == [
        "was built with device_ext.h 0.9.1, and Paddle 3.3.1 has 0.1.1: Paddle refuses the runtime "
        "(C_DeviceInterface differs)"
    ]


def test_plugin_without_core_libraries_is_caught(tmp_path):
    # What a hand-written CMakeLists that links only libpaddle.so produces.
    src = tmp_path / "plugin.cc"
    src.write_text(
        'extern "C" void PD_RegisterPhiKernel();\nextern "C" void InitPlugin(void*) { PD_RegisterPhiKernel(); }\n'
    )
    lib = tmp_path / "libpaddle-custom-bad.so"
    subprocess.run(["g++", "-shared", "-fPIC", str(src), "-o", str(lib)], check=True)
    proc = devkit("check-abi", str(lib), "--json", check=False)
    assert proc.returncode == ExitCode.BUILD_FAILED
    finding = json.loads(proc.stdout)["findings"][0]
    assert (
        "undefined symbol PD_RegisterPhiKernel: defined in libphi_core.so, which it does not link" in finding["problem"]
    )
    assert "libphi_core.so" in finding["fix"]
    assert proc.stderr.strip().splitlines()[-1].startswith("error: 1 ABI problem(s)")


def test_plugin_built_against_another_paddle_is_caught(built_project):
    proc = devkit("check-abi", str(wheel_of(built_project)), "--paddle-version", "3.2.2", "--json", check=False)
    assert proc.returncode == ExitCode.BUILD_FAILED
    findings = json.loads(proc.stdout)["findings"]
    errors = [(f["library"], f["problem"]) for f in findings if f["severity"] == "error"]
    # the plugin proper, not its loader (which links nothing of Paddle's: only glibc warnings)
    assert errors[0] == ("paddle_custom_device/stpu/libpaddle-custom-stpu-impl.so", errors[0][1]), errors
    assert "was compiled against Paddle 3.3.1, not 3.2.2" in errors[0][1]
