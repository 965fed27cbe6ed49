"""`devkit check-abi`: will this plugin load into that Paddle? Decided from the ELF
files alone, before anything is installed or loaded.

Checks: ELF machine of the target; the Paddle version the plugin was compiled
against (the `<type>_paddle_build_info` string the generated runtime embeds);
every undefined symbol resolved against the libraries it links (Paddle's own
exports, or a system library by its symbol version); the C++11 string ABI.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from collections.abc import Iterable
from dataclasses import asdict
from functools import lru_cache
from pathlib import Path

from rich.markup import escape

from ..payload.build_plugin import UNPACKED_MARKER, Problem, target_paddle
from ..project.config import DEFAULT_BUILDER_BASE
from ..project.recipes import Recipe
from ..run.envs import cache_root
from ..run.images import builder_spec
from ..run.select import host_recipe
from ..util.archives import validate_wheel, zip_archive
from ..util.console import err
from ..util.errors import BuildFailure, DevkitError, EnvironmentProblem, InputError
from ..util.fsutil import write_atomic
from .elf import (
    SYSTEM_FAMILIES,
    AbiFinding,
    LibraryAbi,
    newest_versions,
    read_library,
    shown_symbols,
    unlinked_finding,
    unresolved_symbols,
    wrong_machine,
)
from .sdk_abi import SdkExports, resolve_sdk_symbols


def _digest(path: Path) -> str:
    h = hashlib.blake2b(digest_size=12)
    with path.open("rb") as f:
        while chunk := f.read(1 << 22):
            h.update(chunk)
    return h.hexdigest()


@lru_cache(maxsize=8)
def paddle_libraries(paddle_root: Path) -> dict[str, LibraryAbi]:
    """The shared libraries in the wheel's paddle/libs, and the extension module paddle/base/libpaddle.so
    that holds PIR, which the int8 engine links (parsed once per file, then read from devkit's cache:
    libphi_core.so alone exports ~66k symbols)."""
    libs = {}
    for path in sorted((paddle_root / "libs").glob("*.so*")) + sorted((paddle_root / "base").glob("libpaddle.so")):
        # by content: every fresh environment installs the same libraries with new times
        cached = cache_root() / "abi" / f"{path.name}-{path.stat().st_size}-{_digest(path)}.json"
        if cached.is_file():
            data = json.loads(cached.read_text())
            libs[path.name] = LibraryAbi(**{**data, "defined": set(data["defined"])})
            continue
        try:
            lib = read_library(path.read_bytes(), path.name)
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
                    floor=(paddle_version, family, _dotted(ours[family]), _dotted(paddles[family])),
                )
            )
    return findings


def check_library(lib: LibraryAbi, recipe: Recipe, paddle_root: Path, paddle_version: str) -> list[AbiFinding]:
    elsewhere = wrong_machine(
        lib, recipe.elf_machine, recipe.name, f"rebuild it with devkit build --arch {recipe.name}"
    )
    if elsewhere:
        return elsewhere
    findings = []
    built = lib.build_info.get("paddle_version")
    if built and built != paddle_version:
        findings.append(
            AbiFinding(
                lib.name,
                f"was compiled against Paddle {built}, not {paddle_version}",
                f"rebuild with --paddle-version {paddle_version} (kernel signatures and "
                "device_ext.h change between versions)",
            )
        )
    runtime = lib.build_info.get("custom_runtime_version")
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
    paddle_cxx11 = _cxx11(exports.get("libphi_core.so", ()))

    def locate(symbol: str) -> str | None:
        if any(symbol in syms for syms in linked.values()):
            return None
        return next((name for name, syms in exports.items() if symbol in syms), "")

    for owner, symbols in unresolved_symbols(lib, locate).items():
        if owner:
            fix = f"link {owner} (cmake/FindPaddle.cmake links libphi_core.so, libcommon.so and libpaddle.so)"
            findings.append(unlinked_finding(lib, symbols, owner, fix))
        else:
            abi_hint = " or with a different _GLIBCXX_USE_CXX11_ABI" if _cxx11(symbols) != paddle_cxx11 else ""
            findings.append(
                AbiFinding(
                    lib.name,
                    f"undefined symbol {shown_symbols(symbols)} is exported by no library of Paddle "
                    f"{paddle_version}: it was built against another Paddle{abi_hint}",
                    f"rebuild against paddlepaddle=={paddle_version}",
                )
            )
    return findings


def _cxx11(symbols: Iterable[str]) -> bool:
    """Whether mangled names use the C++11 std::string ABI."""
    return any("__cxx11" in s for s in symbols)


def libraries_in(path: Path) -> list[tuple[str, bytes]]:
    if not path.is_file():  # stat, never open: opening a FIFO would wait for a writer
        problem = "is not a regular file" if path.exists() else "does not exist"
        raise InputError(f"{path} {problem}", "pass a plugin wheel or shared library")
    if path.suffix == ".whl":
        validate_wheel(path, "plugin wheel")
        with zip_archive(path, "plugin wheel", "pass a plugin wheel built by devkit") as zf:
            libs = [(n, zf.read(n)) for n in zf.namelist() if n.endswith(".so")]
        if not libs:
            raise InputError(f"{path.name} contains no shared library", "pass a plugin wheel built by devkit")
        return libs
    data = path.read_bytes()
    if data[:4] != b"\x7fELF":
        raise InputError(f"{path} is neither a wheel nor an ELF library", "pass a .whl or a .so")
    return [(path.name, data)]


def read_libraries(path: Path) -> list[tuple[LibraryAbi, bytes]]:
    """Every shared library in a wheel (or the one library `path` is), parsed, with its bytes."""
    libraries = []
    for name, data in libraries_in(path):
        try:
            libraries.append((read_library(data, name), data))
        except Exception as exc:  # pyelftools raises many kinds on a damaged file
            raise InputError(
                f"{name} in {path} is not a readable ELF library ({type(exc).__name__}: {exc})",
                "rebuild it; a truncated or edited library cannot be checked or loaded",
            ) from None
    return libraries


def paddle_root_for(recipe: Recipe, version: str) -> Path:
    """The target's paddle package directory: from devkit's caches, else downloaded."""
    root = cache_root()
    # A target wheel a build unpacked (host or container cache) goes through target_paddle, which
    # re-checks it against the sha256 recorded when it was downloaded.
    cached = sorted(root.glob(f"*/paddle/{version}-{recipe.paddle_wheel_platform}/{UNPACKED_MARKER}"))
    if not cached and recipe.name in (host_recipe().name, builder_spec().recipe.name):
        # Native environments have the wheel installed: the reference envs native builds and verify
        # share (host, or verify containers), and the x86_64 builder container's tools env.
        for pattern in ("*/reference-envs/*-paddle-{v}", "*/envs/*-paddle-{v}"):
            for candidate in root.glob(pattern.format(v=version) + "/lib/python3*/site-packages/paddle"):
                if (candidate / "libs").is_dir():
                    return candidate
    if not recipe.paddle_wheel_platform:
        raise InputError(
            f"{recipe.name} has no paddlepaddle wheel to check against", "use --arch with a Paddle runtime"
        )
    cache = cached[0].parents[2] if cached else root / "host"
    # pip prints to stdout; with --json the CLI has pointed stdout at stderr (util.console)
    try:
        return target_paddle(cache, Path(sys.executable), version, recipe.paddle_wheel_platform)
    except Problem as exc:
        raise runtime_problem(exc, f"paddlepaddle=={version}", recipe) from None
    except Exception as exc:
        raise EnvironmentProblem(
            f"cannot get paddlepaddle=={version} for {recipe.name} ({exc})",
            "check the package index, or the version exists for that platform",
        ) from None


def runtime_problem(exc: Problem, pin: str, recipe: Recipe) -> DevkitError:
    """The error for a framework runtime pip could not get: the machine's when the index is
    unreachable, the input's when no such version exists for the target."""
    kind = EnvironmentProblem if exc.kind == "environment" else InputError
    return kind(f"cannot get {pin} for {recipe.name}: {exc.text}", exc.fix)


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


def require_findings(path: Path, findings: list[AbiFinding], say_warnings: bool = True) -> list[AbiFinding]:
    """Raise with every finding when any is an error; print the warnings as one line (the build says
    them; verify, which checks the same wheel again, passes say_warnings=False) and return them."""
    errors = [f for f in findings if f.severity == "error"]
    if errors:
        raise BuildFailure(
            f"ABI check of {path.name} failed: {errors[0].problem}",
            errors[0].fix,
            details="\n".join(f.line() for f in findings),
        )
    if say_warnings and findings:
        err.print(f"[yellow]![/] {escape(portability_line(findings))}")
    return findings


def portability_line(warnings: list[AbiFinding]) -> str:
    """The portability warnings of a wheel's libraries as one line: which symbol versions they need
    beyond Paddle's own libraries, and what to do about it."""
    libraries = sorted({w.library for w in warnings})
    if any(w.floor is None for w in warnings):  # (a warning of another kind: said as it is)
        return "; ".join(w.line() for w in warnings)
    floors = sorted({w.floor for w in warnings if w.floor}, key=lambda f: f[1])
    newest: dict[str, tuple[str, str]] = {}
    for _, family, ours, paddles in floors:
        if family not in newest or tuple(map(int, ours.split("."))) > tuple(map(int, newest[family][0].split("."))):
            newest[family] = (ours, paddles)
    they = "it" if len(libraries) == 1 else "they"
    return (
        f"{', '.join(libraries)} need {', '.join(f'{f}_{o}' for f, (o, _) in newest.items())}, newer than "
        f"Paddle {floors[0][0]}'s own libraries ({', '.join(f'{f}_{p}' for f, (_, p) in newest.items())}), so "
        f"{they} will not load on older systems where that Paddle does. Fix: build in devkit's builder container on "
        f'its oldest base (--runner docker, builder-base = "{DEFAULT_BUILDER_BASE}"), or state this minimum to your '
        "users"
    )


def check_abi(
    path: Path, recipe: Recipe, paddle_version: str, paddle_root: Path | None = None, sdk: SdkExports | None = None
) -> list[AbiFinding]:
    """`paddle_root`: the target's paddle package when the caller has it already, else found here;
    `sdk`: the declared vendor SDK's libraries, which resolve the symbols the plugin takes from them."""
    libraries = [lib for lib, _ in read_libraries(path)]  # a damaged file is named before any Paddle is fetched
    findings = []
    for library in libraries:
        resolved, sdk_findings = resolve_sdk_symbols(library, recipe, sdk)
        findings += sdk_findings
        if resolved is not None:
            paddle_root = paddle_root or paddle_root_for(recipe, paddle_version)
            findings += check_library(resolved, recipe, paddle_root, paddle_version)
    return findings
