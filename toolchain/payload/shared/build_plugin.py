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
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import archive_io
from archive_io import reproducible_epoch, write_tar_gz
from problems import problem, run
from runtimes import RUNTIMES, target_runtime, tools_env
from solo_sources import solo_env


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
        **solo_env(Path(args.project), Path(args.project) / args.build_dir),
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
        ],
        env={**os.environ, **solo_env(project, build)},
    )
    run([cmake, "--build", str(build)])
    return bundle_device_library(project, build, Path(args.out), args.bundle_name, args.target)


def bundle_device_library(project: Path, build: Path, out: Path, name: str, target: str) -> Path:
    """out/NAME.tar.gz: the device library of the `build` tree (static, with its headers), its
    conformance suite and its golden checker. A rebuild that changed none of them (an adapter
    file's edit) takes the bundle the build tree keeps from the last one: the same bytes, without
    packing and compressing 6 MB again (0.2 s of each rebuild)."""
    libs = sorted((build / "device").glob("lib*_device.a"))  # device/CMakeLists.txt's target
    if not libs:
        raise problem(f"the build left no device library in {build / 'device'}", "check device/CMakeLists.txt")
    tests = sorted([*build.glob("test_*_device"), *build.glob("golden_*_device")])
    if not tests:
        raise problem(f"the build left no conformance suite in {build}", "check cmake/preamble.cmake (WITH_TESTING)")
    headers = sorted((project / "device" / "include").glob("*.h"))
    archive = out / f"{name}.tar.gz"
    kept, key = build / ".devkit-device-bundle.tar.gz", _bundle_key(name, target, [*libs, *headers, *tests])
    key_file = kept.with_name(f"{kept.name}.key")
    if kept.is_file() and _read_key(key_file) == key:
        shutil.copyfile(kept, archive)
        return archive
    stage = out / name
    (stage / "lib").mkdir(parents=True)
    (stage / "include").mkdir()
    (stage / "tests").mkdir()
    for lib in libs:
        shutil.copy2(lib, stage / "lib")
    for header in headers:
        shutil.copy2(header, stage / "include")
    for test in tests:
        shutil.copy2(test, stage / "tests")
    (stage / "README.txt").write_text(
        f"{name}: the device library (static, with headers) for {target}, its conformance suite\n"
        "(tests/test_*: run it on the target, or under qemu; --junit FILE writes JUnit XML) and its golden\n"
        "checker (tests/golden_* DIR, against golden data from `devkit test-ops --gen-golden DIR`).\n"
    )
    write_tar_gz(stage, archive, name)
    shutil.rmtree(stage)
    key_file.unlink(missing_ok=True)  # (no key: no reuse, if what follows is cut short)
    shutil.copyfile(archive, kept)
    key_file.write_text(key)
    return archive


def _read_key(path: Path) -> str | None:
    try:
        return path.read_text()
    except (OSError, UnicodeDecodeError):  # none, or damaged: pack again
        return None


def _bundle_key(name: str, target: str, inputs: list[Path]) -> str:
    """What a device bundle is made from: its name and target, each input's path, size and time,
    the archives' time stamp (SOURCE_DATE_EPOCH) and the code that packs them."""
    code = hashlib.sha256()
    for script in (Path(__file__), Path(archive_io.__file__)):
        code.update(script.read_bytes())
    files = [[str(p), (st := p.stat()).st_size, st.st_mtime_ns] for p in inputs]
    epoch = reproducible_epoch()
    return json.dumps({"name": name, "target": target, "files": files, "epoch": epoch, "code": code.hexdigest()})


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
