"""Shared fixtures. End-to-end tests render, compile, install and train for real;
they share one rendered and built STPU project per test session."""

from __future__ import annotations

import contextlib
import fcntl
import importlib
import json
import os
import re
import resource
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from devkit.run.engine import OWNER_LABEL, STEP_LABEL, Engine
from devkit.run.envs import container_reference_envs
from devkit.util.fsutil import exclusive_lock
from devkit.util.resources import PAYLOAD_DIR, PAYLOAD_LIBRARIES

# Data, not devkit's tests: trees in the frameworks' shapes whose test files the frameworks' own pytest
# runs (test-ops --framework-src, in a verify environment).
collect_ignore = ["fixtures"]


def payload_module(folder: str, name: str) -> ModuleType:
    """payload/FOLDER/NAME.py imported as the payload scripts import it: by plain name, with its
    folder and the libraries (util/resources.py payload_env) on sys.path, for the rest of the
    session (payload module names are unique across the folders)."""
    for path in reversed((folder, *PAYLOAD_LIBRARIES)):
        if str(PAYLOAD_DIR / path) not in sys.path:
            sys.path.insert(0, str(PAYLOAD_DIR / path))
    return importlib.import_module(name)


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


def build_tools_bin() -> Path:
    """The host build's tools env (cmake, ninja, scikit-build-core; no framework runtime)."""
    from devkit.run.envs import cache_root

    return next((cache_root() / "host" / "envs").glob("host-*-paddle-none")) / "bin"


def host_ccache() -> Path:
    """The compiler cache of devkit's host builds (in devkit's cache, the user's here)."""
    from devkit.building.placement import BuildPlace
    from devkit.building.plan import ccache_dir
    from devkit.run.select import build_cache, host_recipe
    from devkit.run.step import HostRunner

    return ccache_dir(BuildPlace(HostRunner(), host_recipe(), build_cache("host")))


def standalone_build(project: Path, name: str, tools: Path | None = None) -> tuple[Path, dict[str, str]]:
    """The directory and environment of a test's own CMake build of a generated project
    (-DWITH_PADDLE=OFF), laid out so that it compiles from the cache devkit's host builds of the
    same sources filled: in devkit's ccache directory, with the project as the base directory,
    the build directory where devkit's lies (two levels below the project: ccache hashes include
    paths relative to it) and devkit's compiler (g++: CMake's first choice, c++, is another
    compiler to ccache). With `tools`, that bin directory (cmake, ninja) first on PATH."""
    env = {
        **os.environ,
        "CCACHE_DIR": str(host_ccache()),
        "CCACHE_BASEDIR": str(project),
        "CCACHE_NOHASHDIR": "1",  # (the sanitizer builds' -g1: the directory is mapped away anyway)
        "CXX": "g++",
        "CC": "gcc",
    }
    if tools is not None:
        env["PATH"] = f"{tools}:{env['PATH']}"
    return project / "build" / name, env


def verify_passes(project: Path, *args: str) -> tuple[dict, dict]:
    """`devkit verify PROJECT --runner host --json ARGS`, which must pass: its summary and its
    report.json (a failure names each failed check with its detail, or shows verify's stderr)."""
    proc = devkit("verify", str(project), "--runner", "host", "--json", *args, check=False)
    summary = json.loads(proc.stdout)
    assert "report" in summary, summary.get("error") or proc.stderr[-3000:]  # (refused before it ran)
    report = json.loads(Path(summary["report"]).read_text())
    failed = [(c["name"], c.get("detail")) for c in report["checks"] if not c["passed"]]
    assert summary["passed"] and not failed, failed or proc.stderr[-3000:]
    return summary, report


def assert_cpu_reference(report: dict, runtime: str, trained: str) -> None:
    """The report's mnist check was compared with the CPU curve of `runtime` (a pattern), trained as `trained` says
    ("in this process", "on x86_64 (native)") or that curve kept by devkit from an earlier
    verification on this machine (devkit's cache is the user's here, shared by the tests); the
    log says which."""
    mnist = next(c for c in report["checks"] if c["name"] == "mnist")
    where = mnist["cpu_reference"]
    kept = re.fullmatch(rf"{runtime} CPU on x86_64, kept from \d{{4}}-\d\d-\d\d \d\d:\d\d UTC", where)
    assert kept or re.fullmatch(rf"{runtime} CPU {re.escape(trained)}", where), where
    log = Path(report["log"]).read_text()
    assert (f"[devkit] CPU reference: {where} (devkit's cache)" in log) == bool(kept), log[-3000:]


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
# (the device library's conformance suite first: it runs beside the others, from the device bundle)
PADDLE_CHECKS = [
    "device conformance",
    "registration",
    "kernel signatures",
    "tensor",
    "devices",
    "queued work",
    "framework contract",
    "ops",
    "strided views",
]


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


# LeNet steps of an emulated verification in the tests, at ~0.6 s a step under qemu: the fewest near
# the default 100 that verify's verdict passes (measured natively, the curve the emulated device
# matches to 1e-6: held-out accuracy 0.879 at 70 steps, 0.848 at 80, 0.815 at 60, 0.902 at 100).
EMULATED_STEPS = 70


def with_verify_steps(project: Path, key: str, default: int, steps: int) -> Path:
    """The rendered project's [tool.devkit.verify] `key` (steps, emulated-steps) set from its
    default to `steps`; fails if the template no longer renders that default."""
    pyproject = project / "pyproject.toml"
    text = pyproject.read_text()
    line = f"\n{key} = {default} "
    assert line in text, f"the rendered pyproject.toml no longer says {key} = {default}: update the tests"
    pyproject.write_text(text.replace(line, f"\n{key} = {steps} ", 1))
    return project


def with_emulated_steps(project: Path) -> Path:
    """The project's emulated-steps (its default under qemu) set to EMULATED_STEPS."""
    return with_verify_steps(project, "emulated-steps", 100, EMULATED_STEPS)


def wheel_name(arch: str, policy: str = r"manylinux_2_\d+", device: str = "stpu") -> str:
    """The plugin wheel's name as a regex: devkit retags every wheel manylinux with auditwheel."""
    return rf"paddle_custom_{device}-0\.1\.0-py3-none-{policy}_{arch}\.whl"


def fresh_names(seed: int) -> dict[str, str]:
    """Names no test has used: mixed case with an underscore (both frameworks take it), one with a
    digit (Paddle takes it, torch.device() does not), and a name torch owns in mixed case."""
    import random
    import string

    from devkit.project.naming import CXX_KEYWORDS, PADDLE_RESERVED, torch_reserved

    rng = random.Random(seed)

    def word(n: int) -> str:
        while True:  # (a word with 'cuda' in it is refused by Paddle's rule first)
            w = "".join(rng.choice(string.ascii_letters) for _ in range(n))
            if "cuda" not in w.lower():
                return w

    # Names only torch's rule refuses: not C++ keywords (torch owns `float`), nor Paddle's devices.
    owned = sorted(
        n
        for n in torch_reserved()
        if len(n) > 3 and "_" not in n and n not in CXX_KEYWORDS and n not in PADDLE_RESERVED and "cuda" not in n
    )
    return {
        "mixed": rng.choice(string.ascii_uppercase) + word(4) + "_" + word(3),
        "digit": rng.choice(string.ascii_uppercase) + word(3) + str(rng.randrange(10)) + word(2),
        "owned": rng.choice(owned).capitalize(),
    }


# What every verification runs with: the reference device as unforgiving as hardware.
CHECK_MODES_SUMMARY = "2 devices, asynchronous streams, opaque device memory"

# The marks of every container test file (test_containers.py, test_container_layers.py,
# test_emulated_*.py).
CONTAINER_MARKS = [
    pytest.mark.container,
    # A machine without an engine skips (a capability, not a feature); CI sets
    # DEVKIT_REQUIRE_CONTAINERS=1 so a missing engine fails there instead.
    pytest.mark.skipif(
        not Engine.available() and not os.environ.get("DEVKIT_REQUIRE_CONTAINERS"),
        reason="needs a Docker Engine and qemu binfmt handlers (.ci/run sets them up)",
    ),
]


def devkit_containers(owner: int | None = None) -> list[str]:
    """Names of devkit's step containers; with `owner`, those of that devkit process (a test that
    checks what its own runs leave needs no engine to itself). From the list call alone: the SDK's
    containers.list inspects each one after, and fails on a container removed in between."""
    label = f"{OWNER_LABEL}={socket.gethostname()}:{owner}" if owner else STEP_LABEL
    listed = Engine.connect().client.api.containers(all=True, filters={"label": label})
    return [c["Names"][0].lstrip("/") for c in listed]


def devkit_owning(*args: str) -> tuple[subprocess.CompletedProcess, int]:
    """`devkit ARGS`, which must succeed, and its pid: what its containers are labelled with."""
    command = [sys.executable, "-m", "devkit", *args]
    env = {**os.environ, "COLUMNS": "200"}
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env) as proc:
        out, err = proc.communicate()
    if proc.returncode != 0:
        raise AssertionError(f"devkit {' '.join(args)} failed ({proc.returncode}):\n{out}\n{err}")
    return subprocess.CompletedProcess(command, proc.returncode, out, err), proc.pid


def assert_cloned_from_a_clean_reference(summary: dict) -> None:
    """The verify env was a clone of the image's cached reference env, which holds no plugin."""
    log = Path(json.loads(Path(summary["report"]).read_text())["log"]).read_text()
    assert "/work/venv/bin/python -m pip install --no-deps" in log  # only the wheel: Paddle came with the clone
    assert "-m venv /work/venv" not in log
    references = list(container_reference_envs().glob("devkit-verify-*-paddle-*"))
    assert references and not any(any(r.glob("lib/python3*/site-packages/paddle_custom_device")) for r in references)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A freshly rendered STPU project for a test file's builds (the container files' targets go
    into one; a file with projects of its own defines its own `project`)."""
    path = tmp_path_factory.mktemp("containers") / "STPU"
    devkit("new-backend", "STPU", "--out", str(path))
    return path


@pytest.fixture(scope="session")
def built_project(tmp_path_factory) -> Path:
    project = tmp_path_factory.mktemp("e2e") / "STPU"
    devkit("new-backend", "STPU", "--out", str(project))
    # Under xdist both workers' first files want this build at once: one at a time, so the second
    # compiles from the ccache the first filled instead of both compiling cold on two cores.
    with exclusive_lock(_engine_root(tmp_path_factory) / "built-project.lock", lambda holder: None):
        devkit("build", str(project), "--runner", "host", "--json")
    return project


def _engine_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the engine's lock files are: this session's temporary root, which pytest-xdist's
    workers have in common."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def _take_engine(root: Path, exclusive: bool) -> int:
    """Container tests share the engine (a shared lock); a test that stops it or counts every
    step container takes it to itself (exclusive). Whoever waits for the engine holds the
    turnstile, so a test waiting for it alone is not starved by shared ones queueing behind it.
    Returns the locked file; closing it (in every process that has it) lets the engine go."""
    flags = os.O_CREAT | os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC
    turnstile = os.open(root / "engine-turnstile.lock", flags, 0o600)
    engine = os.open(root / "engine.lock", flags, 0o600)
    try:
        fcntl.flock(turnstile, fcntl.LOCK_EX)
        fcntl.flock(engine, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
    except BaseException:
        os.close(engine)
        raise
    finally:
        os.close(turnstile)
    return engine


@contextlib.contextmanager
def _engine_lock(root: Path, exclusive: bool) -> Iterator[None]:
    engine = _take_engine(root, exclusive)
    try:
        yield
    finally:
        os.close(engine)


@pytest.fixture(autouse=True)
def _share_the_engine(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """For `container` tests: the engine shared, or to itself for `engine_alone` ones."""
    if request.node.get_closest_marker("container") is None:
        yield
        return
    with _engine_lock(_engine_root(tmp_path_factory), request.node.get_closest_marker("engine_alone") is not None):
        yield


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The order tests (under pytest-xdist: whole files) are handed out in. The container tests
    need images, which take about 12 minutes to make on a fresh machine (Debian bootstrapped,
    packages installed under qemu), mostly on one emulated core: they come after the host tests,
    and `devkit images build` starts in the background as the run starts (below). Under xdist
    (.ci/run: `-n 2 --dist loadfile --no-loadscope-reorder`, files in this order) the unit files
    come next, so a worker done with its long files takes short ones while the other finishes, and
    a test that needs the engine alone (test_engine_stop.py) last, when no other uses it."""
    workers = os.environ.get("PYTEST_XDIST_WORKER") is not None

    def rank(item: pytest.Item) -> tuple[int, int]:
        if workers and item.get_closest_marker("engine_alone"):
            return 3, 0
        if item.get_closest_marker("container"):
            # the longest files first, in the order their images are made (IMAGE_ORDER)
            return 1, CONTAINER_FILES.index(item.path.name) if item.path.name in CONTAINER_FILES else 0
        if workers and item.path.parent.name == "unit":
            return 2, 0
        name = item.path.name
        if name in HOST_FIRST:
            return 0, HOST_FIRST.index(name)
        return 0, len(HOST_FIRST) + (HOST_LAST.index(name) + 1 if name in HOST_LAST else 0)

    items.sort(key=rank)


# The first two host files, one per worker: the first builds the session's project (built_project:
# on a fresh machine every source compiles, and the reference environment is made) while the other
# builds the device library with sanitizers, which shares nothing with it. Two files that both
# needed built_project first compiled the same sources twice at once (69 and 75 s of setup in a
# fresh run); now the second worker's later build hits the compiler cache the first filled.
HOST_FIRST = ("test_abi.py", "test_device_runtime.py")

# Host files handed out after the others: the benchmark's clean builds then hit the compiler cache
# the other files' builds filled (a fresh machine's run: 200 s when it came third, against 97 s
# with a warm cache).
HOST_LAST = ("test_benchmarks.py",)

# The targets whose images the background build makes, in this order, and the container test files
# in the order they are handed out: the aarch64 files (the longest, under qemu) wait for the fewest
# images, and the x86_64 ones are two files so that each worker takes one while the other is busy.
IMAGE_ORDER = ("aarch64", "x86_64", "armhf")
CONTAINER_FILES = (
    "test_emulated_aarch64.py",
    "test_emulated_torch.py",
    "test_containers.py",
    "test_container_layers.py",
    "test_emulated_armhf.py",
)


@pytest.fixture(scope="session", autouse=True)
def _images_in_the_background(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[None]:
    """`devkit images build` in the background while the host tests run (one process: this one, or
    xdist's first worker). It holds the engine shared, so a test that stops the engine waits for it;
    devkit's image lock makes a container test that needs an image wait for it instead of building
    it twice. A run that ends first (-x, Ctrl-C) does not leave it behind."""
    items = request.session.items
    containers = sum(1 for item in items if item.get_closest_marker("container"))
    first = os.environ.get("PYTEST_XDIST_WORKER", "gw0") == "gw0"
    wanted = first and 0 < containers < len(items) and not os.environ.get("DEVKIT_NO_BACKGROUND_IMAGES")
    if not wanted or not Engine.available():
        yield
        return
    log = Path(request.config.rootpath) / ".pytest_cache" / "images-background.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    engine = _take_engine(_engine_root(tmp_path_factory), exclusive=False)
    try:
        with log.open("w") as out:
            images = subprocess.Popen(
                [sys.executable, "-m", "devkit", "images", "build", *(f"--arch={a}" for a in IMAGE_ORDER), "--json"],
                stdout=out,
                stderr=subprocess.STDOUT,
                pass_fds=(engine,),  # the child holds the engine's lock until it exits
            )
    finally:
        os.close(engine)
    yield
    if images.poll() is None:
        images.terminate()
        images.wait()


# Where the wall time of a run goes, per worker and per test file (printed after pytest's summary;
# .ci/run's note figures come from it). Reports reach the controller with the worker they ran on.
_spans: dict[str, list[float]] = {}  # worker -> [first start, last stop, busy seconds]
_file_spans: dict[str, tuple[str, list[float]]] = {}  # test file -> (worker, [start, stop, busy])


# CPU seconds per test phase: the worker's own and those of the processes it waited for (devkit
# and what devkit waited for; not a container's processes, which are the engine's children).
_PHASE_CPU = pytest.StashKey[float]()
_cpu_by_test: dict[str, float] = {}


def _cpu_seconds() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    cpu = _cpu_seconds()
    report.user_properties = [*report.user_properties, ("cpu_s", cpu - item.stash.get(_PHASE_CPU, cpu))]
    item.stash[_PHASE_CPU] = cpu  # the next phase counts from here


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    item.stash[_PHASE_CPU] = _cpu_seconds()
    yield


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    cpu = dict(report.user_properties).get("cpu_s")
    if isinstance(cpu, float):
        _cpu_by_test[report.nodeid] = _cpu_by_test.get(report.nodeid, 0.0) + cpu
    node = getattr(report, "node", None)
    worker = node.gateway.id if node is not None else "main"
    path = report.nodeid.split("::")[0]
    for span in (
        _spans.setdefault(worker, [report.start, report.stop, 0.0]),
        _file_spans.setdefault(path, (worker, [report.start, report.stop, 0.0]))[1],
    ):
        span[0], span[1] = min(span[0], report.start), max(span[1], report.stop)
        span[2] += report.duration


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not _spans:
        return
    start = min(span[0] for span in _spans.values())
    write = terminalreporter.write_line
    write("where the time went (seconds from the first test):")
    for worker, (first, last, busy) in sorted(_spans.items()):
        write(f"  {worker}: tests from {first - start:.0f} to {last - start:.0f}, busy {busy:.0f}")
    cpu_by_file: dict[str, float] = {}
    for nodeid, cpu in _cpu_by_test.items():
        path = nodeid.split("::")[0]
        cpu_by_file[path] = cpu_by_file.get(path, 0.0) + cpu
    for path, (worker, (first, last, busy)) in sorted(_file_spans.items(), key=lambda item: -item[1][1][2])[:16]:
        write(
            f"  {busy:6.0f} busy {cpu_by_file.get(path, 0.0):6.0f} cpu  {worker} {first - start:5.0f} to "
            f"{last - start:5.0f}  {path}"
        )
    if _cpu_by_test:
        write(f"CPU seconds of the tests' own processes (not containers'): {sum(_cpu_by_test.values()):.0f}; the most:")
        for nodeid, cpu in sorted(_cpu_by_test.items(), key=lambda item: -item[1])[:25]:
            write(f"  {cpu:6.0f} cpu  {nodeid}")
