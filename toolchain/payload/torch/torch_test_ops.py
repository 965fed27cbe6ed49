"""PyTorch's own test databases on the device against torch's CPU, each case isolated: run inside
the verify environment by `devkit test-ops --framework torch`.

    python torch_test_ops.py --device stpu [--suite ops,grads,modules,optims] [--all] [--ops add,fft.ifft] --out ops.json

The suites (torch_suites.py says what one is; SUITES below lists them): ops, OpInfo forward
samples and their out= and in-place variants (torch_opinfo.py); grads, OpInfo gradients
(torch_opinfo_grads.py); modules, module_db forward and backward in train and eval mode
(torch_modules.py); optims, optim_db steps in their for-loop, foreach and fused forms
(torch_optims.py). By default only what the device implements (reaches a kernel the adapter
registers) in the dtypes the device library has; --all runs every case in its CPU dtypes with the
CPU fallback. Cases run in worker processes (this file with --worker, one suite each) that print
one JSON line per result and a line before each case and sample; a worker that dies (a signal, a
timeout of a case) is reported as the case it was on, with its last sample, and a new worker goes
on from the next case.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import subprocess
import sys
import time
from dataclasses import dataclass, field
from importlib.metadata import version
from typing import TYPE_CHECKING, Any, TypedDict, cast

from problems import describe_exit
from process_exit import exit_without_final_collection
from torch_modules import MODULES
from torch_opinfo import OPS
from torch_opinfo_grads import GRADS
from torch_optims import OPTIMS
from torch_suites import CaseRun, SampleStart, Suite, allow_torch_testing_imports, emit, registered_kernels

if TYPE_CHECKING:  # (types only)
    from op_records import OpInfoReport, OpResult, OpSuite, SuiteRun

# Every suite, by the name --suite takes (project/frameworks.py TORCH.op_suites lists the same)
SUITES: dict[str, Suite] = {suite.name: suite for suite in (OPS, GRADS, MODULES, OPTIMS)}
DEVICE_DTYPES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float32", "float64")
ALL_DTYPES = (*DEVICE_DTYPES, "float16", "bfloat16", "complex64", "complex128")


class CaseStart(TypedDict):
    """The worker's line before each case."""

    case_index: int
    name: str


def worker(args: argparse.Namespace) -> int:
    import torch

    allow_torch_testing_imports()
    suite = SUITES[args.suite]
    torch.manual_seed(0)
    run = CaseRun(
        suite.name, args.device, args.dtypes.split(","), not args.all, args.samples, registered_kernels(torch)
    )
    cases = suite.cases(torch, args.ops)
    for index in range(args.start, len(cases)):
        start: CaseStart = {"case_index": index, "name": suite.label(cases[index])}
        emit(start)
        suite.run(torch, cases[index], run)
    emit({"done": True})
    return 0


def crash_result(suite: OpSuite, name: str, last: SampleStart | None, why: str) -> OpResult:
    where = f"sample {last['sample']} ({last['summary']})" if last else "before its first sample"
    return {
        "suite": suite,
        "case": last["at"] if last else name,
        "dtype": last["dtype"] if last else "-",
        "kernels": [],
        "status": "error",
        "error": f"the process {why} at {where}",
    }


@dataclass
class WorkerRun:
    """What one worker process reported before it finished, died or hung."""

    results: list[OpResult] = field(default_factory=list)
    ran: set[str] = field(default_factory=set)  # the cases that gave a result (without --all, most give none)
    current: CaseStart | None = None
    last: SampleStart | None = None
    done: bool = False
    timed_out: bool = False

    def take(self, record: dict[str, Any], timeout: float) -> float | None:
        """One line of the worker; a new deadline when a case starts."""
        if "case_index" in record:
            self.current, self.last = cast("CaseStart", record), None
            return time.monotonic() + timeout
        if "at" in record:
            self.last = cast("SampleStart", record)
        elif "done" in record:
            self.done = True
        elif record.get("status") not in (None, "skipped") and self.current is not None:
            self.results.append(cast("OpResult", record))
            self.ran.add(self.current["name"])
        return None


def follow(proc: subprocess.Popen[str], timeout: float) -> WorkerRun:
    """Read a worker's lines until it exits, or kill it when a case outlasts `timeout`."""
    assert proc.stdout is not None
    run = WorkerRun()
    deadline, buffer = time.monotonic() + timeout, ""
    while True:
        ready, _, _ = select.select([proc.stdout], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            run.timed_out = True
            proc.kill()
            return run
        chunk = os.read(proc.stdout.fileno(), 65536).decode(errors="replace")
        if not chunk:
            return run
        *lines, buffer = (buffer + chunk).split("\n")
        for line in lines:
            try:
                record = json.loads(line)
            except ValueError:
                continue  # a print of the case itself
            if isinstance(record, dict):
                deadline = run.take(record, timeout) or deadline


def supervise(args: argparse.Namespace, suite: OpSuite) -> tuple[list[OpResult], SuiteRun]:
    """Run workers of one suite until each of its cases has reported; a crash or a timeout
    becomes the result of the case it happened in, and a new worker goes on from the next."""
    began = time.monotonic()
    results: list[OpResult] = []
    start, restarts, ran = 0, 0, set()
    argv = [sys.executable, __file__, "--worker", "--suite", suite, "--device", args.device, "--dtypes", args.dtypes]
    argv += [
        "--samples",
        str(args.samples),
        *(["--all"] if args.all else []),
        *(["--ops", args.ops] if args.ops else []),
    ]
    while True:
        proc = subprocess.Popen([*argv, "--start", str(start), "--out", "-"], stdout=subprocess.PIPE, text=True)
        worker = follow(proc, args.timeout)
        code = proc.wait()
        results += worker.results
        ran |= worker.ran
        if worker.done:
            break
        why = f"timed out after {args.timeout:.0f} s" if worker.timed_out else describe_exit(code)
        if worker.current is None:  # the worker died before its first case: nothing to go on from
            results.append(crash_result(suite, "(worker start)", None, why))
            break
        results.append(crash_result(suite, worker.current["name"], worker.last, why))
        ran.add(worker.current["name"])
        start, restarts = worker.current["case_index"] + 1, restarts + 1
    return results, {"cases": len(ran), "restarts": restarts, "seconds": round(time.monotonic() - began, 1)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--device", required=True)
    parser.add_argument("--suite", default="ops", help=f"comma-separated, of {','.join(SUITES)}")
    parser.add_argument("--all", action="store_true", help="every case, not only what the device implements")
    parser.add_argument("--ops", default="", help="comma-separated regexes, each matching whole case names")
    parser.add_argument("--dtypes", default="")
    parser.add_argument("--samples", type=int, default=4, help="samples per case and dtype")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per case")
    parser.add_argument("--worker", action="store_true")
    parser.add_argument("--start", type=int, default=0)
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    args.dtypes = args.dtypes or ",".join(ALL_DTYPES if args.all else DEVICE_DTYPES)
    suites = [s.strip() for s in args.suite.split(",") if s.strip()]
    unknown = [s for s in suites if s not in SUITES]
    if unknown or not suites:
        parser.error(f"--suite {args.suite!r}: not a suite ({', '.join(unknown)}); the suites are {','.join(SUITES)}")
    if args.worker:
        return worker(args)
    began = time.monotonic()
    # (torch's version from its metadata: this process only supervises, and importing torch here
    # would add its import and teardown, seconds, to every run, however few the cases)
    torch_version = version("torch")
    runs = {name: supervise(args, SUITES[name].name) for name in suites}
    report: OpInfoReport = {
        "results": [result for results, _ in runs.values() for result in results],
        "restarts": sum(run["restarts"] for _, run in runs.values()),
        "suite_runs": {name: run for name, (_, run) in runs.items()},
        "mode": "opinfo-all" if args.all else "opinfo",
        "framework": "torch",
        "device": args.device,
        "torch_version": torch_version,
        "reference": f"torch {torch_version} CPU",
        "dtypes": args.dtypes.split(","),
        "seconds_in_env": round(time.monotonic() - began, 1),
    }
    with open(args.out, "w") as f:
        json.dump(report, f, indent=2, default=float)
    return 0


if __name__ == "__main__":
    exit_without_final_collection(main())
