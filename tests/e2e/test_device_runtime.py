"""The device library's runtime where its own tests cannot see: its conformance suite
(tests/conformance and tests/flavour: stream lifetimes, error attribution, exceptions in queued
work, a forked child, signals, the exit wait) under AddressSanitizer+UBSan and ThreadSanitizer, and Python's
faulthandler still printing its traceback for a stack overflow after a device allocation.

One rendered project; each build configures `-DWITH_PADDLE=OFF` and builds one target (the
device library is three unity units)."""

from __future__ import annotations

import os
import re
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import devkit, standalone_build

pytestmark = pytest.mark.e2e

# The tests send themselves SIGSEGV and SIGBUS: the sanitizers must leave those signals to the
# library's handler. The collectives test's lost-rank case ends a rank without destroying its
# communicator on purpose.
SANITIZER_ENV = {
    "address": {"ASAN_OPTIONS": "handle_segv=0:handle_sigbus=0:detect_leaks=1"},
    "thread": {"TSAN_OPTIONS": "handle_segv=0:handle_sigbus=0"},
}
LEAKS_BY_DESIGN = "leak:stpu_ccl_comm_init\nleak:stpu_ccl_all_reduce\n"
SANITIZER_REPORT = re.compile(r"(Address|Thread|Leak|UndefinedBehavior)Sanitizer|runtime error:")


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("device-runtime") / "STPU"
    devkit("new-backend", "STPU", "--out", str(out))
    return out


def build(project: Path, name: str, target: str, *definitions: str) -> tuple[Path, float]:
    """Configures and builds `target` in the project's build/NAME; that directory and the seconds it took."""
    start = time.monotonic()
    build_dir, env = standalone_build(project, name)
    configure = ["cmake", "-S", str(project), "-B", str(build_dir), "-G", "Ninja", "-DWITH_PADDLE=OFF", *definitions]
    subprocess.run(configure, check=True, capture_output=True, env=env)
    made = subprocess.run(
        ["cmake", "--build", str(build_dir), "--target", target], capture_output=True, text=True, env=env
    )
    assert made.returncode == 0, made.stdout[-3000:]
    return build_dir, time.monotonic() - start


@pytest.mark.parametrize("sanitizer", ["address", "thread"])
def test_the_device_library_passes_its_tests_under_sanitizers(project, tmp_path, sanitizer):
    build_dir, seconds = build(project, sanitizer, "test_stpu_device", f"-DSTPU_SANITIZE={sanitizer}")
    suppressions = tmp_path / "lsan.supp"
    suppressions.write_text(LEAKS_BY_DESIGN)
    env = {**os.environ, **SANITIZER_ENV[sanitizer], "LSAN_OPTIONS": f"suppressions={suppressions}"}
    proc = subprocess.run([str(build_dir / "test_stpu_device")], capture_output=True, text=True, env=env, timeout=600)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0 and re.search(r"\n\d+ passed, 0 failed, 0 unimplemented\n", proc.stdout), output[-5000:]
    assert not SANITIZER_REPORT.search(output), output[-5000:]
    print(f"{sanitizer}: built in {seconds:.0f} s")


OVERFLOW = """
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
ptr = ctypes.c_void_p()
assert lib.stpu_malloc(0, ctypes.byref(ptr), 64) == 0  # maps device memory: the fault handler is in
sys.setrecursionlimit(1_000_000)
def recurse(_=0):
    return list(map(recurse, [0]))  # through C: every level takes C stack, until there is none
recurse()
"""


def shared_library(project: Path, tmp_path: Path) -> Path:
    """The device library alone (its plain build's archive) as a shared library, for ctypes."""
    plain, _ = build(project, "plain", "stpu_device", "-DWITH_TESTING=OFF", "-DCMAKE_BUILD_TYPE=None")
    library = tmp_path / "libstpu_device.so"
    archive = plain / "device" / "libstpu_device.a"
    link = ["g++", "-shared", "-o", str(library), "-Wl,--whole-archive", str(archive), "-Wl,--no-whole-archive"]
    subprocess.run([*link, "-pthread"], check=True)
    return library


def small_stack() -> None:
    resource.setrlimit(resource.RLIMIT_STACK, (1 << 20, 1 << 20))


def test_a_stack_overflow_after_a_device_allocation_prints_pythons_traceback(project, tmp_path):
    """The library's SIGSEGV handler runs on an alternate stack and passes a fault outside device
    memory on to Python's faulthandler (-X faulthandler), which prints where Python was."""
    library = shared_library(project, tmp_path)
    proc = subprocess.run(
        [sys.executable, "-X", "faulthandler", "-c", OVERFLOW, str(library)],
        capture_output=True,
        text=True,
        preexec_fn=small_stack,
        timeout=120,
    )
    assert proc.returncode == -signal.SIGSEGV, (proc.returncode, proc.stderr[-2000:])
    assert "Fatal Python error: Segmentation fault" in proc.stderr, proc.stderr[-2000:]
    assert re.search(r'File "<string>", line 8 in recurse', proc.stderr), proc.stderr[-2000:]


HOST_FUNCTION_FAULT = """
import ctypes, sys, time
lib = ctypes.CDLL(sys.argv[1])
ptr, first, second = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p()
assert lib.stpu_malloc(0, ctypes.byref(ptr), 64) == 0
assert lib.stpu_stream_create(0, ctypes.byref(first)) == 0 and lib.stpu_stream_create(0, ctypes.byref(second)) == 0
@ctypes.CFUNCTYPE(None, ctypes.c_void_p)
def read_device_memory(_):
    time.sleep(0.3)  # the main thread enqueues a fill on the other stream meanwhile
    ctypes.string_at(ptr.value, 4)  # the bug: a host function reads device memory
assert lib.stpu_launch_host_func(first, read_device_memory, None) == 0
assert lib.stpu_fill(second, 3, ptr, ctypes.c_int64(16), ctypes.c_double(1.0)) == 0  # 3: FLOAT32
lib.stpu_stream_synchronize(first)
"""


def test_a_fault_names_the_op_the_faulting_worker_runs(project, tmp_path):
    """Issue 52: a host function that reads device memory faults on its stream's worker while the
    last op enqueued (by the main thread, on another stream) is a fill: the message names the
    op that faulted, not the fill."""
    library = shared_library(project, tmp_path)
    proc = subprocess.run(
        [sys.executable, "-c", HOST_FUNCTION_FAULT, str(library)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == -signal.SIGABRT, (proc.returncode, proc.stderr[-2000:])
    assert re.search(
        r"\[STPU\] host access to device memory at 0x[0-9a-f]+ \(device 0, byte 0 of the 64-byte "
        r"allocation at 0x[0-9a-f]+; in op host_func\)",
        proc.stderr,
    ), proc.stderr[-2000:]
