"""Shared fixtures. End-to-end tests render, compile, install and train for real;
they share one rendered and built STPU project per test session."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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


def json_commands() -> set[str]:
    """Every devkit command with a --json option ("build", "config show", ...), from the CLI itself."""
    import typer

    from devkit.cli.app import app

    found: set[str] = set()

    def walk(command: Any, prefix: str) -> None:
        for name, sub in getattr(command, "commands", {}).items():
            walk(sub, f"{prefix} {name}".strip())
        if any("--json" in getattr(p, "opts", ()) for p in command.params):
            found.add(prefix)

    walk(typer.main.get_command(app), "")
    return found


def check_json_output(args: tuple[str, ...] | list[str], payload: object) -> None:
    """`payload`, what `devkit ARGS --json` printed, against the schema devkit ships for the command."""
    import jsonschema

    from devkit.util.schema import load_schema

    command = " ".join(args[:2]) if args[0] in {"config", "matrix", "images"} else args[0]
    schema = load_schema(command.replace(" ", "-"))
    errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(payload), key=str)
    assert not errors, (
        f"devkit {command} --json does not match its schema: {errors[0].message} at {list(errors[0].path)}"
    )


# The checks `devkit verify` runs on a Paddle plugin before its model (mnist, or a battery model).
PADDLE_CHECKS = ["registration", "kernel signatures", "tensor", "devices", "queued work", "ops", "strided views"]


def verify_distributed(project: Path, *flags: str, collectives: str) -> dict:
    """`devkit verify PROJECT --distributed 2 --steps 40 --runner host FLAGS`: it passes, with the
    four checks, `collectives` in that check's line, both lost ranks named exactly and one loss
    per step in both curves. Returns the report."""
    argv = ["verify", str(project), "--runner", "host", "--distributed", "2", "--steps", "40", *flags, "--json"]
    proc = devkit(*argv, check=False)
    summary = json.loads(proc.stdout)
    assert proc.returncode == 0, proc.stderr[-3000:]
    checks = {c["name"]: c for c in summary["checks"]}
    assert list(checks) == ["collectives", "data parallel", "killed rank", "stalled rank"]
    assert collectives in checks["collectives"]["detail"]
    assert "which has exited" in checks["killed rank"]["detail"]
    assert "waited 5 s for rank 1 (STPU_CCL_TIMEOUT_S=5)" in checks["stalled rank"]["detail"]
    report = json.loads(Path(summary["report"]).read_text())
    parallel = next(c for c in report["checks"] if c["name"] == "data parallel")
    assert len(parallel["data_parallel"]["losses"]) == len(parallel["single"]["losses"]) == 40
    assert parallel["max_curve_abs_diff"] <= parallel["criteria"]["max_curve_abs_diff"]
    assert report["distributed"] == 2 and Path(summary["plot"]).stat().st_size > 10_000
    return report


def collective_cases(report: dict) -> set[str]:
    return {c["case"] for c in next(c for c in report["checks"] if c["name"] == "collectives")["cases"]}


# The OpenCL example (`new-backend --sdk opencl`): its device library runs on OpenCL, declared as
# its vendor SDK ([tool.devkit.sdk]) and provided from Debian's packages: the Khronos headers and
# the ICD loader (libOpenCL.so.1); verify's runtime adds pocl (OpenCL on the CPU).
OPENCL_PACKAGES = '"opencl-c-headers", "ocl-icd-opencl-dev", "ocl-icd-libopencl1"'


def render_with_opencl_sdk(root: Path, name: str, *, headers: str = "", packages: str = "") -> Path:
    """STPU on OpenCL; `headers` / `packages` replace what [tool.devkit.sdk] declares (x86_64's)."""
    project = root / name
    devkit("new-backend", "STPU", "--sdk", "opencl", "--out", str(project))
    pyproject = project / "pyproject.toml"
    text = pyproject.read_text()
    if headers:
        text = text.replace('headers = ["CL/cl.h"]', f"headers = [{headers}]")
    if packages:
        text = text.replace(f"x86_64 = {{ debian = [{OPENCL_PACKAGES}] }}", f"x86_64 = {{ debian = [{packages}] }}")
    assert text != pyproject.read_text() or not (headers or packages)
    pyproject.write_text(text)
    return project


def wheel_name(arch: str, policy: str = r"manylinux_2_\d+") -> str:
    """The STPU plugin wheel's name as a regex: devkit retags every wheel manylinux with auditwheel."""
    return rf"paddle_custom_stpu-0\.1\.0-py3-none-{policy}_{arch}\.whl"


@pytest.fixture(scope="session")
def built_project(tmp_path_factory) -> Path:
    project = tmp_path_factory.mktemp("e2e") / "STPU"
    devkit("new-backend", "STPU", "--out", str(project))
    devkit("build", str(project), "--runner", "host", "--json")
    return project


@contextlib.contextmanager
def _engine_lock(root: Path, exclusive: bool) -> Iterator[None]:
    """Container tests share the engine (a shared lock); a test that stops it or counts every
    step container takes it to itself (exclusive). Whoever waits for the engine holds the
    turnstile, so a test waiting for it alone is not starved by shared ones queueing behind it."""
    flags = os.O_CREAT | os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC
    turnstile = os.open(root / "engine-turnstile.lock", flags, 0o600)
    engine = os.open(root / "engine.lock", flags, 0o600)
    try:
        fcntl.flock(turnstile, fcntl.LOCK_EX)
        try:
            fcntl.flock(engine, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        finally:
            fcntl.flock(turnstile, fcntl.LOCK_UN)
        yield
    finally:
        os.close(engine)  # closing releases the lock
        os.close(turnstile)


@pytest.fixture(autouse=True)
def _share_the_engine(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """For `container` tests: the engine shared, or to itself for `engine_alone` ones. The lock
    files are in this session's temporary root, which pytest-xdist's workers have in common."""
    if request.node.get_closest_marker("container") is None:
        yield
        return
    base = tmp_path_factory.getbasetemp()
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    with _engine_lock(root, exclusive=request.node.get_closest_marker("engine_alone") is not None):
        yield


# The background `devkit images build` (see below).
_IMAGES = pytest.StashKey[subprocess.Popen]()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Where the container tests go. Making their images on a fresh machine (Debian bootstrapped,
    packages installed under qemu) takes about 12 minutes, mostly on one emulated core, and the
    aarch64 verifies under qemu as long again; the other core has the host tests to run.
    - Under pytest-xdist (`-n 2 --dist loadfile`, as .ci/run runs): nothing to do here. xdist
      hands out whole files, largest first; test_containers.py goes to one worker within a
      minute (after the unit files with more tests), which then makes the images itself.
    - In one process: container tests last, and `devkit images build` starts in the
      background at once (devkit's image lock makes a test that needs an image wait for it
      instead of building it twice)."""
    containers = [item for item in items if item.get_closest_marker("container")]
    if not containers or len(containers) == len(items) or os.environ.get("PYTEST_XDIST_WORKER"):
        return
    host = [item for item in items if not item.get_closest_marker("container")]
    items[:] = host + containers
    if config.option.collectonly or os.environ.get("DEVKIT_NO_BACKGROUND_IMAGES"):
        return
    from devkit.run.engine import Engine

    if Engine.available():
        log = Path(config.rootpath) / ".pytest_cache" / "images-background.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("w") as out:
            config.stash[_IMAGES] = subprocess.Popen(
                [sys.executable, "-m", "devkit", "images", "build", "--json"], stdout=out, stderr=subprocess.STDOUT
            )


def pytest_unconfigure(config: pytest.Config) -> None:
    """A run that ends before the container tests (-x, Ctrl-C) does not leave the build behind."""
    images = config.stash.get(_IMAGES, None)
    if images is not None and images.poll() is None:
        images.terminate()
        images.wait()
