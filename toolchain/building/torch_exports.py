"""What torch's libraries provide to the adapter: the system versions they need (the wheel's
manylinux floor) and which of them exports each symbol the adapter imports (the ABI check).

Reading them costs about 0.6 s a build (34 libraries' version sections and GNU hash tables), the
same answer every time for one torch: it is kept in devkit's cache, under a key made of each
library's name, size and modification time, and a build reads the libraries again only for a
symbol it has not looked up before (an edit seldom changes what the adapter imports).
"""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from ..run.envs import cache_root
from ..util.fsutil import write_atomic
from .elf import SYSTEM_FAMILIES, symbol_version
from .manylinux import SystemFloor

if TYPE_CHECKING:
    from elftools.elf.hash import GNUHashSection

FORMAT = 1  # of the kept file: another format is read as no file


def torch_libraries(torch_root: Path) -> list[Path]:
    return sorted(p for p in (torch_root / "lib").glob("*.so*") if p.is_file())


class TorchExports:
    """One torch's libraries, answered from the kept file where it can; `save()` keeps what was learnt."""

    def __init__(self, torch_root: Path) -> None:
        self.libraries = torch_libraries(torch_root)
        key = hashlib.sha256()
        for path in self.libraries:
            found = path.stat()
            key.update(f"{path.name}\0{found.st_size}\0{found.st_mtime_ns}\n".encode())
        self.path = cache_root() / "torch-exports" / f"{key.hexdigest()[:32]}.json"
        self._floor: dict[str, list[int]] | None = None
        self._owners: dict[str, str] = {}
        self._tables: dict[str, GNUHashSection] | None = None
        self._changed = False
        self._load()

    def _load(self) -> None:
        try:
            kept = json.loads(self.path.read_text())
            if kept.get("format") != FORMAT:
                return
            floor, owners = kept["floor"], kept["owners"]
            if isinstance(floor, dict) and isinstance(owners, dict):
                self._floor = {str(k): [int(n) for n in v] for k, v in floor.items()}
                self._owners = {str(k): str(v) for k, v in owners.items()}
        except (OSError, ValueError, KeyError, TypeError, AttributeError):  # none, or damaged: read the libraries
            self._floor, self._owners = None, {}

    def system_floor(self) -> SystemFloor:
        """The newest GLIBC / GLIBCXX / CXXABI versions torch's libraries need."""
        if self._floor is None:
            self._floor = {family: list(key) for family, key in _newest_versions(self.libraries).items()}
            self._changed = True
        return SystemFloor({family: tuple(key) for family, key in self._floor.items()})

    def owner(self, symbol: str) -> str:
        """The library exporting `symbol` ("": none of them does)."""
        known = self._owners.get(symbol)
        if known is None:
            if self._tables is None:
                self._tables = _hash_tables(self.libraries)
            known = next((name for name, table in self._tables.items() if table.get_symbol(symbol) is not None), "")
            self._owners[symbol] = known
            self._changed = True
        return known

    def save(self) -> None:
        if not self._changed:
            return
        self.system_floor()  # one file holds both: the floor too, when only owners were asked for
        self.path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(self.path, json.dumps({"format": FORMAT, "floor": self._floor, "owners": self._owners}))
        self._changed = False


@lru_cache(maxsize=4)
def exports_of(torch_root: Path) -> TorchExports:
    """One instance a torch per process: what one check learns, the next one (and `save`) has."""
    return TorchExports(torch_root)


def _newest_versions(libraries: list[Path]) -> dict[str, tuple[int, ...]]:
    # pyelftools is imported by what reads ELF files, not by every command
    from elftools.elf.elffile import ELFFile
    from elftools.elf.gnuversions import GNUVerNeedSection

    newest: dict[str, tuple[int, ...]] = {}
    for path in libraries:
        with path.open("rb") as f:
            for section in ELFFile(f).iter_sections():
                if isinstance(section, GNUVerNeedSection):
                    for _, auxiliaries in section.iter_versions():
                        for aux in auxiliaries:
                            family, key = symbol_version(aux.name)
                            if family in SYSTEM_FAMILIES and key:
                                newest[family] = max(newest.get(family, key), key)
    return newest


def _hash_tables(libraries: list[Path]) -> dict[str, GNUHashSection]:
    from elftools.elf.elffile import ELFFile
    from elftools.elf.hash import GNUHashSection

    tables = {}
    for path in libraries:
        elf = ELFFile(open(path, "rb"))  # noqa: SIM115 - read lazily by the lookups; closed at exit
        table = elf.get_section_by_name(".gnu.hash")
        if isinstance(table, GNUHashSection):
            tables[path.name] = table
    return tables
