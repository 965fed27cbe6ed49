"""Errors a user can act on: what went wrong, how to fix it, and what kind of failure it is.

Raised anywhere in devkit, caught once at the CLI edge, printed as one line, and turned into
the exit code of its kind, so that CI can tell a wrong project from a missing engine from a
plugin that failed its checks (README: Exit codes). Code raises one of the kinds, never the
base class (a unit test reads the sources to hold that).
"""

from __future__ import annotations

from enum import IntEnum
from pathlib import Path
from typing import ClassVar


class ExitCode(IntEnum):
    """devkit's exit codes; 2 is the command-line parser's own (typer)."""

    OK = 0
    BUILD_FAILED = 1
    USAGE = 2
    INTERNAL = 3
    INPUT = 4
    ENVIRONMENT = 5
    VERIFICATION_FAILED = 6
    INTERRUPTED = 130


class DevkitError(Exception):
    """A failure caused by input or environment, with the fix. Raise one of the kinds below."""

    exit_code: ClassVar[ExitCode] = ExitCode.BUILD_FAILED

    def __init__(self, problem: str, fix: str = "", *, log: Path | None = None, details: str = "") -> None:
        super().__init__(problem)
        self.problem = problem
        self.fix = fix
        self.log = log
        self.details = details  # multi-line context (compiler lines) shown above the one-line error

    def one_line(self) -> str:
        text = self.problem.rstrip(".")
        if self.fix:
            text += f". Fix: {self.fix}"
        if self.log:
            text += f" (full log: {self.log})"
        return text


class InputError(DevkitError):
    """What the user handed devkit is wrong: an option's value, the project, its [tool.devkit],
    a wheel, archive or data file. Nothing was built or checked."""

    exit_code = ExitCode.INPUT


class EnvironmentProblem(DevkitError):
    """The machine lacks what devkit needs: a container engine, a tool, the package index, disk
    space, permissions, a base image. The same command works once the machine is fixed."""

    exit_code = ExitCode.ENVIRONMENT


class BuildFailure(DevkitError):
    """The plugin did not build, or what was built is unfit to ship (ABI, tags, pins)."""

    exit_code = ExitCode.BUILD_FAILED


class VerificationFailure(DevkitError):
    """The plugin built and loaded, and a check on the device failed (training, ops, kernels)."""

    exit_code = ExitCode.VERIFICATION_FAILED


class InternalError(DevkitError):
    """devkit contradicted itself (a payload's report without a field it always writes): a bug."""

    exit_code = ExitCode.INTERNAL
