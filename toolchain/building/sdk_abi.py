"""A declared vendor SDK's libraries in the ABI checks: the symbols a plugin takes from them are
resolved there before the framework's checks see the rest (building/sdk.py provides the SDK and
records where; a later check-abi or verify finds it by the name and version the library embeds)."""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..project.recipes import Recipe
from ..run.envs import cache_root
from .elf import AbiFinding, LibraryAbi, read_library


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


def _index_dir(name: str, version: str, target: str) -> Path:
    return cache_root() / "sdk-index" / f"{name}-{version}-{target}"


def shared_libraries(lib_dirs: list[Path] | tuple[Path, ...]) -> list[Path]:
    """The shared library files (and their soname links) in an SDK's lib dirs."""
    return sorted(p for d in lib_dirs if d.is_dir() for p in d.glob("*.so*") if p.is_file())


@dataclass(frozen=True)
class SdkExports:
    """A declared vendor SDK's shared libraries for the target, as the ABI checks see them."""

    label: str  # "the opencl SDK 3.0"
    exports: dict[str, frozenset[str]]  # library file name -> defined symbols
    version_tags: frozenset[str]  # the symbol versions its libraries define (OPENCL_1.0, ...)

    @staticmethod
    def index_entry(name: str, version: str, target: str, place: str) -> Path:
        """Where a build records the lib dirs of the SDK it provided (building/sdk.py): one entry
        per place it was provided in (the host, or a builder image on a platform), so a host build
        and a container build of the same target each keep theirs."""
        return _index_dir(name, version, target) / f"{place}.json"

    @classmethod
    def recorded(cls, name: str, version: str, target: str) -> dict[str, dict[str, Any]]:
        """Every place's entry for the SDK and target, the most recently recorded first."""
        found = []
        for entry in _index_dir(name, version, target).glob("*.json"):
            try:
                found.append((entry.stat().st_mtime_ns, entry.stem, json.loads(entry.read_text())))
            except (OSError, ValueError):  # one being replaced, or damaged: not a record
                continue
        return {place: data for _, place, data in sorted(found, key=lambda f: f[0], reverse=True)}

    @classmethod
    def provided(cls, name: str, version: str, target: str, place: str | None = None) -> SdkExports | None:
        """The SDK as provided in `place`; unsaid, where a build provided it last."""
        entries = cls.recorded(name, version, target)
        try:
            entry = entries[place] if place else next(iter(entries.values()))
            lib_dirs = [Path(d) for d in entry["lib_dirs"]]
        except (StopIteration, KeyError, TypeError):
            return None
        files = shared_libraries(lib_dirs)
        return cls.read(f"the {name} SDK {version}", files) if files else None

    @classmethod
    def read(cls, label: str, files: list[Path]) -> SdkExports:
        # pyelftools is imported by what reads ELF files, not by every command
        from elftools.elf.elffile import ELFFile
        from elftools.elf.gnuversions import GNUVerDefSection

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
        return LibraryAbi(lib.name, lib.machine, lib.needed, rest, lib.defined), findings
