"""End to end, for real: render STPU, compile it against the paddlepaddle wheel,
install it in a fresh environment and train on stpu:0 with CPU fallback off."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from conftest import PADDLE_CHECKS, assert_cpu_reference, build_tools_bin, devkit, standalone_build, wheel_name

from devkit.run.envs import cache_root, clone_env, reference_env
from devkit.run.step import HostRunner
from devkit.util.errors import ExitCode

pytestmark = pytest.mark.e2e


def paddle_python() -> Path:
    """A Python with paddlepaddle 3.3.1 and no plugin installed: the host's cached reference env,
    which host builds compile against and verify clones (made here if no build has yet)."""
    reference = reference_env(HostRunner(), "3.3.1", cache_root() / "tests-reference-env.log")
    assert reference is not None
    return reference / "bin" / "python"


def test_build_produces_pinned_wheel(built_project):
    wheels = list((built_project / "dist").glob("*.whl"))
    # Tagged by auditwheel with the lowest policy the host toolchain's glibc/libstdc++ allow.
    assert len(wheels) == 1 and re.fullmatch(wheel_name("x86_64"), wheels[0].name)
    with zipfile.ZipFile(wheels[0]) as zf:
        names = zf.namelist()
        meta = zf.read(next(n for n in names if n.endswith("METADATA"))).decode()
    # the loader Paddle opens, and the plugin proper one directory down, where Paddle does not look
    assert {
        "paddle_custom_device/libpaddle-custom-stpu.so",
        "paddle_custom_device/stpu/libpaddle-custom-stpu-impl.so",
    } <= set(names)
    assert "Requires-Dist: paddlepaddle==3.3.1" in meta


def test_second_build_compiles_nothing(built_project):
    summary = json.loads(devkit("build", str(built_project), "--runner", "host", "--json").stdout)
    assert summary["compiled_files"] == 0
    assert Path(summary["wheel"]).is_file()


def test_plugin_links_paddle_core_libraries(built_project):
    lib = next(built_project.glob("build/*/paddle/stpu/libpaddle-custom-stpu-impl.so"))
    needed = subprocess.run(["readelf", "-d", str(lib)], capture_output=True, text=True).stdout
    assert "libphi_core.so" in needed and "libcommon.so" in needed
    assert "[libpaddle.so]" in needed  # Paddle's PIR, for the int8 engine (engine/)
    # the loader links nothing of Paddle's, so Paddle can always open it, and exports only the two
    # entry points Paddle looks up in it (the runtime's and the Custom Engine's), which it forwards
    loader = lib.parent.parent / "libpaddle-custom-stpu.so"
    needed = subprocess.run(["readelf", "-d", str(loader)], capture_output=True, text=True).stdout
    assert "libphi_core.so" not in needed and "libcommon.so" not in needed and "libpaddle.so" not in needed
    exported = subprocess.run(["nm", "-D", "--defined-only", str(loader)], capture_output=True, text=True).stdout
    entry_points = sorted(line.split()[-1] for line in exported.splitlines() if " T " in line)
    assert entry_points == ["InitPlugin", "InitPluginCustomEngine"]


def test_a_loader_opened_by_a_relative_path_loads_nothing_from_the_working_directory(built_project, tmp_path):
    """The loader finds the plugin proper next to itself through dladdr, which gives the path it was
    opened by: from a relative one, dlopen would search the working directory, which may be anyone's.
    A plugin proper planted there is not loaded; the loader says why in one line, leaves the device
    type unset (Paddle then skips it) and returns."""
    loader = next(built_project.glob("build/*/paddle/libpaddle-custom-stpu.so"))
    work = tmp_path / "cwd"
    (work / "stpu").mkdir(parents=True)
    shutil.copy(loader, work / loader.name)
    planted = tmp_path / "planted.c"
    planted.write_text('#include <stdio.h>\n__attribute__((constructor)) static void run(void) { puts("PLANTED"); }\n')
    impl = work / "stpu" / "libpaddle-custom-stpu-impl.so"
    subprocess.run(["gcc", "-shared", "-fPIC", str(planted), "-o", str(impl)], check=True)
    script = f"import ctypes; ctypes.CDLL('./{loader.name}').InitPlugin(None); print('returned', flush=True)"
    proc = subprocess.run([sys.executable, "-c", script], cwd=work, capture_output=True, text=True)
    assert proc.returncode == 0 and "returned" in proc.stdout and "PLANTED" not in proc.stdout, proc
    lines = [line for line in proc.stderr.splitlines() if "stpu" in line]
    assert len(lines) == 1 and "cannot tell which directory it was loaded from (dladdr failed)" in lines[0], proc.stderr


def test_verify_passes_with_no_fallback(built_project):
    proc = devkit("verify", str(built_project), "--runner", "host", "--json")
    summary = json.loads(proc.stdout)
    assert summary["passed"], proc.stderr
    assert [c["name"] for c in summary["checks"]] == [*PADDLE_CHECKS, "mnist", "fallback report"]
    report = json.loads(Path(summary["report"]).read_text())
    assert report["fallback_flag"] == {"FLAGS_enable_api_kernel_fallback": False}
    assert Path(summary["plot"]).stat().st_size > 10_000  # a real PNG
    checks = {c["name"]: c for c in report["checks"]}
    mnist = checks["mnist"]
    assert mnist["device"]["heldout_accuracy"] >= 0.85 and "scikit-learn" in mnist["dataset"]
    assert_cpu_reference(report, re.escape(f"paddle {report['paddle_version']}"), "in this process")  # native target
    assert {"conv2d_grad", "adam", "cross_entropy_with_softmax_grad", "pool2d_grad"} <= set(
        report["registered_kernels"]
    )
    assert checks["ops"]["uncovered_kernels"] == []  # every plugin kernel was compared with CPU
    # with fallback on, every kernel the model ran was the plugin's
    fallback = checks["fallback report"]
    assert fallback["passed"] and fallback["fallback"] == []
    assert {"conv2d", "conv2d_grad", "matmul", "adam", "pool2d"} <= set(fallback["on_device"])
    assert all("cpu_fallback" not in c for c in fallback["kernels"].values())  # (Adam keeps a few on CPU on purpose)
    # at run time every kernel's inputs/attributes/outputs equal the installed Paddle's
    signatures = checks["kernel signatures"]
    assert signatures["passed"] and signatures["mismatched"] == [] and len(signatures["kernels"]) >= 59
    # what Paddle asks of a device, through its public API: each clause met or by design with a reason
    clauses = {c["hook"]: c for c in checks["framework contract"]["clauses"]}
    assert {
        "float16/bfloat16 support",
        "RNG state",
        "memory statistics",
        "profiler",
        "graph capture and replay (LeNet forward)",
    } <= clauses.keys()
    by_design = {hook for hook, c in clauses.items() if c["status"] == "by design" and c["detail"]}
    assert by_design == {"timed events", "device properties", "pinned host memory"}  # (Paddle 3.3.1's own limits)
    assert all(c["status"] == "pass" for hook, c in clauses.items() if hook not in by_design), clauses


def test_stale_kernel_signature_fails_the_build_and_leaves_no_wheel(tmp_path):
    project = tmp_path / "STPU"
    devkit("new-backend", "STPU", "--out", str(project))
    (project / "dist").mkdir()
    (project / "dist" / "paddle_custom_stpu-0.0.9-py3-none-linux_x86_64.whl").write_text("stale")
    src = project / "paddle" / "kernels" / "shape_kernels.cc"
    # The pre-3.x reshape_grad had no `x` input: exactly the stale signature vendors ship.
    old = (
        src.read_text()
        .replace(
            "void ReshapeGradKernel(const Context& ctx, const phi::DenseTensor& x, const phi::DenseTensor& out_grad,",
            "void ReshapeGradKernel(const Context& ctx, const phi::DenseTensor& out_grad,",
        )
        .replace(
            "  x_grad->Resize(x.dims());\n  copy_tensor(ctx, out_grad, x_grad);\n}\nSTPU_CHECK_SIGNATURE_ANY_DTYPE(ReshapeGradKernel",
            "  copy_tensor(ctx, out_grad, x_grad);\n}\nSTPU_CHECK_SIGNATURE_ANY_DTYPE(ReshapeGradKernel",
        )
    )
    assert old != src.read_text()
    src.write_text(old)
    proc = devkit("build", str(project), "--runner", "host", check=False)
    assert proc.returncode == ExitCode.BUILD_FAILED
    assert "ReshapeGradKernel does not match phi::ReshapeGradKernel" in proc.stderr
    assert "full log:" in proc.stderr.splitlines()[-1]
    assert list((project / "dist").glob("*.whl")) == []


def test_configure_names_missing_paddle(tmp_path):
    project = tmp_path / "STPU"
    devkit("new-backend", "STPU", "--out", str(project))
    fake_root = tmp_path / "paddle"
    fake_root.mkdir()
    proc = subprocess.run(
        [str(build_tools_bin() / "cmake"), "-S", str(project), "-B", str(tmp_path / "b"), f"-DPADDLE_ROOT={fake_root}"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode != 0
    assert "Paddle's C++ headers are missing" in proc.stderr


def test_generated_project_tests_pass(built_project, tmp_path):
    """The vendor's own tests: device library C++ tests, then pytest on the installed plugin."""
    bindir = build_tools_bin()
    build, env = standalone_build(built_project, "device-tests", bindir)
    subprocess.run(
        ["cmake", "-S", str(built_project), "-B", str(build), "-G", "Ninja", "-DWITH_PADDLE=OFF"],
        check=True,
        env=env,
        capture_output=True,
    )
    subprocess.run(["cmake", "--build", str(build)], check=True, env=env, capture_output=True)
    listed = subprocess.run([str(build / "test_stpu_device"), "--list"], capture_output=True, text=True, check=True)
    cases = len(listed.stdout.split())
    assert cases >= 40 and "ops.matmul.gemm_matches_naive" in listed.stdout.split()
    # ctest, and the suite in every mode: the default (2 devices, queues, opaque memory) and each
    # debugging switch. All four at once: a run mostly waits on the device's queues and timeouts
    # (alone: 5.3 s, of which 0.35 s of CPU).
    modes = ({}, {"STPU_SYNC": "1"}, {"STPU_HOST_VISIBLE_MEMORY": "1", "STPU_DEVICE_COUNT": "1"})
    with ThreadPoolExecutor(len(modes) + 1) as pool:
        ctest = pool.submit(
            subprocess.run,
            ["ctest", "--test-dir", str(build), "--output-on-failure"],
            env=env,
            capture_output=True,
            text=True,
        )
        suites = [
            pool.submit(
                subprocess.run, [build / "test_stpu_device"], capture_output=True, text=True, env={**os.environ, **mode}
            )
            for mode in modes
        ]
    assert ctest.result().returncode == 0, ctest.result().stdout
    for mode, suite in zip(modes, suites, strict=True):
        assert f"{cases} passed, 0 failed, 0 unimplemented" in suite.result().stdout, (mode, suite.result().stdout)

    # A fresh environment next to the pinned Paddle: a clone of the reference env (hard links, as
    # verify makes one) instead of a new venv that pip fills with the ~200 MB Paddle wheel again.
    # pip still resolves the plugin's pins against it. Always `python -m pip`: the clone's bin/pip
    # is the reference env's (its #! line), and would install into the shared reference env.
    python = clone_env(paddle_python().parents[1], tmp_path / "venv")
    wheel = next((built_project / "dist").glob("*.whl"))
    subprocess.run(
        [python, "-m", "pip", "install", "-q", "--disable-pip-version-check", str(wheel), "pytest"],
        check=True,
        capture_output=True,
    )
    py = subprocess.run(
        [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "paddle/tests"],
        cwd=built_project,
        capture_output=True,
        text=True,
        env={k: v for k, v in os.environ.items() if k != "CUSTOM_DEVICE_ROOT"},
    )
    assert py.returncode == 0, py.stdout[-3000:]
    assert " passed" in py.stdout and "failed" not in py.stdout
