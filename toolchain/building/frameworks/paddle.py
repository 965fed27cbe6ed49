"""What a build does for the Paddle plugin (its BuildAdapter, PADDLE_BUILD): the target's paddle
package, Paddle's wheel libraries (auditwheel leaves them out), the plugin wheel's pin, and
`devkit check-abi`: will this plugin load into that Paddle?

The ABI check reads ELF files only: the ELF machine of the target; the Paddle version the plugin
was compiled against (the `<type>_paddle_build_info` string the generated runtime embeds); every
undefined symbol resolved against the libraries it links (Paddle's own exports, or a system
library by its symbol version); the C++11 string ABI.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import sys
from dataclasses import asdict
from functools import lru_cache
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import parse_wheel_filename

from ...payload.shared.problems import Problem
from ...payload.shared.runtimes import UNPACKED_MARKER, target_paddle
from ...project.frameworks import PADDLE
from ...project.recipes import Recipe
from ...run.envs import cache_root
from ...run.images import builder_spec
from ...run.select import host_recipe
from ...util.archives import sha256_file
from ...util.errors import BuildFailure, EnvironmentProblem, InputError
from ...util.fsutil import write_atomic
from ..abi import read_libraries, require_findings, runtime_problem, uses_cxx11_abi
from ..artifacts import check_wheel_libraries, fitting_tag, requirements_on
from ..elf import (
    SYSTEM_FAMILIES,
    AbiFinding,
    LibraryAbi,
    newest_versions,
    read_library_file,
    shown_symbols,
    unlinked_finding,
    unresolved_symbols,
    wrong_machine,
)
from ..manylinux import SystemFloor
from ..sdk_abi import SdkExports, resolve_sdk_symbols

# What the generated runtime embeds: the Paddle and device_ext.h it was compiled against.
BUILD_INFO = re.compile(rb"paddle_version=([^;\x00]*);custom_runtime_version=([^;\x00]*);plugin_version=([^;\x00]*)")


def paddle_build_info(data: bytes) -> dict[str, str]:
    """The build string of a library of the plugin ({} for one that embeds none)."""
    match = BUILD_INFO.search(data)
    if not match:
        return {}
    keys = ("paddle_version", "custom_runtime_version", "plugin_version")
    return {key: match[i + 1].decode() for i, key in enumerate(keys)}


@lru_cache(maxsize=8)
def _wheel_record(site: Path) -> tuple[dict[str, tuple[str, int]], os.stat_result] | None:
    """What the installing wheel's RECORD (paddlepaddle*.dist-info) says of each file under paddle/:
    its sha256 (hex) and size; and RECORD's own stat. None without exactly one such RECORD."""
    records = list(site.glob("paddlepaddle*.dist-info/RECORD"))
    if len(records) != 1:
        return None
    try:
        info = records[0].stat()
        lines = records[0].read_text().splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    files = {}
    for name, hashed, size in (line.rsplit(",", 2) for line in lines if line.count(",") >= 2):
        if hashed.startswith("sha256=") and size.isdigit():
            raw = base64.urlsafe_b64decode(hashed[len("sha256=") :] + "==")
            files[name] = (raw.hex(), int(size))
    return files, info


def _digest(path: Path, paddle_root: Path) -> str:
    """The library's content digest (sha256, 24 hex digits). Hashing Paddle's ~600 MB of libraries
    took 1.2-2.2 s of a first build: a file as the wheel installed it has the sha256 its RECORD gives
    (as installed: the size RECORD gives, and neither written nor its inode changed since RECORD was
    written, which pip and an unpacked wheel write last). Any other file is hashed once and its
    digest recorded under its stamp (path, device, inode, size, mtime, ctime): a reinstalled or
    changed file has another stamp."""
    info = path.stat()
    wheel = _wheel_record(paddle_root.parent)
    if wheel is not None:
        files, record_info = wheel
        recorded = files.get(path.relative_to(paddle_root.parent).as_posix())
        if (
            recorded is not None
            and recorded[1] == info.st_size
            and info.st_mtime_ns < record_info.st_mtime_ns
            and info.st_ctime_ns < record_info.st_ctime_ns
        ):
            return recorded[0][:24]
    stamp = f"{path.resolve()}:{info.st_dev}:{info.st_ino}:{info.st_size}:{info.st_mtime_ns}:{info.st_ctime_ns}"
    record = cache_root() / "abi" / "stamps" / hashlib.blake2b(stamp.encode(), digest_size=16).hexdigest()
    try:
        known = record.read_text()
        if re.fullmatch(r"[0-9a-f]{24}", known):
            return known
    except OSError:  # not recorded yet
        pass
    digest = sha256_file(path)[:24]
    write_atomic(record, digest)
    return digest


@lru_cache(maxsize=8)
def paddle_libraries(paddle_root: Path) -> dict[str, LibraryAbi]:
    """The shared libraries in the wheel's paddle/libs, and the extension module paddle/base/libpaddle.so
    that holds PIR, which the int8 engine links (parsed once per file, then read from devkit's cache:
    libphi_core.so alone exports ~66k symbols)."""
    libs = {}
    for path in sorted((paddle_root / "libs").glob("*.so*")) + sorted((paddle_root / "base").glob("libpaddle.so")):
        # by content: every fresh environment installs the same libraries with new times
        cached = cache_root() / "abi" / f"{path.name}-{path.stat().st_size}-{_digest(path, paddle_root)}.json"
        if cached.is_file():
            data = json.loads(cached.read_text())
            data.pop("build_info", None)  # cached by earlier devkits: the build string is read from the bytes
            libs[path.name] = LibraryAbi(**{**data, "defined": set(data["defined"])})
            continue
        try:
            lib = read_library_file(path)
        except Exception:  # a non-ELF file (linker script)
            continue
        libs[path.name] = lib
        write_atomic(cached, json.dumps({**asdict(lib), "defined": sorted(lib.defined)}))
    return libs


@lru_cache(maxsize=8)
def paddle_exports(paddle_root: Path) -> dict[str, frozenset[str]]:
    """Exported symbols of each of Paddle's shared libraries (paddle_libraries)."""
    return {name: frozenset(lib.defined) for name, lib in paddle_libraries(paddle_root).items()}


def device_ext_version(paddle_root: Path) -> str | None:
    """PADDLE_CUSTOM_RUNTIME_{MAJOR,MINOR,PATCH}_VERSION of the target's device_ext.h."""
    header = paddle_root / "include" / "paddle" / "phi" / "backends" / "device_ext.h"
    if not header.is_file():
        return None
    found = dict(re.findall(r"#define PADDLE_CUSTOM_RUNTIME_(MAJOR|MINOR|PATCH)_VERSION (\d+)", header.read_text()))
    return ".".join(found.get(k, "?") for k in ("MAJOR", "MINOR", "PATCH"))


def _dotted(version: tuple[int, ...]) -> str:
    return ".".join(map(str, version))


def system_findings(lib: LibraryAbi, paddle_root: Path, paddle_version: str) -> list[AbiFinding]:
    """Symbol versions newer than Paddle's own libraries need: the plugin then fails to load
    on older systems where that Paddle wheel works."""
    ours = newest_versions([lib])
    paddles = newest_versions(list(paddle_libraries(paddle_root).values()))
    findings = []
    for family in SYSTEM_FAMILIES:
        if family in ours and family in paddles and ours[family] > paddles[family]:
            findings.append(
                AbiFinding(
                    lib.name,
                    f"needs {family}_{_dotted(ours[family])} but Paddle {paddle_version}'s libraries need at "
                    f"most {family}_{_dotted(paddles[family])}, so it will not load on systems older than its toolchain "
                    "where that Paddle does",
                    f"build with a toolchain whose C/C++ runtime is no newer than {family} {_dotted(paddles[family])} "
                    "(an older builder base image), or state this minimum to your users",
                    severity="warning",
                    floor=(f"Paddle {paddle_version}", family, _dotted(ours[family]), _dotted(paddles[family])),
                )
            )
    return findings


def check_library(
    lib: LibraryAbi, data: bytes, recipe: Recipe, paddle_root: Path, paddle_version: str
) -> list[AbiFinding]:
    elsewhere = wrong_machine(
        lib, recipe.elf_machine, recipe.name, f"rebuild it with devkit build --arch {recipe.name}"
    )
    if elsewhere:
        return elsewhere
    findings = []
    build_info = paddle_build_info(data)
    built = build_info.get("paddle_version")
    if built and built != paddle_version:
        findings.append(
            AbiFinding(
                lib.name,
                f"was compiled against Paddle {built}, not {paddle_version}",
                f"rebuild with --paddle-version {paddle_version} (kernel signatures and "
                "device_ext.h change between versions)",
            )
        )
    runtime = build_info.get("custom_runtime_version")
    target_runtime = device_ext_version(paddle_root)
    if runtime and target_runtime and runtime.split(".")[:2] != target_runtime.split(".")[:2]:
        findings.append(
            AbiFinding(
                lib.name,
                f"was built with device_ext.h {runtime}, and Paddle {paddle_version} has "
                f"{target_runtime}: Paddle refuses the runtime (C_DeviceInterface differs)",
                f"rebuild against paddlepaddle=={paddle_version}",
            )
        )
    findings += system_findings(lib, paddle_root, paddle_version)
    exports = paddle_exports(paddle_root)
    linked = {name: syms for name, syms in exports.items() if name in lib.needed}
    paddle_cxx11 = uses_cxx11_abi(exports.get("libphi_core.so", ()))

    def locate(symbol: str) -> str | None:
        if any(symbol in syms for syms in linked.values()):
            return None
        return next((name for name, syms in exports.items() if symbol in syms), "")

    for owner, symbols in unresolved_symbols(lib, locate).items():
        if owner:
            fix = f"link {owner} (paddle/cmake/FindPaddle.cmake links libphi_core.so, libcommon.so and libpaddle.so)"
            findings.append(unlinked_finding(lib, symbols, owner, fix))
        else:
            abi_hint = " or with a different _GLIBCXX_USE_CXX11_ABI" if uses_cxx11_abi(symbols) != paddle_cxx11 else ""
            findings.append(
                AbiFinding(
                    lib.name,
                    f"undefined symbol {shown_symbols(symbols)} is exported by no library of Paddle "
                    f"{paddle_version}: it was built against another Paddle{abi_hint}",
                    f"rebuild against paddlepaddle=={paddle_version}",
                )
            )
    return findings


def paddle_root_for(recipe: Recipe, version: str) -> Path:
    """The target's paddle package directory: from devkit's caches, else downloaded."""
    root = cache_root()
    # A target wheel a build unpacked (host or container cache) goes through target_paddle, which
    # re-checks it against the sha256 recorded when it was downloaded.
    cached = sorted(root.glob(f"*/paddle/{version}-{PADDLE.wheel_platform(recipe)}/{UNPACKED_MARKER}"))
    if not cached and recipe.name in (host_recipe().name, builder_spec().recipe.name):
        # Native environments have the wheel installed: the reference envs native builds and verify
        # share (host, or verify containers), and the x86_64 builder container's tools env.
        for pattern in ("*/reference-envs/*-paddle-{v}", "*/envs/*-paddle-{v}"):
            for candidate in root.glob(pattern.format(v=version) + "/lib/python3*/site-packages/paddle"):
                if (candidate / "libs").is_dir():
                    return candidate
    if not PADDLE.wheel_platform(recipe):
        raise InputError(
            f"{recipe.name} has no paddlepaddle wheel to check against", "use --arch with a Paddle runtime"
        )
    cache = cached[0].parents[2] if cached else root / "host"
    # pip prints to stdout; with --json the CLI has pointed stdout at stderr (util.console)
    try:
        return target_paddle(cache, Path(sys.executable), version, PADDLE.wheel_platform(recipe))
    except Problem as exc:
        raise runtime_problem(exc, f"paddlepaddle=={version}", recipe) from None
    except Exception as exc:
        raise EnvironmentProblem(
            f"cannot get paddlepaddle=={version} for {recipe.name} ({exc})",
            "check the package index, or the version exists for that platform",
        ) from None


def require_abi(
    path: Path,
    recipe: Recipe,
    paddle_version: str,
    paddle_root: Path | None = None,
    sdk: SdkExports | None = None,
    say_warnings: bool = True,
) -> list[AbiFinding]:
    """Raise with every finding when the plugin would not load; return the warnings."""
    return require_findings(path, check_abi(path, recipe, paddle_version, paddle_root, sdk), say_warnings)


def check_abi(
    path: Path, recipe: Recipe, paddle_version: str, paddle_root: Path | None = None, sdk: SdkExports | None = None
) -> list[AbiFinding]:
    """`paddle_root`: the target's paddle package when the caller has it already, else found here;
    `sdk`: the declared vendor SDK's libraries, which resolve the symbols the plugin takes from them."""
    libraries = read_libraries(path)  # a damaged file is named before any Paddle is fetched
    findings = []
    for library, data in libraries:
        resolved, sdk_findings = resolve_sdk_symbols(library, recipe, sdk)
        findings += sdk_findings
        if resolved is not None:
            paddle_root = paddle_root or paddle_root_for(recipe, paddle_version)
            findings += check_library(resolved, data, recipe, paddle_root, paddle_version)
    return findings


def paddle_framework(paddle_root: Path) -> tuple[set[str], SystemFloor]:
    """The libraries the paddlepaddle wheel (its `paddle` package at `paddle_root`) provides, plus
    Paddle Inference's for ON_INFER builds that link it, and the floor of the wheel's own libraries."""
    libraries = paddle_libraries(paddle_root)
    return set(libraries) | {"libpaddle_inference.so"}, SystemFloor(newest_versions(list(libraries.values())))


def paddle_requirements(wheel: Path) -> list[Requirement]:
    """The wheel's Requires-Dist entries on paddlepaddle."""
    return requirements_on(wheel, "paddlepaddle")


def check_plugin_wheel(wheel: Path, recipe: Recipe, paddle_version: str) -> dict[str, object]:
    """Verify tag, contents, ELF machine and Paddle pin of a plugin wheel."""
    name, version, _, _ = parse_wheel_filename(wheel.name)
    tag = fitting_tag(wheel, recipe, "the project's pyproject.toml")
    libs = check_wheel_libraries(
        wheel,
        recipe,
        "paddle_custom_device",
        "Paddle",
        "install the plugin target to paddle_custom_device in paddle/CMakeLists.txt",
        "rebuild it with devkit build",
    )
    paddle_pins = paddle_requirements(wheel)
    if not paddle_pins or str(paddle_pins[0].specifier) != f"=={paddle_version}":
        found = ", ".join(str(r) for r in paddle_pins) or "no paddlepaddle"
        raise BuildFailure(
            f"{wheel.name} requires {found}, expected paddlepaddle=={paddle_version}",
            "keep the framework_pin dynamic-metadata provider in the project's pyproject.toml",
        )
    return {"name": str(name), "version": str(version), "tag": tag, "libraries": libs}


class PaddleBuild:
    """The Paddle plugin's build steps (a BuildAdapter)."""

    label = "Paddle"
    abi_checks = "build info, device_ext.h"

    def prefetch_runtime(self, cache: Path, recipe: Recipe, version: str, index_url: str) -> Path | None:
        return None  # the build's payload fetches it

    def runtime_root(self, recipe: Recipe, version: str, prefetched: Path | None) -> Path:
        # once per build: a cached target wheel is re-hashed on each lookup
        return paddle_root_for(recipe, version)

    def require_abi(
        self,
        wheel: Path,
        recipe: Recipe,
        version: str,
        runtime_root: Path | None,
        sdk: SdkExports | None,
        say_warnings: bool,
    ) -> list[AbiFinding]:
        return require_abi(wheel, recipe, version, runtime_root, sdk, say_warnings)

    def provided_libraries(self, runtime_root: Path) -> tuple[set[str], SystemFloor]:
        return paddle_framework(runtime_root)

    def check_wheel(self, wheel: Path, recipe: Recipe, version: str, prefix: str) -> object:
        return check_plugin_wheel(wheel, recipe, version)

    def pinned_in(self, wheel: Path) -> str | None:
        return next(
            (str(r.specifier)[2:] for r in paddle_requirements(wheel) if str(r.specifier).startswith("==")), None
        )

    def check_abi(self, path: Path, recipe: Recipe, version: str) -> list[AbiFinding]:
        return check_abi(path, recipe, version)

    def find_links(self, recipe: Recipe, version: str, index_url: str) -> Path | None:
        return None  # the package index


PADDLE_BUILD = PaddleBuild()
