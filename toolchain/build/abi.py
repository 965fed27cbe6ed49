"""`devkit check-abi`: will this plugin load into that Paddle? Decided from the ELF
files alone, before anything is installed or loaded.

Checks: ELF machine of the target; the Paddle version the plugin was compiled
against (the `<type>_paddle_build_info` string the generated runtime embeds);
every undefined symbol resolved against the libraries it links (Paddle's own
exports, or a system library by its symbol version); the C++11 string ABI.
"""

from __future__ import annotations

import io
import json
import re
import sys
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path

from elftools.elf.dynamic import DynamicSection
from elftools.elf.elffile import ELFFile
from elftools.elf.gnuversions import GNUVerDefSection, GNUVerNeedSection, GNUVerSymSection
from elftools.elf.sections import SymbolTableSection
from rich.markup import escape

from ..project.recipes import Recipe
from ..run.envs import cache_root
from ..util.archives import validate_wheel, zip_archive
from ..util.console import err
from ..util.errors import DevkitError
from ..util.fsutil import write_atomic

# Symbol versions of the system libraries the manylinux policies allow
# (glibc, libstdc++, libgcc): resolved by the target's system, not by Paddle.
SYSTEM_VERSION = re.compile(r"^(GLIBC|GLIBCXX|CXXABI|GCC)_")
SYSTEM_FAMILIES = ("GLIBC", "GLIBCXX", "CXXABI")
BUILD_INFO = re.compile(rb"paddle_version=([^;\x00]*);custom_runtime_version=([^;\x00]*);plugin_version=([^;\x00]*)")
# What the generated device library embeds when built against a declared vendor SDK.
SDK_BUILD_INFO = re.compile(rb"-sdk-build: ([A-Za-z][A-Za-z0-9_]*)=([0-9A-Za-z.+_-]+)")


@dataclass(frozen=True)
class AbiFinding:
    library: str
    problem: str
    fix: str
    severity: str = "error"  # "warning": loads into this Paddle, but not everywhere that Paddle runs

    def line(self) -> str:
        return f"{self.library}: {self.problem}. Fix: {self.fix}"


@dataclass
class LibraryAbi:
    name: str
    machine: str
    needed: list[str] = field(default_factory=list)
    undefined: dict[str, str | None] = field(default_factory=dict)  # symbol -> version (None: unversioned)
    defined: set[str] = field(default_factory=set)
    build_info: dict[str, str] = field(default_factory=dict)
    sdk: tuple[str, str] | None = None  # (name, version) of the vendor SDK it was built against


def read_library(data: bytes, name: str) -> LibraryAbi:
    elf = ELFFile(io.BytesIO(data))
    lib = LibraryAbi(name=name, machine=elf["e_machine"])
    versions: dict[int, str] = {}
    for section in elf.iter_sections():
        if isinstance(section, DynamicSection):
            lib.needed = [t.needed for t in section.iter_tags() if t.entry.d_tag == "DT_NEEDED"]  # type: ignore[attr-defined]
        elif isinstance(section, GNUVerNeedSection):
            for _, auxiliaries in section.iter_versions():
                for aux in auxiliaries:
                    versions[aux.entry.vna_other] = aux.name
    dynsym = elf.get_section_by_name(".dynsym")
    versym = elf.get_section_by_name(".gnu.version")
    if isinstance(dynsym, SymbolTableSection):
        for index, sym in enumerate(dynsym.iter_symbols()):
            if not sym.name:
                continue
            if sym["st_shndx"] == "SHN_UNDEF":
                if sym["st_info"]["bind"] == "STB_WEAK":
                    continue  # optional: absence is allowed
                ndx = versym.get_symbol(index)["ndx"] if isinstance(versym, GNUVerSymSection) else 0
                lib.undefined[sym.name] = versions.get(ndx) if isinstance(ndx, int) else None
            else:
                lib.defined.add(sym.name)
    sdk = SDK_BUILD_INFO.search(data)
    if sdk:
        lib.sdk = (sdk[1].decode(), sdk[2].decode())
    match = BUILD_INFO.search(data)
    if match:
        lib.build_info = {
            "paddle_version": match[1].decode(),
            "custom_runtime_version": match[2].decode(),
            "plugin_version": match[3].decode(),
        }
    return lib


@lru_cache(maxsize=8)
def paddle_libraries(paddle_root: Path) -> dict[str, LibraryAbi]:
    """The shared libraries in the wheel's paddle/libs (parsed once per file, then read from
    devkit's cache: libphi_core.so alone exports ~66k symbols)."""
    libs = {}
    for path in sorted((paddle_root / "libs").glob("*.so*")):
        stat = path.stat()
        cached = cache_root() / "abi" / f"{path.name}-{stat.st_size}-{stat.st_mtime_ns}.json"
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
    """Exported symbols of each shared library in the wheel's paddle/libs."""
    return {name: frozenset(lib.defined) for name, lib in paddle_libraries(paddle_root).items()}


def symbol_version(version: str) -> tuple[str, tuple[int, ...]]:
    """'GLIBC_2.29' -> ('GLIBC', (2, 29)); a version without a number gives ()."""
    family, _, number = version.partition("_")
    return family, tuple(int(n) for n in number.split(".") if n.isdigit())


def newest_versions(libs: list[LibraryAbi]) -> dict[str, tuple[int, ...]]:
    """The newest GLIBC / GLIBCXX / CXXABI symbol version each family is needed at."""
    newest: dict[str, tuple[int, ...]] = {}
    for lib in libs:
        for version in filter(None, lib.undefined.values()):
            family, key = symbol_version(version)
            if family in SYSTEM_FAMILIES and key:
                newest[family] = max(newest.get(family, key), key)
    return newest


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
                )
            )
    return findings


def check_library(lib: LibraryAbi, recipe: Recipe, paddle_root: Path, paddle_version: str) -> list[AbiFinding]:
    findings = []
    if lib.machine != recipe.elf_machine:
        return [
            AbiFinding(
                lib.name,
                f"is built for {lib.machine} but {recipe.name} needs {recipe.elf_machine}",
                f"rebuild it with devkit build --arch {recipe.name}",
            )
        ]
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
    unresolved: dict[str, list[str]] = {}
    for symbol, version in sorted(lib.undefined.items()):
        if version and SYSTEM_VERSION.match(version):
            continue
        if any(symbol in syms for syms in linked.values()):
            continue
        owner = next((name for name, syms in exports.items() if symbol in syms), None)
        unresolved.setdefault(owner or "", []).append(symbol)
    for owner, symbols in unresolved.items():
        shown = ", ".join(symbols[:3]) + (f" and {len(symbols) - 3} more" if len(symbols) > 3 else "")
        if owner:
            findings.append(
                AbiFinding(
                    lib.name,
                    f"undefined symbol {shown}: defined in {owner}, which it does not link",
                    f"link {owner} (cmake/FindPaddle.cmake links libphi_core.so and libcommon.so)",
                )
            )
        else:
            abi_hint = " or with a different _GLIBCXX_USE_CXX11_ABI" if _cxx11(symbols) != paddle_cxx11 else ""
            findings.append(
                AbiFinding(
                    lib.name,
                    f"undefined symbol {shown} is exported by no library of Paddle "
                    f"{paddle_version}: it was built against another Paddle{abi_hint}",
                    f"rebuild against paddlepaddle=={paddle_version}",
                )
            )
    return findings


def _cxx11(symbols) -> bool:
    """Whether mangled names use the C++11 std::string ABI."""
    return any("__cxx11" in s for s in symbols)


def libraries_in(path: Path) -> list[tuple[str, bytes]]:
    if not path.is_file():
        raise DevkitError(f"{path} does not exist", "pass a plugin wheel or shared library")
    if path.suffix == ".whl":
        validate_wheel(path, "plugin wheel")
        with zip_archive(path, "plugin wheel", "pass a plugin wheel built by devkit") as zf:
            libs = [(n, zf.read(n)) for n in zf.namelist() if n.endswith(".so")]
        if not libs:
            raise DevkitError(f"{path.name} contains no shared library", "pass a plugin wheel built by devkit")
        return libs
    data = path.read_bytes()
    if data[:4] != b"\x7fELF":
        raise DevkitError(f"{path} is neither a wheel nor an ELF library", "pass a .whl or a .so")
    return [(path.name, data)]


def read_libraries(path: Path) -> list[tuple[LibraryAbi, bytes]]:
    """Every shared library in a wheel (or the one library `path` is), parsed, with its bytes."""
    libraries = []
    for name, data in libraries_in(path):
        try:
            libraries.append((read_library(data, name), data))
        except Exception as exc:  # pyelftools raises many kinds on a damaged file
            raise DevkitError(
                f"{name} in {path} is not a readable ELF library ({type(exc).__name__}: {exc})",
                "rebuild it; a truncated or edited library cannot be checked or loaded",
            ) from None
    return libraries


def paddle_root_for(recipe: Recipe, version: str) -> Path:
    """The target's paddle package directory: from devkit's caches, else downloaded."""
    from ..payload.build_plugin import UNPACKED_MARKER, Problem, target_paddle
    from ..run.images import builder_spec
    from ..run.select import host_recipe

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
        raise DevkitError(
            f"{recipe.name} has no paddlepaddle wheel to check against", "use --arch with a Paddle runtime"
        )
    cache = cached[0].parents[2] if cached else root / "host"
    # pip prints to stdout; with --json the CLI has pointed stdout at stderr (util.console)
    try:
        return target_paddle(cache, Path(sys.executable), version, recipe.paddle_wheel_platform)
    except Problem as exc:
        raise DevkitError(f"cannot get paddlepaddle=={version} for {recipe.name}: {exc.text}", exc.fix) from None
    except Exception as exc:
        raise DevkitError(
            f"cannot get paddlepaddle=={version} for {recipe.name} ({exc})",
            "check the package index, or the version exists for that platform",
        ) from None


def require_abi(
    path: Path, recipe: Recipe, paddle_version: str, paddle_root: Path | None = None, sdk: SdkExports | None = None
) -> list[AbiFinding]:
    """Raise with every finding when the plugin would not load; return the warnings."""
    return require_findings(path, check_abi(path, recipe, paddle_version, paddle_root, sdk))


def require_findings(path: Path, findings: list[AbiFinding]) -> list[AbiFinding]:
    """Raise with every finding when any is an error; print and return the warnings."""
    errors = [f for f in findings if f.severity == "error"]
    if errors:
        raise DevkitError(
            f"ABI check of {path.name} failed: {errors[0].problem}",
            errors[0].fix,
            details="\n".join(f.line() for f in findings),
        )
    for warning in findings:
        err.print(f"[yellow]![/] {escape(warning.line())}")
    return findings


def check_abi(
    path: Path, recipe: Recipe, paddle_version: str, paddle_root: Path | None = None, sdk: SdkExports | None = None
) -> list[AbiFinding]:
    """`paddle_root`: the target's paddle package when the caller has it already, else found here;
    `sdk`: the declared vendor SDK's libraries, which resolve the symbols the plugin takes from them."""
    libraries = [lib for lib, _ in read_libraries(path)]  # a damaged file is named before any Paddle is fetched
    paddle_root = paddle_root or paddle_root_for(recipe, paddle_version)
    findings = []
    for library in libraries:
        resolved, sdk_findings = resolve_sdk_symbols(library, recipe, sdk)
        findings += sdk_findings
        if resolved is not None:
            findings += check_library(resolved, recipe, paddle_root, paddle_version)
    return findings


def resolve_sdk_symbols(
    lib: LibraryAbi, recipe: Recipe, sdk: SdkExports | None
) -> tuple[LibraryAbi | None, list[AbiFinding]]:
    """A library built against a vendor SDK: its SDK symbols resolved against `sdk`, or else
    against the SDK a build provided for the target on this machine (SdkExports.provided).
    Returns the library without them for the framework's checks (None: no SDK to resolve
    against, so those checks would only repeat the finding)."""
    if lib.sdk is None or lib.machine != recipe.elf_machine:
        return lib, []
    sdk = sdk or SdkExports.provided(*lib.sdk, recipe.name)
    if sdk is None:
        name, version = lib.sdk
        return None, [
            AbiFinding(
                lib.name,
                f"was built against the {name} SDK {version}, which devkit has not provided for {recipe.name} on "
                "this machine, so the symbols it takes from the SDK cannot be checked",
                f"build the project for {recipe.name} here once (devkit build --arch {recipe.name}), which provides it",
            )
        ]
    return sdk.resolve(lib)


@dataclass(frozen=True)
class SdkExports:
    """A declared vendor SDK's shared libraries for the target, as the ABI checks see them."""

    label: str  # "the opencl SDK 3.0"
    exports: dict[str, frozenset[str]]  # library file name -> defined symbols
    version_tags: frozenset[str]  # the symbol versions its libraries define (OPENCL_1.0, ...)

    @staticmethod
    def index_entry(name: str, version: str, target: str) -> Path:
        """Where a build records the lib dirs of the SDK it provided (build/sdk.py)."""
        return cache_root() / "sdk-index" / f"{name}-{version}-{target}.json"

    @classmethod
    def provided(cls, name: str, version: str, target: str) -> SdkExports | None:
        entry = cls.index_entry(name, version, target)
        try:
            lib_dirs = [Path(d) for d in json.loads(entry.read_text())["lib_dirs"]]
        except (OSError, ValueError, KeyError, TypeError):
            return None
        files = sorted(p for d in lib_dirs if d.is_dir() for p in d.glob("*.so*") if p.is_file())
        return cls.read(f"the {name} SDK {version}", files) if files else None

    @classmethod
    def read(cls, label: str, files: list[Path]) -> SdkExports:
        exports: dict[str, frozenset[str]] = {}
        tags: set[str] = set()
        for path in files:
            data = path.read_bytes()
            try:
                exports[path.name] = frozenset(read_library(data, path.name).defined)
                section = ELFFile(io.BytesIO(data)).get_section_by_name(".gnu.version_d")
            except Exception:  # a linker script or another non-ELF file
                continue
            if isinstance(section, GNUVerDefSection):
                tags.update(aux.name for _, auxiliaries in section.iter_versions() for aux in auxiliaries)
        return cls(label, exports, frozenset(tags))

    def resolve(self, lib: LibraryAbi) -> tuple[LibraryAbi, list[AbiFinding]]:
        """`lib` without the symbols the SDK libraries it links export (left for the framework's
        checks: the rest), and a finding for each symbol of an SDK symbol version none exports
        (built against a newer SDK than the target's)."""
        linked = [syms for name, syms in self.exports.items() if name in lib.needed]
        rest: dict[str, str | None] = {}
        missing = []
        for symbol, version in lib.undefined.items():
            if any(symbol in syms for syms in linked):
                continue
            if version in self.version_tags:
                missing.append(f"{symbol}@{version}")
            else:
                rest[symbol] = version
        findings = []
        if missing:
            shown = ", ".join(missing[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
            findings.append(
                AbiFinding(
                    lib.name,
                    f"undefined symbol {shown} is exported by no library of {self.label} it links: "
                    "it was built against another version of the SDK",
                    f"rebuild against {self.label}, or declare the SDK version the target has in [tool.devkit.sdk]",
                )
            )
        return LibraryAbi(lib.name, lib.machine, lib.needed, rest, lib.defined, lib.build_info), findings
