"""The reference device behaves like hardware where an adapter can get things wrong, so verify
catches the bug classes a forgiving device hides. Each test injects one bug into a generated
backend: a kernel that reads device memory on the host, Paddle's or torch's (the process dies
with one line naming the access), and a copy to the host that does not wait for the queue (the queued-work check
reads stale data); the same checks pass on the backend as generated."""

from __future__ import annotations

import json
import re
from pathlib import Path

from conftest import devkit

from devkit.util.errors import ExitCode

KERNEL_CALL = (
    "  STPU_CHECK(stpu_binary(stream_of(ctx), op, dtype_of<T>(), x.data(), &xs, y.data(), &ys, data, &os), name);"
)
HOST_READ = (
    "  volatile T first = x.numel() > 0 ? static_cast<const T*>(x.data())[0] : T();  // the bug\n  (void)first;\n"
)
D2H_WAIT = (
    '  return queued != C_SUCCESS ? queued : to_c("async_memory_copy_d2h", stpu_stream_synchronize(stream_of(stream)));'
)
TORCH_CALL = "  stpu_shape_t as = shape_of(a.sizes()), bs = shape_of(b.sizes()), os = shape_of(sizes);"
TORCH_HOST_READ = "  volatile char first = *static_cast<const char*>(a.const_data_ptr());  // the bug\n  (void)first;\n"
# Each queued item waits 2 ms, so the host always gets to a result before the queue does.
DELAY = ["--modes", "delay=2000", "--steps", "20"]


def inject(tmp_path: Path, relative: str, line: str, replacement: str, *build: str) -> Path:
    project = tmp_path / "STPU"
    devkit("new-backend", "STPU", "--out", str(project))
    source = project / relative
    text = source.read_text()
    assert line in text, f"{relative} no longer has the line this test breaks"
    source.write_text(text.replace(line, replacement))
    devkit("build", str(project), "--runner", "host", *build)
    return project


FAULT_LINE = (
    r"died \(SIGABRT\) after the device library printed: \[STPU\] host access to device memory at 0x[0-9a-f]+ "
    r"\(device 0, byte \d+ of the \d+-byte allocation at 0x[0-9a-f]+; last op enqueued: "
)


def last_error(proc) -> str:
    assert proc.returncode == ExitCode.VERIFICATION_FAILED, proc.stderr[-2000:]
    return [line for line in proc.stderr.splitlines() if line.startswith("error:")][-1]


def verify(project: Path, *args: str) -> tuple[dict, dict]:
    """The checks by name, and the report."""
    summary = json.loads(devkit("verify", str(project), "--runner", "host", "--json", *args, check=False).stdout)
    return {c["name"]: c for c in summary["checks"]}, json.loads(Path(summary["report"]).read_text())


def test_a_kernel_that_reads_device_memory_on_the_host_dies_naming_the_access(tmp_path):
    project = inject(tmp_path, "paddle/kernels/elementwise_kernels.cc", KERNEL_CALL, HOST_READ + KERNEL_CALL)
    error = last_error(devkit("verify", str(project), "--runner", "host", "--steps", "20", check=False))
    assert re.search(FAULT_LINE, error), error
    # The debugging switch lets the host read device memory: the same build then runs its checks.
    checks, report = verify(project, "--modes", "host-visible", "--steps", "20")
    assert checks["tensor"]["passed"] and checks["ops"]["passed"], checks
    # the device library's conformance suite ran in that mode too, every case by name
    cases = {c["case"]: c for c in next(c for c in report["checks"] if c["name"] == "device conformance")["cases"]}
    assert cases["memory.host_reads_of_device_memory_fault"]["outcome"] == "passed" and len(cases) >= 40
    assert report["modes"]["summary"] == "2 devices, asynchronous streams, host-visible device memory"


def test_a_torch_kernel_that_reads_device_memory_on_the_host_dies_naming_the_access(tmp_path):
    project = inject(
        tmp_path, "pytorch/csrc/elementwise.cpp", TORCH_CALL, TORCH_HOST_READ + TORCH_CALL, "--framework", "torch"
    )
    args = ("verify", str(project), "--framework", "torch", "--runner", "host", "--steps", "20")
    error = last_error(devkit(*args, check=False))
    assert re.search(FAULT_LINE, error), error


def test_a_copy_to_the_host_without_waiting_for_the_queue_reads_stale_data(tmp_path, built_project):
    broken = inject(tmp_path, "paddle/runtime/runtime.cc", D2H_WAIT, "  return queued;")
    check = verify(broken, *DELAY)[0]["queued work"]
    assert not check["passed"]
    assert "a non-blocking copy to the host read at once is STALE" in check["detail"]
    checks, report = verify(built_project, *DELAY)
    assert checks["queued work"]["passed"], checks["queued work"]
    assert checks["device conformance"]["passed"], checks["device conformance"]  # the suite, delayed queues too
    assert "a non-blocking copy to the host read at once matches" in checks["queued work"]["detail"]
    assert report["modes"] == {
        "devices": 2,
        "asynchronous": True,
        "opaque_memory": True,
        "stream_delay_us": 2000,
        "summary": "2 devices, asynchronous streams, opaque device memory, 2000 us delay per queued item",
    }


def test_a_mode_verify_does_not_know_is_refused_in_one_line(built_project):
    bad = devkit("verify", str(built_project), "--modes", "sync,devices=17", check=False)
    assert bad.returncode == ExitCode.INPUT
    assert bad.stderr.strip().splitlines()[-1] == (
        "error: --modes: 'devices=17' is not a device mode. Fix: use --modes with sync, host-visible, "
        "devices=N (1-16) or delay=US, comma-separated"
    )
