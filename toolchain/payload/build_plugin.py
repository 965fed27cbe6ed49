"""Build one target of a backend project. Runs where the build runs: on the host
or inside the devkit builder container, with only the standard library.

  native:  a cached tools env with the framework runtime (paddlepaddle==V or torch==V),
           scikit-build-core, cmake, ninja; the wheel is built against the installed runtime.
           On the host, devkit passes --runtime-root instead: the runtime installed in the
           reference env that verify clones, so a first build and verify install it once.
  cross:   the same tools env without the runtime; the target's runtime wheel is
           downloaded (pip download --platform) and its headers and libraries
           unpacked into the cache; CMake uses the recipe's toolchain file.
  device:  no Paddle runtime exists for the target: the device library and its
           tests are cross-built and packed into a .tar.gz.

Prints progress lines; the last line is `ARTIFACT <path>`.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

try:
    from .archive_io import UnsafeArchive, extract_zip, sha256_file, write_tar_gz  # imported by devkit (check-abi)
except ImportError:
    from archive_io import (  # type: ignore[no-redef]  # as a script (host or container)
        UnsafeArchive,
        extract_zip,
        sha256_file,
        write_tar_gz,
    )

BUILD_TOOLS = ["scikit-build-core>=1.1,<2", "cmake>=3.18", "ninja"]


def run(argv: list[str], **kwargs: Any) -> None:
    print("$ " + " ".join(argv), flush=True)
    subprocess.run(argv, check=True, **kwargs)


class Problem(SystemExit):
    """A failure devkit reports as its one-line error (see run/step.py: failure)."""

    def __init__(self, text: str, fix: str, kind: str = "") -> None:
        super().__init__(1)
        self.text, self.fix, self.kind = text, fix, kind


def problem(text: str, fix: str, kind: str = "") -> Problem:
    """`kind` ("input", "environment"): what devkit's error is when it is not the step's own
    failure (run/step.py: PROBLEM_KINDS)."""
    print(f"devkit-problem: {text} | {fix}" + (f" | {kind}" if kind else ""), flush=True)
    return Problem(text, fix, kind)


# What pip prints when it cannot reach the package index (refused, no route, no DNS, proxy, TLS).
_UNREACHABLE = re.compile(
    r"(Failed to establish a new connection|Connection refused|Max retries exceeded|"
    r"Temporary failure in name resolution|Name or service not known|ProxyError|"
    r"ConnectTimeoutError|Network is unreachable|SSLError|CERTIFICATE_VERIFY_FAILED)"
)
INDEX_FIX = (
    "check the network and pip's index settings (`pip config list`, PIP_INDEX_URL, a proxy's CA bundle); "
    "environments devkit already made are reused without the index"
)


def index_unreachable(pip_output: str) -> str | None:
    """'the package index is unreachable (why)' when pip's output says so."""
    found = _UNREACHABLE.search(pip_output)
    return f"the package index is unreachable ({found.group(1)})" if found else None


def run_pip(argv: list[str]) -> None:
    """Run pip with its output shown as usual; an unreachable index is reported as such."""
    print("$ " + " ".join(argv), flush=True)
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    seen = []
    for line in proc.stdout:  # type: ignore[union-attr]
        print(line, end="", flush=True)
        seen.append(line)
    if proc.wait() != 0:
        unreachable = index_unreachable("".join(seen))
        if unreachable:
            raise problem(unreachable, INDEX_FIX, "environment")
        raise subprocess.CalledProcessError(proc.returncode, argv)


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
        "torch", "torch", "torch", ("torch/include/", "torch/lib/", "torch/share/", "torch/version.py"), python="311"
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
            f"--{runtime.short}-version"
            + ("; or set [tool.devkit.torch] index-url" if runtime.short == "torch" else ""),
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


UNPACKED_MARKER = "devkit-unpacked.json"  # the downloaded wheel's name, sha256 and unpacked file sizes


def target_runtime(
    cache: Path, python: Path, runtime: Runtime, version: str, platform: str, index_url: str = ""
) -> Path:
    """The runtime's package directory (`paddle`, `torch`) of the target's wheel: headers, libraries.

    The downloaded wheel stays in the cache with the sha256 it had when fetched; every
    reuse re-checks it (and the unpacked files' sizes), and a mismatch is an error
    naming the file: a damaged cache is never silently downloaded again or used.
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
    if not wheel.is_file() or sha256_file(wheel) != recorded["sha256"]:
        raise problem(
            f"the cached {wheel} does not match the sha256 recorded when it was downloaded "
            f"({recorded['sha256'][:16]}...)",
            f"delete {root} to download it again",
            "environment",
        )
    for name, size in recorded["files"].items():
        if not (root / name).is_file() or (root / name).stat().st_size != size:
            raise problem(
                f"the cached {root / name} differs from {wheel.name}",
                f"delete {root} to unpack it again",
                "environment",
            )
    if recorded.get("unpacked") != list(runtime.unpack):
        with setting_up(root):  # unpacked by a devkit that needed other parts of the wheel
            _extract(root, wheel, runtime)
    return root / runtime.package


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
    (root / UNPACKED_MARKER).write_text(
        json.dumps(
            {
                "wheel": wheel.name,
                "sha256": sha256_file(wheel),
                "unpacked": list(runtime.unpack),
                "files": {i.filename: i.file_size for i in members},
            }
        )
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


def build_wheel(args: argparse.Namespace, env: Path) -> Path:
    out = Path(args.out)
    runtime = RUNTIMES[args.framework]
    prefix = runtime.short.upper()  # PADDLE_VERSION / PADDLE_ROOT, TORCH_VERSION / TORCH_ROOT
    source = Path(args.project) / args.source
    build_env = {
        **os.environ,
        "PATH": f"{env / 'bin'}:{os.environ.get('PATH', '')}",
        f"{prefix}_VERSION": args.runtime_version,
        # build-dir is relative to the adapter's directory; args.build_dir to the project
        "SKBUILD_BUILD_DIR": os.path.relpath(Path(args.project) / args.build_dir, source),
        "DEVKIT_DEVICE_TESTS": "ON",  # the conformance suite, bundled below
    }
    if args.runtime_root:  # an installed runtime outside the tools env (the host's reference env)
        build_env[f"{prefix}_ROOT"] = args.runtime_root
    elif args.runtime_platform:  # compiled against the target's runtime wheel, unpacked
        target = target_runtime(
            Path(args.cache),
            env / "bin" / "python",
            runtime,
            args.runtime_version,
            args.runtime_platform,
            args.index_url,
        )
        build_env[f"{prefix}_ROOT"] = str(target)
    if args.toolchain_file:  # cross build
        build_env.update(
            SKBUILD_WHEEL_TAGS=args.wheel_tag,
            SKBUILD_CMAKE_TOOLCHAIN_FILE=args.toolchain_file,
            SKBUILD_CMAKE_PYTHON_HINTS="false",
        )
    run(
        [
            str(env / "bin" / "python"),
            "-c",
            "import sys; from scikit_build_core.build import build_wheel; print(build_wheel(sys.argv[1]))",
            str(out),
        ],
        cwd=source,
        env=build_env,
    )
    wheel = next(out.glob("*.whl"))
    bundle_device_library(Path(args.project), Path(args.project) / args.build_dir, out, args.bundle_name, args.target)
    return wheel


def build_device_library(args: argparse.Namespace, env: Path) -> Path:
    project = Path(args.project)
    build = project / args.build_dir
    cmake = str(env / "bin" / "cmake")
    run(
        [
            cmake,
            "-S",
            str(project),
            "-B",
            str(build),
            "-G",
            "Ninja",
            f"-DCMAKE_MAKE_PROGRAM={env / 'bin' / 'ninja'}",
            "-DCMAKE_BUILD_TYPE=Release",
            "-DWITH_PADDLE=OFF",
            "-DWITH_TESTING=ON",
            f"-DCMAKE_TOOLCHAIN_FILE={args.toolchain_file}",
        ]
    )
    run([cmake, "--build", str(build)])
    return bundle_device_library(project, build, Path(args.out), args.bundle_name, args.target)


def bundle_device_library(project: Path, build: Path, out: Path, name: str, target: str) -> Path:
    """out/NAME.tar.gz: the device library of the `build` tree (static, with its headers), its
    conformance suite and its golden checker."""
    stage = out / name
    (stage / "lib").mkdir(parents=True)
    (stage / "include").mkdir()
    (stage / "tests").mkdir()
    libs = list((build / "device").glob("lib*_device.a"))  # device/CMakeLists.txt's target
    if not libs:
        raise problem(f"the build left no device library in {build / 'device'}", "check device/CMakeLists.txt")
    tests = [*build.glob("test_*_device"), *build.glob("golden_*_device")]
    if not tests:
        raise problem(f"the build left no conformance suite in {build}", "check cmake/preamble.cmake (WITH_TESTING)")
    for lib in libs:
        shutil.copy2(lib, stage / "lib")
    for header in (project / "device" / "include").glob("*.h"):
        shutil.copy2(header, stage / "include")
    for test in tests:
        shutil.copy2(test, stage / "tests")
    (stage / "README.txt").write_text(
        f"{name}: the device library (static, with headers) for {target}, its conformance suite\n"
        "(tests/test_*: run it on the target, or under qemu; --junit FILE writes JUnit XML) and its golden\n"
        "checker (tests/golden_* DIR, against golden data from `devkit test-ops --gen-golden DIR`).\n"
    )
    archive = out / f"{name}.tar.gz"
    write_tar_gz(stage, archive, name)
    shutil.rmtree(stage)
    return archive


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--project", required=True)
    p.add_argument("--out", required=True, help="empty directory for the artifact")
    p.add_argument("--cache", required=True)
    p.add_argument("--env-key", required=True, help="names the tools env (host or image)")
    p.add_argument("--build-dir", required=True, help="build tree, relative to the project")
    p.add_argument("--target", required=True)
    p.add_argument("--framework", choices=sorted(RUNTIMES), default="paddle")
    p.add_argument(
        "--source", default=".", help="the adapter's directory (its pyproject.toml), relative to the project"
    )
    p.add_argument("--runtime-version", default="", help="the framework runtime to build against")
    p.add_argument("--runtime-platform", default="", help="cross: the target's runtime wheel platform")
    p.add_argument("--runtime-root", default="", help="native: the runtime's installed package directory to use")
    p.add_argument("--index-url", default="", help="where pip gets the runtime (empty: pip's configuration)")
    p.add_argument("--wheel-tag", default="")
    p.add_argument("--toolchain-file", default="")
    p.add_argument("--device-only", action="store_true")
    p.add_argument("--bundle-name", default="")
    p.add_argument("--tools-only", action="store_true", help="make the tools env (without a runtime) and stop")
    args = p.parse_args()

    external_runtime = args.runtime_platform or args.runtime_root or args.device_only or args.tools_only
    native = None if external_runtime else args.runtime_version
    try:
        env = tools_env(Path(args.cache), args.env_key, RUNTIMES[args.framework], native, args.index_url)
        if args.tools_only:
            return 0
        artifact = build_device_library(args, env) if args.device_only else build_wheel(args, env)
    except subprocess.CalledProcessError as exc:  # its output is already above; no traceback
        print(f"FAILED: {Path(exc.cmd[0]).name} exited with {exc.returncode}", flush=True)
        return exc.returncode or 1
    print(f"ARTIFACT {artifact}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
