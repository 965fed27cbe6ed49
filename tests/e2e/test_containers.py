"""Container builds and verification for all three targets, for real: Docker Engine,
offline-bootstrapped Debian images, cross compilers, and qemu user emulation.

Needs a Docker Engine and qemu binfmt handlers (`.ci/run` sets both up). Images
are built once and reused (content-hash tags), so reruns are quick."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

import pytest
from conftest import PADDLE_CHECKS, check_json_output, devkit, render_with_opencl_sdk

from devkit.run.doctor import run_doctor
from devkit.run.engine import Engine
from devkit.run.envs import cache_root, container_reference_envs
from devkit.util.errors import ExitCode

# What every verification runs with: the reference device as unforgiving as hardware.
CHECK_MODES_SUMMARY = "2 devices, asynchronous streams, opaque device memory"

pytestmark = [
    pytest.mark.container,
    # A machine without an engine skips (a capability, not a feature); CI sets
    # DEVKIT_REQUIRE_CONTAINERS=1 so a missing engine fails there instead.
    pytest.mark.skipif(
        not Engine.available() and not os.environ.get("DEVKIT_REQUIRE_CONTAINERS"),
        reason="needs a Docker Engine and qemu binfmt handlers (.ci/run sets them up)",
    ),
]


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("containers") / "STPU"
    devkit("new-backend", "STPU", "--out", str(path))
    return path


def devkit_containers() -> list[str]:
    """Names of devkit's step containers (from the list call alone: the SDK's containers.list
    inspects each one after, and fails on a container removed in between)."""
    engine = Engine.connect()
    listed = engine.client.api.containers(all=True, filters={"label": "org.devkit.step"})
    return [c["Names"][0].lstrip("/") for c in listed]


def test_doctor_is_ready():
    findings = {f.name: f for f in run_doctor()}
    assert findings["container engine"].ok
    assert findings["qemu for aarch64"].ok and findings["qemu for armhf"].ok


def test_engine_commands_print_only_json(tmp_path):
    """The --json commands that need an engine, with an empty devkit cache (test_json_output.py runs
    the others). `images bootstrap` is left out: it makes a base image again, which the images of
    the tests around it were built from; it runs debootstrap through the same step runner as build."""
    env = {**os.environ, "DEVKIT_CACHE_DIR": str(tmp_path / "cache")}
    for args in (["images", "build"], ["images", "list"], ["images", "prune"], ["doctor"]):
        proc = subprocess.run(
            [sys.executable, "-m", "devkit", *args, "--json"], capture_output=True, text=True, env=env
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
        check_json_output(args, json.loads(proc.stdout))  # stdout is one JSON document and nothing else


@pytest.mark.engine_alone  # counts every step container
def test_x86_64_container_build_matches_host_contract(project):
    summary = json.loads(devkit("build", str(project), "--runner", "docker", "--json").stdout)
    assert summary["runner"].startswith("docker:devkit-builder-bullseye:")
    wheel = Path(summary["wheel"])
    # The default builder base (bullseye: glibc 2.31, GCC 10) gives manylinux_2_31, measured.
    assert wheel.name == "paddle_custom_stpu-0.1.0-py3-none-manylinux_2_31_x86_64.whl"
    assert summary["platform"]["floor"] == {"glibc": "2.29", "glibcxx": "3.4.26", "cxxabi": "1.3.9"}
    assert summary["platform"]["excluded"] == ["libcommon.so", "libphi_core.so"]
    assert summary["platform"]["grafted"] == []
    owner = wheel.stat().st_uid
    assert owner == os.getuid()  # written as the calling user, not root-in-container
    assert all(p.stat().st_uid == os.getuid() for p in (project / "build").rglob("*.o"))
    assert devkit_containers() == []


def test_x86_64_container_verify(project):
    summary = json.loads(devkit("verify", str(project), "--runner", "docker", "--json").stdout)
    assert summary["passed"], summary
    assert [c["name"] for c in summary["checks"]] == [*PADDLE_CHECKS, "mnist", "fallback report"]
    assert json.loads(Path(summary["report"]).read_text())["modes"]["summary"] == CHECK_MODES_SUMMARY
    assert_cloned_from_a_clean_reference(summary)


@pytest.mark.engine_alone  # counts every step container
def test_x86_64_container_verify_distributed(project):
    """Two ranks of Paddle's launcher inside one verify container (its /dev/shm holds the
    collectives' files), and the lost-rank runs."""
    argv = ["verify", str(project), "--runner", "docker", "--distributed", "2", "--steps", "20", "--json"]
    summary = json.loads(devkit(*argv).stdout)
    assert [c["name"] for c in summary["checks"] if c["passed"]] == [
        "collectives",
        "data parallel",
        "killed rank",
        "stalled rank",
    ], summary
    assert devkit_containers() == []


def assert_cloned_from_a_clean_reference(summary: dict) -> None:
    """The verify env was a clone of the image's cached reference env, which holds no plugin."""
    log = Path(json.loads(Path(summary["report"]).read_text())["log"]).read_text()
    assert "/work/venv/bin/python -m pip install --no-deps" in log  # only the wheel: Paddle came with the clone
    assert "-m venv /work/venv" not in log
    references = list(container_reference_envs().glob("devkit-verify-*-paddle-*"))
    assert references and not any(any(r.glob("lib/python3*/site-packages/paddle_custom_device")) for r in references)


def test_aarch64_cross_build(project):
    summary = json.loads(devkit("build", str(project), "--arch", "armv8", "--json").stdout)
    wheel = Path(summary["wheel"])
    assert wheel.name == "paddle_custom_stpu-0.1.0-py3-none-manylinux_2_31_aarch64.whl"
    assert summary["platform"]["exceeds_framework"] == ["GLIBC_2.29 > GLIBC_2.27", "GLIBCXX_3.4.26 > GLIBCXX_3.4.22"]
    assert summary["paddle_version"] == "3.2.2"
    with zipfile.ZipFile(wheel) as zf:
        lib = zf.read("paddle_custom_device/stpu/libpaddle-custom-stpu-impl.so")
        meta = zf.read("paddle_custom_stpu-0.1.0.dist-info/METADATA").decode()
    assert int.from_bytes(lib[18:20], "little") == 183  # EM_AARCH64
    assert "Requires-Dist: paddlepaddle==3.2.2" in meta


def test_aarch64_verify_under_emulation(project):
    summary = json.loads(devkit("verify", str(project), "--arch", "aarch64", "--json").stdout)
    assert summary["passed"], summary
    report = json.loads(Path(summary["report"]).read_text())
    assert report["paddle_version"] == "3.2.2" and report["runner"].startswith("docker:devkit-verify-aarch64")
    mnist = next(c for c in report["checks"] if c["name"] == "mnist")
    assert mnist["steps"] == 100 and mnist["cpu_reference"] == "paddle 3.3.1 CPU on x86_64 (native)"
    assert report["modes"]["summary"] == CHECK_MODES_SUMMARY
    assert_cloned_from_a_clean_reference(summary)


def test_aarch64_cross_build_against_a_declared_sdk(tmp_path):
    """[tool.devkit.sdk] with Debian's arm64 OpenCL packages: fetched in the builder container
    (its Debian release, arm64 added there), linked by the cross g++, left out of the wheel."""
    project = render_with_opencl_sdk(tmp_path, "opencl-backend")
    summary = json.loads(devkit("build", str(project), "--arch", "aarch64", "--json").stdout)
    assert "libOpenCL.so.1" in summary["platform"]["excluded"] and summary["platform"]["grafted"] == []
    with zipfile.ZipFile(summary["wheel"]) as zf:
        assert not [n for n in zf.namelist() if "libOpenCL" in n]
        assert b"stpu-sdk-build: opencl=3.0" in zf.read("paddle_custom_device/stpu/libpaddle-custom-stpu-impl.so")
    log = Path(summary["log"]).read_text()
    (lib_dir,) = json.loads((cache_root() / "sdk-index" / "opencl-3.0-aarch64.json").read_text())["lib_dirs"]
    assert (Path(lib_dir) / "libOpenCL.so.1").read_bytes()[18] == 183  # the target's library (EM_AARCH64)
    assert re.search(
        r"opencl SDK 3\.0 at /cache/sdk/opencl-3\.0-aarch64-\w+ \(\S+/usr/lib/aarch64-linux-gnu/libOpenCL\.so\)", log
    )
    devkit("check-abi", summary["wheel"], "--arch", "aarch64")  # OPENCL_1.0 symbols resolved by the arm64 libOpenCL


def test_x86_64_container_verify_installs_the_sdk_runtime(tmp_path):
    """The OpenCL example in the x86_64 verify container. Without [tool.devkit.sdk.runtime] the
    verify image has no libOpenCL.so.1: the plugin's loader says so, Paddle goes on without the
    device, and verify stops with that one line. With it, a layer on the verify image installs the
    ICD loader and pocl, and the checks pass on OpenCL (two pocl devices, runtime-env)."""
    project = render_with_opencl_sdk(tmp_path, "opencl-backend")
    pyproject = project / "pyproject.toml"
    declared = pyproject.read_text()
    runtime = declared[declared.index("[tool.devkit.sdk.runtime]") :]
    pyproject.write_text(declared.replace(runtime, ""))
    devkit("build", str(project))
    proc = devkit("verify", str(project), "--steps", "20", check=False)
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert proc.returncode == ExitCode.ENVIRONMENT and len(errors) == 1, proc.stderr[-2000:]
    assert (
        ": paddle-custom-stpu: the stpu device is unavailable: it needs the opencl 3.0 runtime, and libOpenCL.so.1 "
        "could not be loaded (libOpenCL.so.1: cannot open" in errors[0]
    ), errors[0]
    assert "[tool.devkit.sdk.runtime]" in errors[0]
    pyproject.write_text(declared)
    summary = json.loads(devkit("verify", str(project), "--json").stdout)
    report = json.loads(Path(summary["report"]).read_text())
    assert summary["passed"] and report["runner"].startswith("docker:devkit-verify-x86_64-sdk:")
    assert "conv2d.*" in report["unimplemented_kernels"]


def test_aarch64_torch_cross_build(project):
    """The PyTorch adapter cross-compiled by the builder's aarch64 g++ against the aarch64 torch wheel."""
    summary = json.loads(devkit("build", str(project), "--framework", "torch", "--arch", "aarch64", "--json").stdout)
    wheel = Path(summary["wheel"])
    assert re.fullmatch(r"torch_stpu-0\.1\.0-py3-none-manylinux_2_\d+_aarch64\.whl", wheel.name), wheel.name
    assert summary["runner"].startswith("docker:devkit-builder-bullseye:") and summary["torch_version"] == "2.9.1"
    assert "libtorch_cpu.so" in summary["platform"]["excluded"] and summary["platform"]["grafted"] == []
    with zipfile.ZipFile(wheel) as zf:
        (lib,) = [n for n in zf.namelist() if n.endswith(".so")]
        assert zf.read(lib)[18] == 183  # e_machine EM_AARCH64
    log = Path(summary["log"]).read_text()
    assert "aarch64-linux-gnu-g++" in log and "qemu" not in log.lower()


def test_aarch64_torch_verify_under_emulation(project):
    summary = json.loads(devkit("verify", str(project), "--framework", "torch", "--arch", "aarch64", "--json").stdout)
    assert summary["passed"], summary
    report = json.loads(Path(summary["report"]).read_text())
    assert report["torch_version"].startswith("2.9.1") and report["runner"].startswith("docker:devkit-verify-aarch64")
    mnist = next(c for c in report["checks"] if c["name"] == "mnist")
    assert mnist["fallbacks"] == {} and mnist["steps"] == 100
    # the CPU curve trained natively by the host's torch, not for ten minutes under qemu
    assert re.fullmatch(r"torch 2\.13\.0\S* CPU on x86_64 \(native\)", mnist["cpu_reference"]), mnist["cpu_reference"]
    assert "cpu_reference.py --framework torch" in Path(report["log"]).read_text()
    assert report["modes"]["summary"] == CHECK_MODES_SUMMARY


def test_armhf_builds_device_library_and_says_why(project):
    proc = devkit("build", str(project), "--arch", "armv7hf", "--json")
    assert "PaddlePaddle publishes no runtime for armhf" in proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["kind"] == "device-bundle" and summary["paddle_version"] is None
    with tarfile.open(summary["artifact"]) as tar:
        names = tar.getnames()
        test = tar.extractfile(next(n for n in names if n.endswith("/tests/test_stpu_device"))).read()
    assert int.from_bytes(test[18:20], "little") == 40  # EM_ARM
    assert any(n.endswith("include/stpu_device.h") for n in names)


def test_check_abi_rejects_armhf_library_for_aarch64(project, tmp_path):
    bundle = project / "dist" / "paddle-custom-stpu-device-0.1.0-armhf.tar.gz"
    with tarfile.open(bundle) as tar:
        member = next(m for m in tar.getmembers() if m.name.endswith("/tests/test_stpu_device"))
        (tmp_path / "test_stpu_device").write_bytes(tar.extractfile(member).read())
    proc = devkit("check-abi", str(tmp_path / "test_stpu_device"), "--arch", "aarch64", check=False)
    assert proc.returncode == ExitCode.BUILD_FAILED
    assert "is built for EM_ARM but aarch64 needs EM_AARCH64" in proc.stderr


def test_armhf_device_tests_pass_under_emulation(project):
    summary = json.loads(devkit("verify", str(project), "--arch", "armhf", "--json").stdout)
    assert summary["passed"], summary
    assert summary["checks"][0]["detail"] == "26 passed, 0 failed"


def test_aarch64_inference_under_emulation(project):
    devkit("build", str(project), "--arch", "aarch64", "--infer")
    bundle = project / "dist" / "paddle-custom-stpu-inference-0.1.0-aarch64.tar.gz"
    with tarfile.open(bundle) as tar:
        lib = tar.extractfile(
            "paddle-custom-stpu-inference-0.1.0-aarch64/lib/stpu/libpaddle-custom-stpu-impl.so"
        ).read()
    assert int.from_bytes(lib[18:20], "little") == 183
    summary = json.loads(
        devkit(
            "verify",
            str(project),
            "--arch",
            "aarch64",
            "--infer",
            "--model",
            "mnist",
            "--warmup",
            "2",
            "--repeats",
            "5",
            "--json",
        ).stdout
    )
    assert summary["passed"], summary


def test_armhf_inference_bundle_carries_the_device_library(project):
    devkit("build", str(project), "--arch", "armhf", "--infer")
    with tarfile.open(project / "dist" / "paddle-custom-stpu-inference-0.1.0-armhf.tar.gz") as tar:
        manifest = json.loads(tar.extractfile("paddle-custom-stpu-inference-0.1.0-armhf/manifest.json").read())
    assert manifest["paddle_version"] is None and "no runtime for armhf" in manifest["note"]
    assert {"lib/libstpu_device.a", "include/stpu_device.h", "tests/test_stpu_device", "run.sh"} <= set(
        manifest["files"]
    )


def test_armhf_rejects_paddle_version(project):
    proc = devkit("build", str(project), "--arch", "armhf", "--paddle-version", "3.2.2", check=False)
    assert proc.returncode == ExitCode.INPUT and "no PaddlePaddle runtime" in proc.stderr


@pytest.mark.engine_alone  # waits for, then counts, every step container
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_interrupt_leaves_no_container_and_no_wheel(tmp_path, sig):
    project = tmp_path / "STPU"
    devkit("new-backend", "STPU", "--out", str(project))
    # A fresh cache makes the step long (it sets up the build tools), so the
    # interrupt lands while the container is working.
    env = {**os.environ, "DEVKIT_CACHE_DIR": str(tmp_path / "cache")}
    # As from a terminal: a parent that ignores SIGINT (a background job) would pass that on.
    proc = subprocess.Popen(
        [sys.executable, "-m", "devkit", "build", str(project), "--runner", "docker"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 120
    while not devkit_containers() and time.monotonic() < deadline:  # wait until the compile container runs
        time.sleep(0.2)
    assert devkit_containers(), "the build container never started"
    time.sleep(2)
    proc.send_signal(sig)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    assert "interrupted" in stderr
    assert devkit_containers() == []
    assert list(project.glob("dist/*.whl")) == []


@pytest.fixture(scope="module")
def golden(tmp_path_factory) -> Path:
    """Golden data recorded with Paddle CPU on this (x86_64) machine."""
    out = tmp_path_factory.mktemp("golden") / "golden"
    summary = json.loads(devkit("test-ops", "--gen-golden", str(out), "--runner", "host", "--json").stdout)
    assert summary["cases"] >= 20 and (out / "manifest.txt").is_file()
    return out


def test_golden_data_checks_the_armhf_device_library_under_emulation(project, golden):
    devkit("build", str(project), "--arch", "armhf")
    summary = json.loads(devkit("test-ops", str(project), "--arch", "armhf", "--golden", str(golden), "--json").stdout)
    assert summary["passed"] and summary["counts"]["pass"] >= 20
    report = json.loads(Path(summary["report"]).read_text())
    assert report["runner"].startswith("docker:devkit-verify-armhf") and report["golden_source"].startswith(
        "Paddle 3.3.1 on CPU"
    )
    assert {r["kernels"][0] for r in report["results"]} >= {"binary", "gemm", "conv2d", "pool2d", "reduce", "softmax"}


def test_golden_data_catches_a_broken_armhf_kernel(golden, tmp_path):
    from test_conformance import break_gemm

    project = tmp_path / "STPU"
    devkit("new-backend", "STPU", "--out", str(project))
    break_gemm(project)
    devkit("build", str(project), "--arch", "armhf")
    proc = devkit("test-ops", str(project), "--arch", "armhf", "--golden", str(golden), check=False)
    assert proc.returncode == ExitCode.VERIFICATION_FAILED
    assert "op case(s) failed: matmul [float32] (gemm: out: max |diff|" in proc.stderr.strip().splitlines()[-1]
    report = json.loads((project / "reports" / "test-ops-armhf-golden" / "report.json").read_text())
    failed = {r["case"] for r in report["results"] if r["status"] == "fail"}
    assert failed == {"matmul", "matmul_transpose_y", "conv2d_pad1", "conv2d_stride2_groups2", "conv2d_dilation2"}


def test_build_all_runs_the_default_matrix(tmp_path):
    project = tmp_path / "STPU"
    devkit("new-backend", "STPU", "--out", str(project))
    proc = devkit("build", str(project), "--all", "--jobs", "2", "--json")
    summary = json.loads(proc.stdout)
    assert summary["passed"], proc.stderr
    assert [e["id"] for e in summary["entries"]] == [
        "x86_64-train-paddle3.3.1",
        "x86_64-infer-paddle3.3.1",
        "aarch64-train-paddle3.2.2",
        "aarch64-infer-paddle3.2.2",
        "armhf-device",
        "x86_64-torch-train-torch2.13.0",
        "aarch64-torch-train-torch2.9.1",
    ]
    names = {e["id"]: [Path(a).name for a in e["artifacts"]] for e in summary["entries"]}
    for arch, version in (("x86_64", "2.13.0"), ("aarch64", "2.9.1")):
        (torch_wheel,) = names[f"{arch}-torch-train-torch{version}"]
        assert re.fullmatch(rf"torch_stpu-0\.1\.0-py3-none-manylinux_2_\d+_{arch}\.whl", torch_wheel)
    assert names["aarch64-infer-paddle3.2.2"] == [
        "paddle_custom_stpu-0.1.0-py3-none-manylinux_2_31_aarch64.whl",
        "paddle-custom-stpu-inference-0.1.0-aarch64.tar.gz",
    ]
    assert names["armhf-device"] == ["paddle-custom-stpu-device-0.1.0-armhf.tar.gz"]
    suite = ET.parse(summary["junit"]).getroot().find("testsuite")
    assert suite.get("tests") == "7" and suite.get("failures") == "0"
    assert "devkit build --all" in proc.stderr or summary["seconds"] > 0


@pytest.fixture()
def tcp_engine():
    """This machine's engine reached over TCP, as a remote engine is (DOCKER_HOST=tcp://...).
    It shares our file system, but devkit cannot know that: it must copy files, not bind-mount."""
    import socket
    import socketserver
    import threading

    class Forward(socketserver.BaseRequestHandler):
        def handle(self):
            upstream = socket.socket(socket.AF_UNIX)
            upstream.connect("/var/run/docker.sock")

            def pump(src, dst):
                try:
                    while data := src.recv(65536):
                        dst.sendall(data)
                except OSError:
                    pass
                finally:
                    try:
                        dst.shutdown(socket.SHUT_WR)
                    except OSError:
                        pass

            back = threading.Thread(target=pump, args=(upstream, self.request), daemon=True)
            back.start()
            pump(self.request, upstream)
            back.join()

    class Server(socketserver.ThreadingTCPServer):
        daemon_threads = True

    server = Server(("127.0.0.1", 0), Forward)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"tcp://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_remote_engine_build_copies_files(tmp_path, tcp_engine):
    project = tmp_path / "STPU"
    devkit("new-backend", "STPU", "--out", str(project))
    env = {**os.environ, "DOCKER_HOST": tcp_engine, "COLUMNS": "200"}

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "devkit", *args], capture_output=True, text=True, env=env)

    proc = run("build", str(project), "--arch", "aarch64", "--runner", "docker", "--json")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["runner"].endswith("(files copied to a remote engine)")
    assert Path(summary["wheel"]).name == "paddle_custom_stpu-0.1.0-py3-none-manylinux_2_31_aarch64.whl"
    assert "files copied]" in Path(summary["log"]).read_text()
    assert any(project.glob("build/*aarch64*/CMakeCache.txt"))  # the build tree came back
    again = json.loads(run("build", str(project), "--arch", "aarch64", "--runner", "docker", "--json").stdout)
    assert again["compiled_files"] == 0  # incremental through the copied build tree and the volume cache
    proc = run("verify", str(project), "--arch", "aarch64", "--runner", "docker")
    assert proc.returncode == ExitCode.ENVIRONMENT and "verifying on a remote container engine" in proc.stderr


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
    while not devkit_containers() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert devkit_containers(), "the build container never started"
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
