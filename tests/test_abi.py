"""check-abi on real ELF files: the built plugin, a plugin that forgot Paddle's core
libraries, and a plugin offered to the wrong Paddle version."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from conftest import devkit

pytestmark = pytest.mark.e2e


def wheel_of(project: Path) -> Path:
    return next((project / "dist").glob("*-linux_x86_64.whl"))


def test_built_plugin_passes(built_project):
    summary = json.loads(devkit("check-abi", str(wheel_of(built_project)), "--json").stdout)
    assert summary["ok"] and summary["paddle_version"] == "3.3.1" and summary["findings"] == []


def test_plugin_without_core_libraries_is_caught(tmp_path):
    # What a hand-written CMakeLists that links only libpaddle.so produces.
    src = tmp_path / "plugin.cc"
    src.write_text('extern "C" void PD_RegisterPhiKernel();\n'
                   'extern "C" void InitPlugin(void*) { PD_RegisterPhiKernel(); }\n')
    lib = tmp_path / "libpaddle-custom-bad.so"
    subprocess.run(["g++", "-shared", "-fPIC", str(src), "-o", str(lib)], check=True)
    proc = devkit("check-abi", str(lib), "--json", check=False)
    assert proc.returncode == 1
    finding = json.loads(proc.stdout)["findings"][0]
    assert "undefined symbol PD_RegisterPhiKernel: defined in libphi_core.so, which it does not link" in finding["problem"]
    assert "libphi_core.so" in finding["fix"]
    assert proc.stderr.strip().splitlines()[-1].startswith("error: 1 ABI problem(s)")


def test_plugin_built_against_another_paddle_is_caught(built_project):
    proc = devkit("check-abi", str(wheel_of(built_project)), "--paddle-version", "3.2.2", "--json", check=False)
    assert proc.returncode == 1
    problems = [f["problem"] for f in json.loads(proc.stdout)["findings"]]
    assert "was compiled against Paddle 3.3.1, not 3.2.2" in problems[0]
