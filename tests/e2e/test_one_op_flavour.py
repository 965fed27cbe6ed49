"""A vendor's first flavour of the device library: its runtime, the data movement every flavour
needs (fill, cast, strided copies) and one op, GEMM. It renders from its own directory
(`new-backend --sdk DIR`), builds for both frameworks, and verifies: the conformance suite names
every other op unimplemented, and both frameworks train with the kernels of the missing ops
unregistered (on the CPU by design) -- no registered kernel reaches a stub. They train LeNet 70
steps (EMULATED_STEPS, the fewest the training verdict passes), not the native 200: what is
checked is the flavour's kernels and fallbacks, not the length of the curve."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import EMULATED_STEPS, devkit, verify_passes

from devkit.util.resources import resource_dir

pytestmark = pytest.mark.e2e

# The host-backed library's runtime and data movement, copied as a vendor would start, plus one op.
# (the queue in streams.cc records its items through the tracer, and into a graph while it captures)
SOURCES = [
    "device.cc",
    "streams.cc",
    "tracer.cc",
    "graph.cc",
    "memory.cc",
    "debug.cc",
    "movement_ops.cc",
    "matmul_ops.cc",
]
HEADERS = ["debug.h", "internal.h", "tracer.h"]


@pytest.fixture(scope="module")
def one_op_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("one-op")
    flavour = root / "gemm_only"
    src = flavour / "device" / "src"
    src.mkdir(parents=True)
    (flavour / "tests" / "flavour").mkdir(parents=True)  # no cases of its own yet
    host = resource_dir("templates") / "backend" / "device" / "src"
    for name in SOURCES + HEADERS:
        shutil.copyfile(host / name, src / name)
    (flavour / "flavour.toml").write_text(
        'summary = "a first bring-up: the runtime, data movement and GEMM"\n'
        'replaces = ["device/src", "tests/flavour"]\n'
        f"device-sources = {json.dumps([f'src/{name}' for name in SOURCES])}\n"
    )
    project = root / "STPU"
    rendered = json.loads(devkit("new-backend", "STPU", "--sdk", str(flavour), "--out", str(project), "--json").stdout)
    assert rendered["sdk"] == "gemm_only" and "device/src/unimplemented.cc" in rendered["files"]
    return project


def test_a_one_op_flavour_renders_with_every_other_op_stubbed(one_op_project):
    stubs = (one_op_project / "device/src/unimplemented.cc").read_text()
    for op in ("binary", "unary", "conv2d_forward", "sgd_update", "ccl_all_reduce"):
        assert f"stpu_status_t stpu_{op}(" in stubs
    assert "stpu_gemm(" not in stubs and "stpu_cast(" not in stubs
    paddle = (one_op_project / "paddle/kernels/fallback_ops.cc").read_text()
    assert "(add|subtract|multiply|divide)(_grad)?" in paddle and "matmul_grad" in paddle
    torch = (one_op_project / "pytorch/csrc/fallback.cpp").read_text()
    assert r"(add|sub|mul|div)_?\..*" in torch and "convolution_.*" in torch


@pytest.mark.parametrize("framework", ["paddle", "torch"])
def test_both_frameworks_train_on_a_one_op_flavour(one_op_project, framework):
    devkit("build", str(one_op_project), "--framework", framework, "--runner", "host")
    _, report = verify_passes(one_op_project, "--framework", framework, "--steps", str(EMULATED_STEPS))
    conformance = report["checks"][0]
    cases = {c["case"]: c for c in conformance["cases"]}
    assert cases["ops.matmul.gemm_matches_naive"]["outcome"] == "passed"
    assert cases["ops.movement.cast_between_dtypes"]["outcome"] == "passed"
    assert cases["ops.elementwise.divide_and_compare"]["outcome"] == "unimplemented"
    assert cases["ops.elementwise.divide_and_compare"]["detail"].startswith("binary is not implemented by")
    # every op family but the one implemented (and data movement) is named unimplemented
    unimplemented_areas = {c["area"] for c in cases.values() if c["outcome"] == "unimplemented"}
    op_areas = {c["area"] for c in cases.values() if c["area"].startswith("ops.")}
    assert unimplemented_areas >= op_areas - {"ops.matmul", "ops.movement"}
    assert conformance["counts"]["failed"] == 0
