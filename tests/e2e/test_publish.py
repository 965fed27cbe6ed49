"""Publishable plugins, for real: the sdist rebuilds into the same wheel in a clean environment,
and the wheel goes through a local package index (pypiserver on 127.0.0.1) into a fresh
environment next to the pinned Paddle, where the device registers."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
import zipfile
from pathlib import Path

import pytest
from conftest import check_json_output, devkit

from devkit.building.frameworks.paddle import paddle_framework, paddle_root_for
from devkit.building.manylinux import tag_manylinux
from devkit.project.recipes import find_recipe
from devkit.run.envs import clone_env, reference_env, site_package
from devkit.run.step import HostRunner
from devkit.util.errors import ExitCode

pytestmark = pytest.mark.e2e
SECRET = "s3cret-devkit-token-0451"


@pytest.fixture(scope="module")
def with_sdist(built_project) -> dict:
    return json.loads(devkit("build", str(built_project), "--runner", "host", "--sdist", "--json").stdout)


def _members(wheel: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(wheel) as zf:
        return {n: zf.read(n) for n in zf.namelist() if not n.endswith("/RECORD")}


def test_sdist_rebuilds_into_the_same_wheel_in_a_clean_environment(with_sdist, tmp_path):
    sdist, wheel = Path(with_sdist["sdist"]), Path(with_sdist["wheel"])
    assert sdist.name == "paddle_custom_stpu-0.1.0.tar.gz" and sdist.parent == wheel.parent
    # A clean environment: an empty venv (not even pip: ensurepip took 3.5 s) that this pip builds for.
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "venv")], check=True)
    # The Paddle the build compiled against (the cached reference env), copied elsewhere: the
    # wheel must not depend on where Paddle's headers lie (-ffile-prefix-map in CMakeLists.txt).
    reference = reference_env(HostRunner(), "3.3.1", tmp_path / "reference.log")
    assert reference is not None
    paddle = shutil.copytree(site_package(reference, "paddle"), tmp_path / "elsewhere" / "paddle", symlinks=True)
    # pip unpacks the sdist in a temporary directory and builds it in an isolated environment
    # (scikit-build-core, cmake, ninja from the index); only Paddle's headers and libraries are given.
    # Without ccache: this is the suite's proof that the compiler's output depends on no path.
    clean = ["--python", str(tmp_path / "venv" / "bin" / "python")]
    proc = subprocess.run(
        [sys.executable, "-m", "pip", *clean, "wheel", "--no-deps", "-w", str(tmp_path / "raw"), str(sdist)],
        capture_output=True,
        text=True,
        env={**os.environ, "PADDLE_ROOT": str(paddle), "PADDLE_VERSION": "3.3.1", "CCACHE_DISABLE": "1"},
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (raw,) = (tmp_path / "raw").glob("*.whl")
    framework = paddle_framework(paddle_root_for(find_recipe("x86_64"), "3.3.1"))
    rebuilt, report = tag_manylinux(raw, tmp_path / "tagged", *framework, tmp_path / "log")
    assert rebuilt.name == wheel.name and report.as_dict()["tag"] == with_sdist["platform"]["tag"]
    assert _members(rebuilt) == _members(wheel)  # same files, same bytes (the library included)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def local_index(tmp_path):
    """pypiserver on 127.0.0.1, accepting uploads, stopped after the test."""
    port, packages = _free_port(), tmp_path / "packages"
    packages.mkdir()
    server = subprocess.Popen(
        [sys.executable, "-m", "pypiserver", "run", "-i", "127.0.0.1", "-p", str(port), "-a", ".", "-P", "."]
        + [str(packages)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(f"{url}/simple/", timeout=1)
                break
            except OSError:
                time.sleep(0.1)
        yield url, packages
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_local_index_round_trip(with_sdist, built_project, local_index, tmp_path):
    url, packages = local_index
    env = {**os.environ, "TWINE_USERNAME": "vendor", "TWINE_PASSWORD": SECRET}
    proc = subprocess.run(
        [sys.executable, "-m", "devkit", "publish", str(built_project), "--repository-url", f"{url}/", "--json"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    check_json_output(["publish"], json.loads(proc.stdout))
    uploaded = sorted(Path(f).name for f in json.loads(proc.stdout)["files"])
    assert sorted(p.name for p in packages.iterdir()) == uploaded
    assert Path(with_sdist["wheel"]).name in uploaded and "paddle_custom_stpu-0.1.0.tar.gz" in uploaded
    log = built_project / "build" / "devkit-logs" / "publish.log"
    assert "twine" in log.read_text()
    for text in (proc.stdout, proc.stderr, *(p.read_text() for p in built_project.rglob("*.log"))):
        assert SECRET not in text  # credentials never reach output or disk

    # A fresh environment next to the pinned Paddle; the plugin comes from the local index only.
    reference = reference_env(HostRunner(), "3.3.1", tmp_path / "env.log")
    assert reference is not None
    python = clone_env(reference, tmp_path / "fresh")
    install = subprocess.run(
        [python, "-m", "pip", "install", "--no-cache-dir", "--index-url", f"{url}/simple/", "paddle-custom-stpu"],
        capture_output=True,
        text=True,
    )
    assert install.returncode == 0, install.stdout + install.stderr
    assert f"{url}/packages/{Path(with_sdist['wheel']).name}" in install.stdout
    types = subprocess.run(
        [python, "-c", "import paddle; print(paddle.device.get_all_custom_device_type())"],
        capture_output=True,
        text=True,
    )
    assert types.stdout.strip() == "['stpu']", types.stderr


def test_publish_to_an_unreachable_index_is_one_line(built_project, with_sdist):
    port = _free_port()  # nothing listens there
    url = f"http://127.0.0.1:{port}/"
    env = {k: v for k, v in os.environ.items() if not k.startswith("TWINE_")}
    argv = [sys.executable, "-m", "devkit", "publish", str(built_project), "--repository-url", url]
    proc = subprocess.run(argv, capture_output=True, text=True, env=env)
    assert (
        proc.returncode == ExitCode.INPUT
        and "error: no credentials for" in proc.stderr
        and "TWINE_PASSWORD" in proc.stderr
    )
    proc = subprocess.run(
        argv, capture_output=True, text=True, env={**env, "TWINE_USERNAME": "u", "TWINE_PASSWORD": "p"}
    )
    assert proc.returncode == ExitCode.ENVIRONMENT
    error = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(error) == 1 and f"http://127.0.0.1:{port}/: the package index is unreachable" in error[0]


def test_publish_refuses_a_url_that_is_not_one(built_project):
    proc = devkit("publish", str(built_project), "--repository-url", "pypi.example.com", check=False)
    assert proc.returncode == ExitCode.INPUT and "is not an http(s) URL" in proc.stderr
