"""The framework runtime a plugin is compiled against, set up where the build runs: the build
tools' env (with the runtime for a native build) and a cross build's unpacked runtime wheel, each a
cache entry made once, under a lock, and re-checked on reuse. Standard library only: devkit imports
it (the ABI check and the torch wheel unpack the target's runtime the same way)."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import stat
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

try:  # imported by devkit (devkit.payload.shared.runtimes)
    from .archive_io import UnsafeArchive, extract_zip, sha256_file
    from .problems import problem, run, run_pip
except ImportError:  # as a script's sibling (host or container)
    from archive_io import UnsafeArchive, extract_zip, sha256_file  # type: ignore[no-redef]
    from problems import problem, run, run_pip  # type: ignore[no-redef]

BUILD_TOOLS = ["scikit-build-core>=1.1,<2", "cmake>=3.18", "ninja"]


@dataclass(frozen=True)
class Runtime:
    """The framework runtime a plugin is compiled against: its distribution, the package directory
    whose headers/libraries a cross build unpacks, and the [tool.devkit] key of its versions."""

    distribution: str
    package: str
    short: str  # in cache paths and settings: paddle, torch
    unpack: tuple[str, ...]  # wheel members a cross build needs
    # The CPython whose wheel is unpacked (None: the builder's). torch's C++ libraries are the same in
    # every cp3X wheel; cp311 is what the verify images run.
    python: str | None = None
    # How a project names its own package index for the runtime, as the fix's last words ("": it cannot)
    index_hint: str = ""

    def pin(self, version: str) -> str:
        return f"{self.distribution}=={version}"


RUNTIMES = {
    # (paddle/base/libpaddle.so: PIR, which the int8 engine links)
    "paddle": Runtime(
        "paddlepaddle",
        "paddle",
        "paddle",
        ("paddle/include/", "paddle/libs/", "paddle/version/", "paddle/base/libpaddle.so"),
    ),
    "torch": Runtime(
        "torch",
        "torch",
        "torch",
        ("torch/include/", "torch/lib/", "torch/share/", "torch/version.py"),
        python="311",
        index_hint="; or set [tool.devkit.torch] index-url",
    ),
}
PADDLE = RUNTIMES["paddle"]


def pip_runtime(argv: list[str], runtime: Runtime, version: str, platform: str) -> None:
    try:
        run_pip(argv)
    except subprocess.CalledProcessError:
        raise problem(
            f"{runtime.pin(version)} cannot be installed for Python "
            f"{sys.version_info.major}.{sys.version_info.minor} on {platform} (pip's list of versions is above)",
            f"choose a version pip lists, in [tool.devkit.{runtime.short}-versions] or with "
            f"--{runtime.short}-version{runtime.index_hint}",
            "input",
        ) from None


def index_args(index_url: str) -> list[str]:
    return ["--index-url", index_url] if index_url else []


@contextlib.contextmanager
def setting_up(root: Path) -> Iterator[None]:
    """One build at a time sets up a cache entry (two builds at once on a fresh cache, as `build
    --all --jobs 2` or two terminals do, would remove each other's half-made one); the other waits
    and finds it made. The lock is the entry's parent directory itself, so nothing is written for
    it (a build refused later leaves the cache as it was), and a link there is not followed."""
    root.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(str(root.parent), os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def tools_env(cache: Path, key: str, runtime: Runtime, version: str | None, index_url: str = "") -> Path:
    """A venv with the build tools (and the native framework runtime), reused while its marker exists."""
    py = f"py{sys.version_info.major}{sys.version_info.minor}"
    # Without a runtime the env holds the build tools only, whichever framework: one env, named as
    # before the framework axis (paddle-none), serves every cross and torch build.
    installed = f"{runtime.short}-{version}" if version else "paddle-none"
    root = cache / "envs" / f"{key}-{py}-{installed}"
    marker = root / "devkit-env.json"
    if marker.is_file():
        return root
    with setting_up(root):
        if not marker.is_file():  # (made while this build waited)
            _make_tools_env(root, runtime, version, index_url)
    return root


def _make_tools_env(root: Path, runtime: Runtime, version: str | None, index_url: str) -> None:
    marker = root / "devkit-env.json"
    shutil.rmtree(root, ignore_errors=True)  # an interrupted setup is redone
    run([sys.executable, "-m", "venv", str(root)])
    python = str(root / "bin" / "python")
    pip = [python, "-m", "pip", "install", "--progress-bar", "off"]
    packages = BUILD_TOOLS + ([runtime.pin(version)] if version else [])
    if not version:
        run_pip(pip + packages)
    elif index_url:  # the runtime from the project's index, the tools from pip's configuration
        run_pip(pip + BUILD_TOOLS)
        pip_runtime(pip + index_args(index_url) + [runtime.pin(version)], runtime, version, "this machine")
    else:
        pip_runtime(pip + packages, runtime, version, "this machine")
    marker.write_text(json.dumps({"packages": packages}))


UNPACKED_MARKER = "devkit-unpacked.json"  # the wheel: name, sha256, size and time when hashed; unpacked sizes


def target_runtime(
    cache: Path, python: Path, runtime: Runtime, version: str, platform: str, index_url: str = ""
) -> Path:
    """The runtime's package directory (`paddle`, `torch`) of the target's wheel: headers, libraries.

    The downloaded wheel stays in the cache with the sha256 it had when fetched, and its size and
    modification time once that sha256 was checked; every reuse re-checks it (hashed again if it
    was written since, ~0.4 s for torch's) and the unpacked files' sizes, and a mismatch is an
    error naming the file: a damaged cache is never silently downloaded again or used.
    """
    root = cache / runtime.short / f"{version}-{platform}"
    if not (root / UNPACKED_MARKER).is_file():
        with setting_up(root):
            if not (root / UNPACKED_MARKER).is_file():  # (unpacked while this build waited)
                return _unpack_runtime(root, python, runtime, version, platform, index_url)
    return _checked_runtime(root, runtime)


def _checked_runtime(root: Path, runtime: Runtime) -> Path:
    """The unpacked runtime as recorded: its wheel's sha256 and each file's size."""
    marker = root / UNPACKED_MARKER
    recorded = json.loads(marker.read_text())
    wheel = root / "download" / recorded["wheel"]
    found = _wheel_stat(wheel)
    unchanged = found is not None and recorded.get("wheel_stat") == found
    if found is None or (not unchanged and sha256_file(wheel) != recorded["sha256"]):
        raise problem(
            f"the cached {wheel} does not match the sha256 recorded when it was downloaded "
            f"({recorded['sha256'][:16]}...)",
            f"delete {root} to download it again",
            "environment",
        )
    if not unchanged:  # hashed and intact: the next reuse need not hash it again
        with setting_up(root):
            _write_marker(root, {**recorded, "wheel_stat": found})
    base = str(root)
    for name, size in recorded["files"].items():  # torch's 9,500 files: one stat each, no Path objects (0.3 s)
        if not _is_file_of_size(os.path.join(base, name), size):
            raise problem(
                f"the cached {root / name} differs from {wheel.name}",
                f"delete {root} to unpack it again",
                "environment",
            )
    if recorded.get("unpacked") != list(runtime.unpack):
        with setting_up(root):  # unpacked by a devkit that needed other parts of the wheel
            _extract(root, wheel, runtime)
    return root / runtime.package


def _wheel_stat(wheel: Path) -> list[int] | None:
    """The downloaded wheel's size and modification time (None: not a regular file)."""
    try:
        found = os.stat(wheel)
    except OSError:
        return None
    return [found.st_size, found.st_mtime_ns] if stat.S_ISREG(found.st_mode) else None


def _write_marker(root: Path, recorded: dict[str, object]) -> None:
    """The unpacked entry's record, replaced whole (a build reading it meanwhile sees the old one).
    Written under setting_up's lock, so one staged name serves."""
    staged = root / f".{UNPACKED_MARKER}.partial"
    staged.write_text(json.dumps(recorded))
    os.replace(staged, root / UNPACKED_MARKER)


def _is_file_of_size(path: str, size: int) -> bool:
    try:
        found = os.stat(path)
    except OSError:
        return False
    return stat.S_ISREG(found.st_mode) and found.st_size == size


def _extract(root: Path, wheel: Path, runtime: Runtime) -> None:
    """Unpack what a cross build needs of the runtime's wheel into `root`, and record it."""
    try:
        with zipfile.ZipFile(wheel) as zf:
            members = [i for i in zf.infolist() if i.filename.startswith(runtime.unpack) and not i.is_dir()]
            extract_zip(zf, root, [i.filename for i in members])
    except (zipfile.BadZipFile, UnsafeArchive) as exc:
        raise problem(
            f"the downloaded {wheel} cannot be unpacked: {exc}", f"delete {root} and retry", "environment"
        ) from None
    _write_marker(
        root,
        {
            "wheel": wheel.name,
            "sha256": sha256_file(wheel),
            "wheel_stat": _wheel_stat(wheel),
            "unpacked": list(runtime.unpack),
            "files": {i.filename: i.file_size for i in members},
        },
    )


def _unpack_runtime(root: Path, python: Path, runtime: Runtime, version: str, platform: str, index_url: str) -> Path:
    shutil.rmtree(root, ignore_errors=True)  # an interrupted setup is redone
    download = root / "download"
    py = runtime.python or f"{sys.version_info.major}{sys.version_info.minor}"
    pip_runtime(
        [
            str(python),
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--only-binary=:all:",
            "--platform",
            platform,
            "--python-version",
            py,
            "-d",
            str(download),
            *index_args(index_url),
            runtime.pin(version),
        ],
        runtime,
        version,
        platform,
    )
    _extract(root, next(download.glob(f"{runtime.distribution}-*.whl")), runtime)
    return root / runtime.package


def target_paddle(cache: Path, python: Path, version: str, platform: str) -> Path:
    return target_runtime(cache, python, PADDLE, version, platform)
