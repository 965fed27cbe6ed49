"""What one ELF shared library needs and exports, read with pyelftools: its machine, DT_NEEDED
libraries, undefined symbols with their versions, defined symbols and the build strings the
generated libraries embed (a framework's own build string is its module's: building/frameworks/).
The ABI checks (abi.py, building/frameworks/, sdk_abi.py) work on this."""

from __future__ import annotations

import io
import re
from collections.abc import Callable
from dataclasses import dataclass, field

# Symbol versions of the system libraries the manylinux policies allow
# (glibc, libstdc++, libgcc): resolved by the target's system, not by Paddle.
SYSTEM_VERSION = re.compile(r"^(GLIBC|GLIBCXX|CXXABI|GCC)_")
SYSTEM_FAMILIES = ("GLIBC", "GLIBCXX", "CXXABI")
# What the generated device library embeds when built against a declared vendor SDK.
SDK_BUILD_INFO = re.compile(rb"-sdk-build: ([A-Za-z][A-Za-z0-9_]*)=([0-9A-Za-z.+_-]+)")


@dataclass(frozen=True)
class AbiFinding:
    library: str
    problem: str
    fix: str
    severity: str = "error"  # "warning": loads into this Paddle, but not everywhere that Paddle runs
    # a warning's versions: (Paddle version, symbol family, this library's newest, Paddle's newest)
    floor: tuple[str, str, str, str] | None = None

    def line(self) -> str:
        return f"{self.library}: {self.problem}. Fix: {self.fix}"


@dataclass
class LibraryAbi:
    name: str
    machine: str
    needed: list[str] = field(default_factory=list)
    undefined: dict[str, str | None] = field(default_factory=dict)  # symbol -> version (None: unversioned)
    defined: set[str] = field(default_factory=set)
    sdk: tuple[str, str] | None = None  # (name, version) of the vendor SDK it was built against


def unresolved_symbols(lib: LibraryAbi, locate: Callable[[str], str | None]) -> dict[str, list[str]]:
    """The library's undefined symbols (the system's versioned ones left to the system) that no
    library it links resolves, by the framework library defining each ("": none does).
    `locate(symbol)`: None when a linked library resolves it, else the defining library or ""."""
    grouped: dict[str, list[str]] = {}
    for symbol, version in sorted(lib.undefined.items()):
        if version and SYSTEM_VERSION.match(version):
            continue
        owner = locate(symbol)
        if owner is not None:
            grouped.setdefault(owner, []).append(symbol)
    return grouped


def shown_symbols(symbols: list[str]) -> str:
    return ", ".join(symbols[:3]) + (f" and {len(symbols) - 3} more" if len(symbols) > 3 else "")


def unlinked_finding(lib: LibraryAbi, symbols: list[str], owner: str, fix: str) -> AbiFinding:
    return AbiFinding(
        lib.name, f"undefined symbol {shown_symbols(symbols)}: defined in {owner}, which it does not link", fix
    )


def wrong_machine(lib: LibraryAbi, expected: str, target: str, fix: str) -> list[AbiFinding]:
    """The one finding of a library built for another machine than the target's (nothing else
    about it matters), or none."""
    if lib.machine == expected:
        return []
    return [AbiFinding(lib.name, f"is built for {lib.machine} but {target} needs {expected}", fix)]


def read_library(data: bytes, name: str) -> LibraryAbi:
    # pyelftools is imported by what reads ELF files, not by every command
    from elftools.elf.dynamic import DynamicSection
    from elftools.elf.elffile import ELFFile
    from elftools.elf.gnuversions import GNUVerNeedSection, GNUVerSymSection
    from elftools.elf.sections import SymbolTableSection

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
    return lib


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
