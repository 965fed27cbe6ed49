"""The fault catalogue: what goes wrong around a build or a verify (a full disk, an unreachable
package index, two builds of one project at once, damaged or hostile archives, a damaged cache),
each answered by one `error:` line with a fix, a non-zero exit, and nothing partial left behind.

The container engine stopping mid-build is in test_engine_stop.py (it needs the engine);
Ctrl-C and SIGTERM are in test_containers.py; a project edited into C++ that does not compile is in
test_e2e.py (its wheel is removed from dist/, not kept: an old wheel would look like the result).
"""

from __future__ import annotations

import fcntl
import io
import json
import os
import shutil
import socket
import subprocess
import sys
import tarfile
import time
import zipfile
from pathlib import Path

import pytest
from conftest import devkit

from devkit.payload.shared.problems import Problem
from devkit.payload.shared.runtimes import PADDLE, UNPACKED_MARKER, target_paddle
from devkit.run.envs import cache_root
from devkit.util.archives import extract_tar, validate_wheel, write_tar_gz
from devkit.util.errors import DevkitError

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="mounting a small tmpfs needs root (CI runs as root)")


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "devkit", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200", **(env or {})},
    )


def one_error_line(proc: subprocess.CompletedProcess) -> str:
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert proc.returncode != 0, proc.stderr
    assert len(errors) == 1 and "Fix:" in errors[0], proc.stderr
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr
    return errors[0]


@pytest.fixture
def small_tmpfs(tmp_path):
    """Mount a tmpfs of the given size at a path; unmounted afterwards."""
    mounted: list[Path] = []

    def mount(path: Path, size: str) -> Path:
        path.mkdir(parents=True, exist_ok=True)
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], check=True)
        mounted.append(path)
        return path

    yield mount
    for path in reversed(mounted):
        subprocess.run(["umount", "-l", str(path)], check=False)


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again when the socket is: connections are refused


@pytest.fixture
def no_index(tmp_path) -> dict[str, str]:
    """pip pointed at a closed local port, with none of this machine's pip settings, and a fresh cache."""
    return {
        "PIP_CONFIG_FILE": os.devnull,
        "PIP_INDEX_URL": f"http://127.0.0.1:{closed_port()}/simple/",
        "PIP_EXTRA_INDEX_URL": "",
        "PIP_FIND_LINKS": "",
        "PIP_RETRIES": "1",
        "PIP_TIMEOUT": "2",
        "DEVKIT_CACHE_DIR": str(tmp_path / "fresh-cache"),
    }


# ---------------------------------------------------------------- unreachable index


def test_unreachable_index_while_making_the_build_tools_env(tmp_path, no_index):
    project = tmp_path / "STPU"
    devkit("new-backend", "STPU", "--out", str(project))
    line = one_error_line(run("build", str(project), "--runner", "host", env=no_index))
    assert "the package index is unreachable (" in line and "pip config list" in line
    assert not list(project.glob("dist/*"))


@pytest.mark.e2e
def test_unreachable_index_while_downloading_the_target_wheel(built_project, no_index):
    wheel = next(built_project.glob("dist/*.whl"))
    line = one_error_line(run("check-abi", str(wheel), "--arch", "aarch64", "--paddle-version", "3.2.2", env=no_index))
    assert "cannot get paddlepaddle==3.2.2 for aarch64: the package index is unreachable (" in line
    assert not list(Path(no_index["DEVKIT_CACHE_DIR"]).rglob("*.whl"))


@pytest.mark.e2e
def test_unreachable_index_while_making_the_verify_env(built_project, no_index, tmp_path):
    """A fresh cache, except for an installed Paddle the ABI check reads Paddle's libraries from (as
    a native tools env holds it): the verify env's reference environment must be made, and the
    index is not there."""
    fresh = Path(no_index["DEVKIT_CACHE_DIR"])
    (paddle,) = cache_root().glob("host/reference-envs/py*-paddle-3.3.1/lib/python3*/site-packages/paddle")
    installed = fresh / "host" / "envs" / "host-py-paddle-3.3.1" / paddle.relative_to(paddle.parents[3])
    installed.parent.mkdir(parents=True)
    installed.symlink_to(paddle)
    line = one_error_line(
        run("verify", str(built_project), "--runner", "host", "--report-dir", str(tmp_path / "r"), env=no_index)
    )
    assert "reference environment" in line and "install paddlepaddle==3.3.1" in line
    assert "the package index is unreachable (" in line
    assert not list(fresh.glob("host/reference-envs/*/devkit-reference-env.json"))  # not marked as made


# ---------------------------------------------------------------- full disk


@needs_root
def test_disk_full_during_the_compile(tmp_path, small_tmpfs):
    root = small_tmpfs(tmp_path / "small", "3m")
    project = root / "STPU"
    devkit("new-backend", "STPU", "--out", str(project))
    proc = run("build", str(project), "--runner", "host", env={"CCACHE_DISABLE": "1"})
    line = one_error_line(proc)
    assert "the disk filled up (No space left on device)" in line and "free space" in line
    assert not list(project.glob("dist/*"))


@pytest.mark.e2e
@needs_root
def test_disk_full_while_publishing_the_wheel(built_project, small_tmpfs):
    dist = small_tmpfs(built_project / "dist", "64k")  # over the real dist/ (its wheel is back after umount)
    line = one_error_line(run("build", str(built_project), "--runner", "host"))
    assert "No space left on device" in line and "free space" in line
    assert list(dist.iterdir()) == []  # no half-copied wheel, no .partial file


# ---------------------------------------------------------------- two builds at once


@pytest.mark.e2e
def test_a_second_build_of_the_same_target_waits_its_turn(built_project, tmp_path):
    (wheel,) = built_project.glob("dist/*.whl")
    before = wheel.stat().st_mtime_ns
    lock = built_project / "build" / ".devkit-x86_64.lock"
    stderr = tmp_path / "stderr"
    with lock.open("a+") as held:  # as a running devkit build holds it
        fcntl.flock(held, fcntl.LOCK_EX)
        with stderr.open("w") as err:
            proc = subprocess.Popen(
                [sys.executable, "-m", "devkit", "build", str(built_project), "--runner", "host", "--json"],
                stdout=subprocess.PIPE,
                stderr=err,
                text=True,
                env={**os.environ, "COLUMNS": "200"},
            )
        deadline = time.monotonic() + 60
        while "waiting for it to finish" not in stderr.read_text() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert "another devkit build of STPU for x86_64 is running" in stderr.read_text()
        time.sleep(1)
        assert proc.poll() is None and wheel.stat().st_mtime_ns == before  # dist/ untouched while it waits
        fcntl.flock(held, fcntl.LOCK_UN)
    out, _ = proc.communicate(timeout=300)
    assert proc.returncode == 0, stderr.read_text()
    assert [p.name for p in built_project.glob("dist/*.whl")] == [wheel.name]
    assert json.loads(out)["sha256"]


# ---------------------------------------------------------------- reproducible artifacts


@pytest.mark.e2e
def test_clean_builds_from_two_checkouts_give_the_same_wheel(built_project, tmp_path):
    """devkit's clean build of a second checkout elsewhere gives the same wheel bytes: its link,
    auditwheel's retagging and the wheel's packing depend on no path or time. Its compiler runs come
    from ccache, which devkit keys on paths relative to the project; that the compiler's own output
    depends on no path is test_publish.py's sdist rebuild, which compiles without ccache in pip's
    temporary directory against Paddle moved elsewhere.

    Each of those runs is a direct hit: no unit's text names where the project lies (the units
    include their sources by paths from the project's root), so ccache finds the object from the
    unit and its headers without running the preprocessor (2.4 of a warm build's 9.4 CPU-s)."""
    first = json.loads(devkit("build", str(built_project), "--runner", "host", "--json").stdout)
    other = tmp_path / "another" / "checkout" / "STPU"
    shutil.copytree(built_project, other, ignore=shutil.ignore_patterns("build", "dist", "reports"))
    stats_log = tmp_path / "ccache-stats.log"  # (ccache appends each compilation's counters)
    proc = run("build", str(other), "--runner", "host", "--clean", "--json", env={"CCACHE_STATSLOG": str(stats_log)})
    assert proc.returncode == 0, proc.stderr
    second = json.loads(proc.stdout)
    assert second["compiled_files"] > 0  # a clean tree: every object made (from the cache) and linked again
    counters = stats_log.read_text().split()  # (its "# <unit>" lines add no counter name)
    assert counters.count("direct_cache_hit") == second["compiled_files"], counters
    assert second["sha256"] == first["sha256"], "same tree, different wheel bytes"
    assert Path(second["wheel"]).name == Path(first["wheel"]).name


def test_bundles_are_byte_identical_whatever_the_times_owners_and_paths(tmp_path):
    digests = []
    for n, (mtime, mode) in enumerate([(1_000_000_000, 0o644), (1_700_000_000, 0o664)]):
        root = tmp_path / f"checkout{n}" / ("deep/" * n) / "bundle"
        (root / "lib").mkdir(parents=True)
        for rel, data in {"lib/libx.so": b"\x7fELF...", "run.sh": b"#!/bin/sh\n", "manifest.json": b"{}"}.items():
            (root / rel).write_bytes(data)
            (root / rel).chmod(0o755 if rel.endswith(".sh") else mode)
            os.utime(root / rel, (mtime, mtime))
        archive = write_tar_gz(root, tmp_path / f"b{n}.tar.gz", "stpu-inference-0.1.0-x86_64")
        digests.append(archive.read_bytes())
    assert digests[0] == digests[1]
    with tarfile.open(tmp_path / "b0.tar.gz") as tar:
        names = tar.getnames()
        assert names == sorted(names) and all(m.uid == 0 and m.mtime == 315532800 for m in tar.getmembers())
        assert tar.getmember("stpu-inference-0.1.0-x86_64/run.sh").mode == 0o755


# ---------------------------------------------------------------- hostile archives


def _tar(path: Path, members: list[tarfile.TarInfo]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for info in members:
            tar.addfile(info, io.BytesIO(b"data") if info.isfile() else None)
    return path


def _member(name: str, kind: bytes = tarfile.REGTYPE, target: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, target
    info.size = 4 if kind == tarfile.REGTYPE else 0
    return info


@pytest.mark.parametrize(
    "member, reason",
    [
        (_member("/etc/devkit-absolute"), "absolute path"),
        (_member("bundle/../../escaped"), "leaves the destination"),
        (_member("bundle/link", tarfile.SYMTYPE, "/etc/passwd"), "absolute"),
        (_member("bundle/link", tarfile.SYMTYPE, "../../../etc"), "leaves the destination"),
        (_member("bundle/hard", tarfile.LNKTYPE, "../../outside"), "leaves the destination"),
        (_member("bundle/dev", tarfile.CHRTYPE), "device file"),
    ],
    ids=["absolute", "dotdot", "symlink-absolute", "symlink-outside", "hardlink-outside", "device"],
)
def test_hostile_tar_members_are_refused_before_anything_is_written(tmp_path, member, reason):
    archive = _tar(tmp_path / "bundle.tar.gz", [_member("bundle/ok.txt"), member])
    dest = tmp_path / "dest"
    dest.mkdir()
    with pytest.raises(DevkitError) as exc:
        extract_tar(archive, dest, "device bundle", "rebuild it")
    assert "is unsafe to unpack" in exc.value.problem and reason in exc.value.problem
    assert list(dest.iterdir()) == []  # not even the good member


@pytest.mark.parametrize(
    "name, symlink, reason",
    [
        ("/abs/lib.so", False, "absolute path"),
        ("paddle_custom_device/../../lib.so", False, "leaves the target directory"),
        ("C:/windows/lib.so", False, "absolute path"),
        ("paddle_custom_device/link.so", True, "symbolic link"),
    ],
    ids=["absolute", "dotdot", "drive", "symlink"],
)
def test_hostile_wheel_members_are_refused(tmp_path, name, symlink, reason):
    wheel = tmp_path / "paddle_custom_stpu-0.1.0-py3-none-linux_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("paddle_custom_stpu-0.1.0.dist-info/METADATA", "Name: paddle-custom-stpu\n")
        info = zipfile.ZipInfo(name)
        if symlink:
            info.external_attr = 0o120777 << 16
        zf.writestr(info, "/etc/passwd" if symlink else "x")
    with pytest.raises(DevkitError) as exc:
        validate_wheel(wheel)
    assert "is unsafe to unpack" in exc.value.problem and reason in exc.value.problem


# ---------------------------------------------------------------- a damaged download cache


def _cached_target_wheel(cache: Path) -> Path:
    """A cache entry as target_paddle leaves it: the downloaded wheel, its sha256, the unpacked files."""
    root = cache / "paddle" / "3.2.2-manylinux2014_aarch64"
    (root / "download").mkdir(parents=True)
    (root / "paddle" / "libs").mkdir(parents=True)
    wheel = root / "download" / "paddlepaddle-3.2.2-cp311-cp311-manylinux2014_aarch64.whl"
    wheel.write_bytes(b"the wheel as downloaded")
    (root / "paddle" / "libs" / "libphi_core.so").write_bytes(b"\x7fELF core")
    from devkit.util.archives import sha256_file

    (root / UNPACKED_MARKER).write_text(
        json.dumps(
            {
                "wheel": wheel.name,
                "sha256": sha256_file(wheel),
                "unpacked": list(PADDLE.unpack),
                "files": {"paddle/libs/libphi_core.so": 9},
            }
        )
    )
    return root


def test_a_cached_target_wheel_is_rechecked_against_its_recorded_sha256(tmp_path):
    root = _cached_target_wheel(tmp_path)
    assert target_paddle(tmp_path, Path(sys.executable), "3.2.2", "manylinux2014_aarch64") == root / "paddle"
    wheel = next((root / "download").iterdir())
    wheel.write_bytes(b"the wheel, changed on disk")
    with pytest.raises(Problem) as exc:
        target_paddle(tmp_path, Path(sys.executable), "3.2.2", "manylinux2014_aarch64")
    assert str(wheel) in exc.value.text and "does not match the sha256 recorded" in exc.value.text
    assert str(root) in exc.value.fix
    assert wheel.read_bytes() == b"the wheel, changed on disk"  # not silently downloaded again


def test_a_cached_target_wheel_is_hashed_again_only_once_written_since(tmp_path, monkeypatch):
    """Its size and modification time are recorded once its sha256 was checked: a reuse that finds
    them unchanged does not hash the wheel again (torch's: 0.4 s of every build); a write since
    (the same size, a later time) is hashed again and refused."""
    import devkit.payload.shared.runtimes as runtimes

    root = _cached_target_wheel(tmp_path)
    hashed: list[Path] = []
    real = runtimes.sha256_file
    monkeypatch.setattr(runtimes, "sha256_file", lambda path: hashed.append(path) or real(path))
    for _ in range(2):
        assert target_paddle(tmp_path, Path(sys.executable), "3.2.2", "manylinux2014_aarch64") == root / "paddle"
    assert len(hashed) == 1  # the marker of an older devkit: hashed once, then its size and time recorded
    wheel = next((root / "download").iterdir())
    recorded = os.stat(wheel)
    wheel.write_bytes(b"the wheel as dowNloaded")  # the same size
    os.utime(wheel, ns=(recorded.st_atime_ns, recorded.st_mtime_ns + 1_000_000_000))
    with pytest.raises(Problem) as exc:
        target_paddle(tmp_path, Path(sys.executable), "3.2.2", "manylinux2014_aarch64")
    assert "does not match the sha256 recorded" in exc.value.text and len(hashed) == 2


def test_a_changed_unpacked_library_in_the_cache_is_named(tmp_path):
    root = _cached_target_wheel(tmp_path)
    (root / "paddle" / "libs" / "libphi_core.so").write_bytes(b"trunc")
    with pytest.raises(Problem) as exc:
        target_paddle(tmp_path, Path(sys.executable), "3.2.2", "manylinux2014_aarch64")
    assert "libphi_core.so differs from" in exc.value.text


def test_a_cache_unpacked_for_fewer_parts_of_the_wheel_is_completed_from_the_cached_wheel(tmp_path):
    """A cache an older devkit unpacked (no paddle/base/libpaddle.so, which the int8 engine links)
    is completed from the wheel it downloaded, which is rechecked, not downloaded again."""
    root = tmp_path / "paddle" / "3.2.2-manylinux2014_aarch64"
    (root / "download").mkdir(parents=True)
    wheel = root / "download" / "paddlepaddle-3.2.2-cp311-cp311-manylinux2014_aarch64.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("paddle/libs/libphi_core.so", b"\x7fELF core")
        zf.writestr("paddle/base/libpaddle.so", b"\x7fELF pir")
        zf.writestr("paddle/base/other.py", b"not unpacked")
    (root / "paddle" / "libs").mkdir(parents=True)
    (root / "paddle" / "libs" / "libphi_core.so").write_bytes(b"\x7fELF core")
    from devkit.util.archives import sha256_file

    old = {"wheel": wheel.name, "sha256": sha256_file(wheel), "files": {"paddle/libs/libphi_core.so": 9}}
    (root / UNPACKED_MARKER).write_text(json.dumps(old))
    assert target_paddle(tmp_path, Path(sys.executable), "3.2.2", "manylinux2014_aarch64") == root / "paddle"
    assert (root / "paddle" / "base" / "libpaddle.so").read_bytes() == b"\x7fELF pir"
    assert not (root / "paddle" / "base" / "other.py").exists()
    recorded = json.loads((root / UNPACKED_MARKER).read_text())
    assert recorded["unpacked"] == list(PADDLE.unpack) and "paddle/base/libpaddle.so" in recorded["files"]


def test_check_abi_rechecks_a_cached_target_wheel_too(tmp_path, monkeypatch):
    """check-abi reuses a target wheel a build downloaded, through the same sha256 check."""
    from devkit.building.frameworks.paddle import paddle_root_for
    from devkit.project.recipes import find_recipe

    monkeypatch.setenv("DEVKIT_CACHE_DIR", str(tmp_path))
    root = _cached_target_wheel(tmp_path / "container")
    assert paddle_root_for(find_recipe("aarch64"), "3.2.2") == root / "paddle"
    wheel = next((root / "download").iterdir())
    wheel.write_bytes(b"the wheel, changed on disk")
    with pytest.raises(DevkitError) as exc:
        paddle_root_for(find_recipe("aarch64"), "3.2.2")
    assert "does not match the sha256 recorded" in exc.value.problem and str(wheel) in exc.value.problem
