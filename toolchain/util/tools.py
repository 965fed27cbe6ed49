"""Running the Python tools devkit depends on (auditwheel, twine, build) with devkit's interpreter."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def run_module(module: str, args: list[str], log: Path | None, env: dict[str, str] | None = None) -> tuple[int, str]:
    """`python -m MODULE ARGS`; returns the exit code and the output (stdout then stderr, colour
    codes removed), which is also appended to `log` after the command line."""
    argv = [sys.executable, "-m", module, *args]
    proc = subprocess.run(argv, capture_output=True, text=True, env={**os.environ, **(env or {})})
    output = _ANSI.sub("", proc.stdout + proc.stderr)
    if log is not None:
        with log.open("a") as f:
            f.write(f"$ {' '.join(argv)}\n{output}")
    return proc.returncode, output
