"""With --json, stdout is the JSON and nothing else, whatever runs underneath (pip on a first
download, CMake, compilers) and whatever is or is not cached.

Every command that takes --json is run here, in order, against one empty devkit cache
(DEVKIT_CACHE_DIR), so each first use happens inside one of them: the tools environment,
the reference Paddle environment, the target torch wheel, the aarch64 Paddle wheel. The
commands that need a Docker Engine run the same way in test_containers.py.

The backend's name is one no other test uses (mixed case with an underscore), so its builds also
show that such a name builds in both adapters and runs on its device (test_torch.py probes the
names torch refuses). The compiler cache is the suite's (CCACHE_DIR, which devkit's host builds
take from the user), and the empty devkit cache is always at the same place, emptied first: a
compile includes the reference environment's headers by their path, so a machine that ran this
test before compiles nothing again (the first run compiles every source).
Its verification trains MNIST for 100 steps, not the default 200: what is
checked here is its output, and 100 steps pass the MNIST criteria with room (loss drop 84%
of the 50% asked), so it is 3 s shorter."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import check_json_output, host_ccache, json_commands, wheel_name, with_verify_steps

pytestmark = pytest.mark.e2e

# Commands that take --json but need a container engine or a package index of their own: where they run.
ELSEWHERE = {
    "images bootstrap": "left out: it would make again the base image other tests' images come from",
    "images build": "test_containers.py::test_engine_commands_print_only_json",
    "images list": "test_containers.py::test_engine_commands_print_only_json",
    "images prune": "test_containers.py::test_engine_commands_print_only_json",
    "doctor": "test_containers.py::test_engine_commands_print_only_json",
    "publish": "test_publish.py (a local index)",
    # (a build and a verify that `verify` and `build` above already made with this cache)
    "matrix run": "test_matrix.py::test_matrix_run_is_what_the_ci_job_runs",
}


def run_json(cache: Path, *args: str, returncode: int = 0) -> object:
    """Run devkit with only the given cache; stdout must be one JSON document and nothing else."""
    proc = subprocess.run(
        [sys.executable, "-m", "devkit", *args, "--json"],
        capture_output=True,
        text=True,
        env={**os.environ, "DEVKIT_CACHE_DIR": str(cache), "CCACHE_DIR": str(host_ccache()), "COLUMNS": "200"},
    )
    assert proc.returncode == returncode, f"devkit {' '.join(args)}: {proc.returncode}\n{proc.stderr[-3000:]}"
    try:
        payload = json.loads(proc.stdout)
    except json.JSONDecodeError:
        raise AssertionError(f"devkit {' '.join(args)} --json: stdout is not JSON:\n{proc.stdout[:2000]}") from None
    check_json_output(args, payload)
    return payload


def new_backend_training_100_steps(cache: Path, backend: str, project: Path) -> object:
    """`new-backend --json`'s output; the project's verify then trains MNIST for 100 steps."""
    rendered = run_json(cache, "new-backend", backend, "--out", str(project))
    with_verify_steps(project, "steps", 200, 100)
    return rendered


BACKEND = "Json_Tpu"
HOME_CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")


def test_every_json_command_prints_only_json_with_an_empty_cache(tmp_path):
    backend, cache, project = BACKEND, HOME_CACHE / "devkit-test-json-output", tmp_path / BACKEND
    shutil.rmtree(cache, ignore_errors=True)
    shutil.rmtree(HOME_CACHE / f"torch_{backend.lower()}", ignore_errors=True)
    try:
        run_every_json_command(backend, cache, project)
    finally:
        shutil.rmtree(cache, ignore_errors=True)  # (a reference environment of each framework: 1.5 GB)


def run_every_json_command(backend: str, cache: Path, project: Path) -> None:
    p = str(project)
    wheel: dict[str, str] = {}
    steps: list[tuple[str, Callable[[], object]]] = [
        ("new-backend", lambda: new_backend_training_100_steps(cache, backend, project)),
        ("config show", lambda: run_json(cache, "config", "show", p)),
        ("matrix list", lambda: run_json(cache, "matrix", "list", p)),
        ("ci", lambda: run_json(cache, "ci", p, "--provider", "github")),
        # first use: the tools env and the reference Paddle env, each a pip install
        ("build", lambda: wheel.setdefault("paddle", run_json(cache, "build", p, "--runner", "host")["wheel"])),
        ("verify", lambda: run_json(cache, "verify", p, "--runner", "host")),
        ("test-ops", lambda: run_json(cache, "test-ops", p, "--runner", "host", "--ops", "^relu$")),
        ("check-kernels", lambda: run_json(cache, "check-kernels", p, "--runner", "host")),
        # first use: pip downloads the aarch64 paddlepaddle wheel; the x86_64 plugin is refused for it
        (
            "check-abi",
            lambda: run_json(
                cache, "check-abi", wheel["paddle"], "--arch", "aarch64", "--paddle-version", "3.2.2", returncode=1
            ),
        ),
    ]
    run: set[str] = set()
    for name, step in steps:
        assert step() is not None, name
        run.add(name)
    # first use: pip downloads the target torch wheel (the output that once landed on stdout)
    torch = run_json(cache, "build", p, "--framework", "torch", "--runner", "host")
    assert isinstance(torch, dict) and torch["framework"] == "torch"
    # the new name's torch device runs an op vs torch's CPU (Paddle's ran verify above)
    ops = run_json(cache, "test-ops", p, "--framework", "torch", "--runner", "host", "--ops", "nn.functional.relu")
    assert isinstance(ops, dict) and ops["passed"] and ops["counts"]["pass"] > 0, f"{backend}: {ops}"
    # its checks kept Inductor's cache in their session: the adapter made none in the user's home
    assert not (HOME_CACHE / f"torch_{backend.lower()}").exists()
    assert re.fullmatch(wheel_name("x86_64", device=backend.lower()), Path(wheel["paddle"]).name), (backend, wheel)
    # Nothing that takes --json is left out: a new command must be added here or to ELSEWHERE.
    assert json_commands() - run - set(ELSEWHERE) == set()
