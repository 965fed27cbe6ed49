"""Shared fixtures. End-to-end tests render, compile, install and train for real;
they share one rendered and built STPU project per test session."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


def devkit(*args: str, cwd: Path | None = None, check: bool = True) -> subprocess.CompletedProcess:
    """Run the installed devkit CLI as a user would."""
    proc = subprocess.run(
        [sys.executable, "-m", "devkit", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"devkit {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


# The checks `devkit verify` runs on a Paddle plugin before its model (mnist, or a battery model).
PADDLE_CHECKS = ["registration", "kernel signatures", "tensor", "devices", "queued work", "ops", "strided views"]


def wheel_name(arch: str, policy: str = r"manylinux_2_\d+") -> str:
    """The STPU plugin wheel's name as a regex: devkit retags every wheel manylinux with auditwheel."""
    return rf"paddle_custom_stpu-0\.1\.0-py3-none-{policy}_{arch}\.whl"


@pytest.fixture(scope="session")
def built_project(tmp_path_factory) -> Path:
    project = tmp_path_factory.mktemp("e2e") / "STPU"
    devkit("new-backend", "STPU", "--out", str(project))
    devkit("build", str(project), "--runner", "host", "--json")
    return project
