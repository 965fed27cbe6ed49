"""verify --profile: a training step under the framework's profiler, in a child process with the
device library's op dump on, and the profiler's device events held against that dump -- two
recorders of the device library, so a kernel the trace loses (or invents) is named.

Framework-free: the child is torch/torch_profile.py or paddle/paddle_profile.py (its path, from the caller). It runs a warm-up step, writes
BEGIN to stderr, profiles one step (synchronised), writes END, exports the Chrome trace and prints
the names of the profiler's device kernels as its last stdout line (a JSON list)."""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import subprocess
import sys
from pathlib import Path

from records import ProfileCheck

BEGIN = "[devkit] profiled step begins"
END = "[devkit] profiled step ends"
DUMP = re.compile(r"^\[(\w+)\] ([\w.:-]+): (\w+)$")  # the op dump, level 1: "[PREFIX] <kernel>: <op>"


def child_arguments(doc: str | None) -> argparse.Namespace:
    """A child's command line: --device TYPE --trace FILE (what check_profile passes)."""
    parser = argparse.ArgumentParser(description=doc)
    parser.add_argument("--device", required=True)
    parser.add_argument("--trace", required=True)
    return parser.parse_args()


def mark(line: str) -> None:
    """On stderr's descriptor, in order with the device library's dump lines (no Python buffer)."""
    os.write(2, f"{line}\n".encode())


def dumped_ops(stderr: str, prefix: str) -> collections.Counter[str]:
    inside, ops = False, collections.Counter[str]()
    for line in stderr.splitlines():
        if line == BEGIN:
            inside = True
        elif line == END:
            break
        elif inside and (m := DUMP.match(line)) and m.group(1) == prefix:
            ops[m.group(3)] += 1
    return ops


def check_profile(child: Path, device: str, trace: Path, timeout: int = 600) -> ProfileCheck:
    entry: ProfileCheck = {"name": "profile", "kind": "profile", "passed": False, "detail": "", "trace": trace.name}
    env = {**os.environ, f"{device.upper()}_DUMP_OP_ARGS": "1"}
    argv = [sys.executable, str(child), "--device", device, "--trace", str(trace)]
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout)
    if proc.returncode != 0 or END not in proc.stderr:
        tail = [line for line in proc.stderr.splitlines() if line and not DUMP.match(line)][-3:]
        entry["detail"] = f"the profiled step failed (exit {proc.returncode}): {' | '.join(tail)[:400]}"
        return entry
    traced = collections.Counter[str](json.loads(proc.stdout.strip().splitlines()[-1]))
    dumped = dumped_ops(proc.stderr, device.upper())
    rows = json.loads(trace.read_text()).get("traceEvents", []) if trace.is_file() else []
    missing, extra = sorted((dumped - traced).elements()), sorted((traced - dumped).elements())
    entry["device_kernels"], entry["dumped_ops"] = sum(traced.values()), sum(dumped.values())
    entry["missing"], entry["extra"] = missing, extra
    entry["passed"] = bool(dumped) and not missing and not extra and bool(rows)
    entry["detail"] = (
        f"{sum(traced.values())} device kernels in the profiler's trace of one LeNet step, "
        f"{sum(dumped.values())} ops in the device's op dump"
        + (f"; not in the trace: {', '.join(missing[:8])}" if missing else "")
        + (f"; not in the dump: {', '.join(extra[:8])}" if extra else "")
        + ("" if rows else "; the exported trace has no events")
        + f"; trace: {trace.name} (Chrome trace format: open it in Perfetto)"
    )
    return entry
