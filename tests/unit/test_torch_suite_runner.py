"""The torch suites' supervisor (payload/torch/torch_test_ops.py) reading real worker processes,
without torch: a worker that dies of a signal is reported as the case and sample it was on, one
that outlasts its case's time is killed and reported so, and what it printed before counts."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from types import ModuleType

import pytest
from conftest import payload_module

CASE = {"case_index": 3, "name": "mul"}
SAMPLE = {"at": "mul[out]", "dtype": "float32", "sample": 1, "summary": "float32[5, 5], float32[5, 5]"}
RESULT = {"case": "mul", "dtype": "float32", "kernels": ["mul"], "status": "pass", "samples": 4, "suite": "ops"}


@pytest.fixture(scope="module")
def runner() -> ModuleType:
    # (torch_common reads devkit's tolerances when it is imported, as in a verify environment)
    with pytest.MonkeyPatch.context() as env:
        env.setenv("DEVKIT_TOLERANCES", '{"op_rtol": 1e-4, "op_atol": 1e-5, "grad_rtol": 1e-3, "grad_atol": 1e-4}')
        return payload_module("torch", "torch_test_ops")


def worker(then: str) -> subprocess.Popen[str]:
    """A process printing a worker's lines (a case, a result, a print of the op, a sample), then `then`."""
    lines = [json.dumps(CASE), json.dumps(RESULT), "a print of the op itself", json.dumps(SAMPLE)]
    code = f"import os, signal, sys, time\nfor line in {lines!r}:\n    print(line, flush=True)\n{then}\n"
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)


def test_a_worker_dead_of_a_signal_is_reported_as_its_case_and_sample(runner) -> None:
    proc = worker("os.kill(os.getpid(), signal.SIGSEGV)")
    run = runner.follow(proc, 60.0)
    code = proc.wait()
    assert run.results == [RESULT] and run.ran == {"mul"} and not run.done and not run.timed_out
    crash = runner.crash_result("ops", run.current["name"], run.last, runner.describe_exit(code))
    assert crash == {
        "suite": "ops",
        "case": "mul[out]",
        "dtype": "float32",
        "kernels": [],
        "status": "error",
        "error": "the process died of SIGSEGV at sample 1 (float32[5, 5], float32[5, 5])",
    }


def test_a_case_that_outlasts_its_time_is_killed(runner) -> None:
    proc = worker("time.sleep(120)")
    began = time.monotonic()
    run = runner.follow(proc, 1.0)
    assert proc.wait(timeout=10) < 0 and time.monotonic() - began < 10
    assert run.timed_out and run.current == CASE and run.last == SAMPLE and run.results == [RESULT]
