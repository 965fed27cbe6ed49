"""x86_64 verify containers that need a layer on the verify image, each made once: the C++
compiler and Python headers Inductor needs (`verify --compile`), and a vendor SDK's runtime
(`[tool.devkit.sdk.runtime]`). A file of their own, so the two CI workers share the container
tests' time (test_containers.py has the builds and the plain verifications)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from conftest import CONTAINER_MARKS, EMULATED_STEPS, devkit, render_with_opencl_sdk

from devkit.util.errors import ExitCode

pytestmark = CONTAINER_MARKS


def read_log(report: dict) -> str:
    return Path(report["log"]).read_text()


def test_x86_64_container_verify_compiles_onto_the_device(tmp_path):
    """torch.compile in the verify container: its image gets the C++ compiler and Python headers
    Inductor needs (a layer, made once), and the compiled kernels run on the device."""
    project = tmp_path / "STPU"
    devkit("new-backend", "STPU", "--out", str(project))
    devkit("build", str(project), "--framework", "torch", "--runner", "host")
    argv = ["verify", str(project), "--framework", "torch", "--compile", "--runner", "docker", "--json"]
    summary = json.loads(devkit(*argv).stdout)
    names = [c["name"] for c in summary["checks"] if c["passed"]]
    assert summary["passed"] and {"compile mlp", "compile lenet", "compile trace"} <= set(names), summary
    report = json.loads(Path(summary["report"]).read_text())
    assert re.search(r"\(clone of torch 2\.13\.0, devkit-verify-x86_64-\w+-torch-2\.13\.0\)", read_log(report))


def test_x86_64_container_verify_installs_the_sdk_runtime(tmp_path):
    """The OpenCL example in the x86_64 verify container. Without [tool.devkit.sdk.runtime] the
    verify image has no libOpenCL.so.1: the plugin's loader says so, Paddle goes on without the
    device, and verify stops with that one line. With it, a layer on the verify image installs the
    ICD loader and pocl, and the checks pass on OpenCL (two pocl devices, runtime-env)."""
    project = render_with_opencl_sdk(tmp_path, "opencl-backend")
    pyproject = project / "pyproject.toml"
    declared = pyproject.read_text()
    runtime = declared[declared.index("[tool.devkit.sdk.runtime]") :]
    pyproject.write_text(declared.replace(runtime, ""))
    devkit("build", str(project))
    proc = devkit("verify", str(project), "--steps", "20", check=False)
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert proc.returncode == ExitCode.ENVIRONMENT and len(errors) == 1, proc.stderr[-2000:]
    assert (
        ": paddle-custom-stpu: the stpu device is unavailable: it needs the opencl 3.0 runtime, and libOpenCL.so.1 "
        "could not be loaded (libOpenCL.so.1: cannot open" in errors[0]
    ), errors[0]
    assert "[tool.devkit.sdk.runtime]" in errors[0]
    pyproject.write_text(declared)
    # (70 LeNet steps, the fewest that pass the training verdict: this is about the runtime, not training)
    summary = json.loads(devkit("verify", str(project), "--steps", str(EMULATED_STEPS), "--json").stdout)
    report = json.loads(Path(summary["report"]).read_text())
    assert summary["passed"] and report["runner"].startswith("docker:devkit-verify-x86_64-sdk:")
    # the layer adds Debian packages only: Paddle comes from the verify image's reference env
    assert re.search(r"\(clone of paddlepaddle 3\.3\.1, devkit-verify-x86_64-\w+-paddle-3\.3\.1\)", read_log(report))
    assert "conv2d.*" in report["unimplemented_kernels"]
