"""What a build does for the PyTorch adapter (its BuildAdapter, TORCH_BUILD): where the target's
torch comes from, what the wheel must hold, and whether its library will load into that torch
(`devkit check-abi --framework torch`).

The ABI check reads ELF files only: the ELF machine; the torch version and C++11 string ABI
the adapter was compiled with (the `<type>-torch-build: torch=X cxx11_abi=N` string it
embeds) against the target torch; and every undefined symbol, looked up in the GNU hash
tables of torch's libraries (libtorch_cpu.so exports ~200k symbols: a hash lookup per
symbol instead of reading them all, each answer kept for the next build: torch_exports.py) or
versioned by the system's C/C++ runtime.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import parse_wheel_filename

from ...payload.shared.problems import Problem
from ...payload.shared.runtimes import RUNTIMES, UNPACKED_MARKER, target_runtime
from ...project.frameworks import TORCH
from ...project.recipes import Recipe
from ...run.envs import cache_root
from ...util.archives import validate_wheel, zip_archive
from ...util.errors import BuildFailure
from ..abi import read_libraries, require_findings, runtime_problem
from ..artifacts import check_wheel_libraries, fitting_tag, requirements_on
from ..elf import (
    AbiFinding,
    LibraryAbi,
    shown_symbols,
    unlinked_finding,
    unresolved_symbols,
    wrong_machine,
)
from ..manylinux import SystemFloor
from ..sdk_abi import SdkExports, resolve_sdk_symbols
from ..torch_exports import exports_of

BUILD_INFO = re.compile(rb"-torch-build: torch=([0-9A-Za-z.+]+) cxx11_abi=([01])")


def torch_root_for(recipe: Recipe, version: str, index_url: str = "") -> Path:
    """The target's `torch` package directory: a build's unpacked wheel, else downloaded."""
    platform = TORCH.wheel_platform(recipe)
    unpacked = sorted(cache_root().glob(f"*/torch/{version}-{platform}/{UNPACKED_MARKER}"))
    return fetch_torch(unpacked[0].parents[2] if unpacked else cache_root() / "host", recipe, version, index_url)


def torch_wheel_dir(recipe: Recipe, version: str, index_url: str = "") -> Path:
    """The directory holding the target's torch wheel (downloaded when no build has)."""
    return torch_root_for(recipe, version, index_url).parent / "download"


def fetch_torch(cache: Path, recipe: Recipe, version: str, index_url: str = "") -> Path:
    """The target's torch wheel, downloaded by the host's pip (whose configuration knows where the CPU
    builds are) and unpacked into `cache`, re-checked against its recorded sha256 on every reuse.
    Builds in a container find it there: the container's pip would take PyPI's CUDA build."""
    # pip prints to stdout; with --json the CLI has pointed stdout at stderr (util.console)
    try:
        return target_runtime(
            cache, Path(sys.executable), RUNTIMES["torch"], version, TORCH.wheel_platform(recipe), index_url
        )
    except Problem as exc:
        raise runtime_problem(exc, f"torch=={version}", recipe) from None


def torch_framework(torch_root: Path) -> tuple[set[str], SystemFloor]:
    """The libraries the torch wheel provides (left out of our wheel), and the glibc/libstdc++ they need."""
    exports = exports_of(torch_root)
    floor = exports.system_floor()
    exports.save()
    return {p.name for p in exports.libraries}, floor


@dataclass(frozen=True)
class TorchBuildInfo:
    torch_version: str
    cxx11_abi: bool


def build_info(data: bytes) -> TorchBuildInfo | None:
    found = BUILD_INFO.search(data)
    return TorchBuildInfo(found[1].decode(), found[2] == b"1") if found else None


def torch_version_of(torch_root: Path) -> str:
    text = (torch_root / "version.py").read_text() if (torch_root / "version.py").is_file() else ""
    found = re.search(r"^__version__\s*=\s*['\"]([^'\"]+)", text, re.M)
    return found[1] if found else ""


def _uses_cxx11_abi(torch_root: Path) -> bool:
    """Whether torch's own C++ API uses the C++11 std::string (libc10 mangles it as __cxx11)."""
    return b"__cxx11" in (torch_root / "lib" / "libc10.so").read_bytes()


def check_torch_library(
    lib: LibraryAbi, data: bytes, recipe: Recipe, version: str, torch_root: Path
) -> list[AbiFinding]:
    fix = f"rebuild it with devkit build --framework torch --arch {recipe.name}"
    elsewhere = wrong_machine(lib, recipe.elf_machine, recipe.name, fix)
    if elsewhere:
        return elsewhere
    findings = []
    info = build_info(data)
    rebuild = f"rebuild with devkit build --framework torch --torch-version {version}"
    if info is None:
        findings.append(AbiFinding(lib.name, "carries no torch build information", "rebuild it with devkit build"))
    else:
        if info.torch_version.split("+")[0] != version.split("+")[0]:
            findings.append(
                AbiFinding(
                    lib.name,
                    f"was compiled against torch {info.torch_version}, not {version} (torch's C++ API and "
                    "operator schemas change between releases)",
                    rebuild,
                )
            )
        if info.cxx11_abi != _uses_cxx11_abi(torch_root):
            findings.append(
                AbiFinding(
                    lib.name,
                    f"was compiled with _GLIBCXX_USE_CXX11_ABI={int(info.cxx11_abi)}, and torch {version} "
                    f"uses {int(not info.cxx11_abi)}: std::string arguments would not link",
                    f"{rebuild} (CMake takes the flag from TorchConfig.cmake)",
                )
            )
    exports = exports_of(torch_root)

    def locate(symbol: str) -> str | None:
        owner = exports.owner(symbol)
        return None if owner in lib.needed else owner

    unresolved = unresolved_symbols(lib, locate)
    exports.save()
    for owner, symbols in unresolved.items():
        if owner:
            findings.append(unlinked_finding(lib, symbols, owner, "link ${TORCH_LIBRARIES} in pytorch/CMakeLists.txt"))
        else:
            findings.append(
                AbiFinding(
                    lib.name,
                    f"undefined symbol {shown_symbols(symbols)} is exported by no library of torch {version}: it was built "
                    "against another torch (or another C++11 ABI)",
                    rebuild,
                )
            )
    return findings


def check_torch_abi(
    path: Path, recipe: Recipe, version: str, torch_root: Path | None = None, sdk: SdkExports | None = None
) -> list[AbiFinding]:
    findings: list[AbiFinding] = []
    for lib, data in read_libraries(path):
        resolved, sdk_findings = resolve_sdk_symbols(lib, recipe, sdk)
        findings += sdk_findings
        if resolved is None:
            continue
        lib = resolved
        if lib.machine != recipe.elf_machine:  # no torch needed to tell (nor fetched)
            findings += check_torch_library(lib, data, recipe, version, Path())
        else:
            torch_root = torch_root or torch_root_for(recipe, version)
            findings += check_torch_library(lib, data, recipe, version, torch_root)
    return findings


def require_torch_abi(
    path: Path,
    recipe: Recipe,
    version: str,
    torch_root: Path | None = None,
    sdk: SdkExports | None = None,
    say_warnings: bool = True,
) -> list[AbiFinding]:
    return require_findings(path, check_torch_abi(path, recipe, version, torch_root, sdk), say_warnings)


def torch_requirements(wheel: Path) -> list[Requirement]:
    return requirements_on(wheel, "torch", "pass a wheel built by `devkit build --framework torch`")


def pinned_torch(wheel: Path) -> str | None:
    """The X.Y.Z of the wheel's torch==X.Y.Z requirement; None when it has none (not a torch adapter)."""
    for req in torch_requirements(wheel):
        if str(req.specifier).startswith("=="):
            return str(req.specifier)[2:]
    return None


def is_torch_wheel(wheel: Path) -> bool:
    """A torch adapter's wheel declares the torch.backends entry point."""
    with zip_archive(wheel, "wheel", "pass a wheel built by devkit build") as zf:
        points = [n for n in zf.namelist() if n.endswith(".dist-info/entry_points.txt")]
        return bool(points) and "[torch.backends]" in zf.read(points[0]).decode(errors="replace")


def check_torch_wheel(wheel: Path, recipe: Recipe, version: str, prefix: str) -> dict[str, object]:
    """Name, tag, contents, ELF machine, torch pin and autoload entry point of an adapter wheel."""
    validate_wheel(wheel, "PyTorch adapter wheel")
    name = parse_wheel_filename(wheel.name)[0]
    if not wheel.name.startswith(prefix):
        raise BuildFailure(f"{wheel.name} is not named {prefix}*", "build it from the project's pytorch/ directory")
    tag = fitting_tag(wheel, recipe, "pytorch/pyproject.toml")
    package = str(name).replace("-", "_")
    libs = check_wheel_libraries(
        wheel,
        recipe,
        package,
        "torch",
        "install the adapter library into the package in pytorch/CMakeLists.txt",
        "rebuild it with devkit build --framework torch",
    )
    pins = torch_requirements(wheel)
    if not pins or str(pins[0].specifier) != f"=={version}":
        found = ", ".join(map(str, pins)) or "no torch"
        raise BuildFailure(
            f"{wheel.name} requires {found}, expected torch=={version}",
            "keep the framework_pin dynamic-metadata provider in pytorch/pyproject.toml",
        )
    if not is_torch_wheel(wheel):
        raise BuildFailure(
            f"{wheel.name} declares no torch.backends entry point, so `import torch` would not load it",
            'keep [project.entry-points."torch.backends"] in pytorch/pyproject.toml',
        )
    return {"name": str(name), "tag": tag, "libraries": libs}


class TorchBuild:
    """The PyTorch adapter's build steps (a BuildAdapter)."""

    label = "torch"
    abi_checks = "torch version, C++11 ABI"

    def prefetch_runtime(self, cache: Path, recipe: Recipe, version: str, index_url: str) -> Path | None:
        # by the host, whose pip configuration knows where the CPU builds are (a container's would take
        # PyPI's CUDA build): a torch that cannot be had is an error before anything is written
        return fetch_torch(cache, recipe, version, index_url)

    def runtime_root(self, recipe: Recipe, version: str, prefetched: Path | None) -> Path:
        return prefetched or torch_root_for(recipe, version)

    def require_abi(
        self,
        wheel: Path,
        recipe: Recipe,
        version: str,
        runtime_root: Path | None,
        sdk: SdkExports | None,
        say_warnings: bool,
    ) -> list[AbiFinding]:
        return require_torch_abi(wheel, recipe, version, runtime_root, sdk, say_warnings)

    def provided_libraries(self, runtime_root: Path) -> tuple[set[str], SystemFloor]:
        return torch_framework(runtime_root)

    def check_wheel(self, wheel: Path, recipe: Recipe, version: str, prefix: str) -> object:
        return check_torch_wheel(wheel, recipe, version, prefix)

    def pinned_in(self, wheel: Path) -> str | None:
        return pinned_torch(wheel)

    def check_abi(self, path: Path, recipe: Recipe, version: str) -> list[AbiFinding]:
        return check_torch_abi(path, recipe, version)

    def find_links(self, recipe: Recipe, version: str, index_url: str) -> Path | None:
        return torch_wheel_dir(recipe, version, index_url)


TORCH_BUILD = TorchBuild()
