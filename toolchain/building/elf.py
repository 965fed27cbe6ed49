"""What one ELF shared library needs and exports: its machine, DT_NEEDED libraries, undefined
symbols with their versions, defined symbols and the build strings the generated libraries embed
(a framework's own build string is its module's: building/frameworks/). pyelftools reads the
structure; the symbol tables, tens of thousands of entries in Paddle's libraries, are unpacked in bulk.
The ABI checks (abi.py, building/frameworks/, sdk_abi.py) work on this."""

from __future__ import annotations

import io
import mmap
import re
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from elftools.elf.elffile import ELFFile
    from elftools.elf.gnuversions import GNUVerSymSection
    from elftools.elf.sections import SymbolTableSection

# Symbol versions of the system libraries the manylinux policies allow
# (glibc, libstdc++, libgcc): resolved by the target's system, not by Paddle.
SYSTEM_VERSION = re.compile(r"^(GLIBC|GLIBCXX|CXXABI|GCC)_")
SYSTEM_FAMILIES = ("GLIBC", "GLIBCXX", "CXXABI")
# What the generated device library embeds when built against a declared vendor SDK.
SDK_MARKER = b"-sdk-build: "
SDK_BUILD_INFO = re.compile(re.escape(SDK_MARKER) + rb"([A-Za-z][A-Za-z0-9_]*)=([0-9A-Za-z.+_-]+)")
SHN_UNDEF, STB_WEAK = 0, 2
SHT_PROGBITS, SHT_DYNAMIC, SHT_GNU_VERNEED = 1, 6, 0x6FFFFFFE
SHF_ALLOC, SHF_EXECINSTR = 0x2, 0x4


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
    """The ABI of the library whose bytes `data` are."""
    from elftools.elf.elffile import ELFFile  # imported by what reads ELF files, not by every command

    return _read_elf(ELFFile(io.BytesIO(data)), data, name)


def read_library_file(path: Path) -> LibraryAbi:
    """The ABI of the library at `path`, mapped rather than read: of Paddle's 266 MB libpaddle.so
    only the dynamic symbol tables (30 MB) and the data the SDK marker can be in (29 MB) are read."""
    from elftools.elf.elffile import ELFFile

    with path.open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
        return _read_elf(ELFFile(f), mapped, path.name)


class SectionHeader(NamedTuple):
    number: int  # its index in the header table
    name: str
    type: int
    flags: int
    offset: int
    size: int


def section_headers(elf: ELFFile, data: bytes | mmap.mmap) -> list[SectionHeader]:
    """Every section's header, unpacked from the header table: pyelftools' own listing
    (iter_sections, get_section_by_name) builds every section, and building libpaddle.so's
    .gnu.hash alone took 0.27 s."""
    from elftools.elf.sections import StringTableSection

    names = elf.get_section(elf.get_shstrndx())
    if not isinstance(names, StringTableSection):
        raise ValueError("the section names' table is not a string table")
    layout = ("<" if elf.little_endian else ">") + ("IIQQQQ" if elf.elfclass == 64 else "IIIIII")
    start, step = elf["e_shoff"], elf["e_shentsize"]
    headers = []
    for index in range(elf.num_sections()):
        name, kind, flags, _, offset, size = struct.unpack_from(layout, data, start + index * step)
        headers.append(SectionHeader(index, names.get_string(name), kind, flags, offset, size))
    return headers


def _read_elf(elf: ELFFile, data: bytes | mmap.mmap, name: str) -> LibraryAbi:
    from elftools.elf.dynamic import DynamicSection
    from elftools.elf.gnuversions import GNUVerNeedSection, GNUVerSymSection
    from elftools.elf.sections import SymbolTableSection

    lib = LibraryAbi(name=name, machine=elf["e_machine"])
    headers = section_headers(elf, data)
    versions: dict[int, str] = {}
    for header in headers:
        if header.type not in (SHT_DYNAMIC, SHT_GNU_VERNEED):
            continue
        section = elf.get_section(header.number)
        if isinstance(section, DynamicSection):
            lib.needed = [t.needed for t in section.iter_tags() if t.entry.d_tag == "DT_NEEDED"]  # type: ignore[attr-defined]
        elif isinstance(section, GNUVerNeedSection):
            for _, auxiliaries in section.iter_versions():
                for aux in auxiliaries:
                    versions[aux.entry.vna_other] = aux.name
    named = {h.name: h.number for h in headers}  # the last section of a name, as get_section_by_name
    dynsym = elf.get_section(named[".dynsym"]) if ".dynsym" in named else None
    versym = elf.get_section(named[".gnu.version"]) if ".gnu.version" in named else None
    if isinstance(dynsym, SymbolTableSection):
        count = dynsym.num_symbols()
        ndx = _versym_indices(elf, versym, data, count) if isinstance(versym, GNUVerSymSection) else [0] * count
        strings = dynsym.stringtable["sh_offset"]
        for index, (st_name, st_info, st_shndx) in enumerate(_symbol_entries(elf, dynsym, data)):
            symbol = _cstring(data, strings + st_name)
            if not symbol:
                continue
            if st_shndx == SHN_UNDEF:
                if st_info >> 4 == STB_WEAK:
                    continue  # optional: absence is allowed
                # 0 and 1 (local, global) are no needed version's index: unversioned
                lib.undefined[symbol] = versions.get(ndx[index])
            else:
                lib.defined.add(symbol)
    lib.sdk = _sdk_build_info(data, headers)
    return lib


def _section_bytes(data: bytes | mmap.mmap, offset: int, size: int) -> bytes:
    chunk = data[offset : offset + size]
    if len(chunk) != size:
        raise ValueError(f"a section at offset {offset} runs past the end of the file")
    return chunk


def _symbol_entries(
    elf: ELFFile, dynsym: SymbolTableSection, data: bytes | mmap.mmap
) -> Iterator[tuple[int, int, int]]:
    """(st_name, st_info, st_shndx) of every entry, unpacked in bulk (pyelftools parses ~40k
    symbols a second: 5 s for libpaddle.so's 180k)."""
    layout = "IBBHQQ" if elf.elfclass == 64 else "IIIBBH"  # Elf64_Sym, Elf32_Sym
    entry = ("<" if elf.little_endian else ">") + layout
    size, step = struct.calcsize(entry), dynsym["sh_entsize"]
    if step < size:
        raise ValueError(f".dynsym entries of {step} bytes are shorter than a symbol ({size})")
    raw = _section_bytes(data, dynsym["sh_offset"], dynsym.num_symbols() * step)
    fields = (0, 1, 3) if elf.elfclass == 64 else (0, 3, 5)
    for values in struct.iter_unpack(entry + f"{step - size}x", raw):
        yield values[fields[0]], values[fields[1]], values[fields[2]]


def _versym_indices(elf: ELFFile, versym: GNUVerSymSection, data: bytes | mmap.mmap, count: int) -> list[int]:
    """The version index of each of the first `count` symbols (read where pyelftools reads them)."""
    step = versym["sh_entsize"]
    raw = _section_bytes(data, versym["sh_offset"], count * step)
    half = ("<" if elf.little_endian else ">") + "H" + (f"{step - 2}x" if step > 2 else "")
    return [ndx for (ndx,) in struct.iter_unpack(half, raw)]


def _cstring(data: bytes | mmap.mmap, start: int) -> str:
    """The NUL-terminated string at `start`, decoded as pyelftools decodes names ("" when unterminated)."""
    end = data.find(b"\0", start)
    return data[start:end].decode("utf-8", errors="replace") if end >= 0 else ""


def _sdk_build_info(data: bytes | mmap.mmap, headers: list[SectionHeader]) -> tuple[str, str] | None:
    """The SDK marker, a const char array: searched in the data the library loads (.rodata), not
    in its code or debug information (29 of libpaddle.so's 266 MB), by its fixed text, then
    matched in place."""
    for header in headers:
        if header.type != SHT_PROGBITS or not header.flags & SHF_ALLOC or header.flags & SHF_EXECINSTR:
            continue
        end = header.offset + header.size
        start = data.find(SDK_MARKER, header.offset, end)
        while start >= 0:
            found = SDK_BUILD_INFO.match(data, start, end)
            if found:
                return found[1].decode(), found[2].decode()
            start = data.find(SDK_MARKER, start + 1, end)
    return None


def symbol_version(version: str) -> tuple[str, tuple[int, ...]]:
    """'GLIBC_2.29' -> ('GLIBC', (2, 29)); a version without a number gives ()."""
    family, _, number = version.partition("_")
    return family, tuple(int(n) for n in number.split(".") if n.isdigit())


def newest_versions(libs: list[LibraryAbi]) -> dict[str, tuple[int, ...]]:
    """The newest GLIBC / GLIBCXX / CXXABI symbol version each family is needed at."""
    newest: dict[str, tuple[int, ...]] = {}
    # each distinct version once: Paddle's libraries need ~6,000 symbols at a few dozen versions
    for version in {v for lib in libs for v in lib.undefined.values() if v}:
        family, key = symbol_version(version)
        if family in SYSTEM_FAMILIES and key:
            newest[family] = max(newest.get(family, key), key)
    return newest
