"""Errors a user can act on: what went wrong and how to fix it.

Raised anywhere in devkit, caught once at the CLI edge and printed as one line.
"""

from __future__ import annotations

from pathlib import Path


class DevkitError(Exception):
    """A failure caused by input or environment, with the fix."""

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
