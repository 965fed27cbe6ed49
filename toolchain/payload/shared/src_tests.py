"""A framework's own test files (from its source tree, `devkit test-ops --framework-src DIR`) run by
pytest, one process per file, each test an OpResult of suite "framework-src".

Two halves in one module: `run_files` (the supervisor, in the payload's process) and the pytest hooks
below it, which pytest loads in each file's process as the plugin `-p src_tests` and which write one
JSON line per test start and per outcome to DEVKIT_SRC_TESTS_LOG. A process that dies or outlives its
timeout is reported as the test it was in (or, before any test, as its file); pytest's own output goes
to the payload's log. The framework's tree is only read: no cache, no bytecode written into it.

Standard library only: the hooks get pytest's objects as arguments (Any here).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from problems import describe_exit

if TYPE_CHECKING:
    from op_records import OpResult, OpStatus

LOG_VARIABLE = "DEVKIT_SRC_TESTS_LOG"
NUMPY_DTYPES = {"uint16": "bfloat16"}  # (Paddle's OpTests hold bfloat16 data as NumPy uint16)
DTYPE_SUFFIX = re.compile(
    r"_(float16|bfloat16|float32|float64|complex32|complex64|complex128|int8|int16|int32|int64|uint8|bool)(?=$|\[)"
)


@dataclass
class FilesRun:
    """What the files' tests gave: results (passed, failed, errors), and the skipped ones counted by reason."""

    results: list[OpResult] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)
    files: dict[str, float] = field(default_factory=dict)  # file -> seconds it ran


def write_report(out: str, run: FilesRun, began: float, **about: str) -> None:
    """The runner's JSON (a test-ops report of suite framework-src): what ran where (`about`: mode,
    framework, device, the runtime's version, reference), its results and where the time went."""
    report = {
        "mode": "framework-src",
        **about,
        "results": run.results,
        "skipped": run.skipped,
        "files": run.files,
        "seconds_in_env": round(time.monotonic() - began, 1),
    }
    with open(out, "w") as f:
        json.dump(report, f, indent=2)


def dtype_of(nodeid: str) -> str:
    """The dtype a device-type test's name ends with (test_add_stpu_float32), else "-"."""
    found = DTYPE_SUFFIX.search(nodeid.rsplit("::", 1)[-1])
    return found.group(1) if found else "-"


def run_files(
    files: Sequence[str],
    root: str,
    cwd: str,
    env: Mapping[str, str],
    timeout: float,
    plugins: Sequence[str] = (),
) -> FilesRun:
    """pytest on each file (relative to cwd) in its own process, bounded by `timeout` seconds, with
    the source tree `root` as pytest's root: its pytest.ini (else none) and its conftest files alone,
    not those of whatever directories hold the tree."""
    run = FilesRun()
    with tempfile.TemporaryDirectory(prefix="src-tests-") as private:
        ini = os.path.join(root, "pytest.ini")
        if not os.path.isfile(ini):
            ini = os.path.join(private, "pytest.ini")
            with open(ini, "w") as f:
                f.write("[pytest]\n")
        argv = [sys.executable, "-m", "pytest", "-c", ini, "--rootdir", root, "--confcutdir", root]
        argv += ["-q", "-rN", "--tb=short", "-p", "no:cacheprovider", "-p", "src_tests"]
        argv += [a for plugin in plugins for a in ("-p", plugin)]
        for index, name in enumerate(files):
            log = os.path.join(private, f"{index}.jsonl")
            began = time.monotonic()
            code = _pytest_file([*argv, name], cwd, {**env, LOG_VARIABLE: log}, timeout)
            run.files[name] = round(time.monotonic() - began, 1)
            _collect(name, _read_lines(log), code, timeout, run)
    return run


def _pytest_file(argv: list[str], cwd: str, env: Mapping[str, str], timeout: float) -> int | None:
    """pytest's exit code, or None when it outlived `timeout` (its process group is killed)."""
    print(f"== {argv[-1]}", flush=True)
    proc = subprocess.Popen(argv, cwd=cwd, env={**env, "PYTHONDONTWRITEBYTECODE": "1"}, start_new_session=True)
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        return None


def _read_lines(path: str) -> list[dict[str, Any]]:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return [json.loads(line) for line in f if line.strip().startswith("{")]
    except (OSError, ValueError):
        return []


def _collect(name: str, lines: list[dict[str, Any]], code: int | None, timeout: float, run: FilesRun) -> None:
    """The file's lines as results; a test started and never finished is where the process ended."""
    open_test: str | None = None
    for line in lines:
        if "start" in line:
            open_test = line["start"]
        elif line.get("status") == "skipped":
            run.skipped[line["detail"]] = run.skipped.get(line["detail"], 0) + 1
            open_test = None if line["case"] == open_test else open_test
        else:
            run.results.append(_result(line))
            open_test = None if line["case"] == open_test else open_test
    how = f"timed out after {timeout:.0f} s" if code is None else describe_exit(code)
    if open_test is not None:
        run.results.append(_error(open_test, f"the process {how} in this test"))
    elif (
        code is None or code < 0 or (code not in (0, 1, 5) and not any(line.get("status") == "error" for line in lines))
    ):
        # (0, 1, 5: tests passed, failed, none collected; 2 after a collection error its line reported)
        run.results.append(_error(name, f"pytest {how}; see the log"))


def _result(line: Mapping[str, Any]) -> OpResult:
    case, status = line["case"], line["status"]
    dtype = line.get("dtype") or dtype_of(case)
    result: OpResult = {"case": case, "dtype": dtype, "kernels": line["kernels"], "status": status}
    result["suite"] = "framework-src"
    if line.get("detail"):
        result["error" if status == "error" else "detail"] = line["detail"]
    return result


def _error(case: str, why: str) -> OpResult:
    return {
        "case": case,
        "dtype": dtype_of(case),
        "kernels": [],
        "status": "error",
        "suite": "framework-src",
        "error": why,
    }


# ---- the pytest plugin (-p src_tests), in each file's process


def _emit(record: Mapping[str, object]) -> None:
    path = os.environ.get(LOG_VARIABLE)
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps(record) + "\n")


def _message(report: Any) -> str:
    """The one line that says why: the exception's message, else (a collection error's text) its
    last `E   ` line, else its first."""
    crash = getattr(report.longrepr, "reprcrash", None)
    text = crash.message if crash is not None else str(report.longrepr or "")
    if isinstance(report.longrepr, tuple):  # a skip: (file, line, reason)
        text = str(report.longrepr[2])
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    errors = [line.removeprefix("E").strip() for line in lines if line.startswith("E ")]
    return (errors[-1] if errors else lines[0] if lines else "")[:300].removeprefix("Skipped: ")


def pytest_runtest_logstart(nodeid: str, location: Any) -> None:
    _emit({"start": nodeid})


def pytest_runtest_makereport(item: Any, call: Any) -> None:
    """The op and dtype an OpTest-style test ran (Paddle's op_type and dtype, set by its setUp),
    for the report's columns: registered after pytest's own plugins, this runs before the report
    is made."""
    if call.when != "call":
        return
    case = getattr(item, "_testcase", None) or getattr(item, "instance", None)
    op = getattr(case, "op_type", None)
    # (a framework's plugin may say the dtype the check ran: Paddle's, from the input arrays)
    dtype = getattr(case, "devkit_dtype", None) or getattr(case, "dtype", None)
    name = dtype if isinstance(dtype, str) else getattr(dtype, "name", None) or getattr(dtype, "__name__", None)
    if isinstance(op, str):
        item.user_properties.append(("op", op))
    if isinstance(name, str):
        item.user_properties.append(("dtype", NUMPY_DTYPES.get(name, name)))


def pytest_runtest_logreport(report: Any) -> None:
    """One line per test: its first failing phase, else its call's outcome."""
    failed_early = report.when == "setup" and report.outcome != "passed"
    if report.when != "call" and not failed_early and not (report.when == "teardown" and report.failed):
        return
    status: OpStatus
    if report.outcome == "skipped" or hasattr(report, "wasxfail"):
        status = "skipped"  # (an expected failure the framework marks itself counts as a skip)
    elif report.outcome == "passed":
        status = "pass"
    else:
        status = "fail" if report.when == "call" else "error"
    found = dict(report.user_properties)
    detail = _message(report) if status != "pass" else ""
    line = {
        "case": report.nodeid,
        "status": status,
        "detail": detail,
        "kernels": [found["op"]] if "op" in found else [],
    }
    if "dtype" in found:
        line["dtype"] = found["dtype"]
    _emit(line)


def pytest_collectreport(report: Any) -> None:
    if report.failed:
        _emit({"case": report.nodeid or "collection", "status": "error", "detail": _message(report), "kernels": []})
