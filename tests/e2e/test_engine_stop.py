"""The container engine stopping in the middle of a build: one line, nothing left. It stops the
engine every other container test uses, so it has it to itself (`engine_alone`), and it is the
last file handed out (tests/conftest.py), when the other worker is on unit tests."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from conftest import CONTAINER_MARKS, devkit, devkit_containers

from devkit.run.engine import Engine
from devkit.util.errors import ExitCode

pytestmark = CONTAINER_MARKS


def _stop_engine_and_restart(during: subprocess.Popen) -> tuple[str, str]:
    """Stop the Docker Engine (SIGTERM, as `systemctl stop docker` does) while `during` runs, collect
    its output, then start the engine again the way .ci/run does."""
    pid = int(Path("/var/run/docker.pid").read_text())
    os.kill(pid, signal.SIGTERM)
    try:
        deadline = time.monotonic() + 60
        while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        return during.communicate(timeout=180)
    finally:
        with tempfile.NamedTemporaryFile("a", prefix="devkit-test-dockerd.", suffix=".log", delete=False) as log:
            subprocess.Popen(["dockerd"], stdout=log, stderr=log, start_new_session=True)
        deadline = time.monotonic() + 60
        while not Engine.available(fresh=True) and time.monotonic() < deadline:
            time.sleep(0.5)


@pytest.mark.engine_alone  # stops the engine
@pytest.mark.skipif(
    os.geteuid() != 0 or not Path("/var/run/docker.pid").is_file(),
    reason="stopping and restarting the engine needs root and a dockerd started by hand (as in CI)",
)
def test_engine_stopping_mid_build_is_one_line_and_leaves_nothing(tmp_path):
    project = tmp_path / "STPU"
    devkit("new-backend", "STPU", "--out", str(project))
    proc = subprocess.Popen(
        [sys.executable, "-m", "devkit", "build", str(project), "--runner", "docker"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "CCACHE_DISABLE": "1", "COLUMNS": "200"},
    )
    deadline = time.monotonic() + 120
    while not devkit_containers(owner=proc.pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert devkit_containers(owner=proc.pid), "the build container never started"
    time.sleep(2)
    _, stderr = _stop_engine_and_restart(proc)
    errors = [line for line in stderr.splitlines() if line.startswith("error:")]
    assert proc.returncode == ExitCode.ENVIRONMENT, stderr
    assert len(errors) == 1 and "the container engine stopped answering" in errors[0] and "Fix:" in errors[0], stderr
    assert "Traceback" not in stderr
    assert list(project.glob("dist/*")) == []
    assert Engine.available(fresh=True), "the engine did not come back"
    Engine.connect(fresh=True)  # what the next devkit run does first: remove what the stopped engine left
    assert devkit_containers() == []
