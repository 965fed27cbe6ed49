"""Where build and verify steps run.

Every step goes through a Runner, so build and verify code never touches
subprocess or a container engine directly. HostRunner runs on this machine;
a container runner implements the same interface.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from ..payload.shared.problems import INDEX_FIX, index_unreachable
from ..util.console import status
from ..util.errors import BuildFailure, DevkitError, EnvironmentProblem, InputError
from .step_log import StepLog

PROBLEM_PREFIX = "devkit-problem: "
# The kind a payload's `devkit-problem: TEXT | FIX | KIND` line names (else the step's own).
PROBLEM_KINDS: dict[str, type[DevkitError]] = {"input": InputError, "environment": EnvironmentProblem}
# Lines worth showing when a step fails: compiler and CMake diagnostics.
_DIAGNOSTIC = re.compile(r"(error:|Error|FAILED:|fatal|undefined reference|CMake Error|ERROR:|Traceback)")
# pip's words for a requirement no distribution satisfies, and the versions it would take.
_NO_MATCH = re.compile(r"No matching distribution found for (\S+)")
_OFFERED = re.compile(r"\(from versions: ([^)]*)\)")
# What a generated device library prints: "[STPU] host access to device memory at ..."
_DEVICE_LINE = re.compile(r"^\[[A-Z][A-Z0-9_]*\] ")
# Paddle's import when a plugin library cannot be loaded (a library it needs is missing): what
# a plugin without devkit's loader does.
_PLUGIN_LOAD = re.compile(r"Fail to open library: (\S+) with error: ([^\n]+)")
# What a devkit plugin says instead (Paddle's loader library, torch's Python module), and the
# framework goes on without the device: "paddle-custom-stpu: the stpu device is unavailable: ..."
_DEVICE_UNAVAILABLE = re.compile(r"^\S+: the \S+ device is unavailable: .+$", re.M)
_RUNTIME_FIX = (
    "install what it needs where the checks run: a vendor SDK's runtime in [tool.devkit.sdk.runtime] "
    "for verify images, the driver on the host"
)


def _signal_of(returncode: int) -> str | None:
    """The signal a process died of: -N from a process here, 128+N from a container's shell."""
    number = -returncode if returncode < 0 else returncode - 128 if 128 < returncode < 160 else 0
    if not number:
        return None
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


@dataclass(frozen=True)
class Step:
    """One command: what it is for, its argv, and where its output goes."""

    title: str
    argv: list[str]
    log: Path
    cwd: Path | None = None
    env: Mapping[str, str | None] = field(default_factory=dict)  # None: remove the variable
    # What a failure of the command itself is (failures of the machine are EnvironmentProblem
    # whatever the step): a compile is a build failure, a check on the device a verification failure.
    fails_as: type[DevkitError] = BuildFailure


class Runner(Protocol):
    name: str
    key: str  # names state the runner keeps in the cache (e.g. its tool envs)
    python: str  # interpreter that runs devkit's payload scripts there
    # Two steps may run at once (from two threads), each seeing the other's files as they are written.
    concurrent_steps: bool

    def path(self, host: Path) -> str:
        """Where a host path is visible to the step."""
        ...

    def run(self, step: Step) -> str:
        """Run the step; return its output, or raise DevkitError with the failing lines."""
        ...


def diagnostic_lines(lines: list[str], limit: int = 25) -> list[str]:
    """Diagnostic lines plus their indented continuation (CMake wraps its messages)."""
    picked: list[str] = []
    following = False
    for line in lines:
        if _DIAGNOSTIC.search(line):
            picked.append(line)
            following = True
        elif following and line.startswith((" ", "\t")) and line.strip():
            picked.append(line)
        else:
            following = False
        if len(picked) >= limit:
            break
    return picked


def outcome(step: Step, returncode: int, output: str, fix: str, started: float, log_full: bool = False) -> str:
    """The step's output when it succeeded with the plugin's device available; otherwise the
    error (a plugin that could not load its device library leaves the framework running on the
    CPU, so the step itself may still exit 0: every check after it would fail for that reason).
    `log_full`: the disk refused the step's log (StepLog.full), which is then the error.

    The log's last line for the step is how long it took (`started`: time.monotonic() before it)."""
    with StepLog(step.log) as log:
        log.write(f"[devkit] {step.title}: exit {returncode} after {time.monotonic() - started:.1f} s\n")
    if log_full or log.full:
        raise disk_full(step, shown_lines(output.splitlines()))
    if returncode != 0:
        raise failure(step, returncode, output, fix)
    unavailable = _DEVICE_UNAVAILABLE.search(output)
    if unavailable:
        raise EnvironmentProblem(f"{step.title}: {unavailable.group(0).strip()}", _RUNTIME_FIX, log=step.log)
    return output


def shown_lines(lines: list[str]) -> str:
    """What a failed step's error shows of its output: the diagnostic lines, else its last 25."""
    return "\n".join(diagnostic_lines(lines) or lines[-25:])


def disk_full(step: Step, details: str) -> EnvironmentProblem:
    """The step stopped because a disk filled up: the step's output, or the log it was writing."""
    return EnvironmentProblem(
        f"{step.title}: the disk filled up (No space left on device)",
        "free space where the project's build/ and devkit's cache (DEVKIT_CACHE_DIR) live, and "
        "rerun: the build continues where it stopped",
        log=step.log,
        details=details,
    )


def failure(step: Step, returncode: int, output: str, fix: str) -> DevkitError:
    """The step's error: an unreachable package index when pip says so; else a payload's own
    `devkit-problem: TEXT | FIX` line when it printed one; else the exit code with the
    diagnostic lines shown above it."""
    lines = output.splitlines()
    context = shown_lines(lines)
    unreachable = index_unreachable(output)
    if unreachable:
        return EnvironmentProblem(f"{step.title}: {unreachable}", INDEX_FIX, log=step.log, details=context)
    if "No space left on device" in output:
        return disk_full(step, context)
    reported = [line for line in lines if line.startswith(PROBLEM_PREFIX)]
    if reported:
        text, _, own_fix = reported[-1][len(PROBLEM_PREFIX) :].partition(" | ")
        rest, _, kind_name = own_fix.rpartition(" | ")
        kind = PROBLEM_KINDS.get(kind_name.strip())
        return (kind or step.fails_as)(
            f"{step.title}: {text.strip()}",
            (rest if kind else own_fix).strip() or fix,
            log=step.log,
            details=context,
        )
    died = _signal_of(returncode)
    said = [line for line in lines if _DEVICE_LINE.match(line)]
    if died and said:  # the device library's last words (a host access to device memory, ...)
        return step.fails_as(
            f"{step.title} died ({died}) after the device library printed: {said[-1].strip()}",
            "fix what that line names (the verify log has the whole output)",
            log=step.log,
            details=context,
        )
    unloadable = _PLUGIN_LOAD.search(output)
    if unloadable:  # `import paddle` raises when a plugin does not load
        return EnvironmentProblem(
            f"{step.title}: import paddle fails: {Path(unloadable.group(1)).name} cannot be loaded "
            f"({unloadable.group(2).strip()})",
            _RUNTIME_FIX,
            log=step.log,
            details=context,
        )
    missing = _NO_MATCH.search(output)
    if missing:  # an environment (a runtime pin) pip cannot satisfy for the step's Python
        offered = _OFFERED.search(output)
        versions = [v.strip() for v in offered.group(1).split(",")] if offered else []
        shown = ", ".join(versions[-8:]) if versions and versions != ["none"] else "none"
        return InputError(
            f"{step.title}: {missing.group(1)} cannot be installed for Python there (pip offers: {shown})",
            "choose a version pip offers ([tool.devkit] paddle-versions / torch-versions, or --paddle-version / "
            "--torch-version), or check the package index (pip config list)",
            log=step.log,
            details=context,
        )
    return step.fails_as(
        f"{step.title} failed (exit code {returncode})",
        fix,
        log=step.log,
        details=context,
    )


class HostRunner:
    """Runs steps as processes on this machine, output teed to the step's log."""

    name = "host"
    key = "host"
    python = sys.executable
    concurrent_steps = True

    def __init__(self, fix_hint: str = "read the compiler lines above; fix the source and rebuild") -> None:
        self.fix_hint = fix_hint

    def path(self, host: Path) -> str:
        return str(host.resolve())

    def run(self, step: Step) -> str:
        step.log.parent.mkdir(parents=True, exist_ok=True)
        env = {k: v for k, v in {**os.environ, **step.env}.items() if v is not None}
        tail: deque[str] = deque(maxlen=4000)
        started = time.monotonic()
        with StepLog(step.log) as log, status(f"[bold]{step.title}[/]…") as live:
            log.write(f"$ {' '.join(step.argv)}\n")
            log.flush()
            proc = subprocess.Popen(
                step.argv,
                cwd=step.cwd,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                errors="replace",
                start_new_session=True,  # Ctrl-C: we stop the whole process group below
            )
            try:
                assert proc.stdout is not None
                for line in proc.stdout:
                    log.write(line)
                    tail.append(line.rstrip("\n"))
                    live.update(f"[bold]{step.title}[/] [dim]{line.strip()[:100]}[/]")
                returncode = proc.wait()
            except BaseException:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait()
                raise
        return outcome(step, returncode, "\n".join(tail), self.fix_hint, started, log_full=log.full is not None)
