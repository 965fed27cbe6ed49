"""Container builds and verification on x86_64, for real: Docker Engine, offline-bootstrapped
Debian images, the builder's compilers; the engine's own failures (interrupts, a stopped engine,
a remote engine). The foreign targets under qemu are in test_emulated_*.py; the verifications on
image layers (Inductor's compiler, an SDK's runtime) in test_container_layers.py.

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
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from conftest import (
    CHECK_MODES_SUMMARY,
    CONTAINER_MARKS,
    PADDLE_CHECKS,
    assert_cloned_from_a_clean_reference,
    check_json_output,
    devkit,
    devkit_containers,
    devkit_owning,
)

from devkit.run.doctor import run_doctor
from devkit.util.errors import ExitCode

pytestmark = CONTAINER_MARKS


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


def test_x86_64_container_build_matches_host_contract(project):
    proc, pid = devkit_owning("build", str(project), "--runner", "docker", "--json")
    summary = json.loads(proc.stdout)
    assert summary["runner"].startswith("docker:devkit-builder-bullseye:")
    wheel = Path(summary["wheel"])
    # The default builder base (bullseye: glibc 2.31, GCC 10) gives manylinux_2_31, measured.
    assert wheel.name == "paddle_custom_stpu-0.1.0-py3-none-manylinux_2_31_x86_64.whl"
    assert summary["platform"]["floor"] == {"glibc": "2.29", "glibcxx": "3.4.26", "cxxabi": "1.3.9"}
    assert summary["platform"]["excluded"] == ["libcommon.so", "libpaddle.so", "libphi_core.so"]  # (PIR: the engine)
    assert summary["platform"]["grafted"] == []
    owner = wheel.stat().st_uid
    assert owner == os.getuid()  # written as the calling user, not root-in-container
    assert all(p.stat().st_uid == os.getuid() for p in (project / "build").rglob("*.o"))
    assert devkit_containers(owner=pid) == []


def test_x86_64_container_verify(project):
    summary = json.loads(devkit("verify", str(project), "--runner", "docker", "--json").stdout)
    assert summary["passed"], summary
    assert [c["name"] for c in summary["checks"]] == [*PADDLE_CHECKS, "mnist", "fallback report"]
    assert json.loads(Path(summary["report"]).read_text())["modes"]["summary"] == CHECK_MODES_SUMMARY
    assert_cloned_from_a_clean_reference(summary)


def test_x86_64_container_verify_distributed(project):
    """Two ranks of Paddle's launcher inside one verify container (its /dev/shm holds the
    collectives' files), and the lost-rank runs."""
    argv = ["verify", str(project), "--runner", "docker", "--distributed", "2", "--steps", "20", "--json"]
    proc, pid = devkit_owning(*argv)
    summary = json.loads(proc.stdout)
    assert [c["name"] for c in summary["checks"] if c["passed"]] == [
        "collectives",
        "data parallel",
        "killed rank",
        "stalled rank",
    ], summary
    assert devkit_containers(owner=pid) == []


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
    while not devkit_containers(owner=proc.pid) and time.monotonic() < deadline:  # the compile container runs
        time.sleep(0.2)
    assert devkit_containers(owner=proc.pid), "the build container never started"
    time.sleep(2)
    proc.send_signal(sig)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    assert "interrupted" in stderr
    assert devkit_containers(owner=proc.pid) == []
    assert list(project.glob("dist/*.whl")) == []


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
    """A cross build through an engine that cannot see our files. armhf's device library: the
    copying is the same for every target, and its compile is a fraction of a plugin's, which a
    remote engine's cache volume (empty here) would compile from nothing."""
    project = tmp_path / "STPU"
    devkit("new-backend", "STPU", "--out", str(project))
    env = {**os.environ, "DOCKER_HOST": tcp_engine, "COLUMNS": "200"}

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "devkit", *args], capture_output=True, text=True, env=env)

    proc = run("build", str(project), "--arch", "armhf", "--runner", "docker", "--json")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["runner"].endswith("(files copied to a remote engine)")
    assert Path(summary["artifact"]).name == "paddle-custom-stpu-device-0.1.0-armhf.tar.gz"
    with tarfile.open(summary["artifact"]) as tar:  # the target's test binary came back whole
        names = tar.getnames()
        test = tar.extractfile(next(n for n in names if n.endswith("/tests/test_stpu_device"))).read()
    assert int.from_bytes(test[18:20], "little") == 40  # EM_ARM
    assert "files copied]" in Path(summary["log"]).read_text()
    assert any(project.glob("build/*armhf*/CMakeCache.txt"))  # the build tree came back
    again = json.loads(run("build", str(project), "--arch", "armhf", "--runner", "docker", "--json").stdout)
    assert again["compiled_files"] == 0  # incremental through the copied build tree and the volume cache
    proc = run("verify", str(project), "--arch", "armhf", "--runner", "docker")
    assert proc.returncode == ExitCode.ENVIRONMENT and "verifying on a remote container engine" in proc.stderr
